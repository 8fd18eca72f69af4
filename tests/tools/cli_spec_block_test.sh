#!/usr/bin/env bash
# `--spec block --model-draft D` on the shipped model with a random-weight drafter (`pocket synth
# --drafter-for`): run and the per-task bench give plain greedy decoding's output; plan counts the drafter;
# a memory budget that fits the target but not both decodes plainly and says why; bad combinations (no
# drafter, a drafter as -m, a model as the drafter, a drafter for another target, a drafter to --spec ngram
# or draft) are refused with a message naming the fix.
set -uo pipefail
pocket=$1
model=$2/models/pocket-nano-q4.pocket
[ -f "$model" ] || { echo "SKIP: $model is absent"; exit 77; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail=0
expect() {  # expect "pattern" cmd...
  local pattern=$1; shift
  local out rc
  out=$("$@" 2>&1); rc=$?
  if [ $rc -eq 0 ] || [ $rc -ge 128 ] || ! grep -qF -- "$pattern" <<<"$out"; then
    echo "FAILED: '$*' (rc $rc) should fail with '$pattern'; got: $out"
    fail=1
  fi
}
"$pocket" synth --drafter-for "$model" -o "$tmp/d.pocket" --drafter-layers 2 --taps 1,3 --type q4_g32 --seed 7 \
  2> "$tmp/synth.txt" || { echo "FAILED: synth --drafter-for: $(cat "$tmp/synth.txt")"; exit 1; }
grep -q "random block drafter for .*: 2 layers, block 8" "$tmp/synth.txt" || { echo "FAILED: $(cat "$tmp/synth.txt")"; fail=1; }

# run: identical text, the drafter's bytes and the speculative counts on stderr.
prompt="Correct the sentence: i want to retrun the shoes becuase they are to small"
"$pocket" run -m "$model" --chat --temp 0 -n 40 -t 1 -p "$prompt" > "$tmp/plain.txt" 2>/dev/null || { echo "FAILED: plain run"; fail=1; }
for md in --model-draft -md; do
  "$pocket" run -m "$model" --chat --temp 0 -n 40 -t 1 -p "$prompt" --spec block "$md" "$tmp/d.pocket" \
    > "$tmp/block.txt" 2> "$tmp/block_err.txt" || { echo "FAILED: block run ($md): $(cat "$tmp/block_err.txt")"; fail=1; }
  cmp -s "$tmp/plain.txt" "$tmp/block.txt" || {
    echo "FAILED: --spec block ($md) output differs from plain:"; diff "$tmp/plain.txt" "$tmp/block.txt"; fail=1; }
done
grep -q "package .* + drafter " "$tmp/block_err.txt" || { echo "FAILED: no drafter bytes: $(cat "$tmp/block_err.txt")"; fail=1; }
grep -q "^speculative (block, k <= 8): " "$tmp/block_err.txt" || { echo "FAILED: no stats: $(cat "$tmp/block_err.txt")"; fail=1; }

# plan: the drafter's section and the sum; a budget between the target's and the sum says speculation goes off.
plan=$("$pocket" plan -m "$model" -c 512 --spec block -md "$tmp/d.pocket") || { echo "FAILED: plan: $plan"; fail=1; }
grep -q "^block drafter .*(2 layers, block 8, target layers 1,3)$" <<<"$plan" || { echo "FAILED: plan drafter: $plan"; fail=1; }
target=$(grep -m1 -E '^total ' <<<"$plan" | awk '{print $2}')
drafter=$(grep -E '^total ' <<<"$plan" | sed -n 2p | awk '{print $2}')
both=$(grep -E '^target \+ drafter ' <<<"$plan" | awk '{print $4}')
awk -v t="$target" -v d="$drafter" -v b="$both" 'BEGIN { exit !(t > 0 && d > 0 && (t + d - b) ^ 2 <= 0.0002) }' ||
  { echo "FAILED: plan sum $target + $drafter != $both: $plan"; fail=1; }
budget=$(awk -v t="$target" -v b="$both" 'BEGIN { printf "%.2f", (t + b) / 2 }')
out=$("$pocket" plan -m "$model" -c 512 --spec block -md "$tmp/d.pocket" --mem-budget "$budget")
[ $? -eq 1 ] && grep -q "the target alone fits" <<<"$out" || { echo "FAILED: plan budget $budget: $out"; fail=1; }
# plan --spec draft: the draft model's own session and the sum (the model drafting for itself).
dplan=$("$pocket" plan -m "$model" -c 512 --spec draft -md "$model") || { echo "FAILED: plan --spec draft: $dplan"; fail=1; }
grep -q "^draft model .*(4 layers)$" <<<"$dplan" && grep -q "^target + draft model " <<<"$dplan" ||
  { echo "FAILED: plan draft model: $dplan"; fail=1; }
# run under that budget (the run's plan holds the package's default context): plain decoding, the reason on stderr.
ctx_plan=$("$pocket" plan -m "$model" --spec block -md "$tmp/d.pocket")
t2=$(grep -m1 -E '^total ' <<<"$ctx_plan" | awk '{print $2}')
b2=$(grep -E '^target \+ drafter ' <<<"$ctx_plan" | awk '{print $4}')
budget=$(awk -v t="$t2" -v b="$b2" 'BEGIN { printf "%.3f", (t + b) / 2 }')
"$pocket" run -m "$model" --chat --temp 0 -n 40 -t 1 -p "$prompt" --spec block -md "$tmp/d.pocket" --mem-budget "$budget" \
  > "$tmp/budget.txt" 2> "$tmp/budget_err.txt" || { echo "FAILED: run --mem-budget $budget: $(cat "$tmp/budget_err.txt")"; fail=1; }
grep -q "speculation off, decoding plainly: .*memory budget" "$tmp/budget_err.txt" ||
  { echo "FAILED: no reason on stderr at budget $budget MiB: $(cat "$tmp/budget_err.txt")"; fail=1; }
cmp -s "$tmp/plain.txt" "$tmp/budget.txt" || { echo "FAILED: the budget run's output differs from plain"; fail=1; }

# The per-task bench with the block drafter: every output identical.
printf '%s\n' \
  '{"messages":[{"role":"user","content":"Correct the sentence: does the kettle cmoe in antoher colour?"}],"task":"rewrite","lang":"en"}' \
  '{"messages":[{"role":"user","content":"提取JSON：\n墨绿色双肩包，品牌山野，尺码：大号，￥329，面料尼龙。"}],"task":"extract","lang":"zh"}' \
  > "$tmp/tasks.jsonl"
out=$("$pocket" bench -m "$model" --spec block -md "$tmp/d.pocket" --task-prompts "$tmp/tasks.jsonl" -n 48 -r 1 -t 1 2>&1) ||
  { echo "FAILED: bench --spec block --task-prompts: $out"; fail=1; }
grep -q "outputs identical to plain decoding (lossless)" <<<"$out" || { echo "FAILED: bench block: $out"; fail=1; }
grep -qF "| (all) | (all) | 2 |" <<<"$out" || { echo "FAILED: bench block rows: $out"; fail=1; }

# The speculative rows with a block drafter: lossless, and the drafter pass timed against a decode step.
out=$("$pocket" bench -m "$model" --spec block -md "$tmp/d.pocket" --spec-only -p 24 -n 8 -r 1 -t 1 2>&1) ||
  { echo "FAILED: bench --spec block --spec-only: $out"; fail=1; }
grep -q "outputs identical (lossless)" <<<"$out" || { echo "FAILED: bench rows block: $out"; fail=1; }
grep -Eq "^block drafter pass at depth 23: [0-9.]+ ms = [0-9.]+x a decode step$" <<<"$out" ||
  { echo "FAILED: no drafter pass timing: $out"; fail=1; }

# Refusals.
"$pocket" synth --arch tiny --type q4_g32 -o "$tmp/tiny.pocket" 2>/dev/null || { echo "FAILED: synth tiny"; exit 1; }
expect "--spec block needs the block drafter package" "$pocket" run -m "$model" -p hi --spec block
expect "--spec block needs the block drafter package" "$pocket" bench -m "$model" --spec block --spec-only -p 8 -n 4
expect "--spec block needs the block drafter package" "$pocket" plan -m "$model" --spec block
expect "--spec block needs the block drafter package" "$pocket" serve -m "$model" --spec block --port 0
expect "wrong target" "$pocket" serve -m "$tmp/tiny.pocket" --spec block -md "$tmp/d.pocket" --port 0
expect "this package is a drafter, not a model" "$pocket" run -m "$tmp/d.pocket" -p hi
expect "this package is a drafter, not a model" "$pocket" run -m "$model" -p hi --spec draft -md "$tmp/d.pocket"
expect "this package is not a drafter" "$pocket" run -m "$model" -p hi --spec block -md "$model"
expect "is used by --spec draft (a draft model) or --spec block" "$pocket" run -m "$model" -p hi --spec ngram -md "$tmp/d.pocket"
expect "wrong target" "$pocket" run -m "$tmp/tiny.pocket" -p hi --spec block -md "$tmp/d.pocket"
expect "wrong target" "$pocket" plan -m "$tmp/tiny.pocket" --spec block -md "$tmp/d.pocket"
expect "--taps wants target layer numbers" "$pocket" synth --drafter-for "$model" -o "$tmp/x.pocket" --taps 1,x
expect "give --arch NAME (a model) or --drafter-for" "$pocket" synth -o "$tmp/x.pocket"

# synth --widen: the shipped model and its trained drafter in pocket-0.3b's shape (docs/speculative.md,
# "Widened target"); the widened pair decodes losslessly and drafts.
drafter=$2/models/pocket-nano-drafter.pocket
if [ -f "$drafter" ]; then
  "$pocket" synth --arch pocket-0.3b --widen "$model" --type q4_g32 -o "$tmp/wide.pocket" --widen-drafter "$drafter" \
    --drafter-output "$tmp/wide-d.pocket" 2> "$tmp/widen.txt" || { echo "FAILED: synth --widen: $(cat "$tmp/widen.txt")"; fail=1; }
  grep -q "widened to pocket-0.3b's shape: 292.6M parameters.*its layers at 4 9 14 19" "$tmp/widen.txt" ||
    { echo "FAILED: synth --widen message: $(cat "$tmp/widen.txt")"; fail=1; }
  prompt2="Extract JSON: linen duvet cover, brand Solace, colour burgundy"
  "$pocket" run -m "$tmp/wide.pocket" --chat --temp 0 -n 24 -t 2 -p "$prompt2" > "$tmp/wplain.txt" 2>/dev/null ||
    { echo "FAILED: widened plain run"; fail=1; }
  "$pocket" run -m "$tmp/wide.pocket" --chat --temp 0 -n 24 -t 2 -p "$prompt2" --spec block -md "$tmp/wide-d.pocket" \
    --no-spec-fallback > "$tmp/wblock.txt" 2> "$tmp/wblock_err.txt" || { echo "FAILED: widened block run: $(cat "$tmp/wblock_err.txt")"; fail=1; }
  cmp -s "$tmp/wplain.txt" "$tmp/wblock.txt" || { echo "FAILED: widened --spec block differs from plain"; diff "$tmp/wplain.txt" "$tmp/wblock.txt"; fail=1; }
  grep -Eq ", [2-9]\.[0-9]+ tokens per pass" "$tmp/wblock_err.txt" ||
    { echo "FAILED: the widened drafter should draft: $(cat "$tmp/wblock_err.txt")"; fail=1; }
fi
expect "--widen-drafter needs --widen SMALL.pocket and --drafter-output" "$pocket" synth --arch pocket-0.3b -o "$tmp/x.pocket" \
  --widen "$model" --widen-drafter "$tmp/d.pocket"
expect "smaller than the model's" "$pocket" synth --arch tiny --widen "$model" -o "$tmp/x.pocket"
expect "excludes" "$pocket" synth --drafter-for "$model" --widen "$model" -o "$tmp/x.pocket"
expect "--widen keeps the model's tokenizer and config" "$pocket" synth --arch pocket-0.3b --widen "$model" -c 64 -o "$tmp/x.pocket"
expect "cannot" "$pocket" synth --arch pocket-0.3b --widen "$tmp/absent.pocket" -o "$tmp/x.pocket"
[ -e "$tmp/x.pocket" ] && { echo "FAILED: a refused synth --widen left $tmp/x.pocket"; fail=1; }
[ $fail -eq 0 ] && echo "cli_spec_block: run/bench/plan with a random block drafter lossless, budget fallback, refusals; synth --widen"
exit $fail
