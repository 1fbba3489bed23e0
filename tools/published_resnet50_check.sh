#!/usr/bin/env bash
# ResNet-50 training throughput predicted by `gpucast predict` (step time -> images/s) against the
# single-GPU figures NVIDIA publishes for its PyTorch recipe (DeepLearningExamples,
# PyTorch/Classification/ConvNets/resnet50v1.5/README.md, "Training performance results",
# pytorch-21.03 container, 1 GPU: DGX A100 80GB TF32 938 and mixed precision 2470 img/s; DGX-1 V100
# 16GB FP32 367 and 1200; DGX-1 V100 32GB FP32 356 and 1156). A check on data the predictor never
# fitted, not a fit: docs/features.md, "Roofline step estimate". Each row is the recipe's own
# configuration (PyTorch/Classification/ConvNets/configs.yml, the README's benchmark_training mode):
# batch 256 but FP32 on the DGX-1 (112), channels-last (`memory_format: nhwc`) under AMP only. The
# loader is stated as keeping up (data_on_gpu=1: the recipe's 8-16 loader workers per GPU on a DGX,
# whose CPU time the figures do not give).
# Usage: tools/published_resnet50_check.sh [--jsonl] GPUCAST [PREDICTOR]
#   PREDICTOR: a model file to use; without it, `gpucast train` on its default data.
#   --jsonl: one JSON object a row instead of the Markdown table (keys gpu, precision, batch,
#   stated: the --attr given, or [] for none; predicted_img_s, low_img_s, high_img_s, published_img_s).
set -euo pipefail
jsonl=0
if [ "${1:-}" = --jsonl ]; then jsonl=1; shift; fi
B=${1:?usage: $0 [--jsonl] GPUCAST [PREDICTOR]}
here=$(cd "$(dirname "$0")/.." && pwd)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
P=${2:-}
shown_p="\`gpucast train\` on its default data"
if [ -z "$P" ]; then
  P=$tmp/p.json
  "$B" train --out "$P" --quiet > /dev/null 2>&1
else
  shown_p="$(basename "$P")"
fi
row() {  # gpu precision batch published_img_s stated-attrs...
  local gpu=$1 prec=$2 batch=$3 published=$4
  shift 4
  local amp=() shown="unstated"
  [ "$prec" = AMP ] && amp=(--amp)
  local attrs=()
  for a in "$@"; do attrs+=(--attr "$a"); done
  [ $# -gt 0 ] && shown="$*"
  "$B" predict -p "$P" -m "$here/models/resnet50.onnx" --batch "$batch" --gpu "$gpu" "${amp[@]}" \
    --attr data_on_gpu=1 "${attrs[@]}" --json 2>/dev/null |
    python3 -c 'import json, sys
d = json.load(sys.stdin); s = d["step_ms_interval"]
jsonl, gpu, prec, batch, published, shown = sys.argv[1:7]
b, pub = int(batch), float(published)
ips, lo, hi = b / d["step_ms"] * 1e3, b / s["high"] * 1e3, b / s["low"] * 1e3
if jsonl == "1":
    print(json.dumps({"gpu": gpu, "precision": prec, "batch": b, "stated": sys.argv[7:], "predicted_img_s": ips,
                      "low_img_s": lo, "high_img_s": hi, "published_img_s": pub}))
else:
    print("| %s | %s | %s | %s | %.0f (%.0f-%.0f) | %s | %.2f |" % (gpu, prec, batch, shown, ips, lo, hi, published,
          ips / pub))' "$jsonl" "$gpu" "$prec" "$batch" "$published" "$shown" "$@"
}
[ "$jsonl" = 1 ] || {
echo "ResNet-50 (models/resnet50.onnx), data_on_gpu=1; predictor: $shown_p;"
echo "published: NVIDIA DeepLearningExamples ResNet50 v1.5 for PyTorch, pytorch-21.03, 1 GPU, the recipe's batch and memory format"
echo
echo "| GPU | precision | batch | stated | predicted images/s (80% interval) | published images/s | predicted / published |"
echo "|---|---|---|---|---|---|---|"
}
row A100-80GB FP32 256 938 channels_last=0
row A100-80GB FP32 256 938 channels_last=0 tf32=1
row A100-80GB FP32 256 938 channels_last=0 tf32=0
row A100-80GB AMP 256 2470 channels_last=1
row V100-16GB FP32 112 367 channels_last=0
row V100-16GB AMP 256 1200 channels_last=1
row V100-32GB FP32 112 356 channels_last=0
row V100-32GB AMP 256 1156 channels_last=1
