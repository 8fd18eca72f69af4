#!/usr/bin/env bash
# ctest wrapper: `pocket serve` driven by the official openai npm client (node/openai_client_test.mjs).
# Skips (77) only when the npm packages are not installed: `npm ci --prefix tests/server/node` (.ci/run does).
set -uo pipefail
pocket=$1
root=$2
here=$root/tests/server/node
if [ ! -d "$here/node_modules/openai" ]; then
  echo "SKIP: $here/node_modules is absent (npm ci --prefix tests/server/node)"
  exit 77
fi
command -v node >/dev/null || { echo "FAILED: node_modules is installed but node is not on PATH"; exit 1; }
exec node "$here/openai_client_test.mjs" "$pocket" "$root/models/pocket-nano-q4.pocket"
