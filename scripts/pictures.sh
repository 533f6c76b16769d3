#!/bin/sh
# docs/cli.md's pictures and profile table, made by the commands it shows:
# the Graphviz drawing of the MobileNetV2 block (--emit=svg), the memory
# timeline of the GPT block (--emit=timeline) and `axc run --profile` of
# LeNet-5.  Usage: scripts/pictures.sh [AXC]   (default build/bin/axc)
set -eu
cd "$(dirname "$0")/.."
AXC=${1:-build/bin/axc}
"$AXC" examples/mobilenetv2_block.ax --emit=svg -o docs/img/mobilenetv2_block.svg
"$AXC" examples/gpt_block.ax --emit=timeline -o docs/img/gpt_block_timeline.svg
"$AXC" run examples/lenet5.ax --seed 0 --profile --bench 200
