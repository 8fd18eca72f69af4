#!/usr/bin/env bash
# The reproduction table of docs/mopd.md: the same student, the same budget of training tokens, three ways
# to spend it -- more SFT, on-policy distillation from one generalist teacher, MOPD with teachers routed per
# task -- each with several seeds, scored on the held-out test split (free generation and through the task
# layer), with the teachers' own scores beside them.
#
# Usage: scripts/mopd-table.sh WORK_DIR STUDENT_RUN TASKS_DIR PROMPTS.jsonl SFT.shard [BUILD_DIR]
#   STUDENT_RUN   the student's training checkpoint (a run directory)
#   TASKS_DIR     make-tasks output with test.jsonl (held out: PROMPTS and SFT must not contain its prompts)
#   PROMPTS.jsonl make-tasks lines whose prompts MOPD samples answers to
#   SFT.shard     the same conversations tokenised for the SFT arm (pocket-train tokenize --chat)
# Environment:
#   GENERALIST=RUN          the single teacher (required)
#   ROUTED="TASK=RUN ..."   the routed teachers (required; tasks without one go to GENERALIST)
#   SEEDS ("1 2 3"; "" = score the student and teachers only), STEPS (60, MOPD steps; the SFT arm gets as many 16 x 256-token steps as the MOPD runs
#   put through the student, rounded up), BATCH (16 prompts), LR (1e-4, cosine to LR/10), MAX_NEW (96),
#   TEMPERATURE (1), FKL (0), THREADS (2).
# Writes WORK_DIR/{sft,one,routed}-sSEED/ (runs), *.pocket (Q4 exports), *.test{,-tl}.json (scores), the
# teachers' and the student's scores, and table.md / table.json (mean and sample standard deviation over the
# seeds, per task x language cell, free and task layer). Resumable: finished steps are skipped.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
work=${1:?usage: scripts/mopd-table.sh WORK_DIR STUDENT_RUN TASKS_DIR PROMPTS.jsonl SFT.shard [BUILD_DIR]}
student=${2:?student run}
tasks=${3:?tasks directory}
prompts=${4:?prompts jsonl}
shard=${5:?sft shard}
T=${6:-$root/build/release}/bin/pocket-train
: "${GENERALIST:?set GENERALIST=RUN (the single teacher)}"
: "${ROUTED:?set ROUTED=\"TASK=RUN ...\" (the routed teachers)}"
seeds=${SEEDS-1 2 3}
steps=${STEPS:-60}
batch=${BATCH:-16}
lr=${LR:-1e-4}
min_lr=$(awk "BEGIN { print $lr / 10 }")
max_new=${MAX_NEW:-96}
temp=${TEMPERATURE:-1}
fkl=${FKL:-0}
threads=${THREADS:-2}
mkdir -p "$work"
export OPENBLAS_NUM_THREADS=1

score() {  # NAME RUN: Q4 export + free and task-layer scores on the test split
  local name=$1 run=$2
  [ -f "$work/$name.pocket" ] || "$T" export --ckpt "$run" -o "$work/$name.pocket" --type q4_g32 >/dev/null
  [ -f "$work/$name.test.json" ] || "$T" score-tasks -m "$work/$name.pocket" --data "$tasks/test.jsonl" \
    --threads "$threads" --json "$work/$name.test.json" >/dev/null
  [ -f "$work/$name.test-tl.json" ] || "$T" score-tasks -m "$work/$name.pocket" --data "$tasks/test.jsonl" \
    --threads "$threads" --json "$work/$name.test-tl.json" --task-layer >/dev/null
}

routed_flags=()
for t in $ROUTED; do routed_flags+=(--teacher "$t"); done
score student "$student"
# Teachers are named after their run directory (one named for several tasks is scored once).
score "teacher-$(basename "$GENERALIST")" "$GENERALIST"
for t in $ROUTED; do score "teacher-$(basename "${t#*=}")" "${t#*=}"; done
# SEEDS="" scores the student and the teachers only (then several seeds can run side by side, one process
# each with SEEDS=N THREADS=1, and a last run with all the seeds writes the table from what they left).
[ -n "${seeds// /}" ] || exit 0

mopd() {  # OUT SEED TEACHER-FLAGS...
  local out=$1 seed=$2
  shift 2
  "$T" mopd --student "$student" "$@" --teacher generalist="$GENERALIST" --data "$prompts" --out "$out" \
    --steps "$steps" --batch "$batch" --lr "$lr" --min-lr "$min_lr" --warmup 5 --max-new "$max_new" \
    --temperature "$temp" --fkl "$fkl" --seed "$seed" --log-interval 5 --ckpt-interval "$steps" \
    --eval-interval "$steps" --eval-rows 32 --threads "$threads" --quiet
}
for s in $seeds; do
  [ -f "$work/one-s$s/ckpt-$(printf %07d "$steps")/meta.json" ] || mopd "$work/one-s$s" "$s"
  [ -f "$work/routed-s$s/ckpt-$(printf %07d "$steps")/meta.json" ] || mopd "$work/routed-s$s" "$s" "${routed_flags[@]}"
  # The SFT arm: as many training tokens as the routed MOPD run put through the student.
  tokens=$(jq -s 'map(select(.tokens != null)) | last | .tokens' "$work/routed-s$s/log.jsonl")
  sft_steps=$(( (tokens + 16 * 256 - 1) / (16 * 256) ))
  [ -f "$work/sft-s$s/latest" ] || "$T" sft --init "$student" --data "$shard" --out "$work/sft-s$s" --seq-len 256 \
    --batch 16 --steps "$sft_steps" --lr "$lr" --min-lr "$min_lr" --warmup 5 --seed "$s" --log-interval 5 \
    --ckpt-interval "$sft_steps" --eval-interval "$sft_steps" --threads "$threads" --quiet
  for arm in sft one routed; do score "$arm-s$s" "$work/$arm-s$s"; done
done

/usr/bin/python3 - "$work" "$seeds" <<'PY'
import json, os, statistics, sys
work, seeds = sys.argv[1], sys.argv[2].split()
def cells(name, kind):
    j = json.load(open(os.path.join(work, f"{name}.{kind}.json")))
    out = {f"{c['task']}/{c['lang']}": c["score"] for c in j["cells"]}
    out["macro"] = j["macro_score"]
    return out
def tokens(run):
    recs = [json.loads(l) for l in open(os.path.join(work, run, "log.jsonl")) if '"tokens"' in l]
    return recs[-1]["tokens"] if recs else None
teachers = sorted(f[:-len(".test.json")] for f in os.listdir(work) if f.startswith("teacher-") and f.endswith(".test.json"))
table = {"seeds": seeds, "rows": {}}
for kind in ("test", "test-tl"):
    rows = {"student (start)": {k: [v] for k, v in cells("student", kind).items()}}
    for t in teachers:
        rows[t] = {k: [v] for k, v in cells(t, kind).items()}
    for arm in ("sft", "one", "routed"):
        per = [cells(f"{arm}-s{s}", kind) for s in seeds]
        rows[arm] = {k: [p[k] for p in per] for k in per[0]}
    table["rows"][kind] = rows
table["tokens"] = {f"{arm}-s{s}": tokens(f"{arm}-s{s}") for arm in ("sft", "one", "routed") for s in seeds}
json.dump(table, open(os.path.join(work, "table.json"), "w"), indent=1)
def fmt(v):
    if len(v) == 1:
        return f"{v[0]:.3f}"
    return f"{statistics.mean(v):.3f} ± {statistics.stdev(v):.3f}"
names = {"sft": "SFT only", "one": "one generalist teacher", "routed": "MOPD (routed teachers)"}
with open(os.path.join(work, "table.md"), "w") as f:
    for kind, title in (("test", "free generation"), ("test-tl", "through the task layer")):
        rows = table["rows"][kind]
        keys = list(next(iter(rows.values())).keys())
        f.write(f"\n{title} (test split; mean ± sample std over seeds {' '.join(seeds)})\n\n")
        f.write("| model | " + " | ".join(keys) + " |\n|---|" + "---:|" * len(keys) + "\n")
        for r, vals in rows.items():
            f.write(f"| {names.get(r, r)} | " + " | ".join(fmt(vals[k]) for k in keys) + " |\n")
    f.write("\ntraining tokens through the student: " +
            ", ".join(f"{k} {v}" for k, v in table["tokens"].items()) + "\n")
print(open(os.path.join(work, "table.md")).read())
PY
