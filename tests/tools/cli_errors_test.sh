#!/usr/bin/env bash
# Bad files and parameters give a clear error naming the problem and a non-zero exit, never a crash.
set -uo pipefail
pocket=$1
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail=0
expect() {  # expect "pattern" cmd...
  local pattern=$1; shift
  local out rc
  out=$("$@" 2>&1); rc=$?
  if [ $rc -eq 0 ] || [ $rc -ge 128 ] || ! grep -q -- "$pattern" <<<"$out"; then
    echo "FAILED: '$*' (rc $rc) should fail with '$pattern'; got: $out"
    fail=1
  fi
}
: > "$tmp/empty.pocket"
printf 'not a model at all, just text' > "$tmp/text.pocket"
expect "empty file" "$pocket" run -m "$tmp/empty.pocket" -p hi
expect "bad magic" "$pocket" inspect "$tmp/text.pocket"
expect "cannot open" "$pocket" verify "$tmp/missing.pocket"
expect "unknown architecture 'nope'" "$pocket" synth --arch nope -o "$tmp/x.pocket"
"$pocket" synth --arch tiny --type f32 -o "$tmp/tiny.pocket" 2>/dev/null || { echo "synth failed"; exit 1; }
expect "temperature" "$pocket" run -m "$tmp/tiny.pocket" -p hi --temp -1
expect "context" "$pocket" run -m "$tmp/tiny.pocket" -p "$(head -c 3000 /dev/zero | tr '\0' x)" -c 64
expect "n_predict" "$pocket" run -m "$tmp/tiny.pocket" -p hi -n -5
expect "memory plan" "$pocket" run -m "$tmp/tiny.pocket" -p hi --mem-budget 0.01
expect "add --spec ngram" "$pocket" bench -m "$tmp/tiny.pocket" --verify-curve -p 8 -n 4 -r 1
expect "add --spec ngram" "$pocket" bench -m "$tmp/tiny.pocket" --spec-only -p 8 -n 4 -r 1
# A flipped byte in the tensor data: verify reports corruption.
cp "$tmp/tiny.pocket" "$tmp/flip.pocket"
size=$(stat -c %s "$tmp/flip.pocket")
printf '\x55' | dd of="$tmp/flip.pocket" bs=1 seek=$((size - 100)) conv=notrunc 2>/dev/null
expect "corrupt" "$pocket" verify "$tmp/flip.pocket"
# Truncated: refused at open.
head -c $((size / 2)) "$tmp/tiny.pocket" > "$tmp/trunc.pocket"
expect "truncated" "$pocket" run -m "$tmp/trunc.pocket" -p hi
# Importance statistics: a file that is not one, and statistics from another model.
expect "bad magic" "$pocket" quantize "$tmp/tiny.pocket" "$tmp/q.pocket" --imatrix "$tmp/text.pocket"
expect "cannot read" "$pocket" quantize "$tmp/tiny.pocket" "$tmp/q.pocket" --imatrix "$tmp/missing.imatrix"
printf 'Once upon a time there was a cat.' > "$tmp/calib.txt"
"$pocket" imatrix -m "$tmp/tiny.pocket" -f "$tmp/calib.txt" -o "$tmp/tiny.imatrix" 2>/dev/null || { echo "imatrix failed"; exit 1; }
"$pocket" quantize "$tmp/tiny.pocket" "$tmp/q.pocket" --imatrix "$tmp/tiny.imatrix" 2>/dev/null || { echo "quantize --imatrix failed"; fail=1; }
# One entry, blk.0.attn_q.weight, of 1 column (format in src/quant/importance.h).
printf 'PKIMTX\0\0\x01\0\0\0\x01\0\0\0\x01\0\0\0\0\0\0\0\x13\0\0\0blk.0.attn_q.weight\x01\0\0\0\0\0\x80\x3f' > "$tmp/narrow.imatrix"
expect "statistics from another model" "$pocket" quantize "$tmp/tiny.pocket" "$tmp/q.pocket" --imatrix "$tmp/narrow.imatrix"
expect "cannot read text file" "$pocket" imatrix -m "$tmp/tiny.pocket" -f "$tmp/missing.txt" -o "$tmp/x.imatrix"
[ $fail -eq 0 ] && echo "cli_errors: all bad inputs refused with clear errors"
exit $fail
