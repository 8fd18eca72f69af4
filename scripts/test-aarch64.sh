#!/usr/bin/env bash
# Cross-compiles the quant and kernel tests for aarch64 and runs them under qemu-user-static, once on a CPU
# model with SDOT (-cpu max: tables ref, neon, neon-dotprod) and once without (cortex-a53: ref, neon).
# Usage: scripts/test-aarch64.sh [build-dir]   (default build/aarch64)
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build=${1:-$root/build/aarch64}
cmake -S "$root/tests/kernels/aarch64" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release \
  -DCMAKE_TOOLCHAIN_FILE="$root/cmake/aarch64-toolchain.cmake" >/dev/null
cmake --build "$build" --target pocket_quant_tests pocket_kernels_tests
status=0
for cpu in max cortex-a53; do
  for t in pocket_quant_tests pocket_kernels_tests; do
    echo "== $t on qemu -cpu $cpu"
    if ! qemu-aarch64-static -cpu "$cpu" -L /usr/aarch64-linux-gnu "$build/$t" --gtest_brief=1; then
      status=1
    fi
  done
done
exit $status
