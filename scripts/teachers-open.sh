#!/usr/bin/env bash
# The teachers of the reproduction table (docs/mopd.md): a 16.9M generalist grown from the shipped open-value
# student (5.37x its parameters, the same function at step 0) and trained on the open-value round's stage-B
# mix, then two domain teachers fine-tuned from it -- structure (extraction + tool calls) and rewriting --
# each exported to Q4 and scored on the open-value dev split through the task layer.
# Usage: scripts/teachers-open.sh WORK_DIR [BUILD_DIR]
#   WORK_DIR  the work directory of scripts/open-values-round-nano.sh (open_mix.{jsonl,shard}, fresh4..6/,
#             open-eval/, tasks/, and sft_open_d/ -- the round's last stage, which the shipped model is)
# Environment: STUDENT (WORK_DIR/sft_open_d), THREADS (2), GEN_STEPS (600: where the generalist's
#   800-step schedule is stopped), DOMAIN_STEPS (150).
# Writes WORK_DIR/teachers/{grown,generalist,t-json,t-rewrite}/ (runs), *.pocket and *.dev-tl.json.
# Resumable: each run continues from its last checkpoint; finished steps are skipped.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
work=${1:?usage: scripts/teachers-open.sh WORK_DIR [BUILD_DIR]}
T=${2:-$root/build/release}/bin/pocket-train
student=${STUDENT:-$work/sft_open_d}
threads=${THREADS:-2}
gen_steps=${GEN_STEPS:-600}
domain_steps=${DOMAIN_STEPS:-150}
out=$work/teachers
mkdir -p "$out"
export OPENBLAS_NUM_THREADS=1

finished() {  # RUN STEP: the run has a checkpoint at STEP
  [ -f "$1/ckpt-$(printf %07d "$2")/meta.json" ]
}
sft() {  # INIT DATA OUT SCHEDULE_STEPS STOP LR MIN_LR WARMUP
  finished "$3" "$5" || "$T" sft --init "$1" --data "$2" --out "$3" --eval-data "$work/open-eval/dev.jsonl" \
    --eval-examples 20 --seq-len 256 --batch 16 --steps "$4" --stop-after "$5" --lr "$6" --min-lr "$7" \
    --warmup "$8" --eval-interval 200 --log-interval 10 --ckpt-interval 50 --threads "$threads" --quiet
}

# Width and depth growth keeps the student's function (zero-initialised writers into the residual stream).
[ -f "$out/grown/latest" ] || "$T" grow --from "$student" --out "$out/grown" --width 384 --heads 12 \
  --kv-heads 4 --ff 1152 --layers 8 --seed 7
# The generalist: the student's own stage-B mix (lr 2e-4: 5e-4 raised the loss of a grown model, docs/mopd.md).
sft "$out/grown" "$work/open_mix.shard" "$out/generalist" 800 "$gen_steps" 2e-4 2e-5 20

# Domain mixes, no prompt of either split's dev or test in any: every rewrite of the stage-B mix and of the
# open-value draws (fresh4..6) plus a third as many other lines of the mix (formats kept); every extraction
# and tool line of the mix plus an eighth as many others.
if [ ! -f "$out/json_mix.jsonl" ]; then
  /usr/bin/python3 - "$work" "$out" <<'PY'
import json, os, random, sys
work, out = sys.argv[1], sys.argv[2]
random.seed(16)
held = set()
for split in ("open-eval/dev", "open-eval/test", "tasks/dev", "tasks/test"):
    for line in open(f"{work}/{split}.jsonl", encoding="utf-8"):
        held.add(json.loads(line)["messages"][0]["content"])
mix = [json.loads(l) for l in open(f"{work}/open_mix.jsonl", encoding="utf-8")]
seen, rewrite = set(), []
for f in ("open_mix.jsonl", "fresh4/train.jsonl", "fresh5/train.jsonl", "fresh6/train.jsonl"):
    for line in open(f"{work}/{f}", encoding="utf-8"):
        r = json.loads(line)
        p = r["messages"][0]["content"]
        if r["task"] == "rewrite" and p not in held and p not in seen:
            seen.add(p)
            rewrite.append(r)
structure = [r for r in mix if r["task"] in ("extract", "tool") and r["messages"][0]["content"] not in held]
rmix = rewrite + random.sample([r for r in mix if r["task"] != "rewrite"], len(rewrite) // 3)
jmix = structure + random.sample([r for r in mix if r["task"] not in ("extract", "tool")], len(structure) // 8)
for name, m in (("rewrite_mix.jsonl", rmix), ("json_mix.jsonl", jmix)):
    random.shuffle(m)
    with open(f"{out}/{name}.tmp", "w", encoding="utf-8") as f:
        for r in m:
            f.write(json.dumps(r, ensure_ascii=False) + "\n")
for name in ("rewrite_mix.jsonl", "json_mix.jsonl"):
    os.replace(f"{out}/{name}.tmp", f"{out}/{name}")
PY
fi
tok=$out/generalist/$(cat "$out/generalist/latest")/tokenizer.bin
for m in json rewrite; do
  [ -f "$out/${m}_mix.shard" ] || "$T" tokenize --chat --tokenizer "$tok" -o "$out/${m}_mix.shard" "$out/${m}_mix.jsonl"
done
sft "$out/generalist" "$out/json_mix.shard" "$out/t-json" "$domain_steps" "$domain_steps" 1e-4 1e-5 10
sft "$out/generalist" "$out/rewrite_mix.shard" "$out/t-rewrite" "$domain_steps" "$domain_steps" 1e-4 1e-5 10

for run in generalist t-json t-rewrite; do
  [ -f "$out/$run.pocket" ] || "$T" export --ckpt "$out/$run" -o "$out/$run.pocket" --type q4_g32 >/dev/null
  [ -f "$out/$run.dev-tl.json" ] || "$T" score-tasks -m "$out/$run.pocket" --data "$work/open-eval/dev.jsonl" \
    --threads "$threads" --task-layer --json "$out/$run.dev-tl.json" >/dev/null
done
