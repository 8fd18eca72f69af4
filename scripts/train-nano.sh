#!/usr/bin/env bash
# pocket-nano's recipe, end to end: corpus -> tokenizer -> task data -> pretrain -> SFT -> export (F32, Q8, Q4)
# -> task scores. This is how models/pocket-nano-q4.pocket was made (docs/pocket-nano.md has the logs and
# the timings on the 2-core development machine: about 50 minutes of training).
# Usage: scripts/train-nano.sh WORK_DIR [BUILD_DIR]   (BUILD_DIR: a build with pocket and pocket-train)
# Environment: PRETRAIN_STEPS (default 700), SFT_STEPS (default 520), THREADS (default 2).
# The shipped package then had 600 more SFT steps: scripts/continue-nano.sh (docs/pocket-nano.md, "Continued SFT").
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
work=${1:?usage: scripts/train-nano.sh WORK_DIR [BUILD_DIR]}
build=${2:-$root/build/release}
T=$build/bin/pocket-train
P=$build/bin/pocket
threads=${THREADS:-2}
mkdir -p "$work"
export OPENBLAS_NUM_THREADS=1  # torch's own OpenMP threads do the work; nested BLAS threads oversubscribe

# 1. Data: the bilingual corpus (installs its Debian/npm sources), the tokenizer, the task splits.
[ -f "$work/corpus/manifest.json" ] || bash "$root/scripts/build-corpus.sh" "$work/corpus"
[ -f "$work/tokenizer.bin" ] || "$T" train-tokenizer --in "$work/corpus/train.txt" --vocab 8192 -o "$work/tokenizer.bin"
[ -f "$work/tasks/test.jsonl" ] || "$T" make-tasks -o "$work/tasks" --seed 1 --train 20000 --dev 500 --test 1000
"$T" tokenize --tokenizer "$work/tokenizer.bin" -o "$work/corpus.shard" "$work/corpus/train.txt"
"$T" tokenize --chat --tokenizer "$work/tokenizer.bin" -o "$work/tasks.shard" "$work/tasks/train.jsonl"

# 2. Pretraining on the corpus: 3.15M parameters (8,192-token tied vocabulary, width 192, 4 layers, GQA 6/2).
"$T" pretrain --data "$work/corpus.shard" --tokenizer "$work/tokenizer.bin" --out "$work/pre" \
  --vocab 8192 --n-embd 192 --n-layers 4 --n-heads 6 --n-kv-heads 2 --n-ff 512 --ctx 512 --rope neox \
  --seq-len 256 --batch 16 --steps "${PRETRAIN_STEPS:-700}" --lr 3e-3 --min-lr 3e-4 --warmup 30 \
  --eval-interval 100 --log-interval 20 --ckpt-interval 100 --threads "$threads"

# 3. SFT on the five app tasks (loss on the answers only).
"$T" sft --init "$work/pre" --data "$work/tasks.shard" --out "$work/sft" --eval-data "$work/tasks/dev.jsonl" \
  --eval-examples 40 --seq-len 256 --batch 16 --steps "${SFT_STEPS:-520}" --lr 2e-3 --min-lr 2e-4 --warmup 20 \
  --eval-interval 160 --log-interval 20 --ckpt-interval 80 --threads "$threads"

# 4. Export and score every precision on the held-out test split.
for t in f32 q8_g32 q4_g32; do
  "$T" export --ckpt "$work/sft" -o "$work/pocket-nano-$t.pocket" --type "$t"
  "$T" score-tasks -m "$work/pocket-nano-$t.pocket" --data "$work/tasks/test.jsonl" --json "$work/scores-$t.json" \
    | tee "$work/scores-$t.txt"
done
"$P" inspect "$work/pocket-nano-q4_g32.pocket" | head -12
