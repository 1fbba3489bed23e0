#!/usr/bin/env bash
# docs/performance.md's "forward conv+matmul GFLOPs" column: what `gpucast analyze --json` counts
# for the convolution and matmul nodes' forward pass (the quantity torch.profiler counts; 2 FLOPs
# per multiply-add) of the benchmark models at batch 32, from the weight-free graphs in models/
# (bench/run.sh analyses the same graphs with embedded weights; weights do not change a count).
# Usage: tools/docgen/analyze_flops.sh BUILD/gpucast
set -euo pipefail
BIN=$(realpath "${1:?usage: analyze_flops.sh BUILD/gpucast}")
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
echo "| model | graph | forward conv+matmul GFLOPs |"
echo "|---|---|---|"
row() {  # label graph args...
  local label=$1 graph=$2; shift 2
  "$BIN" analyze "$ROOT/$graph" "$@" --json | /usr/bin/python3 -c '
import json, sys
r = json.load(sys.stdin)
f = sum(n["forward_flops"] for n in r["nodes"] if n["category"] in ("convolution", "matmul"))
print("| %s | `%s` | %.3f |" % (sys.argv[1], sys.argv[2], f / 1e9))' "$label" "$graph"
}
row "resnet50 b32" models/torchvision/resnet50.onnx --batch 32
row "vgg16 b32" models/torchvision/vgg16.onnx --batch 32
row "transformer6 b32 seq 128" models/transformer6.onnx --batch 32 --dim seq=128
