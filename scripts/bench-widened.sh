#!/usr/bin/env bash
# The trained block drafter's end-to-end speed-up at pocket-0.3b's cost (docs/speculative.md, "Widened
# target"): the shipped pocket-nano and its drafter widened to pocket-0.3b's shape (`pocket synth --widen`,
# the same logits over the 8,192-token vocabulary, 292.6M parameters, 4-bit), then the per-task report of
# `pocket bench` (plain and speculative greedy decoding of each held-out task prompt side by side in one
# process, alternating, per-example medians): the block drafter forced on, with the fallback, prompt lookup,
# and the block drafter on 2 threads.
# Usage: scripts/bench-widened.sh WORK_DIR [BUILD_DIR]
# Environment: PER_TASK (100 prompts per task), REPS (3), TASKS (a make-tasks output directory; default
#   WORK_DIR/tasks, made with the drafter's seed), SHAPE (pocket-0.3b).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
work=${1:?usage: scripts/bench-widened.sh WORK_DIR [BUILD_DIR]}
build=${2:-$root/build/release}
P=$build/bin/pocket
tasks=${TASKS:-$work/tasks}
per_task=${PER_TASK:-100}
reps=${REPS:-3}
mkdir -p "$work"
[ -f "$tasks/test.jsonl" ] || "$build/bin/pocket-train" make-tasks -o "$tasks" --seed 1 --train 20000 --dev 500 --test 1000

M=$work/wide-q4.pocket
D=$work/wide-drafter.pocket
"$P" synth --arch "${SHAPE:-pocket-0.3b}" --widen "$root/models/pocket-nano-q4.pocket" --type q4_g32 -o "$M" \
  --widen-drafter "$root/models/pocket-nano-drafter.pocket" --drafter-output "$D"

bench() {  # NAME ARGS...
  local name=$1; shift
  echo "== $name ($(date -u +%H:%M:%S))"
  "$P" bench -m "$M" --draft-max 8 --task-prompts "$tasks/test.jsonl" --per-task "$per_task" -r "$reps" "$@" \
    > "$work/$name.md" 2> "$work/$name.err"
  cat "$work/$name.md"
}
bench block-forced-t1 --spec block -md "$D" -t 1 --no-spec-fallback
bench block-fallback-t1 --spec block -md "$D" -t 1
bench ngram-forced-t1 --spec ngram -t 1 --no-spec-fallback
bench block-forced-t2 --spec block -md "$D" -t 2 --no-spec-fallback
# The cost of one verify pass and one drafting pass against a decode step at depth 64 and 256.
for depth in 64 256; do
  echo "== cost at depth $depth"
  "$P" bench -m "$M" --spec block -md "$D" --draft-max 8 --spec-only -p $depth -n 8 -r 5 -t 1 2>&1 |
    grep -Ei 'verify|drafter pass|decode step' || true
done
