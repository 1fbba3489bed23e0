#!/usr/bin/env bash
# gpucast benchmarks (make bench). Prints a table per section; the numbers in
# docs/performance.md come from this script. Not a test: nothing here fails on
# a slow machine.
# Usage: bench/run.sh BUILD_DIR
set -euo pipefail
BUILD=${1:-build}
ROOT=$(cd "$(dirname "$0")/.." && pwd)
BIN="$BUILD/gpucast"
PY=/usr/bin/python3
MODELS="$BUILD/bench-models"
cmake --build "$BUILD" --target gpucast analyze_bench predict_bench >/dev/null

# Big models with embedded (random-init) weights: generated once, never committed.
if [ ! -f "$MODELS/vgg16.onnx" ] || [ ! -f "$MODELS/resnet50.onnx" ]; then
  echo "generating models with embedded weights into $MODELS (once)..." >&2
  "$PY" "$ROOT/tools/make_bench_models.py" "$MODELS" >&2
fi

# conv+matmul forward FLOPs from gpucast analyze --json (the quantity torch.profiler counts).
gpucast_flops() {
  "$BIN" analyze "$@" --json | "$PY" -c '
import json, sys
r = json.load(sys.stdin)
print(sum(n["forward_flops"] for n in r["nodes"] if n["category"] in ("convolution", "matmul")))'
}

echo "== analyze: one process per run (load + shapes + cost + features), 10 runs"
printf "%-34s %10s %10s %12s %12s\n" model size_MB median_ms peak_RSS_MB fwd_GFLOPs
run_analyze() {  # label model args...
  local label=$1 model=$2; shift 2
  local size; size=$(du -m "$model" | cut -f1)
  local times=() rss=0
  for _ in $(seq 10); do
    t0=$(date +%s%N)
    r=$( { /usr/bin/time -f "%M" "$BIN" analyze "$model" "$@" --json >/dev/null; } 2>&1 | tail -1)
    t1=$(date +%s%N)
    times+=("$(( (t1 - t0) / 1000 ))")  # microseconds, including /usr/bin/time's own start
    [ "$r" -gt "$rss" ] && rss=$r
  done
  med=$(printf "%s\n" "${times[@]}" | sort -n | sed -n 5p)
  awk -v l="$label" -v s="$size" -v t="$med" -v r="$rss" -v f="$(gpucast_flops "$model" "$@")" \
    'BEGIN { printf "%-34s %10s %10.1f %12.1f %12.3f\n", l, s, t / 1000, r / 1024, f / 1e9 }' 
}
run_analyze "resnet50 (weights) b32" "$MODELS/resnet50.onnx" --batch 32
run_analyze "vgg16 (weights) b32" "$MODELS/vgg16.onnx" --batch 32
run_analyze "transformer6 b32 seq128" "$ROOT/models/transformer6.onnx" --batch 32 --dim seq=128

echo
echo "== analyze in process (Google Benchmark: load + shapes + cost)"
"$BUILD/bench/analyze_bench" --model="$MODELS/resnet50.onnx" --batch=32 --benchmark_min_time=1 2>/dev/null | grep BM_
"$BUILD/bench/analyze_bench" --model="$MODELS/vgg16.onnx" --batch=32 --benchmark_min_time=1 2>/dev/null | grep BM_
"$BUILD/bench/analyze_bench" --model="$ROOT/models/transformer6.onnx" --batch=32 --dim=seq=128 \
  --benchmark_min_time=1 2>/dev/null | grep BM_

echo
echo "== the same numbers another way: torch.profiler FLOP count (build model + one profiled forward)"
printf "%-14s %12s %12s %12s %14s\n" model torch_s torch_RSS_MB torch_GFLOPs ratio_to_gpucast
for m in resnet50 vgg16; do
  j=$("$PY" "$ROOT/tools/torch_flops.py" "$m" --batch 32 --json)
  ours=$(gpucast_flops "$MODELS/$m.onnx" --batch 32)
  echo "$j" | "$PY" -c "
import json, sys
j = json.load(sys.stdin); ours = $ours
print('%-14s %12.2f %12.0f %12.3f %14.5f' % (j['model'], j['seconds'], j['peak_rss_mb'], j['flops'] / 1e9, j['flops'] / ours))"
done

echo
echo "== gpucast predict as a process (weight-free graph; 100 MB graph with weights)"
P="$BUILD/bench-predictor.json"
"$BIN" train --out "$P" >/dev/null
printf "%-34s %10s\n" case median_ms
time_predict() {  # label args...
  local label=$1; shift
  local times=()
  for _ in $(seq 10); do
    t0=$(date +%s%N); "$BIN" predict --predictor "$P" "$@" --json >/dev/null; t1=$(date +%s%N)
    times+=("$(( (t1 - t0) / 1000 ))")
  done
  awk -v l="$label" -v t="$(printf "%s\n" "${times[@]}" | sort -n | sed -n 5p)" \
    'BEGIN { printf "%-34s %10.1f\n", l, t / 1000 }'
}
time_predict "resnet50 weight-free b32" --model "$ROOT/models/resnet50.onnx" --batch 32
time_predict "resnet50 with weights (98 MB) b32" --model "$MODELS/resnet50.onnx" --batch 32
echo
bash "$ROOT/bench/predict_process.sh" "$BUILD" 30
echo
echo "== Predictor::Predict in process on a costed graph: job facts stated vs unstated (up to 12 feature variants: TF32 x selection x memory format)"
for args in "--model=$ROOT/models/resnet50.onnx --batch=128" "--model=$ROOT/models/resnet50.onnx --batch=128 --amp" \
            "--model=$ROOT/models/transformer6.onnx --batch=32 --dim=seq=128"; do
  echo "-- $args (A100-80GB)"
  # shellcheck disable=SC2086
  "$BUILD/bench/predict_bench" --predictor="$P" $args --gpu=A100-80GB --benchmark_min_time=1 2>/dev/null | grep BM_
done
echo
echo "== gpucast train on the 52 measured rows (process, 3 runs)"
for _ in 1 2 3; do
  t0=$(date +%s%N); "$BIN" train --out "$P" >/dev/null; t1=$(date +%s%N)
  echo "train: $(( (t1 - t0) / 1000000 )) ms"
done

echo
echo "== HTTP service load test (loopback, bounded)"
bash "$ROOT/bench/load_test.sh" "$BUILD" 10 16 | tail -3

echo
echo "== HTTP service: submissions behind a long queue (target <= 50 ms at 6,000 queued)"
bash "$ROOT/bench/queue_bench.sh" "$BUILD"

echo
echo "== simulator: ten runs of one seed on the whole Philly trace (load x2, 256 GPUs)"
bash "$ROOT/bench/sim_bench.sh" "$BIN"
