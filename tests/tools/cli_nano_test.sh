#!/usr/bin/env bash
# The README's main job on the shipped model: `pocket run --chat` renders the prompt with pocket-nano's
# ChatML template and answers an extraction prompt with one JSON object (keys of the task's schema), then
# prints the budget line. (Field values are checked by score-tasks in tests/train/nano_model_test.cc.)
set -uo pipefail
pocket=$1
model=$2/models/pocket-nano-q4.pocket
[ -f "$model" ] || { echo "SKIP: $model is absent"; exit 77; }
out=$("$pocket" run -m "$model" --chat -n 96 --temp 0 -p $'提取JSON：\n墨绿色双肩包，品牌山野，尺码：大号，￥329，面料尼龙。' 2>"${TMPDIR:-/tmp}/nano_err.$$")
rc=$?
err=$(cat "${TMPDIR:-/tmp}/nano_err.$$"); rm -f "${TMPDIR:-/tmp}/nano_err.$$"
fail=0
[ $rc -eq 0 ] || { echo "FAILED: pocket run exited $rc: $err"; exit 1; }
answer=$(printf '%s\n' "$out" | tail -n 1)
# One JSON object with the extraction schema's first key (no python on a bare CI machine: a pattern check).
grep -Eq '^\{"name":"[^"]+"(,"(brand|price|colour|size|material)":("[^"]*"|[0-9.]+))*\}$' <<<"$answer" ||
  { echo "FAILED: not a JSON object of the extraction schema: $answer"; fail=1; }
grep -q "| package " <<<"$err" || { echo "FAILED: no budget line: $err"; fail=1; }
grep -q "peak memory increase" <<<"$err" || { echo "FAILED: no peak memory in the budget line: $err"; fail=1; }
# `pocket verify` on the shipped q4_g32r8 package: checksums and every scale finite (the r8 groups' 8 scales).
v=$("$pocket" verify "$model" 2>&1) || { echo "FAILED: pocket verify: $v"; fail=1; }
# `pocket plan` states the f16 KV cache a session of this quantised model holds: 2 x 4 layers x 512 positions x
# 64 (2 KV heads x 32) x 2 bytes = 0.50 MiB.
plan=$("$pocket" plan -m "$model" -c 512 2>&1)
grep -Eq '^kv cache +0\.50 MiB$' <<<"$plan" || { echo "FAILED: pocket plan KV cache: $plan"; fail=1; }
[ $fail -eq 0 ] && echo "ok: $answer"
exit $fail
