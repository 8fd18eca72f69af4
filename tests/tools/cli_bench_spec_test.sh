#!/usr/bin/env bash
# `pocket bench --spec`: the speculative rows in markdown and JSON (also with --spec-only), and the verify-cost
# curve (--verify-curve): one entry per row count 2 .. k + 1, each with positive times and its ratio.
set -euo pipefail
pocket=$1
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
"$pocket" synth --arch tiny --type q4_g32 -o "$tmp/t.pocket" > /dev/null
args=(-m "$tmp/t.pocket" --spec ngram --draft-max 3 -p 24 -n 8 -r 1 -t 1 --no-probe)

"$pocket" bench "${args[@]}" --spec-only --verify-curve > "$tmp/md.txt"
grep -q "outputs identical (lossless)" "$tmp/md.txt"
grep -q "^verify pass of 4 rows at depth 24" "$tmp/md.txt"
for rows in 2 3 4; do
  grep -Eq "^\| $rows \| [0-9.]+ ms \| [0-9.]+ ms \| [0-9.]+x \|$" "$tmp/md.txt" || {
    echo "no curve row for $rows rows:"; cat "$tmp/md.txt"; exit 1; }
done

"$pocket" bench "${args[@]}" --spec-only --verify-curve -o json > "$tmp/spec.json"
"$pocket" bench "${args[@]}" -o json > "$tmp/all.json"  # without the curve, with the pp/tg rows
check='
import json, sys
spec = json.load(open(sys.argv[1]))["speculative"]
assert spec["outputs_identical"] is True, spec
assert spec["verify_rows"] == 4 and spec["verify_ms"] > 0 and spec["decode_step_ms"] > 0, spec
curve = spec["verify_curve"]
assert [c["rows"] for c in curve] == [2, 3, 4], curve
for c in curve:
    assert c["verify_ms"] > 0 and c["decode_step_ms"] > 0, c
    assert abs(c["ratio"] - c["verify_ms"] / c["decode_step_ms"]) < 1e-9, c
assert curve[-1]["verify_ms"] == spec["verify_ms"], (curve[-1], spec)
all_rows = json.load(open(sys.argv[2]))
assert "verify_curve" not in all_rows["speculative"] and all_rows["speculative"]["verify_rows"] == 4, all_rows
assert all_rows["rows"] and "peak_rss_increase_bytes" in all_rows, all_rows.keys()  # the pp/tg part too
'
if command -v python3 > /dev/null; then
  python3 -c "$check" "$tmp/spec.json" "$tmp/all.json"
else  # no Python: the same facts by grep
  grep -q '"verify_curve"' "$tmp/spec.json"
  [ "$(grep -c '"rows":' "$tmp/spec.json")" -eq 3 ]
  ! grep -q '"verify_curve"' "$tmp/all.json"
fi
echo "cli_bench_spec: markdown and JSON speculative rows with the verify-cost curve"
