#!/usr/bin/env bash
# End-to-end test of job_submit.lua with real Slurm 22.05 daemons on localhost:
# munged, slurmctld and slurmd (2 fake GPUs made with mknod, 8 shards each),
# a predictor trained with `gpucast train`, real sbatch jobs naming ONNX models.
# Everything lives in a temp dir; every daemon is stopped by PID on exit.
# Usage: integrations/slurm/test.sh [PATH/TO/gpucast]   (root; run by `make test`)
set -euo pipefail

HERE=$(cd "$(dirname "$0")" && pwd)
ROOT=$(cd "$HERE/../.." && pwd)
GPUCAST=$(realpath "${1:-$ROOT/build/gpucast}")
MODELS=$ROOT/models
DATA=${GPUCAST_DATA:-$ROOT/../shared/data}
SHARDS=8

[ -x "$GPUCAST" ] || { echo "slurm test: no gpucast binary at $GPUCAST" >&2; exit 1; }
if [ "$(id -u)" != 0 ]; then
  echo "slurm test: SKIPPED (needs root to run slurmctld/slurmd/munged and mknod)"
  exit 0
fi

# Debian packages (idempotent).
PKGS="slurmctld slurmd slurm-client munge curl"
missing=$(for p in $PKGS; do dpkg-query -W -f='${Status}\n' "$p" 2>/dev/null | grep -q '^install ok installed' || echo "$p"; done)
if [ -n "$missing" ]; then
  echo "slurm test: installing $missing"
  apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends $missing >/dev/null
fi

T=$(mktemp -d /tmp/gpucast-slurm.XXXXXX)
chmod 755 "$T"
PIDS=()       # daemons we started, in start order
FAILED=0

stop_daemons() {
  local i pid
  for ((i = ${#PIDS[@]} - 1; i >= 0; i--)); do
    pid=${PIDS[$i]}
    kill -TERM "$pid" 2>/dev/null || true
    for _ in $(seq 100); do  # up to 10 s; a zombie counts as gone once reaped below
      if [ ! -e "/proc/$pid" ] || grep -q '^State:.*Z' "/proc/$pid/status" 2>/dev/null; then break; fi
      sleep 0.1
    done
    if [ -e "/proc/$pid" ] && ! grep -q '^State:.*Z' "/proc/$pid/status" 2>/dev/null; then
      echo "slurm test: pid $pid ignored SIGTERM, sending SIGKILL" >&2
      kill -KILL "$pid" 2>/dev/null || true
    fi
    wait "$pid" 2>/dev/null || true  # reap our child: no zombie left
    if [ -e "/proc/$pid" ]; then echo "slurm test: pid $pid still present" >&2; FAILED=1; fi
  done
  PIDS=()
}

# PIDs of processes whose command line mentions the temp dir (bash builtins
# only, so the search does not find itself).
leftovers() {
  local f pid args
  for f in /proc/[0-9]*/cmdline; do
    pid=${f#/proc/}; pid=${pid%/cmdline}
    mapfile -d '' args < "$f" 2>/dev/null || continue
    if [[ "${args[*]}" == *"$T"* ]]; then printf '%s ' "$pid"; fi
  done
}

cleanup() {
  local rc=$?
  [ "$FAILED" = 1 ] && rc=1
  if [ "$rc" != 0 ]; then
    echo "--- slurmctld.log (tail)"; tail -n 30 "$T/slurmctld.log" 2>/dev/null || true
    echo "--- slurmd.log (tail)"; tail -n 15 "$T/slurmd.log" 2>/dev/null || true
  fi
  # Jobs outlive slurmd (slurmstepd holds them): cancel them while slurmctld runs.
  if [ ${#PIDS[@]} -gt 0 ] && [ -n "${SLURM_CONF:-}" ]; then
    scancel --quiet $(squeue -h -o %i 2>/dev/null) 2>/dev/null || true
    for _ in $(seq 100); do [ -z "$(squeue -h -o %i 2>/dev/null)" ] && break; sleep 0.1; done
  fi
  stop_daemons
  # Nothing started from the temp dir may survive (job scripts, gpucast serve).
  for _ in $(seq 50); do
    left=$(leftovers)
    [ -z "$left" ] && break
    sleep 0.1
  done
  if [ -n "$left" ]; then echo "slurm test: processes left behind: $left" >&2; rc=1; fi
  rm -rf "$T"
  if [ "$rc" = 0 ]; then echo "slurm test: PASSED"; else echo "slurm test: FAILED" >&2; fi
  exit "$rc"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

fail() { echo "slurm test: FAIL: $*" >&2; exit 1; }
pass() { echo "  ok: $*"; }

free_port() {
  local p
  for _ in $(seq 200); do
    p=$((20000 + RANDOM % 20000))
    if ! (exec 3<>"/dev/tcp/127.0.0.1/$p") 2>/dev/null; then echo "$p"; return 0; fi
  done
  return 1
}

# --- configuration -----------------------------------------------------------
HOST=$(hostname -s)
CTLD_PORT=$(free_port); SLURMD_PORT=$(free_port)
mkdir -p "$T/dev" "$T/state" "$T/spool" "$T/out"
mknod "$T/dev/nvidia0" c 195 0
mknod "$T/dev/nvidia1" c 195 1
dd if=/dev/urandom of="$T/munge.key" bs=1024 count=1 status=none
chmod 400 "$T/munge.key"

cat > "$T/slurm.conf" <<CONF
ClusterName=gpucasttest
SlurmctldHost=$HOST(127.0.0.1)
SlurmctldPort=$CTLD_PORT
SlurmdPort=$SLURMD_PORT
AuthType=auth/munge
CredType=cred/munge
AuthInfo=socket=$T/munge.sock
SlurmUser=root
SlurmdUser=root
StateSaveLocation=$T/state
SlurmdSpoolDir=$T/spool
SlurmctldPidFile=$T/slurmctld.pid
SlurmdPidFile=$T/slurmd.pid
SlurmctldLogFile=$T/slurmctld.log
SlurmdLogFile=$T/slurmd.log
SlurmctldDebug=info
SlurmdDebug=info
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
GresTypes=gpu,shard
JobSubmitPlugins=lua
SlurmdParameters=config_overrides
AccountingStorageType=accounting_storage/none
JobAcctGatherType=jobacct_gather/none
JobCompType=jobcomp/none
MpiDefault=none
ReturnToService=2
SchedulerType=sched/builtin
MailProg=/bin/true
NodeName=$HOST NodeAddr=127.0.0.1 CPUs=8 RealMemory=1000 Gres=gpu:2,shard:$((2 * SHARDS)) State=UNKNOWN
PartitionName=test Nodes=ALL Default=YES MaxTime=INFINITE State=UP
CONF
cat > "$T/gres.conf" <<CONF
AutoDetect=off
Name=gpu File=$T/dev/nvidia0
Name=gpu File=$T/dev/nvidia1
Name=shard Count=$SHARDS File=$T/dev/nvidia0
Name=shard Count=$SHARDS File=$T/dev/nvidia1
CONF
cp "$HERE/job_submit.lua" "$T/job_submit.lua"
write_conf() {  # write_conf KEY=VALUE...: gpucast.conf for job_submit.lua
  {
    echo "gpucast = $GPUCAST"
    echo "predictor = $T/predictor.json"
    echo "shards_per_gpu = $SHARDS"
    echo "timeout_s = 5"
    for kv in "$@"; do echo "${kv%%=*} = ${kv#*=}"; done
  } > "$T/gpucast.conf"
}
write_conf mode=cli
export SLURM_CONF=$T/slurm.conf
cd "$T"  # jobs' working directory

# --- predictor ---------------------------------------------------------------
"$GPUCAST" train --data "$DATA/lucid/single_data.csv" --out "$T/predictor.json" >/dev/null
predict() {  # predict MODEL BATCH -> utilization percent
  "$GPUCAST" predict --json --predictor "$T/predictor.json" --model "$1" --batch "$2" |
    sed -n 's/^ *"gpu_util": *\([0-9.eE+-]*\).*/\1/p'
}
shards_for() { awk -v u="$1" -v k="$SHARDS" 'BEGIN { n = u * k / 100; c = int(n); if (c < n - 1e-9) c++; if (c < 1) c = 1; if (c > k) c = k; print c }'; }

U_BIG=$(predict "$MODELS/resnet50.onnx" 64)
U_SMALL=$(predict "$MODELS/pointnet.onnx" 32)
N_BIG=$(shards_for "$U_BIG"); N_SMALL=$(shards_for "$U_SMALL")
echo "predicted: resnet50 b64 ${U_BIG}% -> $N_BIG shards; pointnet b32 ${U_SMALL}% -> $N_SMALL shards"
[ "$N_SMALL" -lt "$SHARDS" ] && [ $((3 * N_SMALL)) -le "$SHARDS" ] ||
  fail "pointnet prediction too large for the sharing check ($N_SMALL shards)"

# --- daemons (foreground mode, so $! is the daemon's PID) ---------------------
/usr/sbin/munged -F --force --socket="$T/munge.sock" --key-file="$T/munge.key" \
  --pid-file="$T/munged.pid" --seed-file="$T/munged.seed" --log-file="$T/munged.log" \
  >"$T/munged.out" 2>&1 &
PIDS+=($!)
for _ in $(seq 50); do [ -S "$T/munge.sock" ] && break; sleep 0.1; done
[ -S "$T/munge.sock" ] || fail "munged did not start"
/usr/sbin/slurmctld -D -i -f "$T/slurm.conf" >"$T/slurmctld.out" 2>&1 &
PIDS+=($!)
/usr/sbin/slurmd -D -f "$T/slurm.conf" >"$T/slurmd.out" 2>&1 &
PIDS+=($!)
for _ in $(seq 150); do
  [ "$(sinfo -h -o %T 2>/dev/null | head -1)" = idle ] && break
  sleep 0.2
done
[ "$(sinfo -h -o %T 2>/dev/null | head -1)" = idle ] || fail "node did not become idle: $(sinfo 2>&1)"
pass "munged, slurmctld, slurmd up (pids ${PIDS[*]})"

# --- jobs --------------------------------------------------------------------
cat > "$T/sleep.sh" <<'JOB'
#!/bin/sh
sleep 300
JOB
small_script() {  # a batch script that names its model in a #GPUCAST line
  printf '#!/bin/sh\n#GPUCAST model=%s batch=32\nsleep 300\n' "$MODELS/pointnet.onnx" > "$T/small.sh"
  echo "$T/small.sh"
}
submit() {  # submit ARGS... -> job id on stdout; sbatch's stderr in $T/sbatch.err
  sbatch --parsable -o "$T/out/%j.out" "$@" 2>"$T/sbatch.err"
}
job_field() { scontrol show job "$1" | tr ' ' '\n' | sed -n "s/^$2=//p" | head -1; }
granted_shards() { scontrol show job "$1" | tr ' ' '\n' | sed -n 's/^TresPerNode=gres:shard://p' | head -1; }
wait_state() {  # wait_state JOB STATE
  for _ in $(seq 150); do [ "$(job_field "$1" JobState)" = "$2" ] && return 0; sleep 0.2; done
  fail "job $1 is $(job_field "$1" JobState) ($(job_field "$1" Reason)), want $2"
}

BIG=$(submit --comment="model=$MODELS/resnet50.onnx,batch=64" "$T/sleep.sh") || fail "big job refused: $(cat "$T/sbatch.err")"
grep -q "gres:shard:$N_BIG of $SHARDS" "$T/sbatch.err" || fail "no gpucast message on sbatch stderr: $(cat "$T/sbatch.err")"
[ "$(granted_shards "$BIG")" = "$N_BIG" ] || fail "resnet50: Slurm has shard:$(granted_shards "$BIG"), want $N_BIG"
pass "resnet50 b64 (comment) -> gres:shard:$N_BIG, message on sbatch stderr"
wait_state "$BIG" RUNNING

SMALL=()
for i in 1 2 3; do
  id=$(submit "$(small_script)") || fail "small job refused: $(cat "$T/sbatch.err")"
  [ "$(granted_shards "$id")" = "$N_SMALL" ] || fail "pointnet: Slurm has shard:$(granted_shards "$id"), want $N_SMALL"
  SMALL+=("$id")
done
pass "pointnet b32 (#GPUCAST line) x3 -> gres:shard:$N_SMALL each"
for id in "${SMALL[@]}"; do wait_state "$id" RUNNING; done
# The GPU index of each running job's shards: scontrol -d prints "GRES=shard:1(IDX:1)".
gpu_of() { scontrol -d show job "$1" | sed -n 's/.* GRES=shard:[0-9]*(IDX:\([0-9,-]*\)).*/\1/p' | head -1; }
RUNNING=$(squeue -h -t R -o %i | wc -l)
[ "$RUNNING" = 4 ] || fail "want 4 jobs running at once on 2 GPUs, squeue: $(squeue)"
G_BIG=$(gpu_of "$BIG")
G_SMALL=$(for id in "${SMALL[@]}"; do gpu_of "$id"; done | sort -u)
echo "  GPU of resnet50: $G_BIG; GPUs of the small jobs: $(echo $G_SMALL)"
[ -n "$G_BIG" ] && [ "$(echo "$G_SMALL" | wc -l)" = 1 ] && [ -n "$G_SMALL" ] ||
  fail "small jobs not on one GPU: '$G_SMALL'"
[ "$G_SMALL" != "$G_BIG" ] || fail "small jobs on the big job's GPU $G_BIG"
pass "3 small jobs run at the same time on one GPU while resnet50 holds the other"

# A second big job does not fit beside them: it waits for resources.
BIG2=$(submit --comment="model=$MODELS/resnet50.onnx,batch=64" "$T/sleep.sh") || fail "big2 refused"
for _ in $(seq 50); do [ "$(job_field "$BIG2" Reason)" != None ] && break; sleep 0.2; done
[ "$(job_field "$BIG2" JobState)" = PENDING ] || fail "second resnet50 is $(job_field "$BIG2" JobState), want PENDING"
pass "second resnet50 pends ($(job_field "$BIG2" Reason)): shards are enforced"

# --- rejections: the message reaches sbatch's stderr --------------------------
expect_reject() {  # expect_reject MESSAGE ARGS...
  local want=$1; shift
  if submit "$@" >/dev/null; then fail "accepted, want rejection '$want'"; fi
  grep -qF -- "$want" "$T/sbatch.err" || fail "sbatch stderr lacks '$want': $(cat "$T/sbatch.err")"
  pass "rejected: $(grep -m1 gpucast "$T/sbatch.err")"
}
expect_reject "gpucast: rejected: $T/missing.onnx" --comment="model=$T/missing.onnx,batch=8" "$T/sleep.sh"
echo "this is not an ONNX model" > "$T/bad.onnx"
expect_reject "gpucast: rejected: $T/bad.onnx" --comment="model=$T/bad.onnx" "$T/sleep.sh"
expect_reject "batch=zero: want an integer >= 1" --comment="model=$MODELS/pointnet.onnx,batch=zero" "$T/sleep.sh"
expect_reject "GPU jobs must name their model" --gres=shard:1 "$T/sleep.sh"
# A CPU job without a model passes through untouched.
CPU=$(submit "$T/sleep.sh") || fail "CPU job refused: $(cat "$T/sbatch.err")"
[ -z "$(granted_shards "$CPU")" ] || fail "CPU job got shards"
scancel "$CPU"
pass "CPU job without a model accepted unchanged"
# Fail closed: gpucast missing -> internal error -> rejected.
write_conf mode=cli gpucast=/nonexistent/gpucast
expect_reject "gpucast: internal error, job rejected" --comment="model=$MODELS/pointnet.onnx" "$T/sleep.sh"

# --- service mode: the same decision through gpucast serve --------------------
SVC_PORT=$(free_port)
"$GPUCAST" serve --listen "127.0.0.1:$SVC_PORT" --db "$T/serve.db" --predictor "$T/predictor.json" \
  --cluster "2x RTX3090" >"$T/serve.out" 2>"$T/serve.err" &
PIDS+=($!)
for _ in $(seq 50); do curl -sf "http://127.0.0.1:$SVC_PORT/healthz" >/dev/null && break; sleep 0.1; done
write_conf mode=service "url=http://127.0.0.1:$SVC_PORT"
SVC_JOB=$(submit --comment="model=$MODELS/pointnet.onnx,batch=32" "$T/sleep.sh") ||
  fail "service mode: refused: $(cat "$T/sbatch.err")"
[ "$(granted_shards "$SVC_JOB")" = "$N_SMALL" ] || fail "service mode: shard:$(granted_shards "$SVC_JOB"), want $N_SMALL"
pass "service mode (POST /v1/predict) -> gres:shard:$N_SMALL"
expect_reject "gpucast: rejected: $T/missing.onnx: cannot read model file" --comment="model=$T/missing.onnx" "$T/sleep.sh"

scancel "${SMALL[@]}" "$BIG" "$BIG2" "$SVC_JOB" 2>/dev/null || true
