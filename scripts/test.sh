#!/usr/bin/env bash
# Configure, build (release) and run every test. The tests that need ../shared/data skip when it is absent.
set -euo pipefail
cd "$(dirname "$0")/.."
cmake --preset release
cmake --build --preset release -j"$(nproc)"
ctest --preset release -j"$(nproc)"
