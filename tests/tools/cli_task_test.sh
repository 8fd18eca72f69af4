#!/usr/bin/env bash
# `pocket task` and the constrained-decoding flags of `pocket run` and `pocket bench` on the shipped model:
# the demo's extraction is valid and grounded, detectors need no model, bad input is a clear error.
set -uo pipefail
pocket=$1
root=$2
model=$root/models/pocket-nano-q4.pocket
schema=$root/schemas/product.schema.json
[ -f "$model" ] || { echo "SKIP: $model is absent"; exit 77; }
fail=0
check() { # check NAME OUTPUT REGEX
  grep -Eq -- "$3" <<<"$2" || { echo "FAILED: $1: $2"; fail=1; }
}
text='墨绿色双肩包，品牌山野，尺码：大号，￥329，面料尼龙。支持七天无理由退货。'
out=$("$pocket" task extract -m "$model" --schema "$schema" -p "$text" --compact 2>/dev/null)
check "extract is valid" "$out" '"valid":true'
check "extract has a name" "$out" '"result":\{"name":"[^"]+"'
# Every string value of the result is a span of the text (the grammar's copy terminal).
values=$(grep -o '"result":{[^}]*}' <<<"$out" | grep -o ':"[^"]*"' | sed 's/^:"//; s/"$//')
while IFS= read -r v; do
  [ -z "$v" ] && continue
  [[ "$text" == *"$v"* ]] || { echo "FAILED: value '$v' is not a span of the text"; fail=1; }
done <<<"$values"
err=$("$pocket" task extract -m "$model" --schema "$schema" -p "$text" 2>&1 >/dev/null)
check "budget line" "$err" 'peak memory increase .* mask [0-9.]+ ms/token'

out=$("$pocket" task redact -p "电话13812345678，卡号4111111111111111，ID 11010519491231002X" --compact)
check "redact" "$out" '"text":"电话\[PHONE\]，卡号\[BANK_CARD\]，ID \[ID_CARD\]"'
out=$("$pocket" task classify -m "$model" -p "where is my order?" --labels order_status,refund --compact 2>/dev/null)
check "classify" "$out" '"label":"(order_status|refund)"'
out=$("$pocket" task route -m "$model" -p $'Context: The shop opens at 9.\nQuestion: When does the shop open?' --compact 2>/dev/null)
check "route" "$out" '"route":"(local|cloud)"'

# Errors: no labels, an unsupported schema keyword (named), malformed schema JSON, a missing text.
out=$("$pocket" task classify -m "$model" -p "x" 2>&1); rc=$?
[ $rc -ne 0 ] || { echo "FAILED: classify without labels exited 0"; fail=1; }
check "labels error" "$out" 'labels'
out=$("$pocket" task extract -m "$model" -p "x" -j '{"type":"string","pattern":"^a"}' 2>&1); rc=$?
[ $rc -ne 0 ] || { echo "FAILED: an unsupported keyword exited 0"; fail=1; }
check "unsupported keyword named" "$out" "pattern"
out=$("$pocket" task extract -m "$model" -p "x" -j '{"type":' 2>&1); rc=$?
[ $rc -ne 0 ] || { echo "FAILED: malformed schema exited 0"; fail=1; }
out=$("$pocket" task rewrite -m "$model" 2>&1); rc=$?
[ $rc -ne 0 ] || { echo "FAILED: a task without text exited 0"; fail=1; }

# --beams: extraction only, 1..16, greedy only.
out=$("$pocket" task extract -m "$model" --schema "$schema" -p "红色T恤，￥59" --beams 1 --compact 2>/dev/null)
check "extract --beams 1" "$out" '"valid":true'
for bad in "classify --labels a,b --beams 2" "extract --schema $schema --beams 17" \
           "extract --schema $schema --beams 2 --temp 0.7"; do
  # shellcheck disable=SC2086
  out=$("$pocket" task $bad -m "$model" -p "x" 2>&1); rc=$?
  [ $rc -ne 0 ] || { echo "FAILED: task $bad exited 0"; fail=1; }
  check "task $bad names beams" "$out" 'beams'
done

# pocket run with a grammar and a schema (llama.cpp's flag names).
out=$("$pocket" run -m "$model" --chat -p "Is the sky blue?" --grammar 'root ::= "yes" | "no"' -n 8 --temp 0 2>/dev/null | tail -n 1)
check "run --grammar" "$out" '^(yes|no)$'
out=$("$pocket" run -m "$model" --chat -p $'提取JSON：\n红色T恤，￥59' -n 40 --temp 0 \
      --json-schema '{"type":"object","properties":{"name":{"type":"string","x-pocket-copy":true}},"required":["name"]}' 2>/dev/null | tail -n 1)
check "run --json-schema" "$out" '^\{"name":"[^"]+"\}$'
out=$("$pocket" run -m "$model" -p "x" --grammar 'root ::= [a-' 2>&1); rc=$?
[ $rc -ne 0 ] || { echo "FAILED: a bad grammar exited 0"; fail=1; }
check "grammar error position" "$out" '\[gbnf\] 1:[0-9]+'
# A schema with speculation: the same JSON as without (the grammar masks every verified row).
plain=$("$pocket" run -m "$model" --chat -p $'提取JSON：\n红色T恤，￥59' -n 40 --temp 0 --json-schema '{"type":"object"}' 2>/dev/null)
spec=$("$pocket" run -m "$model" --chat -p $'提取JSON：\n红色T恤，￥59' -n 40 --temp 0 --json-schema '{"type":"object"}' \
       --spec ngram --no-spec-fallback 2>/dev/null)
check "run --json-schema --spec ngram" "$spec" '\{'
[ "$plain" = "$spec" ] || { echo "FAILED: --json-schema with --spec ngram differs from plain: '$spec' vs '$plain'"; fail=1; }

# pocket task --spec: rewriting and token-by-token extraction through a speculative session, the same results.
drafter=$root/models/pocket-nano-drafter.pocket
tmp_err=$(mktemp)
spec_same() {  # spec_same TASK ARGS...: the result without "usage" equals plain's, and the stats line is printed
  local t=$1; shift
  local p1 p2
  p1=$("$pocket" task "$t" -m "$model" --compact "$@" 2>/dev/null | sed 's/,"usage":.*//')
  p2=$("$pocket" task "$t" -m "$model" --compact "$@" --spec block --model-draft "$drafter" --no-spec-fallback \
       2>"$tmp_err" | sed 's/,"usage":.*//')
  [ -n "$p1" ] && [ "$p1" = "$p2" ] || { echo "FAILED: task $t --spec block differs: '$p2' vs '$p1'"; fail=1; }
  grep -q "^speculative (block, k <= 8): " "$tmp_err" || { echo "FAILED: task $t --spec: no stats: $(cat "$tmp_err")"; fail=1; }
}
spec_same rewrite -p "i want to retrun the shoes becuase they are to small"
spec_same extract --beams 1 --schema "$schema" -p "$text"
rm -f "$tmp_err"
out=$("$pocket" task rewrite -m "$model" -p x --spec block 2>&1); rc=$?
[ $rc -ne 0 ] || { echo "FAILED: task --spec block without a drafter exited 0"; fail=1; }
check "task --spec block without -md" "$out" 'needs the block drafter'

# --batch: one result per line, errors in place.
batch=$(mktemp)
printf '%s\n' '{"task":"redact","text":"call 13812345678"}' 'not json' \
  '{"task":"classify","text":"where is my order?","labels":["order_status","refund"]}' > "$batch"
out=$("$pocket" task -m "$model" --batch "$batch" 2>/dev/null); rc=$?
rm -f "$batch"
[ $rc -eq 0 ] || { echo "FAILED: --batch exited $rc"; fail=1; }
[ "$(wc -l <<<"$out")" -eq 3 ] || { echo "FAILED: --batch printed $(wc -l <<<"$out") lines: $out"; fail=1; }
check "batch redact" "$(sed -n 1p <<<"$out")" '"text":"call \[PHONE\]"'
check "batch error" "$(sed -n 2p <<<"$out")" '"error":.*"line":2'
check "batch classify" "$(sed -n 3p <<<"$out")" '"label":"(order_status|refund)"'

# pocket bench reports the mask cost per token.
out=$("$pocket" bench -m "$model" -p 0 -n 16 -r 1 --no-probe --json-schema-file "$schema" 2>&1)
check "bench mask cost" "$out" 'mask \+ advance ms/token'
[ $fail -eq 0 ] && echo "ok"
exit $fail
