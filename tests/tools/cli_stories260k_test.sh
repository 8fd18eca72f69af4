#!/usr/bin/env bash
# `pocket convert` + `pocket run` on stories260K must print the reference text byte for byte.
set -euo pipefail
pocket=$1
data=$2
if [ ! -d "$data/models/stories260K" ]; then
  echo "reference data $data is absent; skipping"
  exit 77
fi
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
"$pocket" convert "$data/models/stories260K/stories260K.bin" "$tmp/s.pocket" --tokenizer "$data/models/stories260K/tok512.bin"
"$pocket" verify "$tmp/s.pocket" > /dev/null
"$pocket" inspect "$tmp/s.pocket" | grep -q "blk.4.ffn_down.weight"
for n in 1 2 3; do
  ref="$data/reference/stories260K/p$n"
  prompt=$(cat "$ref.prompt")
  n_prompt=$(sed -n 's/^PROMPT_TOKENS \([0-9]*\):.*/\1/p' "$ref.ids")
  n_all=$(sed -n 's/^ALL_IDS(\([0-9]*\)):.*/\1/p' "$ref.ids")
  # Threads 1 and 2, mapped and (--no-mmap) read into memory.
  for run in "-t 1" "-t 2" "-t 2 --no-mmap"; do
    # shellcheck disable=SC2086
    "$pocket" run -m "$tmp/s.pocket" -p "$prompt" -n $((n_all - n_prompt)) --temp 0 $run > "$tmp/out$n.txt" 2> "$tmp/err$n.txt"
    if ! cmp -s "$tmp/out$n.txt" "$ref.txt"; then
      echo "p$n ($run): output differs from the reference"
      diff <(cat "$ref.txt") <(cat "$tmp/out$n.txt") || true
      exit 1
    fi
  done
  grep -q "decode" "$tmp/err$n.txt"
done
echo "cli_stories260k: 3 prompts match the reference byte for byte"
