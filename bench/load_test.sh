#!/usr/bin/env bash
# Loopback load test of gpucast serve: POST /v1/predict for a cached graph,
# with wrk (Debian package wrk). Bounded: DURATION seconds, 127.0.0.1 only.
# Usage: bench/load_test.sh [BUILD_DIR] [DURATION_S] [CONNECTIONS]
# Prints wrk's report (requests/s, latency percentiles) and a one-line summary.
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
BUILD=${1:-$ROOT/build}
DURATION=${2:-10}
CONNS=${3:-16}
GPUCAST=$(realpath "$BUILD/gpucast")
DATA=${GPUCAST_DATA:-$ROOT/../shared/data}
MODEL=$ROOT/models/resnet50.onnx
command -v wrk >/dev/null || { echo "load test: needs wrk (apt-get install wrk)" >&2; exit 1; }

T=$(mktemp -d /tmp/gpucast-load.XXXXXX)
SERVER=""
cleanup() {
  if [ -n "$SERVER" ]; then kill -TERM "$SERVER" 2>/dev/null || true; wait "$SERVER" 2>/dev/null || true; fi
  rm -rf "$T"
}
trap cleanup EXIT

"$GPUCAST" train --data "$DATA/lucid/single_data.csv" --out "$T/predictor.json" >/dev/null
"$GPUCAST" serve --listen 127.0.0.1:0 --db "$T/jobs.db" --predictor "$T/predictor.json" \
  --model-root "$ROOT/models" --threads "$CONNS" >"$T/serve.out" 2>"$T/serve.err" &
SERVER=$!
for _ in $(seq 100); do grep -q '^listening on' "$T/serve.out" 2>/dev/null && break; sleep 0.05; done
PORT=$(sed -n 's/^listening on 127.0.0.1:\([0-9]*\)$/\1/p' "$T/serve.out")
[ -n "$PORT" ] || { echo "load test: server did not start: $(cat "$T/serve.err")" >&2; exit 1; }
URL=http://127.0.0.1:$PORT
export GPUCAST_BODY="{\"model\": \"$MODEL\", \"batch\": 64}"
# Warm the graph cache, and check the route works.
curl -sf -X POST -H 'Content-Type: application/json' -d "$GPUCAST_BODY" "$URL/v1/predict" >/dev/null

echo "== POST /v1/predict, resnet50.onnx batch 64 (cached graph), $CONNS connections, ${DURATION}s, $(nproc) cores"
timeout $((DURATION + 30)) wrk -t 2 -c "$CONNS" -d "${DURATION}s" --latency -s "$ROOT/bench/load_test.lua" \
  "$URL/v1/predict" | tee "$T/wrk.txt"
# The service's own view: every request counted, none failed.
curl -s "$URL/metrics" | grep -E '^gpucast_(http_requests_total\{route="POST /v1/predict"|predictions_total)'
RPS=$(awk '/^Requests\/sec/ {print $2}' "$T/wrk.txt")
P50=$(awk '/^ +50%/ {print $2}' "$T/wrk.txt")
P99=$(awk '/^ +99%/ {print $2}' "$T/wrk.txt")
echo "summary: ${RPS} req/s, p50 ${P50}, p99 ${P99} (target >= 2000 req/s, p99 < 20ms)"
