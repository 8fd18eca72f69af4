#!/usr/bin/env bash
# Builds every libFuzzer target (CMake preset `fuzz`: clang, ASan + UBSan) into build/fuzz and runs each for
# SECONDS, failing if any finds a crash, leak, sanitizer report, timeout or oversized allocation.
# Usage: scripts/run-fuzzers.sh SECONDS [NAME...]   (SECONDS=0 replays the seed corpora once; NAMEs pick targets)
set -euo pipefail

if [[ $# -lt 1 || ! $1 =~ ^[0-9]+$ ]]; then
  echo "usage: $0 SECONDS [NAME...]" >&2
  exit 2
fi
seconds=$1
shift
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$root"
build=build/fuzz

log=$(mktemp)
trap 'rm -f "$log"' EXIT
if ! cmake --preset fuzz >"$log" 2>&1; then
  cat "$log" >&2
  echo "run-fuzzers: configuring the fuzz preset failed" >&2
  exit 1
fi
cmake --build "$build" --target pocket_fuzzers

if [[ $# -gt 0 ]]; then
  names=("$@")
else
  mapfile -t names < <(grep -v '^$' "$build/fuzz/fuzzers.txt")
fi

export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1:abort_on_error=1}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-halt_on_error=1:print_stacktrace=1}
failed=()
for name in "${names[@]}"; do
  bin=$build/fuzz/${name}_fuzz
  if [[ ! -x $bin ]]; then
    echo "run-fuzzers: no target '$name' (expected $bin)" >&2
    failed+=("$name")
    continue
  fi
  work=$build/corpus/$name             # grows as the fuzzer finds new coverage; the seeds stay untouched
  artifacts=$build/artifacts/$name/    # crashing inputs land here
  mkdir -p "$work" "$artifacts" "$build/logs"
  corpora=("$work")
  [[ -d fuzz/corpus/$name ]] && corpora+=("fuzz/corpus/$name")
  args=(-timeout=10 -rss_limit_mb=2048 -malloc_limit_mb=512 -print_final_stats=1 "-artifact_prefix=$artifacts")
  [[ -f fuzz/$name.dict ]] && args+=("-dict=fuzz/$name.dict")
  if [[ $seconds -eq 0 ]]; then
    args+=(-runs=0)
  else
    args+=("-max_total_time=$seconds")
  fi
  echo "== $name: ${seconds}s (log: $build/logs/$name.log)"
  if "$bin" "${args[@]}" "${corpora[@]}" >"$build/logs/$name.log" 2>&1; then
    grep -E '^stat::number_of_executed_units|^#[0-9]+.*DONE' "$build/logs/$name.log" | tail -2 || true
  else
    tail -n 40 "$build/logs/$name.log" >&2
    echo "run-fuzzers: $name FAILED; reproduce with: $bin $artifacts<crash-file>" >&2
    failed+=("$name")
  fi
done

if [[ ${#failed[@]} -gt 0 ]]; then
  echo "run-fuzzers: failed: ${failed[*]}" >&2
  exit 1
fi
echo "run-fuzzers: all ${#names[@]} target(s) clean"
