#!/usr/bin/env bash
# The main job: build pocket, run pocket-nano (the default model, models/pocket-nano-q4.pocket) on an app
# task — extracting the fields of a Chinese product description into JSON through the task layer (the JSON
# is valid against schemas/product.schema.json by construction and every value is a span of the text) —
# and print the budget line (package size, peak memory increase, prefill and decode tokens/s, mask cost).
# POCKET_DEMO_PROMPT overrides the task text; POCKET_DEMO_ARCH=pocket-0.3b instead writes and runs a
# random-weight model of the pocket-0.3b architecture (size/speed only: random weights make random text).
# POCKET_DEMO_SPEC=1 instead widens pocket-nano and its trained block drafter to pocket-0.3b's shape (`pocket
# synth --widen`: pocket-0.3b's cost, pocket-nano's answers) and extracts the same text token by token, plainly
# and with the block drafter (lossless speculative decoding), so the two budget lines show the drafter's gain.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh
cmake --preset release > /dev/null
cmake --build --preset release -j"$(nproc)" --target pocket_cli
pocket=build/release/bin/pocket
if [ -n "${POCKET_DEMO_ARCH:-}" ]; then
  model=build/${POCKET_DEMO_ARCH}-q4_g32.pocket
  [ -f "$model" ] || "$pocket" synth --arch "$POCKET_DEMO_ARCH" --type q4_g32 -o "$model"
  "$pocket" inspect --brief "$model" | sed -n '1,3p;/^parameters/p'
  "$pocket" run -m "$model" -p "Once upon a time" -n 32 --temp 0 -c 512 > /dev/null
  exit 0
fi
model=models/pocket-nano-q4.pocket
if [ -n "${POCKET_DEMO_SPEC:-}" ]; then
  wide=build/pocket-nano-widened-pocket-0.3b.pocket
  drafter=build/pocket-nano-drafter-widened-pocket-0.3b.pocket
  [ -f "$wide" ] && [ -f "$drafter" ] || "$pocket" synth --arch pocket-0.3b --widen "$model" --type q4_g32 -o "$wide" \
    --widen-drafter models/pocket-nano-drafter.pocket --drafter-output "$drafter"
  text=${POCKET_DEMO_PROMPT:-'墨绿色双肩包，品牌山野，尺码：大号，￥329，面料尼龙。支持七天无理由退货。'}
  echo "text: $text"
  err=$(mktemp)
  for spec in "" "--spec block --model-draft $drafter --no-spec-fallback"; do
    echo
    echo "== pocket task extract --beams 1 (token by token: the value search is not speculative)${spec:+ --spec block}"
    # shellcheck disable=SC2086
    "$pocket" task extract -m "$wide" --schema schemas/product.schema.json -p "$text" -n 96 --beams 1 -t 1 \
      --compact $spec 2> "$err" | sed 's/,"confidence":.*/}/'
    cat "$err"
  done
  rm -f "$err"
  exit 0
fi
"$pocket" inspect --brief "$model" | sed -n '1,3p;/^parameters/p'
echo
text=${POCKET_DEMO_PROMPT:-'墨绿色双肩包，品牌山野，尺码：大号，￥329，面料尼龙。支持七天无理由退货。'}
schema=schemas/product.schema.json
echo "text:   $text"
echo "schema ($schema):"; cat "$schema"
echo
# One user turn in the model's chat template, output constrained to the schema and grounded in the text; the
# structure greedy, each value by a 2-beam search (the task layer's default, docs/tasks.md "Beam search").
"$pocket" task extract -m "$model" --schema "$schema" -p "$text" -n 96
