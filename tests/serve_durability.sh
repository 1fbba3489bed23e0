#!/usr/bin/env bash
# Durability of the real `gpucast serve`: every job that got a 201 is still
# there, with its state, after kill -9 and a restart. Loopback only, bounded.
# Usage: tests/serve_durability.sh BUILD/gpucast
set -u
BIN=$(realpath "${1:?usage: serve_durability.sh PATH/TO/gpucast}")
ROOT=$(cd "$(dirname "$0")/.." && pwd)
T=$(mktemp -d /tmp/gpucast-durability.XXXXXX)
PID=""
cleanup() { [ -n "$PID" ] && kill -9 "$PID" 2>/dev/null; wait 2>/dev/null; rm -rf "$T"; }
trap cleanup EXIT
fail() { echo "serve durability: FAIL: $*"; echo "durability: 0 passed, 1 failed"; exit 1; }

"$BIN" train --out "$T/p.json" >/dev/null || fail "train"
start() {  # starts the service on a free port; sets PID and URL
  "$BIN" serve --listen 127.0.0.1:0 --db "$T/jobs.db" --predictor "$T/p.json" --cluster "2x RTX3090" \
    >"$T/out" 2>"$T/err" &
  PID=$!
  for _ in $(seq 100); do
    addr=$(sed -n 's/^listening on //p' "$T/out")
    [ -n "$addr" ] && { URL="http://$addr"; return 0; }
    sleep 0.1
  done
  fail "service did not start: $(cat "$T/err")"
}

start
ids=()
for i in $(seq 1 12); do
  body=$(printf '{"model": "%s/models/pointnet.onnx", "batch": 32, "name": "job%d"}' "$ROOT" "$i")
  resp=$(curl -s -m 5 -w '\n%{http_code}' -X POST "$URL/v1/jobs" -H 'Content-Type: application/json' -d "$body")
  [ "$(echo "$resp" | tail -1)" = 201 ] || fail "submit $i: $resp"
  ids+=("$(echo "$resp" | head -1 | /usr/bin/python3 -c 'import json,sys; print(json.load(sys.stdin)["id"])')")
done
# Cancel one, so a non-initial state must survive too.
curl -s -m 5 -o /dev/null -X DELETE "$URL/v1/jobs/${ids[0]}"
before=$(curl -s -m 5 "$URL/v1/jobs" | /usr/bin/python3 -c '
import json, sys
d = json.load(sys.stdin); jobs = d["jobs"] if isinstance(d, dict) else d
print(" ".join("%s:%s:%s" % (j["id"], j["name"], j["state"]) for j in sorted(jobs, key=lambda j: j["id"])))')
kill -9 "$PID"; wait "$PID" 2>/dev/null; PID=""

start
after=$(curl -s -m 5 "$URL/v1/jobs" | /usr/bin/python3 -c '
import json, sys
d = json.load(sys.stdin); jobs = d["jobs"] if isinstance(d, dict) else d
print(" ".join("%s:%s:%s" % (j["id"], j["name"], j["state"]) for j in sorted(jobs, key=lambda j: j["id"])))')
n=$(echo "$after" | wc -w)
[ "$n" = 12 ] || fail "after restart $n jobs, want 12: $after"
echo "$after" | grep -q "${ids[0]}:job1:cancelled" || fail "cancelled state lost: $after"
# Running jobs may have been re-placed, queued ones may have started: compare id:name only.
[ "$(echo "$before" | tr ' ' '\n' | cut -d: -f1,2)" = "$(echo "$after" | tr ' ' '\n' | cut -d: -f1,2)" ] \
  || fail "jobs differ: before '$before' after '$after'"
echo "serve durability: 12 jobs survive kill -9 ($after)"
echo "durability: 1 passed, 0 failed"
