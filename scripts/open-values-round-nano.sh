#!/usr/bin/env bash
# The open-value round of pocket-nano (docs/pocket-nano.md, "Open-value round"): SFT on extraction and tool
# calls whose brands, colours, product names, cities, people, queries and destinations are composed fresh
# (make-tasks --open-values), so the model learns to copy what the text says instead of recognising the ~20
# values per field of the lexicon-only data; then export, the usual scores and gate against the shipped model
# (scripts/score-and-gate.sh, lexicon test split), and the open-value test split for both.
# Usage: scripts/open-values-round-nano.sh WORK_DIR [BUILD_DIR]
# Environment: THREADS (2), MODEL (models/pocket-nano-q4.pocket: the model to compare against), BASE (the
#   checkpoint to start from; default: MODEL imported. The shipped round started from the f32 checkpoint of
#   extract-round-nano.sh's last stage, WORK/sft_c, which is what MODEL was quantised from), REPLAY (a
#   make-tasks jsonl of lexicon-value conversations to replay 8,000 lines from; default: a fresh seed-3 draw
#   weighted like extract-round-nano.sh's mix C, which the shipped round replayed from), STEPS (1000, stage B),
#   TASKS (the lexicon eval splits; default WORK_DIR/tasks = make-tasks --seed 1).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
work=${1:?usage: scripts/open-values-round-nano.sh WORK_DIR [BUILD_DIR]}
build=${2:-$root/build/release}
T=$build/bin/pocket-train
threads=${THREADS:-2}
model=${MODEL:-$root/models/pocket-nano-q4.pocket}
tasks=${TASKS:-$work/tasks}
py=/usr/bin/python3
mkdir -p "$work"
export OPENBLAS_NUM_THREADS=1

base=${BASE:-$work/base}
[ -n "${BASE:-}" ] || [ -f "$work/base/latest" ] || "$T" import -m "$model" --out "$work/base" --threads "$threads"
[ -f "$tasks/test.jsonl" ] || "$T" make-tasks -o "$tasks" --seed 1 --train 20000 --dev 500 --test 1000
[ -f "$work/open-eval/test.jsonl" ] || "$T" make-tasks -o "$work/open-eval" --seed 21 --open-values 1 --train 0 --dev 500 --test 1000
[ -f "$work/fresh4/train.jsonl" ] || "$T" make-tasks -o "$work/fresh4" --seed 4 --open-values 0.7 --train 60000 --dev 10 --test 10
for s in 5 6; do
  [ -f "$work/fresh$s/train.jsonl" ] || "$T" make-tasks -o "$work/fresh$s" --seed $s --open-values 0.7 --train 150000 --dev 10 --test 10
done
replay=${REPLAY:-$work/replay.jsonl}
if [ -z "${REPLAY:-}" ] && [ ! -f "$replay" ]; then
  [ -f "$work/fresh3/train.jsonl" ] || "$T" make-tasks -o "$work/fresh3" --seed 3 --train 100000 --dev 10 --test 10
  "$py" - "$work/fresh3/train.jsonl" "$replay" <<'PY'
import json, random, sys
by = {}
for line in open(sys.argv[1], encoding="utf-8"):
    r = json.loads(line)
    by.setdefault(r["task"], []).append(r)
random.seed(2)
c = []
for k, q in (("intent", 10000), ("route", 4000), ("extract", 6000), ("tool", 6000), ("rewrite", 4000)):
    c += random.sample(by[k], q)
random.shuffle(c)
with open(sys.argv[2], "w", encoding="utf-8") as f:
    for r in c:
        f.write(json.dumps(r, ensure_ascii=False) + "\n")
PY
fi

# The three stages' mixes, no prompt of either eval split's dev or test in any:
# B = every open extraction example of seeds 4 and 5, the other tasks from seed 6 (tool arguments open),
#     8,000 replayed lexicon-value lines;
# C = the replayed lexicon lines + 8,000 open extraction + 6,000 open tool lines of B (consolidation, added when
#     B's candidate lost lexicon-split cells);
# D = rewrite-heavy: 9,000 rewrite, 3,000 intent, 2,000 route, 4,000 extraction and 3,000 tool (seed 6, open
#     values) + 3,000 lexicon extraction/tool lines of the replay (added when C's candidate lost rewrite/zh).
"$py" - "$tasks" "$work" "$replay" <<'PY'
import json, random, sys
from collections import Counter
tasks, work, replay = sys.argv[1:4]
def lines(path):
    return [json.loads(l) for l in open(path, encoding="utf-8")]
def prompt(r):
    return r["messages"][0]["content"]
def write(name, rows):
    with open(f"{work}/{name}", "w", encoding="utf-8") as f:
        for r in rows:
            f.write(json.dumps(r, ensure_ascii=False) + "\n")
    print(name, len(rows), "conversations:", dict(Counter(r["task"] for r in rows)))
held = {prompt(r) for f in (f"{tasks}/dev.jsonl", f"{tasks}/test.jsonl", f"{work}/open-eval/dev.jsonl",
                            f"{work}/open-eval/test.jsonl") for r in lines(f)}
seed6 = [r for r in lines(f"{work}/fresh6/train.jsonl") if prompt(r) not in held]
seen, by = set(held), {}
for rows, keep in ((lines(f"{work}/fresh4/train.jsonl"), {"extract"}), (lines(f"{work}/fresh5/train.jsonl"), {"extract"}),
                   (seed6, {"intent", "rewrite", "tool", "route"})):
    for r in rows:
        if r["task"] in keep and prompt(r) not in seen:
            seen.add(prompt(r))
            by.setdefault(r["task"], []).append(r)
c = [r for r in lines(replay) if prompt(r) not in held]
random.seed(6)
mb = by["extract"][:] + random.sample(by["tool"], 24000) + random.sample(by["rewrite"], 8000) + \
     random.sample(by["intent"], 4000) + random.sample(by["route"], 3000) + random.sample(c, 8000)
random.shuffle(mb)
write("open_mix.jsonl", mb)
random.seed(7)
mc = c + random.sample([r for r in mb if r["task"] == "extract"], 8000) + \
     random.sample([r for r in mb if r["task"] == "tool"], 6000)
random.shuffle(mc)
write("open_c.jsonl", mc)
by6 = {}
for r in seed6:
    by6.setdefault(r["task"], []).append(r)
random.seed(8)
md = random.sample(by6["rewrite"], 9000) + random.sample(by6["intent"], 3000) + random.sample(by6["route"], 2000) + \
     random.sample(by6["extract"], 4000) + random.sample(by6["tool"], 3000) + \
     random.sample([r for r in c if r["task"] in ("extract", "tool")], 3000)
random.shuffle(md)
write("open_d.jsonl", md)
PY
for m in mix c d; do
  [ -f "$work/open_$m.shard" ] || "$T" tokenize --chat --tokenizer "$base/$(cat "$base/latest")/tokenizer.bin" \
    -o "$work/open_$m.shard" "$work/open_$m.jsonl"
done

sft() {  # INIT DATA OUT STEPS WARMUP LR MIN_LR
  "$T" sft --init "$1" --data "$2" --out "$3" --eval-data "$work/open-eval/dev.jsonl" --eval-examples 20 \
    --seq-len 256 --batch 16 --steps "$4" --lr "$6" --min-lr "$7" --warmup "$5" --eval-interval "$4" \
    --log-interval 20 --ckpt-interval 100 --threads "$threads"
}
sft "$base" "$work/open_mix.shard" "$work/sft_open_b" "${STEPS:-1000}" 20 6e-4 6e-5
sft "$work/sft_open_b" "$work/open_c.shard" "$work/sft_open_c" 250 10 3e-4 3e-5
sft "$work/sft_open_c" "$work/open_d.shard" "$work/sft_open_d" 150 10 2e-4 2e-5

new=$work/pocket-nano-q4_g32.pocket
"$T" export --ckpt "$work/sft_open_d" -o "$new" --type q4_g32
THREADS=$threads "$root/scripts/score-and-gate.sh" "$work" "$model" "$new" "$tasks" "$build"
# The open-value test split, free and through the task layer, for both models.
for who in old new; do
  m=$model; [ "$who" = new ] && m=$new
  "$T" score-tasks -m "$m" --data "$work/open-eval/test.jsonl" --threads "$threads" --json "$work/$who-open-test.json" \
    | tee "$work/$who-open-test.txt"
  "$T" score-tasks -m "$m" --data "$work/open-eval/test.jsonl" --threads "$threads" \
    --json "$work/$who-open-test-tl.json" --task-layer | tee "$work/$who-open-test-tl.txt"
done
