#!/usr/bin/env bash
# The closed loop with the real `gpucast serve` on loopback: submit a job,
# post an observation far from its prediction, read it back, find it in
# /metrics, retrain with `gpucast train --observations`, and hot-reload the
# new predictor with SIGHUP while clients keep calling /v1/predict: no request
# may fail, and the predictions afterwards are the new predictor's.
# Usage: tests/closed_loop.sh BUILD/gpucast
set -u
BIN=$(realpath "${1:?usage: closed_loop.sh PATH/TO/gpucast}")
ROOT=$(cd "$(dirname "$0")/.." && pwd)
. "$ROOT/tests/lib/serve.sh"
T=$(mktemp -d /tmp/gpucast-closed-loop.XXXXXX)
PID=""
CLIENTS=()
cleanup() {
  touch "$T/stop"
  for c in "${CLIENTS[@]}"; do kill "$c" 2>/dev/null; done
  [ -n "$PID" ] && kill "$PID" 2>/dev/null
  wait 2>/dev/null
  rm -rf "$T"
}
trap cleanup EXIT
fail() { echo "closed loop: FAIL: $*"; [ -f "$T/err" ] && tail -5 "$T/err"; echo "closed loop: 0 passed, 1 failed"; exit 1; }
py() { /usr/bin/python3 -c "$@"; }
field() { py "import json,sys; v=json.load(sys.stdin)$1; print(v)"; }

MODEL="$ROOT/models/vgg.onnx"
BATCH=96  # a VGG configuration the shipped measurements do not have
# The predictor: the one make test trains once for every suite (GPUCAST_TEST_PREDICTOR), else train.
if [ -n "${GPUCAST_TEST_PREDICTOR:-}" ]; then
  cp "$GPUCAST_TEST_PREDICTOR" "$T/p.json" || fail "cannot copy $GPUCAST_TEST_PREDICTOR"
else
  "$BIN" train --out "$T/p.json" >/dev/null || fail "train"
fi

# As docs/operations.md: --pid-file, and SIGHUP to the pid in it (never pidof).
cd "$T" || fail "cd $T"
"$BIN" serve --listen 127.0.0.1:0 --db "$T/jobs.db" --predictor "$T/p.json" --cluster "4x RTX3090" \
  --model-root "$ROOT/models" --pid-file serve.pid >"$T/out" 2>"$T/err" &
PID=$!
URL=http://$(serve_addr "$T/out" "$PID" 10 "$T/err") || fail "service did not start"
[ "$(cat serve.pid)" = "$PID" ] || fail "serve.pid holds '$(cat serve.pid 2>/dev/null)', not the service's pid $PID"
post() { curl -s -m 10 -w '\n%{http_code}' -X POST "$URL$1" -H 'Content-Type: application/json' -d "$2"; }

# 1. Submit, observe far from the prediction, read it back.
resp=$(post /v1/jobs "{\"model\": \"$MODEL\", \"batch\": $BATCH}")
[ "$(echo "$resp" | tail -1)" = 201 ] || fail "submit: $resp"
ID=$(echo "$resp" | head -1 | field '["id"]')
P0=$(echo "$resp" | head -1 | field '["predicted_util"]')
OBS=$(py "p=$P0; print(round(p - 40 if p > 50 else p + 40, 3))")
resp=$(post "/v1/jobs/$ID/observations" "{\"gpu_util\": $OBS, \"source\": \"slurm\", \"samples\": 120}")
[ "$(echo "$resp" | tail -1)" = 201 ] || fail "observation: $resp"
got=$(curl -s -m 5 "$URL/v1/jobs/$ID")
[ "$(echo "$got" | field '["observed_samples"]')" = 120 ] || fail "observed_samples: $got"
py "import sys; sys.exit(0 if abs($(echo "$got" | field '["observed_util"]') - $OBS) < 1e-9 else 1)" \
  || fail "observed_util != $OBS: $got"
resp=$(post "/v1/jobs/$ID/observations" '{"gpu_util": 150, "source": "slurm"}')
[ "$(echo "$resp" | tail -1)" = 400 ] && echo "$resp" | grep -q "field 'gpu_util'" || fail "out of range: $resp"
resp=$(post "/v1/jobs/99999/observations" '{"gpu_util": 50, "source": "slurm"}')
[ "$(echo "$resp" | tail -1)" = 404 ] || fail "unknown job: $resp"
metrics=$(curl -s -m 5 "$URL/metrics")
echo "$metrics" | grep -q '^gpucast_prediction_abs_error_count 1$' || fail "no abs error in /metrics"
echo "$metrics" | grep -q '^gpucast_observations_total{source="slurm"} 1$' || fail "no slurm count in /metrics"

# 2. Retrain with the observation: the prediction for that job moves toward it.
"$BIN" train --observations "$T/jobs.db" --out "$T/p2.json" >"$T/train.out" 2>&1 || fail "train --observations: $(cat "$T/train.out")"
grep -q "observed jobs from .*: 1 rows" "$T/train.out" || fail "train did not use the observation: $(cat "$T/train.out")"
P1=$("$BIN" predict --predictor "$T/p2.json" --model "$MODEL" --batch $BATCH --json | field '["gpu_util"]')
py "import sys; sys.exit(0 if abs($P1 - $OBS) < abs($P0 - $OBS) else 1)" \
  || fail "retrained prediction $P1 did not move from $P0 toward $OBS"

# 3. Hot reload under load: 4 clients call /v1/predict without pause.
for c in 1 2 3 4; do
  (
    while [ ! -f "$T/stop" ]; do
      curl -s -m 10 -o /dev/null -w '%{http_code}\n' -X POST "$URL/v1/predict" -H 'Content-Type: application/json' \
        -d "{\"model\": \"$MODEL\", \"batch\": $BATCH}" >>"$T/codes.$c" 2>/dev/null || echo "curl-error" >>"$T/codes.$c"
    done
  ) &
  CLIENTS+=($!)
done
sleep 1
predicted() { post /v1/predict "{\"model\": \"$MODEL\", \"batch\": $BATCH}" | head -1 | field '["predicted_util"]'; }
# A bad file first: the old predictor keeps serving and the failure is counted.
echo '{"not": "a predictor"}' >"$T/bad.json" && mv "$T/bad.json" "$T/p.json"
kill -HUP "$(cat serve.pid)"
for _ in $(seq 50); do
  curl -s -m 5 "$URL/metrics" | grep -q '^gpucast_predictor_reload_failures_total 1$' && break
  sleep 0.1
done
curl -s -m 5 "$URL/metrics" | grep -q '^gpucast_predictor_reload_failures_total 1$' || fail "bad file not counted"
[ "$(predicted)" = "$P0" ] || fail "after a bad reload the prediction changed: $(predicted) != $P0"
# Then the retrained one, replaced atomically as an operator would.
cp "$T/p2.json" "$T/new.json" && mv "$T/new.json" "$T/p.json"
kill -HUP "$(cat serve.pid)"
for _ in $(seq 50); do
  [ "$(predicted)" = "$P1" ] && break
  sleep 0.1
done
[ "$(predicted)" = "$P1" ] || fail "after SIGHUP the service predicts $(predicted), want the new $P1"
# And over HTTP.
resp=$(post /v1/admin/reload '')
[ "$(echo "$resp" | tail -1)" = 200 ] || fail "POST /v1/admin/reload: $resp"
sleep 1
touch "$T/stop"
for c in "${CLIENTS[@]}"; do wait "$c" 2>/dev/null; done
CLIENTS=()
total=$(cat "$T"/codes.* | wc -l)
bad=$(cat "$T"/codes.* | grep -vc '^200$')
[ "$total" -gt 20 ] || fail "only $total requests during the reloads"
[ "$bad" = 0 ] || fail "$bad of $total requests failed during the reloads: $(cat "$T"/codes.* | grep -v '^200$' | sort | uniq -c)"
kill -0 "$PID" 2>/dev/null || fail "the service died"
kill "$PID" && wait "$PID" 2>/dev/null
PID=""
[ ! -e serve.pid ] || fail "serve.pid left behind after the service stopped"
echo "closed loop: job $ID predicted $P0, observed $OBS, retrained $P1; $total /v1/predict calls, 0 failed, across 2 SIGHUP reloads (1 refused) and 1 HTTP reload"
echo "closed loop: 1 passed, 0 failed"
