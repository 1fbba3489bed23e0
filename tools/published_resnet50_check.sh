#!/usr/bin/env bash
# ResNet-50 training throughput predicted by `gpucast predict` (step time -> images/s) against the
# single-GPU figures NVIDIA publishes for its PyTorch recipe (DeepLearningExamples,
# PyTorch/Classification/ConvNets/resnet50v1.5/README.md, "Training performance results",
# pytorch-21.03 container: DGX A100 80GB TF32 938 and mixed precision 2470 img/s; DGX-1 V100 16GB
# FP32 367 and mixed precision 1200 img/s). A check on data the predictor never fitted, not a fit:
# docs/features.md, "Roofline step estimate". The published runs feed the GPU with DALI (data
# on the GPU here) in NCHW; the recipes' own batch sizes are not restated here: the prediction is
# at batch 256 (128 for the V100 in FP32, which 16 GB does not hold at 256).
# Usage: tools/published_resnet50_check.sh GPUCAST  (the predictor: `train` on its default data)
set -euo pipefail
B=${1:?usage: $0 GPUCAST}
here=$(cd "$(dirname "$0")/.." && pwd)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
"$B" train --out "$tmp/p.json" --quiet > /dev/null 2>&1
row() {  # gpu precision batch published_img_s stated-attrs...
  local gpu=$1 prec=$2 batch=$3 published=$4
  shift 4
  local amp=() shown="unstated"
  [ "$prec" = AMP ] && amp=(--amp)
  local attrs=()
  for a in "$@"; do attrs+=(--attr "$a"); done
  [ $# -gt 0 ] && shown="$*"
  "$B" predict -p "$tmp/p.json" -m "$here/models/resnet50.onnx" --batch "$batch" --gpu "$gpu" "${amp[@]}" \
    --attr data_on_gpu=1 --attr channels_last=0 "${attrs[@]}" --json 2>/dev/null |
    python3 -c 'import json, sys
d = json.load(sys.stdin); s = d["step_ms_interval"]
gpu, prec, batch, published, shown = sys.argv[1:6]
b, pub = int(batch), float(published)
ips = b / d["step_ms"] * 1e3
print("| %s | %s | %s | %s | %.0f (%.0f-%.0f) | %s | %.2f |" % (gpu, prec, batch, shown, ips, b / s["high"] * 1e3,
      b / s["low"] * 1e3, published, ips / pub))' "$gpu" "$prec" "$batch" "$published" "$shown"
}
echo "ResNet-50 (models/resnet50.onnx), data_on_gpu=1, channels_last=0; predictor: \`gpucast train\` on its default data;"
echo "published: NVIDIA DeepLearningExamples ResNet50 v1.5 for PyTorch, pytorch-21.03, 1 GPU"
echo
echo "| GPU | precision | batch | tf32 | predicted images/s (80% interval) | published images/s | predicted / published |"
echo "|---|---|---|---|---|---|---|"
row A100-80GB FP32 256 938
row A100-80GB FP32 256 938 tf32=1
row A100-80GB FP32 256 938 tf32=0
row A100-80GB AMP 256 2470
row V100-16GB FP32 128 367
row V100-16GB AMP 256 1200
