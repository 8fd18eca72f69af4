#!/usr/bin/env bash
# `pocket bench --spec ngram --task-prompts FILE.jsonl` on the shipped model: a per-task (and per-language) table
# and JSON report of plain vs speculative greedy decoding whose outputs are all identical; bad task files and
# --spec none refused with the file and line named.
set -uo pipefail
pocket=$1
model=$2/models/pocket-nano-q4.pocket
[ -f "$model" ] || { echo "SKIP: $model is absent"; exit 77; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail=0
# The make-tasks format: messages (the user turn, then the reference answer, which the bench ignores), task, lang.
cat > "$tmp/tasks.jsonl" <<'JSONL'
{"messages":[{"content":"Correct the sentence: does the kettle cmoe in antoher colour?","role":"user"},{"content":"Does the kettle come in another colour?","role":"assistant"}],"task":"rewrite","lang":"en"}
{"messages":[{"content":"改正句子：这个价格比我想象的便意多了。","role":"user"},{"content":"这个价格比我想象的便宜多了。","role":"assistant"}],"task":"rewrite","lang":"zh"}
{"messages":[{"content":"Correct the sentence: i want to retrun the shoes becuase they are to small","role":"user"},{"content":"I want to return the shoes because they are too small.","role":"assistant"}],"task":"rewrite","lang":"en"}

{"messages":[{"content":"Extract JSON:\nNavy wool scarf by Northwind, one size, $24.","role":"user"},{"content":"{}","role":"assistant"}],"task":"extract","lang":"en"}
{"messages":[{"content":"提取JSON：\n墨绿色双肩包，品牌山野，尺码：大号，￥329，面料尼龙。","role":"user"},{"content":"{}","role":"assistant"}],"task":"extract","lang":"zh"}
{"messages":[{"content":"Classify intent: where is my parcel?","role":"user"}],"task":"intent","lang":"en"}
JSONL
args=(-m "$model" --spec ngram --task-prompts "$tmp/tasks.jsonl" -n 48 -r 1 -t 1)

out=$("$pocket" bench "${args[@]}" 2>&1) || { echo "FAILED: per-task bench (rc $?): $out"; exit 1; }
for row in '| rewrite | (all) | 3 |' '| rewrite | en | 2 |' '| rewrite | zh | 1 |' '| extract | (all) | 2 |' \
           '| intent | (all) | 1 |' '| (all) | en | 4 |' '| (all) | zh | 2 |' '| (all) | (all) | 6 |'; do
  grep -qF -- "$row" <<<"$out" || { echo "FAILED: no row '$row' in: $out"; fail=1; }
done
grep -q "outputs identical to plain decoding (lossless)" <<<"$out" || { echo "FAILED: not lossless: $out"; fail=1; }
# --per-task 1: the first example of each task only.
out=$("$pocket" bench "${args[@]}" --per-task 1 2>&1) || { echo "FAILED: --per-task 1 (rc $?): $out"; fail=1; }
grep -qF '| (all) | (all) | 3 |' <<<"$out" || { echo "FAILED: --per-task 1 should take 3 examples: $out"; fail=1; }

"$pocket" bench "${args[@]}" -o json > "$tmp/t.json" 2> "$tmp/err.txt" || { echo "FAILED: json: $(cat "$tmp/err.txt")"; fail=1; }
if command -v python3 > /dev/null; then
  python3 - "$tmp/t.json" <<'PY' || fail=1
import json, sys
t = json.load(open(sys.argv[1]))["task_bench"]
assert t["outputs_identical"] is True and t["differences"] == [], t
rows = {(r["task"], r["lang"]): r for r in t["rows"]}
total = rows[("(all)", "(all)")]
assert total["examples"] == 6 and total["identical"] == 6 and total["tokens"] > 0, total
assert total["plain_tps"] > 0 and total["spec_tps"] > 0 and total["passes"] >= total["plain_passes"], total
assert abs(total["tokens_per_pass"] - (total["accepted"] + total["passes"]) / total["passes"]) < 1e-9, total
assert sum(rows[(k, "(all)")]["tokens"] for k in ("rewrite", "extract", "intent")) == total["tokens"], rows
PY
else
  grep -q '"outputs_identical": true' "$tmp/t.json" || { echo "FAILED: json not lossless"; fail=1; }
fi

expect() {  # expect "pattern" cmd...
  local pattern=$1; shift
  local out rc
  out=$("$@" 2>&1); rc=$?
  if [ $rc -eq 0 ] || [ $rc -ge 128 ] || ! grep -q -- "$pattern" <<<"$out"; then
    echo "FAILED: '$*' (rc $rc) should fail with '$pattern'; got: $out"
    fail=1
  fi
}
printf '{"messages":[{"role":"user","content":"hi"}],"task":"a"}\n{"messages": [\n' > "$tmp/bad.jsonl"
expect "not a JSON object: $tmp/bad.jsonl:2" "$pocket" bench -m "$model" --spec ngram --task-prompts "$tmp/bad.jsonl"
printf '{"messages":[{"role":"assistant","content":"hi"}],"task":"a"}\n' > "$tmp/nouser.jsonl"
expect "no user message: $tmp/nouser.jsonl:1" "$pocket" bench -m "$model" --spec ngram --task-prompts "$tmp/nouser.jsonl"
expect "cannot read task prompts" "$pocket" bench -m "$model" --spec ngram --task-prompts "$tmp/missing.jsonl"
expect "add --spec ngram, draft or block" "$pocket" bench -m "$model" --task-prompts "$tmp/tasks.jsonl"
[ $fail -eq 0 ] && echo "cli_bench_tasks: per-task table and JSON, outputs identical; bad task files refused"
exit $fail
