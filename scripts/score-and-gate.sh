#!/usr/bin/env bash
# Scores a candidate default model against the shipped one and applies the regression gate; shared by
# scripts/continue-nano.sh and scripts/extract-round-nano.sh (docs/pocket-nano.md).
# Usage: scripts/score-and-gate.sh WORK_DIR OLD.pocket NEW.pocket TASKS_DIR [BUILD_DIR]
# Writes WORK_DIR/{old,new}-test.{json,txt,pred.jsonl} (free), {old,new}-test-tl.{json,txt} and
# {old,new}-dev-tl.{json,txt} (task layer), new.subset-scores.json (the subset tests/train/nano_model_test.cc
# checks: free answers to the first 200 test prompts) and gate.json. The gate, on the test split through the
# task layer: the macro score must rise and no task x language cell may drop by more than 0.02. Exit 0 either
# way; the verdict is printed. Environment: THREADS (2). Needs jq.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
work=${1:?usage: scripts/score-and-gate.sh WORK_DIR OLD.pocket NEW.pocket TASKS_DIR [BUILD_DIR]}
old=${2:?old model}
new=${3:?new model}
tasks=${4:?tasks directory}
T=${5:-$root/build/release}/bin/pocket-train
threads=${THREADS:-2}
# (--task-layer goes last: the shared flag reader does not know it as a switch and would take the next flag
# as its value.)
for who in old new; do
  m=$old; [ "$who" = new ] && m=$new
  "$T" score-tasks -m "$m" --data "$tasks/test.jsonl" --threads "$threads" --json "$work/$who-test.json" \
    --save-pred "$work/$who-test.pred.jsonl" | tee "$work/$who-test.txt"
  "$T" score-tasks -m "$m" --data "$tasks/test.jsonl" --threads "$threads" \
    --json "$work/$who-test-tl.json" --task-layer | tee "$work/$who-test-tl.txt"
  "$T" score-tasks -m "$m" --data "$tasks/dev.jsonl" --threads "$threads" \
    --json "$work/$who-dev-tl.json" --task-layer | tee "$work/$who-dev-tl.txt"
done
"$T" score-tasks --pred "$work/new-test.pred.jsonl" --data "$tasks/test.jsonl" --limit 200 \
  --json "$work/new.subset-scores.json" >/dev/null
jq -n --slurpfile o "$work/old-test-tl.json" --slurpfile n "$work/new-test-tl.json" '
  ($o[0].cells | map({key: "\(.task)/\(.lang)", value: .score}) | from_entries) as $old
  | [$n[0].cells[] | {cell: "\(.task)/\(.lang)", delta: (.score - $old["\(.task)/\(.lang)"])}] as $d
  | {macro_old: $o[0].macro_score, macro_new: $n[0].macro_score, worst: ($d | min_by(.delta)),
     pass: (($n[0].macro_score > $o[0].macro_score) and ($d | all(.delta >= -0.02)))}' | tee "$work/gate.json"
if jq -e '.pass' "$work/gate.json" >/dev/null; then
  echo "gate: PASS (test, task layer) -> $new may replace $old (then re-run scripts/train-drafter.sh)"
else
  echo "gate: FAIL (test, task layer): keep $old"
fi
