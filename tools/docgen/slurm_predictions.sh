#!/usr/bin/env bash
# docs/slurm.md's example predictions: the jobs its text cites, predicted by `gpucast predict` with a
# predictor from `gpucast train` with its defaults on the shared measurements (what the live test
# trains), and the share the plugin gives each (integrations/slurm/job_submit.lua, size_job):
# by utilization, ceil(U x 8 / 100) shards of 8, at least 1 (memory = none); with memory = high
# (the default) at least ceil(H x 8 / C) for the memory interval's high end H of the GPU's C MiB,
# and "refused" where H > C. Prints a markdown table.
# Usage: tools/docgen/slurm_predictions.sh BUILD/gpucast
set -euo pipefail
BIN=$(realpath "${1:?usage: slurm_predictions.sh BUILD/gpucast}")
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
T=$(mktemp -d /tmp/gpucast-slurmdoc.XXXXXX)
trap 'rm -rf "$T"' EXIT
cd "$ROOT/models"
if [ -n "${GPUCAST_TEST_PREDICTOR:-}" ]; then  # make test's predictor: the same train with its defaults
  cp "$GPUCAST_TEST_PREDICTOR" "$T/p.json"
else
  "$BIN" train --quiet --out "$T/p.json" >/dev/null
fi
echo "| job (\`gpucast predict\` arguments) | GPU | predicted | interval | memory high end / GPU (MiB) | shards of 8, \`memory = none\` | shards of 8 (default) |"
echo "|---|---|---|---|---|---|---|"
row() {  # gpu args...
  local gpu=$1; shift
  "$BIN" predict --quiet --predictor "$T/p.json" --gpu "$gpu" "$@" --json | /usr/bin/python3 -c '
import json, math, sys
r = json.load(sys.stdin)
u, i = r["gpu_util"], r["interval"]
n = min(8, max(1, math.ceil(u * 8 / 100 - 1e-9)))
h, c = r["gpu_mem_interval"]["high"], r["gpu_mem_capacity_mib"]
m = min(8, max(1, math.ceil(h * 8 / c - 1e-9)))
both = "refused" if h > c else str(max(n, m))
gpu, lo, hi = r["gpu"], i["low"], i["high"]
print(f"| `{sys.argv[1]}` | {gpu} | {u:.1f}% | {lo:.1f}-{hi:.1f}% | {h:,.0f} / {c:,.0f} | {n} | {both} |")' "$*"
}
row RTX3090 --model resnet50.onnx --batch 1
row RTX3090 --model resnet50.onnx --batch 64
row RTX3090 --model resnet50.onnx --batch 16
row H100 --model resnet50.onnx --batch 16
row RTX3090 --model pointnet.onnx --batch 32
row RTX3090 --model pointnet.onnx --batch 8
row RTX3090 --model pointnet.onnx --batch 512
row H100 --model pointnet.onnx --batch 512
row RTX3090 --model dcgan_generator.onnx --model dcgan_discriminator.onnx --model dcgan_discriminator.onnx --model dcgan_discriminator.onnx --batch 64
