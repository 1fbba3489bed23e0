#!/usr/bin/env bash
# Submissions with a long queue (issue 31 item 9): `gpucast serve --cluster "1x H100"`,
# one job holding the GPU's memory, then N jobs that wait behind it; prints the
# median time of 20 more submissions (POST /v1/jobs, 201 with "pending") and
# of GET /v1/jobs/{id} at each queue length. Target: <= 50 ms at 6,000 queued.
# Not a test (nothing fails on a slow machine); jobs_test.cc holds the
# algorithmic fix (rows read per submission do not grow with the queue).
# Usage: bench/queue_bench.sh BUILD [N ...]   (default N: 0 1000 6000)
set -euo pipefail
BUILD=${1:-build}; shift || true
SIZES=("$@"); [ ${#SIZES[@]} = 0 ] && SIZES=(0 1000 6000)
ROOT=$(cd "$(dirname "$0")/.." && pwd)
BIN=$(realpath "$BUILD/gpucast")
T=$(mktemp -d /tmp/gpucast-queue-bench.XXXXXX)
PID=""
trap '[ -n "$PID" ] && kill "$PID" 2>/dev/null; wait 2>/dev/null; rm -rf "$T"' EXIT
if [ -n "${GPUCAST_TEST_PREDICTOR:-}" ]; then cp "$GPUCAST_TEST_PREDICTOR" "$T/p.json"; else "$BIN" train --out "$T/p.json" --quiet >/dev/null; fi
"$BIN" serve --listen 127.0.0.1:0 --db "$T/jobs.db" --predictor "$T/p.json" --cluster "1x H100" \
  --model-root "$ROOT/models" --max-queued-jobs 100000 >"$T/out" 2>"$T/err" &
PID=$!
for _ in $(seq 100); do grep -q "listening on" "$T/out" 2>/dev/null && break; sleep 0.1; done
PORT=$(sed -n 's/^listening on .*:\([0-9]*\)$/\1/p' "$T/out")
[ -n "$PORT" ] || { cat "$T/err"; exit 1; }
/usr/bin/python3 - "$PORT" "$ROOT/models/neumf.onnx" "${SIZES[@]}" <<'PY'
import http.client, json, statistics, sys, time
port, model, sizes = int(sys.argv[1]), sys.argv[2], [int(x) for x in sys.argv[3:]]
c = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
def post(mem):
    body = json.dumps({"model": model, "batch": 8, "mem_mib": mem, "duration_s": 1e9})
    c.request("POST", "/v1/jobs", body, {"Content-Type": "application/json"})
    r = c.getresponse(); data = r.read()
    assert r.status == 201, (r.status, data)
    return json.loads(data)
first = post(80000)  # holds the H100's memory: every later job waits
queued = 0
print("%-10s %22s %22s" % ("queued", "POST /v1/jobs median_ms", "GET /v1/jobs/{id} ms"))
for n in sizes:
    while queued < n:
        post(80000); queued += 1
    ts, gs = [], []
    for _ in range(20):
        t0 = time.perf_counter(); j = post(80000); ts.append(time.perf_counter() - t0); queued += 1
        assert j["state"] == "queued" and "queued before it" in j["pending"], j
        t0 = time.perf_counter(); c.request("GET", "/v1/jobs/%d" % j["id"]); c.getresponse().read()
        gs.append(time.perf_counter() - t0)
    print("%-10d %22.1f %22.1f" % (n, 1000 * statistics.median(ts), 1000 * statistics.median(gs)))
PY
