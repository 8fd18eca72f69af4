#!/usr/bin/env bash
# The block drafter for the shipped pocket-nano (docs/training.md, "Block drafter"), end to end: the app-task
# splits, the target's own greedy outputs over every prompt (the runtime, temperature 0), training (resumable:
# re-running continues WORK_DIR/run), held-out tau per task for the f32 and quantised packages on the test
# split, and the shipped package.
# Usage: scripts/train-drafter.sh WORK_DIR [BUILD_DIR]   (BUILD_DIR: a build with pocket-train)
# Environment: STEPS (3000), LR (2e-3), THREADS (1), LAYERS (3), MODEL
#   (models/pocket-nano-q4.pocket), TASKS (a make-tasks output directory; default WORK_DIR/tasks), INIT (a
#   drafter package to warm-start from, e.g. the shipped drafter of the previous version of the model: the
#   same shape, only the target's fingerprint differs; the shipped drafter was trained with INIT set, see
#   docs/speculative.md).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
work=${1:?usage: scripts/train-drafter.sh WORK_DIR [BUILD_DIR]}
build=${2:-$root/build/release}
T=$build/bin/pocket-train
threads=${THREADS:-1}
model=${MODEL:-$root/models/pocket-nano-q4.pocket}
tasks=${TASKS:-$work/tasks}
mkdir -p "$work"
# One torch thread, passive OpenMP waits: on a shared 2-core machine spinning threads only burn the others' time.
export OMP_WAIT_POLICY=passive OPENBLAS_NUM_THREADS=1

# 1. Task prompts and the target's greedy answers to them (stop token included), as the runtime emits them.
[ -f "$tasks/test.jsonl" ] || "$T" make-tasks -o "$tasks" --seed 1 --train 20000 --dev 500 --test 1000
for s in train dev test; do
  [ -f "$work/$s.bin" ] || "$T" drafter-data -m "$model" --tasks "$tasks/$s.jsonl" -o "$work/$s.bin" --max-tokens 128
done

# 2. Three drafter blocks (initialised from the target's last three layers) over the target's layers 1 and 3,
#    blocks of 8, position weights exp(-(r-1)/4); dev tau every 500 steps.
resume=""; [ -f "$work/run/latest" ] && resume="--resume"
init=""; [ -n "${INIT:-}" ] && [ -z "$resume" ] && init="--init $INIT"
"$T" drafter --target "$model" --data "$work/train.bin" --eval-data "$work/dev.bin" -o "$work/run" \
  --layers "${LAYERS:-3}" --taps 1,3 --block 8 --steps "${STEPS:-3000}" --lr "${LR:-2e-3}" --warmup 100 --gamma 4 \
  --seqs 16 --anchors 12 --eval-every 500 --eval-seqs 150 --ckpt-every 250 --log-every 50 \
  --threads "$threads" --export q8,q4_g32 $resume $init

# 3. Held-out tau per task on the test split, f32 and quantised (the torch estimate given the torch target's
#    hidden states).
for t in f32 q8 q4_g32; do
  echo "== drafter-$t on test"
  "$T" drafter --eval-package "$work/run/drafter-$t.pocket" --target "$model" --data "$work/test.bin" \
    --threads "$threads" --json "$work/test-$t.json"
done

# 4. The shipped package, 4-bit (the exporter writes q4_g32 in the kernels' interleaved q4_g32r8 layout, as
#    `pocket quantize` does; q8 keeps ~0.05 more tokens per pass but its matmul has no VNNI kernel, so its pass
#    is ~2.3x slower: docs/speculative.md, "Block drafter: measured"), and its small logs.
cp "$work/run/drafter-q4_g32.pocket" "$root/models/pocket-nano-drafter.pocket"
mkdir -p "$root/models/pocket-nano-drafter-logs"
cp "$work/run/log.jsonl" "$work/run/eval.jsonl" "$work"/test-*.json "$root/models/pocket-nano-drafter-logs/"
[ -f "$work/run/loss.png" ] && cp "$work/run/loss.png" "$root/models/pocket-nano-drafter-logs/"
echo "wrote $root/models/pocket-nano-drafter.pocket"
