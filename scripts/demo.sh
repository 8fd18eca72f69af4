#!/usr/bin/env bash
# The main job: build pocket, write a random-weight model of the pocket-0.3b architecture, run it, and
# print the budget line (package size, peak memory increase, prefill and decode tokens/s).
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh
cmake --preset release > /dev/null
cmake --build --preset release -j"$(nproc)" --target pocket_cli
pocket=build/release/bin/pocket
model=build/pocket-0.3b-${POCKET_DEMO_TYPE:-q4_g32}.pocket
if [ ! -f "$model" ]; then
  "$pocket" synth --arch pocket-0.3b --type "${POCKET_DEMO_TYPE:-q4_g32}" -o "$model"
fi
"$pocket" inspect --brief "$model" | sed -n '1,3p;/^parameters/p'
echo
# Random weights make random text: this run measures size, memory and speed, not quality.
"$pocket" run -m "$model" -p "Once upon a time" -n 32 --temp 0 -c 512 > /dev/null
