#!/usr/bin/env bash
# gpucast's prepared measurement for a lent GPU machine (the `device` tool) or any idle NVIDIA GPU:
# the configurations of tools/measure/device_plan.txt, each trained alone with tools/measure/measure.py
# (nvidia-smi sampled ~5 Hz; step time, peak memory, PyTorch's allocator peaks, repeats), inside a
# time budget, with what made the numbers (GPU, driver, PyTorch, CUDA, cuDNN, CPU, the harness's
# sha256) in environment.json and `nvidia-smi -q` beside it. Before them, on the idle GPU, the fixed
# part of a process's memory stage by stage (tools/measure/context_probe.py: context.json); after
# them, on the CPU, the models of tools/measure/export_probe.py exported the way users export them
# with that machine's PyTorch (exports.tar.gz, weights stripped). 8 files in all, in OUT.
#
# usage: [GPUCAST_COMMIT=SHA] [BUDGET=330] [EXPORT_BUDGET=120] [SECONDS_PER_RUN=12] [PYTHON=python3] \
#        bash tools/measure/device_check.sh [OUT] [--dry-run]
#   OUT: the output folder (default $OUT, as the device tool sets it)
#   --dry-run: every configuration for two iterations on the CPU at batch 2 (checks the plan and the
#              jobs run; nothing is measured, the GPU columns are left empty); no exports
# A device call: the measurement's budget, the exports' budget (an export started before it ends may
# take a minute more) and a worker's start: timeout_s 600 leaves the rest of 15 minutes for a rerun
# of a part. Then, here: tools/measure/measured_check.py OUT and tools/measure/export_probe.py check
# OUT/exports.tar.gz (docs/measure.md, "On a lent GPU").
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
dry=()
args=()
for a in "$@"; do
  if [ "$a" = --dry-run ]; then dry=(--dry-run); else args+=("$a"); fi
done
out=${args[0]:-${OUT:-}}
[ -n "$out" ] || { echo "device_check.sh: no output folder: give OUT or set \$OUT" >&2; exit 2; }
mkdir -p "$out" && : > "$out/log.txt" || exit 2
configs=()
while read -r line; do
  line=${line%%#*}
  line=$(echo "$line" | tr -d '[:space:]')
  [ -n "$line" ] && configs+=(--config "$line")
done < "$here/device_plan.txt"
py=${PYTHON:-python3}
if [ ${#dry[@]} = 0 ]; then
  nvidia-smi -q > "$out/nvidia-smi-q.txt" 2>&1 || { echo "device_check.sh: nvidia-smi -q failed (see $out/nvidia-smi-q.txt)" >&2; exit 2; }
  # Its failure is recorded in context.json; the measurement goes on.
  PYTHONUNBUFFERED=1 "$py" "$here/context_probe.py" --out "$out/context.json" 2>&1 | tee -a "$out/log.txt"
fi
PYTHONUNBUFFERED=1 "$py" "$here/measure.py" --out "$out" --no-onnx --seconds "${SECONDS_PER_RUN:-12}" \
  --budget "${BUDGET:-330}" "${configs[@]}" "${dry[@]}" 2>&1 | tee -a "$out/log.txt"
rc=${PIPESTATUS[0]}
if [ ${#dry[@]} = 0 ] && [ "${EXPORT_BUDGET:-120}" != 0 ]; then
  # The exports' own failures are findings (in the archive's manifest), not this script's.
  PYTHONUNBUFFERED=1 "$py" "$here/export_probe.py" export --out "$out/exports.tar.gz" --budget "${EXPORT_BUDGET:-120}" \
    2>&1 | grep '^export_probe' | tee -a "$out/log.txt"
fi
exit "$rc"
