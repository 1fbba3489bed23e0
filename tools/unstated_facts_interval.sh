#!/usr/bin/env bash
# The utilization and step intervals of ResNet-50 with its memory format and its TF32 setting
# stated and unstated (unstated: the point is the defaults', NCHW and PyTorch's TF32 default; the
# interval the union over the unstated facts' values): docs/predictor.md, "Unstated memory format
# and TF32". Usage: tools/unstated_facts_interval.sh GPUCAST  (the predictor: `train` on its default data)
set -euo pipefail
B=${1:?usage: $0 GPUCAST}
here=$(cd "$(dirname "$0")/.." && pwd)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
"$B" train --out "$tmp/p.json" --quiet > /dev/null 2>&1
row() {  # precision batch gpu attrs...
  local prec=$1 batch=$2 gpu=$3
  shift 3
  local amp=() shown="unstated"
  [ "$prec" = AMP ] && amp=(--amp)
  local attrs=()
  for a in "$@"; do attrs+=(--attr "$a"); done
  [ $# -gt 0 ] && shown="$*"
  "$B" predict -p "$tmp/p.json" -m "$here/models/resnet50.onnx" --batch "$batch" --gpu "$gpu" "${amp[@]}" \
    --attr data_on_gpu=1 "${attrs[@]}" --json 2>/dev/null |
    python3 -c 'import json, sys
d = json.load(sys.stdin); i = d["interval"]; s = d["step_ms_interval"]; u = d["uncertainty"]
unknown = ", ".join(k for k in ("channels_last", "tf32") if u["unknown_" + k]) or "-"
print("| %s | %s | %s | %s | %.1f (%.1f-%.1f) | %.0f (%.0f-%.0f) | %s |" % (*sys.argv[1:5], d["gpu_util"], i["low"],
      i["high"], d["step_ms"], s["low"], s["high"], unknown))' "$prec" "$batch" "$gpu" "$shown"
}
echo "ResNet-50 (models/resnet50.onnx), data_on_gpu=1; predictor: \`gpucast train\` on its default data"
echo
echo "| precision | batch | GPU | stated | utilization (80% interval) | step ms (80% interval) | unknown |"
echo "|---|---|---|---|---|---|---|"
for gpu in A100-80GB RTX3090 T4; do
  row AMP 256 "$gpu"
  row AMP 256 "$gpu" channels_last=0
  row AMP 256 "$gpu" channels_last=1
done
for gpu in A100-80GB H100 RTX3090; do
  row FP32 128 "$gpu"
  row FP32 128 "$gpu" tf32=0
  row FP32 128 "$gpu" tf32=1
  row FP32 128 "$gpu" tf32=1 channels_last=1
done
