#!/usr/bin/env bash
# The utilization and step intervals of an AMP convolution network with its memory format stated
# (channels_last=0: NCHW, cuDNN's transposes counted; 1: channels-last) and unstated (the point
# NCHW's, the interval the union of both): docs/predictor.md, "Unstated memory format".
# Usage: tools/memory_format_interval.sh GPUCAST  (the predictor: `train` on its default data)
set -euo pipefail
B=${1:?usage: $0 GPUCAST}
here=$(cd "$(dirname "$0")/.." && pwd)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
"$B" train --out "$tmp/p.json" --quiet > /dev/null 2>&1
echo "ResNet-50 (models/resnet50.onnx), batch 256, --amp, data_on_gpu=1; predictor: \`gpucast train\` on its default data"
echo
echo "| GPU | channels_last | utilization (80% interval) | step ms (80% interval) |"
echo "|---|---|---|---|"
for gpu in A100-80GB RTX3090 T4; do
  for cl in unstated 0 1; do
    attr=()
    [ "$cl" = unstated ] || attr=(--attr "channels_last=$cl")
    "$B" predict -p "$tmp/p.json" -m "$here/models/resnet50.onnx" --batch 256 --gpu "$gpu" --amp \
      --attr data_on_gpu=1 "${attr[@]}" --json 2>/dev/null |
      python3 -c 'import json, sys
d = json.load(sys.stdin); i = d["interval"]; s = d["step_ms_interval"]
print("| %s | %s | %.1f (%.1f-%.1f) | %.0f (%.0f-%.0f) |" % (sys.argv[1], sys.argv[2], d["gpu_util"], i["low"], i["high"],
      d["step_ms"], s["low"], s["high"]))' "$gpu" "$cl"
  done
done
