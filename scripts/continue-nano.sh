#!/usr/bin/env bash
# Continued SFT of the shipped pocket-nano (docs/pocket-nano.md, "Continued SFT"): import the Q4 package into
# a training checkpoint, fine-tune it further on the app-task training split, export Q4 as train-nano.sh does,
# and score old and new on the held-out splits, free and through the task layer, with the regression gate
# (through the task layer the test macro must rise and no task x language cell may drop by more than 0.02).
# Usage: scripts/continue-nano.sh WORK_DIR [BUILD_DIR]   (BUILD_DIR: a build with pocket-train)
# Environment: STEPS (default 600), LR (5e-4), MIN_LR (5e-5), THREADS (2), MODEL (models/pocket-nano-q4.pocket),
#   TASKS (a make-tasks output directory; default WORK_DIR/tasks, generated with the recipe's seed).
# Needs jq for the gate. Re-running resumes the SFT run in WORK_DIR/sft (the trainer resumes its checkpoints).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
work=${1:?usage: scripts/continue-nano.sh WORK_DIR [BUILD_DIR]}
build=${2:-$root/build/release}
T=$build/bin/pocket-train
threads=${THREADS:-2}
model=${MODEL:-$root/models/pocket-nano-q4.pocket}
tasks=${TASKS:-$work/tasks}
mkdir -p "$work"
export OPENBLAS_NUM_THREADS=1  # torch's own OpenMP threads do the work; nested BLAS threads oversubscribe

# 1. The shipped package -> a step-0 checkpoint (Q4 weights dequantised exactly as the runtime does), and the
#    task data tokenized with the package's own tokenizer section.
[ -f "$work/base/latest" ] || "$T" import -m "$model" --out "$work/base" --threads "$threads"
[ -f "$tasks/test.jsonl" ] || "$T" make-tasks -o "$tasks" --seed 1 --train 20000 --dev 500 --test 1000
[ -f "$work/tasks.shard" ] || "$T" tokenize --chat --tokenizer "$work/base/ckpt-0000000/tokenizer.bin" \
  -o "$work/tasks.shard" "$tasks/train.jsonl"

# 2. SFT continued at a tenth of the original peak lr (the original ended at 2e-4), cosine to a tenth of that.
"$T" sft --init "$work/base" --data "$work/tasks.shard" --out "$work/sft" --eval-data "$tasks/dev.jsonl" \
  --eval-examples 20 --seq-len 256 --batch 16 --steps "${STEPS:-600}" --lr "${LR:-5e-4}" --min-lr "${MIN_LR:-5e-5}" \
  --warmup 20 --eval-interval 250 --log-interval 10 --ckpt-interval 50 --threads "$threads"

# 3. Export Q4 exactly as train-nano.sh does; score old and new (test free and with the task layer, dev with the
#    task layer) and apply the regression gate (scripts/score-and-gate.sh).
new=$work/pocket-nano-q4_g32.pocket
"$T" export --ckpt "$work/sft" -o "$new" --type q4_g32
THREADS=$threads "$root/scripts/score-and-gate.sh" "$work" "$model" "$new" "$tasks" "$build"
