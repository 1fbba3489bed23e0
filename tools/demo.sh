#!/usr/bin/env bash
# The main job, end to end (make demo): analyze the bundled workload graphs,
# train the utilization predictor on the shared measurements and evaluate it
# on workloads it has not seen, predict each bundled workload, simulate a
# Philly slice under every scheduling policy, and write the HTML report.
# Usage: tools/demo.sh [--quick] PATH/TO/gpucast [OUT_DIR]
#   --quick (make test): every step and command of the demo on a small input: the evaluation
#   with one repeat, the simulations on Philly's first 500 jobs, 16 GPUs, one seed. (The
#   simulations' predictions are leave-one-workload-out predictions of a predictor trained on the
#   simulator's rows, Lucid's RTX 3090 jobs: computed once per build and cached, the same either way.)
set -euo pipefail
QUICK=0
if [ "${1:-}" = --quick ]; then QUICK=1; shift; fi
BIN=$(realpath "${1:?usage: demo.sh [--quick] PATH/TO/gpucast [OUT_DIR]}")
ROOT=$(cd "$(dirname "$0")/.." && pwd)
OUT=$(realpath -m "${2:-$ROOT/demo-out}")
DATA=${GPUCAST_DATA:-$ROOT/../shared/data}
CSV="$DATA/lucid/single_data.csv"
[ -f "$CSV" ] || { echo "demo: $CSV not found (set GPUCAST_DATA to the shared data directory)" >&2; exit 1; }
mkdir -p "$OUT"
step() { printf '\n\033[1m== %s\033[0m\n' "$*"; }

step "1. Training cost of the bundled workload graphs at batch 32 (docs/cost-rules.md)"
printf "%-28s %12s %12s %10s %10s\n" graph fwd_GFLOPs bwd_GFLOPs params_M unsupported
for m in "$ROOT"/models/*.onnx; do
  name=$(basename "$m" .onnx)
  dims=()
  case "$name" in bert) dims=(--dim seq=384) ;; bert-base) dims=(--dim seq=128) ;; lstm) dims=(--dim seq=35) ;; transformer6) dims=(--dim seq=128) ;; pollux_yolov3) dims=(--dim img=448) ;; esac
  "$BIN" analyze "$m" --batch 32 "${dims[@]}" --json | /usr/bin/python3 -c '
import json, sys
r = json.load(sys.stdin); t = r["totals"]
print("%-28s %12.2f %12.2f %10.2f %10d" % (sys.argv[1], t["forward_flops"] / 1e9, t["backward_flops"] / 1e9,
      t["params"] / 1e6, sum(u["count"] for u in r["unsupported"])))' "$name"
done

MIG="$DATA/migprofiler-a100/bert_train.csv"
step "2. Train the predictor on $(($(wc -l <"$CSV") + $(wc -l <"$MIG") - 2)) measured jobs (Lucid's RTX 3090 and MIGProfiler's A100 rows: train's default data)"
"$BIN" train --data "$CSV" --data "$MIG" --out "$OUT/predictor.json"

# The full run, or --quick's small one.
REPEATS=10 JOBS=5000 GPUS=128 SEEDS=1-3
[ "$QUICK" = 1 ] && REPEATS=1 JOBS=500 GPUS=16 SEEDS=1

step "3. Honest error: leave one workload out (and the paper's random 80/20 split)"
"$BIN" evaluate --data "$CSV" --split lowo --split random:0.2 --repeats "$REPEATS" --algo forest \
  --plot "$OUT/predicted_vs_measured.svg"

step "4. Predict the bundled workloads (graph + batch only, no job attributes)"
for spec in "resnet50.onnx 32" "vgg.onnx 128" "pointnet.onnx 32" "bert.onnx 32 --dim seq=384"; do
  set -- $spec
  printf "%-16s batch %-4s " "$1" "$2"
  "$BIN" predict --predictor "$OUT/predictor.json" --model "$ROOT/models/$1" --batch "$2" "${@:3}"
done

step "5. Simulate a Philly slice (first $JOBS jobs, $GPUS GPUs) under every policy, seeds $SEEDS, with leave-one-workload-out predictions (a predictor trained on the trace's RTX 3090 workloads but the one predicted) and with oracle ones (docs/simulator.md)"
# The report reads every run below sim/: runs of an earlier demo (other seeds, another build's
# default) must not join these ones.
rm -rf "$OUT/sim"
"$BIN" simulate --trace philly --jobs "$JOBS" --cluster "${GPUS}x RTX3090" --policy all --seeds "$SEEDS" \
  --out "$OUT/sim/predicted"
"$BIN" simulate --trace philly --jobs "$JOBS" --cluster "${GPUS}x RTX3090" --policy predictive,predictive-feedback \
  --predictions oracle --seeds "$SEEDS" --out "$OUT/sim/oracle"

step "6. HTML report"
"$BIN" report "$OUT/sim" --out "$OUT/report.html"

echo
echo "demo: done. Report: $OUT/report.html   predictor: $OUT/predictor.json   runs: $OUT/sim/"
