#!/usr/bin/env bash
# Issue 31 item 3: the deputy's reads had no deadline. 16 reads of a user's file that never
# returns (a hung FUSE or NFS mount) held every worker of gpucast serve, and /healthz, for as
# long as the file hung. Here the file is on a real hung mount (hung_fs.py: a FUSE filesystem
# that never answers a read); gpucast serve runs with a deputy token; 16 concurrent deputy
# predictions of that file (as uid 65534, X-Gpucast-Deadline-Ms 1500) must each be answered by
# their deadline (422, or 503 once 8 reads hang), /healthz and an ordinary prediction must be
# answered meanwhile, and once the mount answers again (its server stops) the deputy reads again.
# Needs root (mount, reading as another uid); GPUCAST_SKIP_ROOT=1 opts out, loudly.
# Usage: integrations/slurm/deputy_hang_test.sh BUILD/gpucast
set -u
BIN=$(realpath "${1:?usage: deputy_hang_test.sh PATH/TO/gpucast}")
HERE=$(cd "$(dirname "$0")" && pwd)
ROOT=$(cd "$HERE/../.." && pwd)
. "$ROOT/tests/lib/serve.sh"
if [ "$(id -u)" != 0 ]; then
  if [ "${GPUCAST_SKIP_ROOT:-0}" = 1 ]; then
    echo "deputy hang test: SKIPPED because GPUCAST_SKIP_ROOT=1: hung deputy reads were NOT tested"; exit 0
  fi
  echo "deputy hang test: FAILED: needs root (a FUSE mount, reads as uid 65534); opt out with GPUCAST_SKIP_ROOT=1" >&2
  exit 1
fi
T=$(mktemp -d /tmp/gpucast-hang.XXXXXX)
chmod 755 "$T"
FS_PID=""; SRV_PID=""
cleanup() {
  [ -n "$FS_PID" ] && kill "$FS_PID" 2>/dev/null
  [ -n "$SRV_PID" ] && kill "$SRV_PID" 2>/dev/null
  wait 2>/dev/null
  umount -l "$T/mnt" 2>/dev/null
  rm -rf "$T"
}
trap cleanup EXIT
pass=0; failn=0
check() {  # check NAME OK(0/1) DETAIL
  if [ "$2" = 1 ]; then pass=$((pass + 1)); echo "  ok: $1"; else failn=$((failn + 1)); echo "deputy hang test: FAIL: $1: $3"; fi
}
ms_since() { echo $(( ($(date +%s%N) - $1) / 1000000 )); }

mkdir -m 755 "$T/mnt" "$T/models"
cp "$ROOT/models/pointnet.onnx" "$T/models/p.onnx"; chmod 644 "$T/models/p.onnx"
/usr/bin/env python3 "$HERE/hung_fs.py" "$T/mnt" >"$T/fs.out" 2>&1 &
FS_PID=$!
for _ in $(seq 50); do grep -q mounted "$T/fs.out" && break; sleep 0.1; done
grep -q mounted "$T/fs.out" || { echo "deputy hang test: FAILED: hung_fs.py did not mount: $(cat "$T/fs.out")" >&2; exit 1; }
# The premise: reading the file hangs (a reader in the background, given 1 s).
( cat "$T/mnt/m.onnx" >/dev/null 2>&1 & p=$!; sleep 1; if [ -e "/proc/$p" ]; then echo hung; fi ) > "$T/premise"
check "premise: reading $T/mnt/m.onnx does not return" "$([ "$(cat "$T/premise")" = hung ] && echo 1 || echo 0)" \
  "the read returned"

if [ -n "${GPUCAST_TEST_PREDICTOR:-}" ]; then cp "$GPUCAST_TEST_PREDICTOR" "$T/p.json"
else "$BIN" train --out "$T/p.json" >/dev/null || { echo "deputy hang test: FAILED: train" >&2; exit 1; }; fi
echo deputy-secret > "$T/deputy.token"; chmod 600 "$T/deputy.token"
"$BIN" serve --listen 127.0.0.1:0 --db "$T/jobs.db" --predictor "$T/p.json" --cluster "2x RTX3090" \
  --model-root "$T/models" --deputy-token-file "$T/deputy.token" >"$T/out" 2>"$T/err" &
SRV_PID=$!
URL=http://$(serve_addr "$T/out" "$SRV_PID" 10 "$T/err") ||
  { echo "deputy hang test: FAILED: gpucast serve did not start" >&2; exit 1; }
deputy() {  # deputy PATH OUT: one deputy prediction as uid 65534; "CODE SECONDS" in OUT
  curl -s -m 30 -o "$2.body" -w '%{http_code} %{time_total}\n' -X POST "$URL/v1/predict" \
    -H 'Authorization: Bearer deputy-secret' -H 'X-Gpucast-Read-As: 65534:65534' -H 'X-Gpucast-Deadline-Ms: 1500' \
    -H 'Content-Type: application/json' -d "{\"model\": \"$1\", \"batch\": 1}" > "$2"
}
for i in $(seq 16); do deputy "$T/mnt/m.onnx" "$T/r$i" & done
sleep 0.5
worst=0
for _ in 1 2 3; do
  t0=$(date +%s%N)
  code=$(curl -s -m 10 -o /dev/null -w '%{http_code}' "$URL/healthz")
  ms=$(ms_since "$t0"); [ "$ms" -gt "$worst" ] && worst=$ms
  [ "$code" = 200 ] || worst=99999
  sleep 0.3
done
# A worker waits for its read at most the deadline (1.5 s), so /healthz may wait for a free one that long.
check "/healthz answers while 16 deputy reads hang, within their deadline + 1 s ($worst ms)" \
  "$([ "$worst" -le 2500 ] && echo 1 || echo 0)" "$worst ms"
t0=$(date +%s%N)
code=$(curl -s -m 10 -o "$T/plain.body" -w '%{http_code}' -X POST "$URL/v1/predict" -H 'Authorization: Bearer deputy-secret' \
  -H 'Content-Type: application/json' -d "{\"model\": \"$T/models/p.onnx\", \"batch\": 8}")
check "an ordinary prediction is answered meanwhile ($code in $(ms_since "$t0") ms)" "$([ "$code" = 200 ] && echo 1 || echo 0)" \
  "$(cat "$T/plain.body")"
wait $(jobs -p | grep -v "^$FS_PID$" | grep -v "^$SRV_PID$") 2>/dev/null
timed_out=0; busy=0; slow=0
for i in $(seq 16); do
  read -r code secs < "$T/r$i"
  case "$code" in
    422) grep -q "reading it as uid 65534 did not finish within 1.5 s (a hung or slow filesystem?)" "$T/r$i.body" &&
           timed_out=$((timed_out + 1)) ;;
    503) grep -q "reads of users' model files that did not return" "$T/r$i.body" && busy=$((busy + 1)) ;;
  esac
  awk -v s="$secs" 'BEGIN { exit !(s > 3) }' && slow=$((slow + 1))
done
check "16 deputy reads of the hung file: each answered by its deadline ($timed_out 422 'did not finish within 1.5 s', $busy 503 once 8 hang, $slow over 3 s)" \
  "$([ $((timed_out + busy)) = 16 ] && [ "$timed_out" -ge 8 ] && [ "$slow" = 0 ] && echo 1 || echo 0)" \
  "$(for i in $(seq 16); do printf '%s: %s %s; ' "$i" "$(cat "$T/r$i")" "$(head -c 120 "$T/r$i.body")"; done)"
# The reads still hang in the kernel (their threads cannot be stopped), but no worker waits for them.
t0=$(date +%s%N)
code=$(curl -s -m 10 -o /dev/null -w '%{http_code}' "$URL/healthz")
ms=$(ms_since "$t0")
check "after the deadline, with the reads still hanging, /healthz answers within 1 s ($code in $ms ms)" \
  "$([ "$code" = 200 ] && [ "$ms" -le 1000 ] && echo 1 || echo 0)" "$code in $ms ms"
t0=$(date +%s%N)
deputy "$T/models/p.onnx" "$T/busy"
read -r code _ < "$T/busy"
check "while 8 reads hang, the next deputy read is refused at once ($code in $(ms_since "$t0") ms)" \
  "$([ "$code" = 503 ] && echo 1 || echo 0)" "$(cat "$T/busy" "$T/busy.body")"
grep -q "X-Gpucast-Read-As: model '$T/mnt/m.onnx': reading it as uid 65534 did not finish within 1.5 s" "$T/err"
check "the hung reads are logged for the operator" "$([ $? = 0 ] && echo 1 || echo 0)" "$(tail -3 "$T/err")"
# The filesystem's server stops: the kernel fails the hung reads, their threads end, reading works.
kill "$FS_PID"; wait "$FS_PID" 2>/dev/null; FS_PID=""
code=""
for _ in $(seq 50); do
  deputy "$T/models/p.onnx" "$T/after"; read -r code _ < "$T/after"
  [ "$code" = 200 ] && break; sleep 0.1
done
check "once the hung reads return, the deputy reads again ($code)" "$([ "$code" = 200 ] && echo 1 || echo 0)" \
  "$(cat "$T/after.body")"
echo "deputy hang test: $pass passed, $failn failed"
[ "$failn" = 0 ]
