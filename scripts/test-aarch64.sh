#!/usr/bin/env bash
# Cross-compiles the quant, kernel and model tests for aarch64 and runs them under qemu-user-static, once on
# a CPU model with SDOT (-cpu max: tables ref, neon, neon-dotprod; the model tests run the best, neon-dotprod)
# and once without (cortex-a53: ref, neon). The model tests need the :arm64 libraries install-deps.sh --all
# adds, and read ../shared/data (stories260K end to end on the NEON kernels).
# Usage: scripts/test-aarch64.sh [build-dir]   (default build/aarch64)
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build=${1:-$root/build/aarch64}
cmake -S "$root/tests/kernels/aarch64" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release \
  -DCMAKE_TOOLCHAIN_FILE="$root/cmake/aarch64-toolchain.cmake" >/dev/null
cmake --build "$build" --target pocket_quant_tests pocket_kernels_tests pocket_model_tests
# Each run takes seconds. qemu-user (Debian 12's 7.2) has been seen to hang, idle, in a multi-threaded guest
# (once in ~30 runs of the kernel tests, which then passed 29 times in a row; natively the same tests never
# hang): a run past the limit fails with its own message and is retried once, so a qemu hang neither stalls
# CI for its whole budget nor passes silently — a second timeout fails the job.
limit=300
# The cross toolchain's C and C++ runtime comes first: with Debian's :arm64 multiarch packages installed
# (the model tests' libraries), the loader from /usr/aarch64-linux-gnu would otherwise pick the multiarch
# libc.so.6 from /lib/aarch64-linux-gnu, a different build than itself — and threads then hang in qemu.
libs="-E LD_LIBRARY_PATH=/usr/aarch64-linux-gnu/lib"
run() {
  local cpu=$1 t=$2 rc
  for attempt in 1 2; do
    rc=0
    timeout "$limit" qemu-aarch64-static -cpu "$cpu" -L /usr/aarch64-linux-gnu $libs "$build/$t" --gtest_brief=1 || rc=$?
    if [ "$rc" -ne 124 ]; then return "$rc"; fi
    echo "!! $t on qemu -cpu $cpu: no result after ${limit}s (attempt $attempt): qemu-user hang, see above" >&2
  done
  return 124
}
status=0
for cpu in max cortex-a53; do
  for t in pocket_quant_tests pocket_kernels_tests pocket_model_tests; do
    echo "== $t on qemu -cpu $cpu"
    if ! run "$cpu" "$t"; then
      status=1
    fi
  done
done
exit $status
