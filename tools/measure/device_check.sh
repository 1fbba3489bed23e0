#!/usr/bin/env bash
# gpucast's prepared measurement for a lent GPU machine (the `device` tool) or any idle NVIDIA GPU:
# the configurations of tools/measure/device_plan.txt, each trained alone with tools/measure/measure.py
# (nvidia-smi sampled ~5 Hz; step time, peak memory, PyTorch's allocator peaks, repeats), inside a
# time budget, with what made the numbers (GPU, driver, PyTorch, CUDA, cuDNN, CPU, the harness's
# sha256) in environment.json and `nvidia-smi -q` beside it. At most 6 files, all in OUT.
#
# usage: [GPUCAST_COMMIT=SHA] [BUDGET=360] [SECONDS_PER_RUN=12] [PYTHON=python3] \
#        bash tools/measure/device_check.sh [OUT] [--dry-run]
#   OUT: the output folder (default $OUT, as the device tool sets it)
#   --dry-run: every configuration for two iterations on the CPU at batch 2 (checks the plan and the
#              jobs run; nothing is measured, the GPU columns are left empty)
# Then, here: tools/measure/measured_check.py OUT (docs/measure.md, "On a lent GPU").
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
dry=()
args=()
for a in "$@"; do
  if [ "$a" = --dry-run ]; then dry=(--dry-run); else args+=("$a"); fi
done
out=${args[0]:-${OUT:-}}
[ -n "$out" ] || { echo "device_check.sh: no output folder: give OUT or set \$OUT" >&2; exit 2; }
mkdir -p "$out" || exit 2
configs=()
while read -r line; do
  line=${line%%#*}
  line=$(echo "$line" | tr -d '[:space:]')
  [ -n "$line" ] && configs+=(--config "$line")
done < "$here/device_plan.txt"
py=${PYTHON:-python3}
if [ ${#dry[@]} = 0 ]; then
  nvidia-smi -q > "$out/nvidia-smi-q.txt" 2>&1 || { echo "device_check.sh: nvidia-smi -q failed (see $out/nvidia-smi-q.txt)" >&2; exit 2; }
fi
PYTHONUNBUFFERED=1 "$py" "$here/measure.py" --out "$out" --no-onnx --seconds "${SECONDS_PER_RUN:-12}" \
  --budget "${BUDGET:-360}" "${configs[@]}" "${dry[@]}" 2>&1 | tee "$out/log.txt"
exit "${PIPESTATUS[0]}"
