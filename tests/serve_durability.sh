#!/usr/bin/env bash
# Durability of the real `gpucast serve` (model roots and a token configured,
# as an operator runs it): every job that got a 201 is still there, with its
# state, after kill -9 and a restart, also when the kill lands while 200
# submissions are in flight; retrying every submission with its
# Idempotency-Key afterwards creates no duplicates; a start that fails leaves
# nothing it created behind. Loopback only, bounded.
# Usage: tests/serve_durability.sh BUILD/gpucast
set -u
BIN=$(realpath "${1:?usage: serve_durability.sh PATH/TO/gpucast}")
ROOT=$(cd "$(dirname "$0")/.." && pwd)
. "$ROOT/tests/lib/serve.sh"
T=$(mktemp -d /tmp/gpucast-durability.XXXXXX)
PID=""
cleanup() { [ -n "$PID" ] && kill -9 "$PID" 2>/dev/null; wait 2>/dev/null; rm -rf "$T"; }
trap cleanup EXIT
fail() { echo "serve durability: FAIL: $*"; echo "durability: $passed passed, 1 failed"; exit 1; }
passed=0
N=${GPUCAST_DURABILITY_N:-200}

# The predictor: the one make test trains once for every suite (GPUCAST_TEST_PREDICTOR), else train.
if [ -n "${GPUCAST_TEST_PREDICTOR:-}" ]; then
  cp "$GPUCAST_TEST_PREDICTOR" "$T/p.json" || fail "cannot copy $GPUCAST_TEST_PREDICTOR"
else
  "$BIN" train --out "$T/p.json" >/dev/null || fail "train"
fi
echo "durability-test-token" >"$T/token"
AUTH="Authorization: Bearer durability-test-token"
start() {  # starts the service on a free port; sets PID and URL
  : >"$T/out"
  "$BIN" serve --listen 127.0.0.1:0 --db "$T/jobs.db" --predictor "$T/p.json" --cluster "2x RTX3090" \
    --model-root "$ROOT/models" --token-file "$T/token" >"$T/out" 2>"$T/err" &
  PID=$!
  URL=http://$(serve_addr "$T/out" "$PID" 10 "$T/err") || fail "service did not start"
}
list() {  # id:name:state of every job, in id order
  curl -s -m 10 -H "$AUTH" "$URL/v1/jobs?limit=1000" | /usr/bin/python3 -c '
import json, sys
d = json.load(sys.stdin)
print(" ".join("%s:%s:%s" % (j["id"], j["name"], j["state"]) for j in sorted(d["jobs"], key=lambda j: j["id"])))'
}

# 1. Sequential submissions and a cancellation survive kill -9.
start
ids=()
for i in $(seq 1 12); do
  body=$(printf '{"model": "pointnet.onnx", "batch": 32, "name": "job%d"}' "$i")
  resp=$(curl -s -m 5 -w '\n%{http_code}' -X POST "$URL/v1/jobs" -H "$AUTH" -H 'Content-Type: application/json' -d "$body")
  [ "$(echo "$resp" | tail -1)" = 201 ] || fail "submit $i: $resp"
  ids+=("$(echo "$resp" | head -1 | /usr/bin/python3 -c 'import json,sys; print(json.load(sys.stdin)["id"])')")
done
curl -s -m 5 -o /dev/null -X DELETE -H "$AUTH" "$URL/v1/jobs/${ids[0]}"
before=$(list)
kill -9 "$PID"; wait "$PID" 2>/dev/null; PID=""
start
after=$(list)
n=$(echo "$after" | wc -w)
[ "$n" = 12 ] || fail "after restart $n jobs, want 12: $after"
echo "$after" | grep -q "${ids[0]}:job1:cancelled" || fail "cancelled state lost: $after"
# Running jobs may have been re-placed, queued ones may have started: compare id:name only.
[ "$(echo "$before" | tr ' ' '\n' | cut -d: -f1,2)" = "$(echo "$after" | tr ' ' '\n' | cut -d: -f1,2)" ] \
  || fail "jobs differ: before '$before' after '$after'"
echo "serve durability: 12 jobs survive kill -9"
passed=$((passed + 1))

# 2. kill -9 while N submissions are in flight (N client threads, one request each),
# restart, check every acknowledged job, then retry everything with its key.
inflight() {  # inflight submit|check URL: one Python process, N threads
  N="$N" AUTH_TOKEN=durability-test-token ACKS="$T/acks.json" /usr/bin/python3 - "$@" <<'PY'
import json, os, sys, threading, urllib.request, urllib.error
mode, url = sys.argv[1], sys.argv[2]
n, token, acks_file = int(os.environ["N"]), os.environ["AUTH_TOKEN"], os.environ["ACKS"]
def post(i):
    body = json.dumps({"model": "pointnet.onnx", "batch": 16, "name": "inflight%d" % i}).encode()
    req = urllib.request.Request(url + "/v1/jobs", data=body, method="POST", headers={
        "Content-Type": "application/json", "Authorization": "Bearer " + token,
        "Idempotency-Key": "inflight-%d" % i})
    try:
        with urllib.request.urlopen(req, timeout=30) as r:
            return r.status, json.load(r)
    except urllib.error.HTTPError as e:
        return e.code, None
    except Exception:
        return None, None
if mode == "submit":
    acks, lock, go = {}, threading.Lock(), threading.Event()
    def one(i):
        go.wait()
        st, body = post(i)
        if st == 201:
            with lock:
                acks[i] = body["id"]
                if len(acks) >= 32:
                    print("ack32", flush=True)   # the shell kills the server now
    ts = [threading.Thread(target=one, args=(i,)) for i in range(1, n + 1)]
    for t in ts: t.start()
    go.set()
    for t in ts: t.join()
    json.dump(acks, open(acks_file, "w"))
    print("acked %d" % len(acks), flush=True)
else:
    acks = {int(k): v for k, v in json.load(open(acks_file)).items()}
    req = urllib.request.Request(url + "/v1/jobs?limit=1000", headers={"Authorization": "Bearer " + token})
    have = {j["id"]: j["name"] for j in json.load(urllib.request.urlopen(req, timeout=30))["jobs"]}
    lost = [i for i, jid in acks.items() if have.get(jid) != "inflight%d" % i]
    if lost: sys.exit("acknowledged jobs lost after kill -9: %s" % lost[:10])
    for i in range(1, n + 1):
        st, body = post(i)
        if st != 201: sys.exit("retry %d: HTTP %s" % (i, st))
        if i in acks and body["id"] != acks[i]: sys.exit("retry of inflight%d got job %s, acknowledged as %s" % (i, body["id"], acks[i]))
    have = [j["name"] for j in json.load(urllib.request.urlopen(req, timeout=30))["jobs"] if j["name"].startswith("inflight")]
    if len(have) != n or len(set(have)) != n: sys.exit("%d in-flight jobs (%d distinct) after retries, want %d" % (len(have), len(set(have)), n))
    print("ok", flush=True)
PY
}
coproc SUB { inflight submit "$URL"; }
sub_pid=$SUB_PID
while read -r line <&"${SUB[0]}"; do
  [ "$line" = ack32 ] && break
done
kill -9 "$PID"; wait "$PID" 2>/dev/null; PID=""
wait "$sub_pid" 2>/dev/null  # the other submissions end: refused or cut off
acked=$(/usr/bin/python3 -c 'import json,sys; print(len(json.load(open(sys.argv[1]))))' "$T/acks.json" 2>/dev/null || echo 0)
echo "serve durability: killed with $acked of $N submissions acknowledged, the rest in flight or not yet sent"
[ "$acked" -ge 32 ] || fail "fewer than 32 submissions acknowledged before the kill"
start
check=$(inflight check "$URL" 2>&1) || fail "$check"
echo "serve durability: every acknowledged job survived; $N idempotent retries, no duplicates"
passed=$((passed + 2))

# 3. A start that fails (a port in use, a bad --tls-cert, a bad --cluster) removes what it created
# for this run (the database, its WAL files, the upload, model-store and observed folders) and never
# what was there before: an existing database keeps its jobs.
jobs_before=$(list | wc -w)
kill -TERM "$PID"; wait "$PID" 2>/dev/null; PID=""
/usr/bin/python3 -c '
import socket, sys, time
s = socket.socket(); s.bind(("127.0.0.1", 0)); s.listen(1)
open(sys.argv[1], "w").write(str(s.getsockname()[1])); time.sleep(120)' "$T/busy.port" &
HOLD=$!
for _ in $(seq 50); do [ -s "$T/busy.port" ] && break; sleep 0.1; done
BUSY=127.0.0.1:$(cat "$T/busy.port")
echo "not a certificate" >"$T/bad.pem"
mkdir "$T/fresh"
failed_start() {  # failed_start WHAT WANT-IN-STDERR ARGS...: serve must fail, saying WANT
  local what=$1 want=$2; shift 2
  if timeout 60 "$BIN" serve --predictor "$T/p.json" "$@" >"$T/fs.out" 2>"$T/fs.err"; then
    kill -9 "$HOLD"; fail "$what: serve started"
  fi
  grep -qF "$want" "$T/fs.err" || { kill -9 "$HOLD"; fail "$what: stderr lacks '$want': $(cat "$T/fs.err")"; }
}
nothing_left() {  # nothing_left WHAT: $T/fresh is empty again
  local left; left=$(ls -A "$T/fresh")
  [ -z "$left" ] || { kill -9 "$HOLD"; fail "a failed start ($1) left behind: $left"; }
  echo "serve durability: a failed start ($1) leaves nothing behind"
}
failed_start "port in use" "Address already in use" --db "$T/fresh/jobs.db" --listen "$BUSY"
nothing_left "port in use"
failed_start "bad --tls-cert" "cannot use as the TLS certificate" --db "$T/fresh/jobs.db" --listen 127.0.0.1:0 \
  --tls-cert "$T/bad.pem" --tls-key "$T/bad.pem"
nothing_left "bad --tls-cert"
failed_start "bad --cluster" "unknown GPU 'NOPE'" --db "$T/fresh/jobs.db" --listen 127.0.0.1:0 --cluster "4x NOPE"
nothing_left "bad --cluster"
names() { ls -A "$T" | grep -vx 'fs.out\|fs.err' | sort; }
names_before=$(names)
failed_start "port in use, existing database" "Address already in use" --db "$T/jobs.db" --listen "$BUSY" \
  --cluster "2x RTX3090" --model-root "$ROOT/models" --token-file "$T/token"
kill -9 "$HOLD"; wait "$HOLD" 2>/dev/null
names_after=$(names)
[ "$names_before" = "$names_after" ] ||
  fail "a failed start on an existing database changed the files: $(diff <(echo "$names_before") <(echo "$names_after"))"
start
jobs_after=$(list | wc -w)
[ "$jobs_after" = "$jobs_before" ] || fail "the existing database has $jobs_after jobs after a failed start, $jobs_before before"
echo "serve durability: a failed start on an existing database removes nothing ($jobs_after jobs kept)"
passed=$((passed + 4))
echo "durability: $passed passed, 0 failed"
