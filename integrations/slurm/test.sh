#!/usr/bin/env bash
# End-to-end test of job_submit.lua with real Slurm 22.05 daemons on localhost: munged,
# slurmctld and slurmd (2 fake GPUs made with mknod, 8 shards each), gpucast installed
# into a temp prefix with `cmake --install`, the shipped gpucast.conf.example (only site
# paths substituted), a predictor trained by the installed binary, and real
# sbatch/salloc/srun/scontrol calls made by a throw-away ordinary user.
# Everything lives in a temp dir; every daemon is stopped by PID, the user removed, on exit.
#
# Usage: integrations/slurm/test.sh [BUILD/gpucast]   (root; run by `make test`)
#        integrations/slurm/test.sh --bench N [BUILD/gpucast]   (sbatch latency, bench/slurm_submit.sh)
# It cannot run without root (daemons, mknod, useradd): then it FAILS, unless the caller
# opts out explicitly with GPUCAST_SKIP_SLURM=1.
set -euo pipefail

if [ "${GPUCAST_SKIP_SLURM:-0}" = 1 ]; then
  echo "##############################################################################"
  echo "# slurm test: SKIPPED because GPUCAST_SKIP_SLURM=1: the Slurm plugin was NOT tested"
  echo "##############################################################################"
  exit 0
fi
HERE=$(cd "$(dirname "$0")" && pwd)
ROOT=$(cd "$HERE/../.." && pwd)
BENCH=""     # --bench N: measure sbatch latency instead of testing (bench/slurm_submit.sh)
if [ "${1:-}" = --bench ]; then BENCH=${2:?--bench N}; shift 2; fi
BUILT=$(realpath -m "${1:-$ROOT/build/gpucast}")
BUILD_DIR=$(dirname "$BUILT")
SHARDS=8

if [ "$(id -u)" != 0 ]; then
  echo "slurm test: FAILED: needs root (slurmctld/slurmd/munged, mknod, useradd); run as root," \
       "or opt out explicitly with GPUCAST_SKIP_SLURM=1" >&2
  exit 1
fi
[ -x "$BUILT" ] || { echo "slurm test: FAILED: no gpucast binary at $BUILT" >&2; exit 1; }
# GPUCAST_PREFIX: gpucast installed there already (chroot_test.sh installs it into the chroot);
# else this build is installed into a temp prefix with cmake --install.
[ -n "${GPUCAST_PREFIX:-}" ] || [ -f "$BUILD_DIR/cmake_install.cmake" ] ||
  { echo "slurm test: FAILED: $BUILD_DIR is not a cmake build dir" >&2; exit 1; }
SLURM_VERSION=$(/usr/sbin/slurmctld -V 2>/dev/null | awk '{ print $2 }')
SLURM_MAJOR=${SLURM_VERSION%%.*}
echo "slurm test: Slurm $SLURM_VERSION"

# Debian packages (idempotent).
PKGS="slurmctld slurmd slurm-client munge curl lua-socket jq sudo lua5.1"
missing=$(for p in $PKGS; do dpkg-query -W -f='${Status}\n' "$p" 2>/dev/null | grep -q '^install ok installed' || echo "$p"; done)
if [ -n "$missing" ]; then
  echo "slurm test: installing $missing"
  apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends $missing >/dev/null
fi

T=$(mktemp -d /tmp/gpucast-slurm.XXXXXX)
chmod 755 "$T"
PIDS=()       # daemons we started, in start order
FAILED=0
TU=""         # the test user, once created

stop_pid() {
  local pid=$1
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
}
stop_daemons() {  # stop_daemons [N]: stop the last N daemons started (all by default)
  local n=${1:-${#PIDS[@]}} i
  for ((i = ${#PIDS[@]} - 1; i >= ${#PIDS[@]} - n && i >= 0; i--)); do stop_pid "${PIDS[$i]}"; done
  PIDS=("${PIDS[@]:0:${#PIDS[@]}-n}")
}

# PIDs of processes whose command line mentions the temp dir (bash builtins
# only, so the search does not find itself).
leftovers() {
  local f pid args
  for f in /proc/[0-9]*/cmdline; do
    pid=${f#/proc/}; pid=${pid%/cmdline}
    mapfile -d '' args 2>/dev/null < "$f" || continue
    if [[ "${args[*]}" == *"$T"* ]]; then printf '%s ' "$pid"; fi
  done
}

cancel_all() {
  scancel --quiet $(squeue -h -o %i 2>/dev/null) 2>/dev/null || true
  for _ in $(seq 100); do [ -z "$(squeue -h -o %i 2>/dev/null)" ] && break; sleep 0.1; done
}

PLANTED=""   # files the test user planted outside the temp dir
SUDOERS=""; EXTRA_USERS=""; EXTRA_GROUP=""   # section 9
cleanup() {
  local rc=$? left=""
  [ "$FAILED" = 1 ] && rc=1
  [ -n "$PLANTED" ] && rm -f $PLANTED
  if [ "$rc" != 0 ]; then
    echo "--- slurmctld.log (tail)"; tail -n 30 "$T/slurmctld.log" 2>/dev/null || true
    echo "--- slurmd.log (tail)"; tail -n 15 "$T/slurmd.log" 2>/dev/null || true
    # The whole logs outlive the temp dir (inside chroot_test.sh's chroot: under its /tmp).
    mkdir -p /tmp/gpucast-slurm-failed && cp "$T"/*.log "$T"/*.err /tmp/gpucast-slurm-failed/ 2>/dev/null &&
      echo "--- the logs of this run: /tmp/gpucast-slurm-failed/"
  fi
  # Jobs outlive slurmd (slurmstepd holds them): cancel them while slurmctld runs.
  if [ ${#PIDS[@]} -gt 0 ] && [ -n "${SLURM_CONF:-}" ]; then cancel_all; fi
  stop_daemons
  # Nothing started from the temp dir may survive (job scripts, gpucast serve).
  for _ in $(seq 50); do
    left=$(leftovers)
    [ -z "$left" ] && break
    sleep 0.1
  done
  if [ -n "$left" ]; then echo "slurm test: processes left behind: $left" >&2; rc=1; fi
  # Section 9's sudoers file and accounts (the rule goes first).
  [ -n "$SUDOERS" ] && rm -f "$SUDOERS"
  for u in $EXTRA_USERS; do
    pkill -KILL -u "$u" 2>/dev/null || true
    userdel "$u" 2>/dev/null || { echo "slurm test: cannot remove user $u" >&2; rc=1; }
    getent group "$u" >/dev/null && groupdel "$u" 2>/dev/null
  done
  [ -n "$EXTRA_GROUP" ] && groupdel "$EXTRA_GROUP" 2>/dev/null
  if [ -n "$TU" ]; then
    pkill -KILL -u "$TU" 2>/dev/null || true  # only the throw-away user's processes
    userdel "$TU" 2>/dev/null || { echo "slurm test: cannot remove user $TU" >&2; rc=1; }
    getent group "$TU" >/dev/null && groupdel "$TU" 2>/dev/null
  fi
  cd /
  rm -rf "$T"
  local what="slurm test"; [ -n "$BENCH" ] && what="slurm bench"
  if [ "$rc" = 0 ]; then echo "$what: PASSED"; else echo "$what: FAILED" >&2; fi
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

# --- install into a temp prefix; use only that install from here on --------------
if [ -n "${GPUCAST_PREFIX:-}" ]; then
  P=$GPUCAST_PREFIX
else
  P=$T/prefix
  cmake --install "$BUILD_DIR" --prefix "$P" --strip >/dev/null
fi
GPUCAST=$P/bin/gpucast
SHARE=$P/share/gpucast
for f in bin/gpucast share/gpucast/models/catalog.json share/gpucast/models/resnet50.onnx \
         share/gpucast/data/lucid/single_data.csv share/gpucast/slurm/job_submit.lua \
         share/gpucast/slurm/gpucast.conf.example share/gpucast/slurm/gpucast-epilog.sh; do
  [ -e "$P/$f" ] || fail "make install: $P/$f missing"
done
# No default may point into the checkout (models, catalog, data) or at ../shared. Source
# file names under src/ are locations, not defaults: sanitizer builds (make sanitize) carry
# them in their error reports.
SRC_PATHS=$(grep -aoF "$ROOT" "$GPUCAST" >/dev/null && { strings -n 8 "$GPUCAST" | grep -F "$ROOT" | grep -vE "^$ROOT/src/[[:alnum:]_/.-]+\.(h|cc)\$" || true; } || true)
if [ -n "$SRC_PATHS" ] || grep -qaF "$(dirname "$ROOT")/shared" "$GPUCAST"; then
  fail "installed binary contains a source-tree path ($ROOT): $(echo "$SRC_PATHS" | head -3)"
fi
MODELS=$SHARE/models
# The installed binary finds its data and catalog by itself (no GPUCAST_DATA/HOME).
env -u GPUCAST_DATA -u GPUCAST_HOME "$GPUCAST" train --out "$T/predictor.json" >/dev/null ||
  fail "installed gpucast cannot train from its installed data"
chmod 644 "$T/predictor.json"
pass "cmake --install into $P: binary, models, data, plugin; no source path in the binary; it trains on its own"

# --- a throw-away ordinary user -----------------------------------------------------
TU=gpct$$
useradd -M -U -d /nonexistent -s /usr/sbin/nologin "$TU" || { TU=""; fail "useradd failed"; }
TUID=$(id -u "$TU"); TGID=$(id -g "$TU")
as_user() { setpriv --reuid="$TUID" --regid="$TGID" --init-groups -- "$@"; }
# A second ordinary user: another user on the same cluster (issue 32's checks).
TU2=gpcu$$
useradd -M -U -d /nonexistent -s /usr/sbin/nologin "$TU2" || fail "useradd $TU2 failed"
EXTRA_USERS="$EXTRA_USERS $TU2"
TU2ID=$(id -u "$TU2"); TU2GID=$(id -g "$TU2")
as_user2() { setpriv --reuid="$TU2ID" --regid="$TU2GID" --init-groups -- "$@"; }

# --- configuration -----------------------------------------------------------------
HOST=$(hostname -s)
CTLD_PORT=$(free_port); SLURMD_PORT=$(free_port)
mkdir -p "$T/dev" "$T/out"
chmod 1777 "$T/out"
mknod "$T/dev/nvidia0" c 195 0
mknod "$T/dev/nvidia1" c 195 1
dd if=/dev/urandom of="$T/munge.key" bs=1024 count=1 status=none
chmod 400 "$T/munge.key"

write_slurm_conf() {  # write_slurm_conf shard|mps
  local gres
  # The test tracks processes without cgroups (proctrack/linuxproc, task/none: it may run in a
  # chroot or container without /sys/fs/cgroup); slurmd 24.11 initialises its cgroup plugin
  # anyway unless cgroup.conf disables it (CgroupPlugin=disabled); written for 24.x only, where it
  # was needed (22.05 runs without it).
  if [ "$SLURM_MAJOR" -ge 24 ]; then echo "CgroupPlugin=disabled" > "$T/cgroup.conf"; else rm -f "$T/cgroup.conf"; fi
  if [ "$1" = shard ]; then gres="gpu:2,shard:$((2 * SHARDS)),nic:2"; else gres="gpu:2,mps:200,nic:2"; fi
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
StateSaveLocation=$T/state-$1
SlurmdSpoolDir=$T/spool-$1
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
GresTypes=gpu,$1,nic
JobSubmitPlugins=lua
EpilogSlurmctld=$T/epilog-wrapper.sh
SlurmdParameters=config_overrides
AccountingStorageType=accounting_storage/none
JobAcctGatherType=jobacct_gather/none
JobCompType=jobcomp/none
MpiDefault=none
ReturnToService=2
SchedulerType=sched/backfill
MailProg=/bin/true
NodeName=$HOST NodeAddr=127.0.0.1 CPUs=16 RealMemory=1000 Gres=$gres Features=rtx3090 State=UNKNOWN
PartitionName=test Nodes=ALL Default=YES MaxTime=INFINITE State=UP
PartitionName=whole Nodes=ALL OverSubscribe=EXCLUSIVE MaxTime=INFINITE State=UP
PartitionName=peruser Nodes=ALL ExclusiveUser=YES MaxTime=INFINITE State=UP
CONF
  # Slurm 24.x: a partition of whole topology blocks (22.05 has no ExclusiveTopo).
  [ "$SLURM_MAJOR" -lt 24 ] || echo "PartitionName=topo Nodes=ALL ExclusiveTopo=YES MaxTime=INFINITE State=UP" >> "$T/slurm.conf"
  {
    echo "AutoDetect=off"
    echo "Name=gpu File=$T/dev/nvidia0"
    echo "Name=gpu File=$T/dev/nvidia1"
    if [ "$1" = shard ]; then
      echo "Name=shard Count=$SHARDS File=$T/dev/nvidia0"
      echo "Name=shard Count=$SHARDS File=$T/dev/nvidia1"
    else
      echo "Name=mps Count=100 File=$T/dev/nvidia0"
      echo "Name=mps Count=100 File=$T/dev/nvidia1"
    fi
    echo "Name=nic Count=2"
  } > "$T/gres.conf"
  mkdir -p "$T/state-$1" "$T/spool-$1"
}
write_slurm_conf shard
cp "$SHARE/slurm/job_submit.lua" "$T/job_submit.lua"
cp "$SHARE/slurm/gpucast-epilog.sh" "$T/gpucast-epilog.sh"  # EpilogSlurmctld; reads $T/gpucast.conf too
# slurmctld gives EpilogSlurmctld its own environment, without SLURM_CONF: the epilog's
# scontrol would read /etc/slurm/slurm.conf, so this test's config is named for it.
# The epilog's sacct is a stand-in (this host has no GPU, so slurmd gathers no gres/gpuutil): it
# prints $T/sacct/JOBID.txt, the utilization a check gives a job, as sacct prints it (section 7b).
printf '#!/bin/sh\nSLURM_CONF=%s PATH=%s:$PATH exec %s\n' "$T/slurm.conf" "$T/fakebin" "$T/gpucast-epilog.sh" > "$T/epilog-wrapper.sh"
chmod 755 "$T/epilog-wrapper.sh"
mkdir -p "$T/fakebin" "$T/sacct"
cat > "$T/fakebin/sacct" <<EOF
#!/bin/sh
id=""; prev=""
for a in "\$@"; do [ "\$prev" = -j ] && id=\$a; prev=\$a; done
case "\$*" in *TRESUsageInAve*) [ -f "$T/sacct/\$id.txt" ] && cat "$T/sacct/\$id.txt" ;; esac
exit 0
EOF
chmod 755 "$T/fakebin/sacct"

# gpucast.conf = the shipped example with the site's paths substituted, nothing else.
sed -e "s|^gpucast = /usr/local/bin/gpucast |gpucast = $GPUCAST |" \
    -e "s|^predictor = /etc/slurm/gpucast-predictor.json |predictor = $T/predictor.json |" \
    "$SHARE/slurm/gpucast.conf.example" > "$T/gpucast.conf.site"
[ "$(diff "$SHARE/slurm/gpucast.conf.example" "$T/gpucast.conf.site" | grep -c '^>')" = 2 ] ||
  fail "site paths not substituted in the example: $(diff "$SHARE/slurm/gpucast.conf.example" "$T/gpucast.conf.site")"
grep -q '  # ' "$T/gpucast.conf.site" || fail "the example has no inline comments to test"
write_conf() {  # write_conf [KEY=VALUE...]: the site file plus overriding lines
  cp "$T/gpucast.conf.site" "$T/gpucast.conf"
  # The test submits hundreds of jobs a minute as one user (the shipped 3 s per minute is a
  # site's default): a larger budget unless the check sets its own (section 1c checks it).
  case " $* " in *" user_budget_s="*) ;; *) echo "user_budget_s = 1000   # test: many jobs a minute" >> "$T/gpucast.conf" ;; esac
  for kv in "$@"; do echo "${kv%%=*} = ${kv#*=}   # test override" >> "$T/gpucast.conf"; done
}
write_conf
export SLURM_CONF=$T/slurm.conf
cd "$T"  # jobs' working directory

# --- expected decisions, from the installed gpucast itself ---------------------------
pjson() { "$GPUCAST" predict --json --predictor "$T/predictor.json" --model "$1" --batch "$2"; }
jnum() { sed -n "s/^ *\"$1\": *\([0-9.eE+-]*\).*/\1/p" | head -1; }
units_for() { awk -v u="$1" -v k="$2" 'BEGIN { n = u * k / 100; c = int(n); if (c < n - 1e-9) c++; if (c < 1) c = 1; if (c > k) c = k; print c }'; }
# memory = high (the example's, the default): the share also holds the memory interval's high end
# H of the GPU's C MiB, N >= ceil(H x K / C). share_for JSON K: the larger of the two.
mem_units_for() { units_for "$(awk -v h="$1" -v c="$2" 'BEGIN { printf "%.9f", 100 * h / c }')" "$3"; }
share_for() {
  local u h c
  u=$(echo "$1" | jq -r .gpu_util); h=$(echo "$1" | jq -r .gpu_mem_interval.high); c=$(echo "$1" | jq -r .gpu_mem_capacity_mib)
  [ "$h" != null ] && [ "$c" != null ] || fail "test premise: gpucast predict --json has no memory prediction: $1"
  awk -v a="$(units_for "$u" "$2")" -v b="$(mem_units_for "$h" "$c" "$2")" 'BEGIN { print (a > b ? a : b) }'
}
J_BIG=$(pjson "$MODELS/resnet50.onnx" 64); U_BIG=$(echo "$J_BIG" | jnum gpu_util)
J_SMALL=$(pjson "$MODELS/pointnet.onnx" 32)
U_SMALL=$(echo "$J_SMALL" | jnum gpu_util); H_SMALL=$(echo "$J_SMALL" | jq -r .interval.high)  # the utilization interval (gpu_mem_interval has a high too)
MH_SMALL=$(echo "$J_SMALL" | jq -r .gpu_mem_interval.high); CAP=$(echo "$J_SMALL" | jq -r .gpu_mem_capacity_mib)
N_BIG=$(share_for "$J_BIG" $SHARDS); N_SMALL=$(share_for "$J_SMALL" $SHARDS)
NU_SMALL=$(units_for "$U_SMALL" $SHARDS); NM_SMALL=$(mem_units_for "$MH_SMALL" "$CAP" $SHARDS)
# The headroom check's job: neumf at batch 64, whose utilization interval's high end needs more
# shards than its point (a seen workload's interval, such as pointnet's, can be too narrow for that).
J_HEAD=$(pjson "$MODELS/neumf.onnx" 64); U_HEAD=$(echo "$J_HEAD" | jnum gpu_util); H_HEAD=$(echo "$J_HEAD" | jq -r .interval.high)
NU_HEAD=$(units_for "$U_HEAD" $SHARDS); NH_HEAD=$(units_for "$H_HEAD" $SHARDS)  # headroom = interval with memory = none
# The sharing check's job: pointnet at batch 8, whose memory leaves room for three on one GPU.
J_SHARE=$(pjson "$MODELS/pointnet.onnx" 8); N_SHARE=$(share_for "$J_SHARE" $SHARDS)
echo "predicted: resnet50 b64 ${U_BIG}% -> $N_BIG shards; pointnet b32 ${U_SMALL}% (high $H_SMALL%), memory high" \
     "$MH_SMALL of $CAP MiB -> $N_SMALL shards ($NU_SMALL by utilization, $NM_SMALL by memory); pointnet b8 ->" \
     "$N_SHARE shards; neumf b64 ${U_HEAD}% (high $H_HEAD%) -> $NU_HEAD shards by the point, $NH_HEAD by the high end"
[ "$N_BIG" = "$SHARDS" ] || fail "resnet50 b64 should need all $SHARDS shards, got $N_BIG"
[ "$NM_SMALL" -gt "$NU_SMALL" ] || fail "test premise: pointnet b32's memory ($NM_SMALL shards) should decide over its utilization ($NU_SMALL)"
[ "$NH_HEAD" != "$NU_HEAD" ] || fail "test premise: headroom = interval gives neumf b64 the same $NU_HEAD shards"
[ "$N_SHARE" -lt "$SHARDS" ] && [ $((3 * N_SHARE)) -le "$SHARDS" ] ||
  fail "pointnet b8 prediction too large for the sharing check ($N_SHARE shards)"

# --- daemons (foreground mode, so $! is the daemon's PID) ---------------------------
/usr/sbin/munged -F --force --socket="$T/munge.sock" --key-file="$T/munge.key" \
  --pid-file="$T/munged.pid" --seed-file="$T/munged.seed" --log-file="$T/munged.log" \
  >"$T/munged.out" 2>&1 &
PIDS+=($!)
for _ in $(seq 50); do [ -S "$T/munge.sock" ] && break; sleep 0.1; done
[ -S "$T/munge.sock" ] || fail "munged did not start"
start_slurm() {
  /usr/sbin/slurmctld -D -i -f "$T/slurm.conf" >>"$T/slurmctld.out" 2>&1 &
  PIDS+=($!)
  /usr/sbin/slurmd -D -f "$T/slurm.conf" >>"$T/slurmd.out" 2>&1 &
  PIDS+=($!)
  for _ in $(seq 150); do
    [ "$(sinfo -h -o %T 2>/dev/null | head -1)" = idle ] && break
    sleep 0.2
  done
  [ "$(sinfo -h -o %T 2>/dev/null | head -1)" = idle ] || fail "node did not become idle: $(sinfo 2>&1)"
}
start_slurm
pass "munged, slurmctld, slurmd up (pids ${PIDS[*]}); plugin in its default (cli) mode"

# --- helpers -----------------------------------------------------------------------
cat > "$T/sleep.sh" <<'JOB'
#!/bin/sh
sleep 300
JOB
small_script() {  # a batch script that names its model in a #GPUCAST line (the sharing check's job)
  printf '#!/bin/sh\n#GPUCAST model=%s batch=8\nsleep 300\n' "$MODELS/pointnet.onnx" > "$T/small.sh"
  echo "$T/small.sh"
}
submit() {  # submit ARGS... (as the test user) -> job id; sbatch's stderr in $T/sbatch.err
  as_user sbatch --parsable -o "$T/out/%j.out" "$@" 2>"$T/sbatch.err"
}
job_field() { scontrol show job "$1" | tr ' ' '\n' | sed -n "s/^$2=//p" | head -1; }
# The spelling of a gres in tres_per_* that this Slurm accepts and the plugin writes (job_submit.lua
# gres_sep): 22.05 gres:shard:8 (refuses gres/), 24.11 gres/shard:8 (refuses gres:). Messages and
# updates use it; what Slurm granted is compared in 22.05's form (granted).
GRES_PFX=$(echo "$SLURM_VERSION" | awk -F. '{ print ($1 * 100 + $2 >= 2302) ? "gres/" : "gres:" }')  # as gres_sep decides
granted() { job_field "$1" TresPerNode | sed 's|^gres/|gres:|; s|,gres/|,gres:|g'; }
granted_shards() { granted "$1" | sed -n 's/^gres:shard:\([0-9]*\).*/\1/p'; }
wait_state() {  # wait_state JOB STATE
  for _ in $(seq 150); do [ "$(job_field "$1" JobState)" = "$2" ] && return 0; sleep 0.2; done
  fail "job $1 is $(job_field "$1" JobState) ($(job_field "$1" Reason)), want $2"
}
expect_reject() {  # expect_reject MESSAGE ARGS...
  local want=$1; shift
  if submit "$@" >/dev/null; then fail "accepted ($*), want rejection '$want'"; fi
  grep -qF -- "$want" "$T/sbatch.err" || fail "sbatch stderr lacks '$want': $(cat "$T/sbatch.err")"
  if grep -q 'job_submit\|\.lua' "$T/sbatch.err"; then fail "Lua internals shown to the user: $(cat "$T/sbatch.err")"; fi
  pass "rejected: $(grep -m1 gpucast "$T/sbatch.err" | cut -c1-150)"
}
ctld_log_has() { grep -qF -- "$1" "$T/slurmctld.log" || fail "slurmctld.log lacks '$1'"; }
MISCONF="gpucast is misconfigured, contact your administrator"
M_SMALL="--comment=model=$MODELS/pointnet.onnx,batch=32"

# The fork-free service mode: gpucast serve with a deputy token (it reads models as the
# submitting user, src/service/read_as.h); job_submit.lua posts with lua-socket. run_as is
# pointed at a marker script: it must never run (no process per submission).
start_deputy() {
  DEP_PORT=$(free_port)
  od -An -N16 -tx1 /dev/urandom | tr -d ' \n' > "$T/deputy.token"; chmod 600 "$T/deputy.token"
  "$GPUCAST" serve --listen "127.0.0.1:$DEP_PORT" --db "$T/deputy.db" --predictor "$T/predictor.json" \
    --cluster "2x RTX3090" --deputy-token-file "$T/deputy.token" >"$T/deputy.out" 2>"$T/deputy.err" &
  PIDS+=($!)
  for _ in $(seq 50); do curl -sf "http://127.0.0.1:$DEP_PORT/healthz" >/dev/null && break; sleep 0.1; done
  printf '#!/bin/sh\ntouch %s/forked\nexec "$@"\n' "$T" > "$T/mark-fork.sh"; chmod 755 "$T/mark-fork.sh"
  write_conf mode=service "url=http://127.0.0.1:$DEP_PORT" "deputy_token_file=$T/deputy.token" \
    "run_as=$T/mark-fork.sh"
}

# --- bench mode: sbatch latency without the plugin, in cli mode, in service mode ----------
bench_series() {  # bench_series LABEL N: N held submissions by the test user, latency in ms
  local label=$1 n=$2 t0 t1 times=()
  for _ in $(seq "$n"); do
    t0=$(date +%s%N)
    as_user sbatch -H --parsable -o /dev/null "$M_SMALL" "$T/sleep.sh" >/dev/null 2>"$T/sbatch.err" ||
      fail "bench ($label): sbatch failed: $(cat "$T/sbatch.err")"
    t1=$(date +%s%N)
    times+=($(( (t1 - t0) / 1000 )))
  done
  printf '%s\n' "${times[@]}" | sort -n | awk -v l="$label" '{ a[NR] = $1 }
    END { printf "%-34s %5d %10.1f %10.1f %10.1f\n", l, NR, a[int((NR + 1) / 2)] / 1000, a[int(NR * 0.9)] / 1000, a[NR] / 1000 }'
  cancel_all
}
if [ -n "$BENCH" ]; then
  printf "%-34s %5s %10s %10s %10s\n" "sbatch -H (pointnet b32)" n median_ms p90_ms max_ms
  bench_series "plugin, mode = cli" "$BENCH"
  SVC_PORT=$(free_port)
  "$GPUCAST" serve --listen "127.0.0.1:$SVC_PORT" --db "$T/serve.db" --predictor "$T/predictor.json" \
    --cluster "2x RTX3090" >"$T/serve.out" 2>"$T/serve.err" &
  PIDS+=($!)
  for _ in $(seq 50); do curl -sf "http://127.0.0.1:$SVC_PORT/healthz" >/dev/null && break; sleep 0.1; done
  write_conf mode=service "url=http://127.0.0.1:$SVC_PORT"
  bench_series "plugin, mode = service (curl)" "$BENCH"
  start_deputy
  bench_series "plugin, mode = service (deputy)" "$BENCH"
  stop_daemons 4   # deputy serve, serve, slurmd, slurmctld
  sed -i 's/^JobSubmitPlugins=lua/#JobSubmitPlugins=lua/' "$T/slurm.conf"
  start_slurm
  bench_series "no plugin (JobSubmitPlugins unset)" "$BENCH"
  exit 0
fi

# --- 0. what the user's process inherits from slurmctld: descriptors 0-2, no environment ---
# gpucast (cli mode) and the model reader (upload mode) run as the user; wrappers record
# their descriptors (a child lists the wrapper's /proc/PID/fd) and environment, then run
# the real thing. slurmctld holds pipes to slurmscriptd (root) that must not get there.
cat > "$T/rec-gpucast" <<EOF
#!/bin/sh
sh -c 'ls -l /proc/\$PPID/fd > "\$1"' record "$T/out/rec-cli.fds"
env > "$T/out/rec-cli.env"
exec "$GPUCAST" "\$@"
EOF
cat > "$T/rec-as" <<EOF
#!/bin/sh
sh -c 'ls -l /proc/\$PPID/fd > "\$1"' record "$T/out/rec-upload.fds"
env > "$T/out/rec-upload.env"
exec "\$@"
EOF
chmod 755 "$T/rec-gpucast" "$T/rec-as"
CTLD_PID=${PIDS[1]}
CTLD_PIPES=$(ls -l "/proc/$CTLD_PID/fd" | grep -c ' -> pipe:' || true)
[ "$CTLD_PIPES" -ge 1 ] || fail "test premise: slurmctld (pid $CTLD_PID) holds no pipe: $(ls -l /proc/$CTLD_PID/fd)"
inherited_ok() {  # inherited_ok NAME WRAPPER FD2: only 0 /dev/null, 1 a pipe, 2 FD2 (a pipe or /dev/null); env PATH LANG PWD SHLVL _
  local fds env fd2
  fds=$(sed -n 's/.* \([0-9]*\) -> \(.*\)$/\1->\2/p' "$T/out/$1.fds" | awk -F'->' -v w="$2" '$2 != w' | sort)
  fd2=$(echo "$fds" | sed -n 3p)
  if [ "$(echo "$fds" | wc -l)" != 3 ] || [ "$(echo "$fds" | sed -n 1p)" != "0->/dev/null" ] ||
     [[ "$(echo "$fds" | sed -n 2p)" != "1->pipe:["*"]" ]] || { [ "$3" = pipe ] && [[ "$fd2" != "2->pipe:["*"]" ]]; } ||
     { [ "$3" != pipe ] && [ "$fd2" != "2->$3" ]; }; then
    fail "$1: the user's process inherited descriptors $(echo $fds) (slurmctld has $(ls /proc/$CTLD_PID/fd | wc -l) open)"
  fi
  env=$(cut -d= -f1 "$T/out/$1.env" | sort | tr '\n' ' ')
  [ "$env" = "LANG PATH PWD SHLVL _ " ] && grep -qx 'PATH=/usr/sbin:/usr/bin:/sbin:/bin' "$T/out/$1.env" &&
    grep -qx 'LANG=C' "$T/out/$1.env" || fail "$1: the user's process got the environment: $(tr '\n' ' ' < "$T/out/$1.env")"
}
write_conf "gpucast=$T/rec-gpucast"
id=$(submit -H "--comment=model=$MODELS/pointnet.onnx,batch=32" "$T/sleep.sh") || fail "recorded cli job refused: $(cat "$T/sbatch.err")"
[ "$(stat -c %u "$T/out/rec-cli.fds")" = "$TUID" ] || fail "gpucast did not run as the user"
inherited_ok rec-cli "$T/rec-gpucast" pipe
pass "cli mode: gpucast predict ran as $TU with descriptors 0-2 only (slurmctld holds $CTLD_PIPES pipes) and PATH, LANG=C"
cancel_all

# --- 1. sizing and sharing (default cli mode, the example configuration) -----------------
write_conf
BIG=$(submit --comment="model=$MODELS/resnet50.onnx,batch=64" "$T/sleep.sh") || fail "big job refused: $(cat "$T/sbatch.err")"
grep -q "${GRES_PFX}shard:$N_BIG of $SHARDS" "$T/sbatch.err" || fail "no gpucast message on sbatch stderr: $(cat "$T/sbatch.err")"
[ "$(granted "$BIG")" = "gres:shard:$N_BIG" ] || fail "resnet50: Slurm has $(granted "$BIG"), want gres:shard:$N_BIG"
scontrol show job "$BIG" | grep -q "AdminComment=gpucast: model=$MODELS/resnet50.onnx batch=64 util=" ||
  fail "prediction not kept on the job: $(scontrol show job "$BIG" | grep -i admin)"
ctld_log_has "uid=$TUID name=sleep.sh: sized: $MODELS/resnet50.onnx batch 64"
pass "resnet50 b64 (comment) -> gres:shard:$N_BIG; message on stderr, AdminComment and slurmctld.log keep the prediction"
wait_state "$BIG" RUNNING

SMALL=()
for i in 1 2 3; do
  id=$(submit "$(small_script)") || fail "small job refused: $(cat "$T/sbatch.err")"
  [ "$(granted_shards "$id")" = "$N_SHARE" ] || fail "pointnet b8: Slurm has $(granted "$id"), want shard:$N_SHARE"
  SMALL+=("$id")
done
pass "pointnet b8 (#GPUCAST line) x3 -> gres:shard:$N_SHARE each (utilization and memory high end $(echo "$J_SHARE" | jq -r '.gpu_mem_interval.high | floor') of $CAP MiB)"
for id in "${SMALL[@]}"; do wait_state "$id" RUNNING; done
# The GPU index(es) of a job's shards: 22.05 shows GRES=shard:2(IDX:1); 24.11 shards taken from
# each GPU in index order, GRES=shard:2(0/8,2/8): the GPUs with a non-zero count.
gpu_of() {
  scontrol -d show job "$1" | sed -n 's/.* GRES=shard:[0-9]*(\([^)]*\)).*/\1/p' | head -1 |
    awk -F, '/^IDX:/ { print substr($0, 5); next } { s = ""; for (i = 1; i <= NF; i++) if ($i !~ /^0\//) s = s (s == "" ? "" : ",") (i - 1); print s }'
}
RUNNING=$(squeue -h -t R -o %i | wc -l)
[ "$RUNNING" = 4 ] || fail "want 4 jobs running at once on 2 GPUs, squeue: $(squeue)"
G_BIG=$(gpu_of "$BIG")
G_SMALL=$(for id in "${SMALL[@]}"; do gpu_of "$id"; done | sort -u)
[ -n "$G_BIG" ] && [ "$(echo "$G_SMALL" | wc -l)" = 1 ] && [ -n "$G_SMALL" ] || fail "small jobs not on one GPU: '$G_SMALL'"
[ "$G_SMALL" != "$G_BIG" ] || fail "small jobs on the big job's GPU $G_BIG"
pass "3 small jobs share GPU $G_SMALL while resnet50 holds GPU $G_BIG"
BIG2=$(submit --comment="model=$MODELS/resnet50.onnx,batch=64" "$T/sleep.sh") || fail "big2 refused"
for _ in $(seq 50); do [ "$(job_field "$BIG2" Reason)" != None ] && break; sleep 0.2; done
[ "$(job_field "$BIG2" JobState)" = PENDING ] || fail "second resnet50 is $(job_field "$BIG2" JobState), want PENDING"
pass "second resnet50 pends ($(job_field "$BIG2" Reason)): shards are enforced"
cancel_all

# --- 1b. memory = high (the default): the share holds the memory's high end; what cannot fit is refused ---
MSG_MEM=$(printf 'memory up to %.0f of %.0f MiB needs %d) -> %sshard:%d of %d' "$MH_SMALL" "$CAP" "$NM_SMALL" "$GRES_PFX" "$N_SMALL" "$SHARDS")
id=$(submit -H "$M_SMALL" "$T/sleep.sh") || fail "pointnet b32 refused: $(cat "$T/sbatch.err")"
[ "$(granted_shards "$id")" = "$N_SMALL" ] && grep -qF "$MSG_MEM" "$T/sbatch.err" ||
  fail "pointnet b32: $(granted "$id"), want shard:$N_SMALL and '$MSG_MEM': $(cat "$T/sbatch.err")"
scontrol show job "$id" | grep -q "AdminComment=gpucast: model=$MODELS/pointnet.onnx batch=32 util=.* basis=point mem=$(printf '%.0f/%.0f' "$MH_SMALL" "$CAP") share=shard:$N_SMALL/$SHARDS" ||
  fail "memory not kept on the job: $(scontrol show job "$id" | grep -o 'AdminComment=.*')"
pass "pointnet b32: utilization ${U_SMALL}% needs $NU_SMALL shard(s), its memory more; sbatch says '... $MSG_MEM' (AdminComment mem=)"
J_HUGE=$(pjson "$MODELS/pointnet.onnx" 512)
MH_HUGE=$(echo "$J_HUGE" | jq -r .gpu_mem_interval.high)
awk -v h="$MH_HUGE" -v c="$CAP" 'BEGIN { exit !(h > c) }' || fail "test premise: pointnet b512's memory high end $MH_HUGE fits $CAP MiB"
M_HUGE="--comment=model=$MODELS/pointnet.onnx,batch=512"
MSG_HUGE=$(printf "predicted GPU memory up to %.0f MiB (the high end of its interval, a one-sided 95%% bound) does not fit in the %.0f MiB of one GPU on RTX3090 (the predictor's GPU): use a smaller batch or a GPU with more memory" "$MH_HUGE" "$CAP")
expect_reject "gpucast: rejected: $MSG_HUGE" "$M_HUGE" "$T/sleep.sh"
pass "pointnet b512 ($(echo "$J_HUGE" | jq -r '.gpu_util | floor')% utilization, $(echo "$J_HUGE" | jq -r .gpu_mem_fit)) is refused by its memory, with the amounts"
write_conf memory=none
id=$(submit -H "$M_SMALL" "$T/sleep.sh") || fail "memory = none: pointnet b32 refused: $(cat "$T/sbatch.err")"
[ "$(granted_shards "$id")" = "$NU_SMALL" ] && ! grep -q "memory up to" "$T/sbatch.err" ||
  fail "memory = none: $(granted "$id"), want shard:$NU_SMALL by utilization alone: $(cat "$T/sbatch.err")"
id=$(submit -H "$M_HUGE" "$T/sleep.sh") || fail "memory = none: pointnet b512 refused: $(cat "$T/sbatch.err")"
pass "memory = none (the opt-out): pointnet b32 -> shard:$NU_SMALL by utilization alone; pointnet b512 is accepted ($(granted "$id"))"
write_conf
cancel_all

# --- 1c. what one user can cost slurmctld (issue 32 item 1) ---------------------------------
# A crafted model: one Relu and 600,000 header-only initializers, 15 MB (crafted_model.py); it cost
# gpucast predict 6.4 s, and one sbatch 5 s, on main 3b56f8b.
/usr/bin/env python3 "$HERE/crafted_model.py" "$T/crafted.onnx" 600000 >/dev/null || fail "crafted_model.py failed"
chmod 644 "$T/crafted.onnx"
M_CRAFTED="--comment=model=$T/crafted.onnx,batch=1"
ms_since() { echo $(( ($(date +%s%N) - $1) / 1000000 )); }
crafted_once() {  # crafted_once LABEL: one sbatch of the crafted model returns within 2 s
  local t0 ms
  t0=$(date +%s%N)
  submit -H "$M_CRAFTED" "$T/sleep.sh" >/dev/null && fail "$1: the crafted model was accepted: $(cat "$T/sbatch.err")"
  ms=$(ms_since "$t0")
  [ "$ms" -le 2000 ] || fail "$1: the crafted model's sbatch took $ms ms: $(cat "$T/sbatch.err")"
  pass "$1: the crafted 15 MB model's sbatch returns in $ms ms: $(grep -m1 -o 'gpucast: rejected: .*' "$T/sbatch.err" | cut -c1-140)"
}
crafted_once "cli mode"
# The costliest model within the loader's limits (190,000 initializers, under its 200,000 entries):
# the 600,000 one is now refused before it costs anything, so the budget needs this one to bind.
/usr/bin/env python3 "$HERE/crafted_model.py" "$T/crafted190k.onnx" 190000 >/dev/null || fail "crafted_model.py failed"
chmod 644 "$T/crafted190k.onnx"
# 50 concurrent submissions of it by $TU2, with the shipped budget (user_budget_s 3); meanwhile
# $TU submits plain jobs (no model), each timed: the controller stays available to them.
write_conf user_budget_s=3
: > "$T/attack.err"
ATTACK=()
for _ in $(seq 50); do
  as_user2 sbatch -H --parsable -o /dev/null "--comment=model=$T/crafted190k.onnx,batch=1" "$T/sleep.sh" \
    >/dev/null 2>>"$T/attack.err" &
  ATTACK+=($!)
done
LAT=()
for _ in $(seq 10); do
  t0=$(date +%s%N)
  as_user sbatch -H --parsable -o /dev/null --wrap true >/dev/null 2>"$T/sbatch.err" ||
    fail "a plain sbatch failed during the crafted submissions: $(cat "$T/sbatch.err")"
  LAT+=($(ms_since "$t0"))
  sleep 0.2
done
for p in "${ATTACK[@]}"; do wait "$p" 2>/dev/null || true; done
MAXLAT=$(printf '%s\n' "${LAT[@]}" | sort -n | tail -1)
[ "$MAXLAT" -le 5000 ] || fail "a plain sbatch took $MAXLAT ms during 50 crafted submissions (all: ${LAT[*]} ms); the controller's log of them: $(grep -E 'crafted190k|name=wrap' "$T/slurmctld.log" | cut -c1-200 | head -40)"
BUDGETED=$(grep -c "user_budget_s = 3 s per minute" "$T/attack.err" || true)
[ "$BUDGETED" -ge 1 ] || fail "no crafted submission was refused by the budget: $(sort "$T/attack.err" | uniq -c | head -5)"
pass "50 concurrent submissions of a 190,000-initializer model by $TU2: $TU's plain sbatch took ${LAT[*]} ms (max $MAXLAT); $BUDGETED of the 50 refused at once by the budget ($(grep -m1 -o 'your jobs.*per minute)' "$T/attack.err"))"
cancel_all
write_conf
# A heterogeneous job of 8 model-declaring components: at most max_model_components (4) are predicted.
HET=()
for i in $(seq 8); do HET+=("$M_SMALL"); [ "$i" -lt 8 ] && HET+=(:); done
t0=$(date +%s%N)
submit -H "${HET[@]}" "$T/sleep.sh" >/dev/null && fail "a hetjob of 8 model-declaring components was accepted"
ms=$(ms_since "$t0")
grep -q "this heterogeneous job declares a model in more than 4 of its components" "$T/sbatch.err" ||
  fail "8-component hetjob: $(cat "$T/sbatch.err")"
[ "$ms" -le 5000 ] || fail "the 8-component hetjob took $ms ms"
pass "a heterogeneous job of 8 model-declaring components is refused in $ms ms (max_model_components 4)"
cancel_all

# --- 2. every form of GPU request ---------------------------------------------------
expect_granted() {  # expect_granted WANT ARGS...: held job, its TresPerNode must be WANT
  local want=$1 id; shift
  id=$(submit -H "$@" "$T/sleep.sh") || fail "refused ($*): $(cat "$T/sbatch.err")"
  [ "$(granted "$id")" = "$want" ] || fail "$*: Slurm has TresPerNode=$(granted "$id"), want $want"
  for f in TresPerJob TresPerTask; do
    [ -z "$(job_field "$id" "$f" | grep gpu)" ] || fail "$*: $f still asks for a GPU: $(job_field "$id" $f)"
  done
  pass "$* -> $want"
}
expect_granted "gres:shard:$N_SMALL" "$M_SMALL" --gres=gpu:1
expect_granted "gres:shard:$N_SMALL" "$M_SMALL" --gpus=1
expect_granted "gres:shard:$N_SMALL" "$M_SMALL" --gpus-per-node=1
expect_granted "gres:shard:$N_SMALL" "$M_SMALL" -n1 --gpus-per-task=1
expect_granted "gres:shard:$N_SMALL" "$M_SMALL" --gres=shard:1
expect_granted "gres:shard:$N_SMALL,gres:nic:1" "$M_SMALL" --gres=gpu:1,nic:1
expect_reject "GPU type 'a100' in 'gpu:a100:2' is not one this site names to gpucast" "$M_SMALL" --gres=gpu:a100:2 "$T/sleep.sh"
# Several GPUs on one node: whole GPUs (a job's shards cannot span GPUs), predicted per GPU.
expect_granted "gres:gpu:2" "$M_SMALL" --gres=gpu:2
grep -q "x2 GPUs: predicted GPU utilization [0-9.]*% per GPU (data-parallel, gpucast predict --gpus 2) .* -> ${GRES_PFX}gpu:2 (whole GPUs: a job's shards cannot span GPUs)" \
  "$T/sbatch.err" || fail "--gres=gpu:2: $(cat "$T/sbatch.err")"
expect_granted "gres:gpu:2" "$M_SMALL" -n1 --gpus-per-task=2
expect_granted "gres:gpu:2" "$M_SMALL" -n2 --gpus-per-task=1
expect_reject "Requested node configuration is not available" "$M_SMALL" --gpus=4 "$T/sleep.sh"
grep -q "x4 GPUs" "$T/sbatch.err" || fail "--gpus=4: $(cat "$T/sbatch.err")"
WG=$(submit "$M_SMALL" --gres=gpu:2 "$T/sleep.sh") || fail "gpu:2 job refused"
wait_state "$WG" RUNNING
SJ=$(submit "$M_SMALL" "$T/sleep.sh") || fail "shard job refused"
for _ in $(seq 50); do [ "$(job_field "$SJ" Reason)" != None ] && break; sleep 0.1; done
[ "$(job_field "$SJ" JobState)" = PENDING ] || fail "a shard job runs beside a job holding both GPUs whole: $(squeue)"
pass "while a job holds both GPUs whole (gres:gpu:2), a shard job pends ($(job_field "$SJ" Reason)); --gpus=4 is refused by Slurm (2 GPUs per node)"
cancel_all
expect_reject "this job asks for 2 nodes; a share of one GPU cannot span nodes" "$M_SMALL" -N2 "$T/sleep.sh"
# -N2 with whole GPUs is a data-parallel job (section 10 runs one; this cluster has one node).
id=$(submit -H "$M_SMALL" -N2 --gres=gpu:1 "$T/sleep.sh") || fail "-N2 --gres=gpu:1 refused: $(cat "$T/sbatch.err")"
[ "$(granted "$id")" = gres:gpu:1 ] && [ "$(job_field "$id" NumNodes | sed 's/-2$//')" = 2 ] && grep -q "x2 nodes x1 GPUs: predicted" "$T/sbatch.err" ||
  fail "-N2 --gres=gpu:1: $(granted "$id") NumNodes=$(job_field "$id" NumNodes): $(cat "$T/sbatch.err")"
expect_reject "--cpus-per-gpu, --mem-per-gpu and --ntasks-per-gpu count whole GPUs" "$M_SMALL" --gres=gpu:1 --cpus-per-gpu=2 "$T/sleep.sh"
expect_reject "GPU jobs must name their model" --gpus=1 "$T/sleep.sh"
expect_reject "GPU jobs must name their model" --gres=shard:1 "$T/sleep.sh"
expect_reject "GPU jobs must name their model" -n1 --gpus-per-task=1 "$T/sleep.sh"
CPU=$(submit -H --gres=nic:1 "$T/sleep.sh") || fail "CPU job refused: $(cat "$T/sbatch.err")"
[ "$(granted "$CPU")" = "gres:nic:1" ] || fail "CPU job's gres changed to $(granted "$CPU")"
ctld_log_has "uid=$TUID name=sleep.sh: accepted unchanged (no model, no GPU request)"
pass "job without model or GPU accepted unchanged (gres:nic:1 kept), logged"

# --- 2b. what a user must not get through (issue 17) -------------------------------------
# --exclusive: Slurm 22.05 gives the job every GPU of its node (JOB_GRES=gpu:2), whatever it
# asks for, --gres=gpu:0 included; so without a model it is refused, with one as well.
expect_reject "this job takes whole nodes (--exclusive), and Slurm gives such a job every GPU" --exclusive "$T/sleep.sh"
expect_reject "even with --gres=gpu:0" --exclusive --gres=gpu:0 "$T/sleep.sh"
if out=$(as_user salloc --no-shell --exclusive 2>&1); then fail "salloc --exclusive without a model accepted: $out"; fi
echo "$out" | grep -q "this job takes whole nodes" || fail "salloc --exclusive: $out"
expect_reject "drop --exclusive" --exclusive "$M_SMALL" "$T/sleep.sh"
expect_reject "this job takes whole nodes (partition whole, OverSubscribe=EXCLUSIVE)" -p whole "$T/sleep.sh"
pass "--exclusive without a model gets no GPU (refused, sbatch and salloc); with a model it is refused too; so is any job of an OverSubscribe=EXCLUSIVE partition"
id=$(submit -H --gres=gpu:0 "$T/sleep.sh") || fail "--gres=gpu:0 without a model refused: $(cat "$T/sbatch.err")"
[ "$(granted "$id")" = "gres:gpu:0" ] || fail "--gres=gpu:0: $(granted "$id")"
pass "--gres=gpu:0 without a model: no GPU asked, accepted unchanged"
id=$(submit -H -N1-2 "$M_SMALL" "$T/sleep.sh") || fail "-N1-2 refused: $(cat "$T/sbatch.err")"
[ "$(job_field "$id" NumNodes)" = 1-1 ] && grep -q "on one node (-N1, was up to 2 nodes)" "$T/sbatch.err" ||
  fail "-N1-2: NumNodes=$(job_field "$id" NumNodes): $(cat "$T/sbatch.err")"
if id=$(submit -H -N1-2 -n32 "$M_SMALL" "$T/sleep.sh"); then
  [ "$(job_field "$id" NumNodes)" = 1-1 ] || fail "-N1-2 -n32: NumNodes=$(job_field "$id" NumNodes)"
else
  grep -q "Requested node configuration is not available" "$T/sbatch.err" || fail "-N1-2 -n32: $(cat "$T/sbatch.err")"
fi
if as_user scontrol update jobid="$(submit -H "$M_SMALL" "$T/sleep.sh")" NumNodes=1-2 2>/dev/null; then
  fail "NumNodes=1-2 of a sized job accepted"
fi
pass "-N1-2 stays on one node (NumNodes=1-1, told), -N1-2 -n32 cannot spread (Slurm: $(grep -o 'Requested node configuration is not available' "$T/sbatch.err" || echo "NumNodes=1-1")), scontrol update NumNodes=1-2 refused"
mkfifo "$T/fifo.onnx"; chmod 666 "$T/fifo.onnx"
t0=$(date +%s%N)
expect_reject "is not a regular file" --comment="model=$T/fifo.onnx,batch=8" "$T/sleep.sh"
ms=$(( ($(date +%s%N) - t0) / 1000000 ))
[ "$ms" -lt 1500 ] || fail "the FIFO took $ms ms to refuse"
pass "a FIFO as the model is refused in $ms ms (cli mode; timeout_s is 5 s)"
FORGED="error: forged by a job name $$"
submit -H -J "x"$'\n'"$FORGED" "$M_SMALL" "$T/sleep.sh" >/dev/null || fail "job named with a newline refused: $(cat "$T/sbatch.err")"
grep -qF "name=x\n$FORGED: sized:" "$T/slurmctld.log" || fail "the job name with a newline is not in slurmctld.log, escaped"
! grep -q "^$FORGED" "$T/slurmctld.log" || fail "a newline in a job name forged a line in slurmctld.log"
pass "a newline in a job name is logged as \\n: no forged line in slurmctld.log"
# Issue 32 item 2: every whole-node form, on submit and on every update.
expect_reject "this job takes whole nodes (--exclusive=user), and Slurm gives such a job every GPU" --exclusive=user "$T/sleep.sh"
expect_reject "this job takes whole nodes (partition peruser, ExclusiveUser=YES)" -p peruser "$T/sleep.sh"
expect_reject "drop --exclusive" --exclusive=user "$M_SMALL" "$T/sleep.sh"
if [ "$SLURM_MAJOR" -ge 24 ]; then
  expect_reject "this job takes whole nodes (--exclusive=topo)" --exclusive=topo "$T/sleep.sh"
  expect_reject "this job takes whole nodes (partition topo, ExclusiveTopo=YES)" -p topo "$T/sleep.sh"
fi
CPUJ=$(submit -H --gres=nic:1 "$T/sleep.sh") || fail "CPU job refused: $(cat "$T/sbatch.err")"
if as_user scontrol update jobid="$CPUJ" Partition=whole 2>"$T/scontrol.err"; then fail "a CPU job moved to OverSubscribe=EXCLUSIVE"; fi
if as_user scontrol update jobid="$CPUJ" Partition=peruser 2>/dev/null; then fail "a CPU job moved to ExclusiveUser=YES"; fi
[ "$(job_field "$CPUJ" Partition)" = test ] || fail "job $CPUJ moved to $(job_field "$CPUJ" Partition)"
ctld_log_has "modification of job $CPUJ rejected: job $CPUJ: this job takes whole nodes (partition whole, OverSubscribe=EXCLUSIVE)"
SZJ=$(submit -H "$M_SMALL" "$T/sleep.sh") || fail "sized job refused"
if as_user scontrol update jobid="$SZJ" Partition=whole 2>/dev/null; then fail "a sized job moved to OverSubscribe=EXCLUSIVE"; fi
[ "$(job_field "$SZJ" Partition)" = test ] || fail "job $SZJ moved to $(job_field "$SZJ" Partition)"
pass "--exclusive=user and an ExclusiveUser=YES partition are refused$([ "$SLURM_MAJOR" -ge 24 ] && echo ", so are --exclusive=topo and ExclusiveTopo=YES"); scontrol update Partition=whole/peruser of a CPU job and of a sized job is refused (they stay in test)"
# Another user's update: Slurm's own answer, whatever gpucast would say.
as_user2 scontrol update jobid="$CPUJ" TimeLimit=10 >/dev/null 2>"$T/other-plain.err" && fail "$TU2 updated $TU's job"
as_user2 scontrol update jobid="$CPUJ" Partition=whole >/dev/null 2>"$T/other-gpucast.err" && fail "$TU2 moved $TU's job"
sed -i "s/$CPUJ/ID/g" "$T/other-plain.err" "$T/other-gpucast.err"
cmp -s "$T/other-plain.err" "$T/other-gpucast.err" ||
  fail "another user's refused update tells more than Slurm's own refusal: '$(cat "$T/other-gpucast.err")' vs '$(cat "$T/other-plain.err")'"
pass "another user's update that gpucast refuses gets Slurm's own answer to any update of another's job: $(head -1 "$T/other-plain.err")"
cancel_all

# --- 2c. predicted for the GPU the job will run on (gpu_types, partition_gpus) ------------
# resnet50 batch 16 needs a different share on an H100 than on the predictor's RTX3090.
J16=$(pjson "$MODELS/resnet50.onnx" 16); U16=$(echo "$J16" | jnum gpu_util); N16=$(share_for "$J16" $SHARDS)
J16H=$("$GPUCAST" predict --json --predictor "$T/predictor.json" --model "$MODELS/resnet50.onnx" --batch 16 --gpu H100)
U16H=$(echo "$J16H" | jnum gpu_util); N16H=$(share_for "$J16H" $SHARDS)
[ "$N16" != "$N16H" ] || fail "test premise: resnet50 b16 gets $N16 shards on RTX3090 and on H100"
M16="--comment=model=$MODELS/resnet50.onnx,batch=16"
write_conf "gpu_types=rtx3090:RTX3090 a100:A100-80GB"
id=$(submit -H "$M16" --gres=gpu:rtx3090:1 "$T/sleep.sh") || fail "typed rtx3090 refused: $(cat "$T/sbatch.err")"
[ "$(granted_shards "$id")" = "$N16" ] && [ "$(job_field "$id" Features)" = rtx3090 ] &&
  grep -q "batch 16 on RTX3090 (--gres type rtx3090): predicted" "$T/sbatch.err" ||
  fail "typed rtx3090: $(granted "$id") Features=$(job_field "$id" Features): $(cat "$T/sbatch.err")"
if submit -H "$M16" --gres=gpu:a100:1 "$T/sleep.sh" >/dev/null; then fail "a100 job accepted on a cluster without a100 nodes"; fi
grep -q "on A100-80GB (--gres type a100)" "$T/sbatch.err" && grep -q "Invalid feature specification" "$T/sbatch.err" ||
  fail "typed a100: $(cat "$T/sbatch.err")"
write_conf "partition_gpus=test:H100"
id=$(submit -H "$M16" "$T/sleep.sh") || fail "partition H100 refused: $(cat "$T/sbatch.err")"
[ "$(granted_shards "$id")" = "$N16H" ] && grep -q "batch 16 on H100 (partition test): predicted" "$T/sbatch.err" &&
  scontrol show job "$id" | grep -q "AdminComment=gpucast: model=$MODELS/resnet50.onnx batch=16 gpu=H100 " ||
  fail "partition test:H100: $(granted "$id"): $(cat "$T/sbatch.err")"
write_conf
pass "resnet50 b16: --gres=gpu:rtx3090:1 -> RTX3090 ${U16}% -> shard:$N16, kept on Feature=rtx3090 nodes; gpu:a100:1 predicted for A100-80GB and refused by Slurm (no a100 node); partition_gpus test:H100 -> ${U16H}% -> shard:$N16H"
cancel_all

# --- 3. the owner cannot undo the decision (job_modify) ---------------------------------
HELD=$(submit -H --comment="model=$MODELS/resnet50.onnx,batch=64" "$T/sleep.sh") || fail "held big job refused"
[ "$(granted_shards "$HELD")" = "$SHARDS" ] || fail "held big job: $(granted "$HELD")"
for bad in ${GRES_PFX}shard:1 ${GRES_PFX}gpu:1 ${GRES_PFX}nic:1; do
  if as_user scontrol update jobid="$HELD" TresPerNode="$bad" 2>"$T/scontrol.err"; then
    fail "owner lowered job $HELD to $bad"
  fi
  [ "$(granted "$HELD")" = "gres:shard:$SHARDS" ] || fail "job $HELD now has $(granted "$HELD") after TresPerNode=$bad"
done
grep -q "Invalid generic resource" "$T/scontrol.err" || fail "scontrol: $(cat "$T/scontrol.err")"
ctld_log_has "modification of job $HELD rejected: job $HELD was sized gres:shard:$SHARDS of $SHARDS"
if as_user scontrol update jobid="$HELD" TresPerJob=${GRES_PFX}gpu:2 2>/dev/null; then fail "owner added --gpus=2"; fi
pass "owner's scontrol update TresPerNode=gres:shard:1 / gpu:1 / nic:1 / TresPerJob=gpu:2 refused; keeps shard:$SHARDS; reason logged"
SH=$(submit -H "$M_SMALL" "$T/sleep.sh") || fail "small held refused"
# allow_more_shards = 0 (the default): the epilog measures overuse against the predicted share,
# so a raised share is refused; a site that sets allow_more_shards = 1 lets the owner raise it.
if as_user scontrol update jobid="$SH" TresPerNode="${GRES_PFX}shard:$((N_SMALL + 1))" 2>/dev/null; then
  fail "raising the share of $SH to $((N_SMALL + 1)) accepted with allow_more_shards = 0"
fi
[ "$(granted_shards "$SH")" = "$N_SMALL" ] || fail "refused raise changed the share: $(granted "$SH")"
write_conf allow_more_shards=1
as_user scontrol update jobid="$SH" TresPerNode="${GRES_PFX}shard:$((N_SMALL + 1))" ||
  fail "raising the share of $SH to $((N_SMALL + 1)) refused with allow_more_shards = 1"
[ "$(granted_shards "$SH")" = $((N_SMALL + 1)) ] || fail "raised share not applied: $(granted "$SH")"
write_conf
pass "raising a sized share (shard:$N_SMALL -> $((N_SMALL + 1))) is refused by default and allowed with allow_more_shards = 1"
if as_user scontrol update jobid="$HELD" Comment="model=$MODELS/pointnet.onnx,batch=32" 2>/dev/null; then
  fail "owner changed the model declaration of a sized job"
fi
[ "$(granted_shards "$HELD")" = "$SHARDS" ] || fail "job $HELD now has $(granted "$HELD") after a new declaration"
ctld_log_has "the model declaration of job $HELD cannot be changed after submission"
pass "owner's new model declaration (scontrol update Comment=model=...) refused; keeps shard:$SHARDS"
scontrol update jobid="$HELD" Comment="model=$MODELS/pointnet.onnx,batch=32" || fail "root's new declaration refused"
[ "$(granted_shards "$HELD")" = "$N_SMALL" ] || fail "re-prediction not applied: $(granted "$HELD")"
scontrol show job "$HELD" | grep -q "AdminComment=gpucast: model=$MODELS/pointnet.onnx batch=32" || fail "AdminComment not updated"
pass "root's new model declaration is re-predicted: shard:$SHARDS -> shard:$N_SMALL, AdminComment updated"
if as_user scontrol update jobid="$CPU" TresPerNode=${GRES_PFX}shard:1 2>/dev/null; then fail "GPU share added to a job without model"; fi
pass "adding a GPU share to a job without a model is refused"
cancel_all

# --- 4. files are read as the submitting user ---------------------------------------
mkdir -m 700 "$T/private" "$T/rootonly"
cp "$MODELS/pointnet.onnx" "$T/private/p.onnx"; chown -R "$TUID:$TGID" "$T/private"; chmod 600 "$T/private/p.onnx"
cp "$MODELS/resnet50.onnx" "$T/rootonly/r.onnx"; chmod 600 "$T/rootonly/r.onnx"
mkdir -m 755 "$T/open"; cp "$MODELS/resnet50.onnx" "$T/open/r600.onnx"; chmod 600 "$T/open/r600.onnx"
id=$(submit -H --comment="model=$T/private/p.onnx,batch=32" "$T/sleep.sh") ||
  fail "model in a directory only the user can enter refused: $(cat "$T/sbatch.err")"
[ "$(granted_shards "$id")" = "$N_SMALL" ] || fail "private model: $(granted "$id")"
pass "model in a 700 directory of the user (mode 600) is read as the user -> shard:$N_SMALL"
msg_of() { submit -H --comment="model=$1,batch=8" "$T/sleep.sh" >/dev/null && fail "$1 accepted"; grep gpucast "$T/sbatch.err"; }
M_MISSING=$(msg_of "$T/missing.onnx")
M_ROOTONLY=$(msg_of "$T/rootonly/r.onnx")
M_ROOTMISS=$(msg_of "$T/rootonly/missing.onnx")
M_MODE600=$(msg_of "$T/open/r600.onnx")
echo "  missing: $M_MISSING"
[ "$M_ROOTONLY" = "$M_MISSING" ] && [ "$M_ROOTMISS" = "$M_MISSING" ] && [ "$M_MODE600" = "$M_MISSING" ] ||
  fail "different answers: missing '$M_MISSING', root-only '$M_ROOTONLY', missing in root dir '$M_ROOTMISS', mode 600 '$M_MODE600'"
pass "root-only model, mode-600 model, missing model: the same refusal"
echo "this is not an ONNX model" > "$T/bad.onnx"; chmod 644 "$T/bad.onnx"
expect_reject "gpucast: rejected: " --comment="model=$T/bad.onnx,batch=1" "$T/sleep.sh"
expect_reject "batch=zero: want an integer in [1, 16777216]" --comment="model=$MODELS/pointnet.onnx,batch=zero" "$T/sleep.sh"

# --- 5. operator-facing behaviour -------------------------------------------------------
expect_reject "no batch=N: the prediction depends on the batch size" --comment="model=$MODELS/pointnet.onnx" "$T/sleep.sh"
write_conf default_batch=32
id=$(submit -H --comment="model=$MODELS/pointnet.onnx" "$T/sleep.sh") || fail "default_batch: refused: $(cat "$T/sbatch.err")"
grep -q "batch 32 (site default)" "$T/sbatch.err" && [ "$(granted_shards "$id")" = "$N_SMALL" ] ||
  fail "default_batch not applied: $(cat "$T/sbatch.err") $(granted "$id")"
pass "default_batch = 32 fills a missing batch (said so to the user)"
write_conf headroom=interval memory=none
id=$(submit -H --comment="model=$MODELS/neumf.onnx,batch=64" "$T/sleep.sh") || fail "headroom: refused"
[ "$(granted_shards "$id")" = "$NH_HEAD" ] || fail "headroom=interval: $(granted "$id"), want shard:$NH_HEAD (interval high $H_HEAD%)"
pass "headroom = interval (memory = none) sizes neumf by its interval high ($H_HEAD%) -> shard:$NH_HEAD, not $NU_HEAD"
for bad in "predictor=$T/nonexistent.json" "gpucast=/nonexistent/gpucast" "shards_per_gpu=many" "colour=blue" "mode=magic"; do
  write_conf "$bad"
  expect_reject "gpucast: $MISCONF" "$M_SMALL" "$T/sleep.sh"
done
grep -q "operator action needed: predictor: .*$T/nonexistent.json" "$T/slurmctld.log" || fail "slurmctld.log lacks the missing predictor"
ctld_log_has "'shards_per_gpu' wants an integer, got 'many'"
ctld_log_has "unknown setting 'colour'"
pass "configuration errors: users see '$MISCONF', slurmctld.log has the cause"
# Issue 32 item 4: a typo refused CPU jobs too; shards_per_gpu against gres.conf's Count.
write_conf colour=blue
id=$(submit -H --gres=nic:1 "$T/sleep.sh") || fail "a typo in gpucast.conf refused a CPU job: $(cat "$T/sbatch.err")"
ctld_log_has "accepted unchanged (no model, no GPU request), but GPU jobs are refused until the configuration is fixed: $T/gpucast.conf:"
expect_reject "gpucast: $MISCONF" --gres=gpu:1 "$T/sleep.sh"
write_conf shards_per_gpu=16
expect_reject "gpucast: $MISCONF" "$M_SMALL" "$T/sleep.sh"
ctld_log_has "gpucast.conf: shards_per_gpu = 16, but $T/gres.conf:4 gives 8 shard per GPU: set shards_per_gpu = 8 (a job sized at 16 would pend forever)"
id=$(submit -H --gres=nic:1 "$T/sleep.sh") || fail "shards_per_gpu = 16 refused a CPU job: $(cat "$T/sbatch.err")"
pass "a typo in gpucast.conf refuses GPU jobs only (a CPU job passes, the log says why GPU jobs are refused); shards_per_gpu = 16 against gres.conf's 8 is reported in slurmctld.log"
write_conf
grep -q "rejected: the model file cannot be read" "$T/slurmctld.log" || fail "rejections not in slurmctld.log"
pass "accepted, sized and rejected decisions are all in slurmctld.log"
cancel_all

# --- 6. arrays, heterogeneous jobs, salloc and srun --------------------------------------
id=$(submit -H --array=0-2 "$M_SMALL" "$T/sleep.sh") || fail "array refused: $(cat "$T/sbatch.err")"
[ "$(scontrol show job "$id" | grep -c "TresPerNode=${GRES_PFX}shard:$N_SMALL")" -ge 1 ] || fail "array: $(granted "$id")"
id=$(submit -H --array=0-1 "$M_SMALL" --gpus=2 "$T/sleep.sh") || fail "2-GPU array refused: $(cat "$T/sbatch.err")"
[ "$(scontrol show job "$id" | grep -c "TresPerNode=${GRES_PFX}gpu:2")" -ge 1 ] || fail "2-GPU array: $(granted "$id")"
pass "job array -> gres:shard:$N_SMALL; a 2-GPU array -> gres:gpu:2"
id=$(submit -H --comment="model=$MODELS/resnet50.onnx,batch=64" : "$M_SMALL" "$T/sleep.sh") ||
  fail "hetjob refused: $(cat "$T/sbatch.err")"
[ "$(granted "$id+0")" = "gres:shard:$N_BIG" ] && [ "$(granted "$id+1")" = "gres:shard:$N_SMALL" ] ||
  fail "hetjob components: $(granted "$id+0") / $(granted "$id+1")"
id=$(submit -H "$M_SMALL" : "$M_SMALL" --gres=gpu:2 "$T/sleep.sh") || fail "hetjob with 2 GPUs refused: $(cat "$T/sbatch.err")"
[ "$(granted "$id+1")" = "gres:gpu:2" ] || fail "hetjob component 1: $(granted "$id+1")"
expect_reject "this job asks for 2 nodes; a share of one GPU cannot span nodes" "$M_SMALL" : "$M_SMALL" -N2 "$T/sleep.sh"
pass "heterogeneous job: component 0 -> shard:$N_BIG, component 1 -> shard:$N_SMALL; a 2-GPU component -> gres:gpu:2, a 2-node one is refused"
cancel_all
out=$(as_user salloc --no-shell "$M_SMALL" 2>&1) || fail "salloc refused: $out"
id=$(echo "$out" | sed -n 's/.*Granted job allocation \([0-9]*\).*/\1/p')
echo "$out" | grep -q "${GRES_PFX}shard:$N_SMALL of $SHARDS" && [ "$(granted_shards "$id")" = "$N_SMALL" ] || fail "salloc: $out"
scancel "$id"
if out=$(as_user salloc --no-shell --comment="model=$T/missing.onnx,batch=8" 2>&1); then fail "salloc of a missing model accepted"; fi
echo "$out" | grep -qF "$(echo "$M_MISSING" | sed 's/^.*gpucast: //')" || fail "salloc refusal: $out"
pass "salloc: sized (shard:$N_SMALL) and refused by the same rules"
out=$(as_user timeout 60 srun "$M_SMALL" sh -c 'scontrol show job $SLURM_JOB_ID' 2>&1) || fail "srun refused: $out"
echo "$out" | grep -q "TresPerNode=${GRES_PFX}shard:$N_SMALL" || fail "srun job not sized: $out"
if out=$(as_user timeout 60 srun -N2 "$M_SMALL" true 2>&1); then fail "srun -N2 accepted"; fi
echo "$out" | grep -q "this job asks for 2 nodes; a share of one GPU cannot span nodes" || fail "srun refusal: $out"
pass "srun: sized (shard:$N_SMALL) and refused by the same rules"

# --- 6b. a job of several networks (DCGAN: G once, D three times per step) -------------------
G_ONNX=$MODELS/dcgan_generator.onnx; D_ONNX=$MODELS/dcgan_discriminator.onnx
J_GAN=$("$GPUCAST" predict --json --predictor "$T/predictor.json" --model "$G_ONNX" --model "$D_ONNX" \
        --model "$D_ONNX" --model "$D_ONNX" --batch 64)
U_GAN=$(echo "$J_GAN" | jnum gpu_util); N_GAN=$(share_for "$J_GAN" $SHARDS)
M_GAN="--comment=model=$G_ONNX,model=$D_ONNX,model=$D_ONNX,model=$D_ONNX,batch=64"
GAN=$(submit -H "$M_GAN" "$T/sleep.sh") || fail "GAN job refused: $(cat "$T/sbatch.err")"
[ "$(granted_shards "$GAN")" = "$N_GAN" ] || fail "GAN: $(granted "$GAN"), want shard:$N_GAN (predicted $U_GAN%)"
scontrol show job "$GAN" | grep -q "AdminComment=gpucast: model=$G_ONNX model=$D_ONNX model=$D_ONNX model=$D_ONNX batch=64 " ||
  fail "GAN: AdminComment $(scontrol show job "$GAN" | grep -o 'AdminComment=.*')"
pass "DCGAN declared as model=G,model=D x3 -> predicted ${U_GAN}% as gpucast predict --model G --model D x3 -> shard:$N_GAN"
cancel_all

# --- 7. service mode: the same decisions through gpucast serve (model uploaded as the user) ---
SVC_PORT=$(free_port)
"$GPUCAST" serve --listen "127.0.0.1:$SVC_PORT" --db "$T/serve.db" --predictor "$T/predictor.json" \
  --cluster "2x RTX3090" --model-root "$MODELS" >"$T/serve.out" 2>"$T/serve.err" &
PIDS+=($!)
for _ in $(seq 50); do curl -sf "http://127.0.0.1:$SVC_PORT/healthz" >/dev/null && break; sleep 0.1; done
write_conf mode=service "url=http://127.0.0.1:$SVC_PORT"
id=$(submit -H "$M_SMALL" "$T/sleep.sh") || fail "service mode: refused: $(cat "$T/sbatch.err")"
[ "$(granted_shards "$id")" = "$N_SMALL" ] || fail "service mode: $(granted "$id"), want shard:$N_SMALL"
grep -qF "$MSG_MEM" "$T/sbatch.err" || fail "service mode: the memory is not in the message '$MSG_MEM': $(cat "$T/sbatch.err")"
pass "service mode (upload to POST /v1/predict) -> gres:shard:$N_SMALL, sized by memory as in cli mode"
expect_reject "gpucast: rejected: $MSG_HUGE" "$M_HUGE" "$T/sleep.sh"
pass "service mode: pointnet b512 refused by its memory with cli mode's message"
write_conf mode=service "url=http://127.0.0.1:$SVC_PORT" \
  "run_as=/usr/bin/setpriv --reuid={uid} --regid={gid} --init-groups -- $T/rec-as"
submit -H "$M_SMALL" "$T/sleep.sh" >/dev/null || fail "recorded upload job refused: $(cat "$T/sbatch.err")"
[ "$(stat -c %u "$T/out/rec-upload.fds")" = "$TUID" ] || fail "the model reader did not run as the user"
inherited_ok rec-upload "$T/rec-as" /dev/null
pass "service mode: the model reader ran as $TU with descriptors 0 (/dev/null), 1 (to curl), 2 (/dev/null) and PATH, LANG=C"
write_conf mode=service "url=http://127.0.0.1:$SVC_PORT"
[ "$(msg_of "$T/rootonly/r.onnx")" = "$M_MISSING" ] && [ "$(msg_of "$T/missing.onnx")" = "$M_MISSING" ] ||
  fail "service mode: root-only/missing answers differ: $(msg_of "$T/rootonly/r.onnx")"
pass "service mode: root-only and missing models get the same refusal"
cancel_all

# --- 7a. service mode without a fork: the deputy (lua-socket; gpucast serve reads as the user) ---
start_deputy
id=$(submit -H --comment="model=$T/private/p.onnx,batch=32" "$T/sleep.sh") ||
  fail "deputy mode: the user's private model refused: $(cat "$T/sbatch.err")"
[ "$(granted_shards "$id")" = "$N_SMALL" ] || fail "deputy mode: $(granted "$id"), want shard:$N_SMALL"
grep -qF "$MSG_MEM" "$T/sbatch.err" || fail "deputy mode: the memory is not in the message '$MSG_MEM': $(cat "$T/sbatch.err")"
pass "deputy mode (lua-socket, no process): model in the user's 700 directory read as the user -> shard:$N_SMALL, sized by memory as in cli mode"
expect_reject "gpucast: rejected: $MSG_HUGE" "$M_HUGE" "$T/sleep.sh"
pass "deputy mode: pointnet b512 refused by its memory with cli mode's message"
[ "$(msg_of "$T/rootonly/r.onnx")" = "$M_MISSING" ] && [ "$(msg_of "$T/missing.onnx")" = "$M_MISSING" ] ||
  fail "deputy mode: root-only/missing answers differ: $(msg_of "$T/rootonly/r.onnx") / $M_MISSING"
pass "deputy mode: root-only and missing models get the same refusal"
t0=$(date +%s%N)
expect_reject "the model file cannot be read" --comment="model=$T/fifo.onnx,batch=8" "$T/sleep.sh"
pass "deputy mode: the FIFO refused in $(( ($(date +%s%N) - t0) / 1000000 )) ms"
[ ! -e "$T/forked" ] || fail "deputy mode started a process (run_as ran)"
id=$(submit -H "$M_GAN" "$T/sleep.sh") || fail "deputy mode: GAN refused: $(cat "$T/sbatch.err")"
[ "$(granted_shards "$id")" = "$N_GAN" ] || fail "deputy mode: GAN $(granted "$id"), want shard:$N_GAN"
pass "deputy mode: the DCGAN job (models: G x1, D x3) -> shard:$N_GAN, as in cli mode"
[ ! -e "$T/forked" ] || fail "deputy mode started a process (run_as ran)"
pass "deputy mode: no process started for any submission (run_as never ran)"
code=$(curl -s -o "$T/curl.out" -w '%{http_code}' -X POST "http://127.0.0.1:$DEP_PORT/v1/predict" \
  -H 'Content-Type: application/json' -H 'X-Gpucast-Read-As: 0:0' -d "{\"model\": \"$T/rootonly/r.onnx\"}")
[ "$code" = 403 ] || fail "deputy service: read-as without the deputy token answered $code: $(cat "$T/curl.out")"
pass "deputy service: X-Gpucast-Read-As without the deputy token is refused"
cancel_all
# Issue 32 item 1: the deputy reads and analyses no longer than the plugin waits.
crafted_once "deputy mode"

# --- 7b. the epilog, with the deputy (the recommended deployment): it registers the job as the
# deputy read it, posts what the job measured, once; only per-job evidence holds anyone -------
# A job writes a fake nvidia-smi log (the format of --query-gpu=timestamp,index,utilization.gpu
# --format=csv); EpilogSlurmctld (gpucast-epilog.sh, installed) averages it and posts it.
EPI_LOG=$T/epilog.log
# nvsmi_log_dir: root's, one directory per user, owned by that user (docs/slurm.md).
mkdir -m 755 "$T/nvsmi" "$T/nvsmi/$TU"; chown "$TUID:$TGID" "$T/nvsmi/$TU"
DEPUTY_CONF=(mode=service "url=http://127.0.0.1:$DEP_PORT" "deputy_token_file=$T/deputy.token" "run_as=$T/mark-fork.sh")
write_conf "${DEPUTY_CONF[@]}" "nvsmi_log_dir=$T/nvsmi" "epilog_log=$EPI_LOG" overuse_hold=yes "overuse_dir=$T/overuse"
printf 'timestamp, index, utilization.gpu [%%]\n' > "$T/nvsmi.csv"
for u in 90 30 60 100; do printf '2026/11/30 10:00:00.000, 0, %s %%\n' "$u" >> "$T/nvsmi.csv"; done
chmod 644 "$T/nvsmi.csv"
WANT_UTIL=$(awk -F', ' 'NR > 1 { s += $3; n++ } END { print s / n }' "$T/nvsmi.csv")  # 70
WANT_N=$(($(wc -l < "$T/nvsmi.csv") - 1))
printf '#!/bin/sh\n#GPUCAST model=%s batch=32\ncat %s > %s/$SLURM_JOB_USER/gpucast-nvsmi-$SLURM_JOB_ID.csv\n' \
  "$MODELS/pointnet.onnx" "$T/nvsmi.csv" "$T/nvsmi" > "$T/nvsmi-job.sh"
EJ=$(submit "$T/nvsmi-job.sh") || fail "nvsmi job refused: $(cat "$T/sbatch.err")"
epilog_done() { for _ in $(seq 150); do grep -q "job $1: $2" "$EPI_LOG" 2>/dev/null && return 0; sleep 0.2; done; return 1; }
epilog_done "$EJ" "gpucast job [0-9]*: observed" ||
  { SLURM_JOB_ID=$EJ PATH="$T/fakebin:$PATH" bash -x "$T/gpucast-epilog.sh" 2>&1 | tail -40; fail "EpilogSlurmctld posted nothing for job $EJ: $(cat "$EPI_LOG" 2>/dev/null)"; }
GJ=$(sed -n "s/.*job $EJ: gpucast job \([0-9]*\): observed.*/\1/p" "$EPI_LOG" 2>/dev/null | head -1)
svc_job() { curl -s -m 5 "http://127.0.0.1:$DEP_PORT/v1/jobs/${1:-$GJ}"; }
jget() { sed -n "s/.*\"$1\":\([^,}]*\).*/\1/p"; }
J=$(svc_job)
[ "$(echo "$J" | jget observed_samples)" = "$WANT_N" ] &&
  awk -v a="$(echo "$J" | jget observed_util)" -v b="$WANT_UTIL" 'BEGIN { exit !(a == b) }' ||
  fail "service has observed_util $(echo "$J" | jget observed_util) over $(echo "$J" | jget observed_samples) samples, want $WANT_UTIL over $WANT_N"
echo "$J" | grep -qF "\"model\":\"$MODELS/pointnet.onnx\"" || fail "the deputy registered another model: $J"
pass "deputy mode records observations: EpilogSlurmctld registered job $EJ as $TU (deputy token, X-Gpucast-Read-As $TUID:$TGID) and posted its nvidia-smi log: observed_util $WANT_UTIL over $WANT_N samples (gpucast job $GJ)"
SLURM_JOB_ID=$EJ SLURM_JOB_USER=$TU PATH="$T/fakebin:$PATH" bash "$T/gpucast-epilog.sh"  # the operator reruns it by hand
[ "$(svc_job | jget observed_samples)" = "$WANT_N" ] || fail "rerun epilog doubled the samples: $(svc_job)"
grep -q "job $EJ: gpucast job $GJ: observation already stored" "$EPI_LOG" || fail "rerun not logged: $(cat "$EPI_LOG")"
pass "epilog rerun by hand for job $EJ: still $WANT_N samples (Idempotency-Key slurm-epilog-gpucasttest-$EJ)"
# pointnet has shard:$N_SMALL of $SHARDS = $((100 * N_SMALL / SHARDS))%; 70% is above that + 20 points.
SHARE_PCT=$(awk -v n="$N_SMALL" -v k="$SHARDS" 'BEGIN { printf "%.3f", 100 * n / k }')
awk -v u="$WANT_UTIL" -v s="$SHARE_PCT" 'BEGIN { exit !(u > s + 20) }' || fail "test premise: $WANT_UTIL% not above $SHARE_PCT% + 20"
# Issue 32 item 3: the job wrote that log itself (and it shows the whole GPU): it holds nobody.
[ "$(svc_job | jget overuse)" != true ] || fail "a job's own nvidia-smi log marked it overuse: $(svc_job)"
[ ! -e "$T/overuse/$TU" ] || fail "a job's own nvidia-smi log held its user: $(cat "$T/overuse/$TU")"
grep -q "job $EJ: observed $WANT_UTIL.000% GPU utilization (nvidia-smi, whole-device and written by the job) above the share $SHARE_PCT% + margin 20: not evidence of overuse, nobody held" "$EPI_LOG" ||
  fail "no 'not evidence' line: $(cat "$EPI_LOG")"
pass "user-written logs hold nobody: job $EJ's own $WANT_UTIL% log is stored as an observation, not overuse, nobody held"
# Per-job evidence (sacct gres/gpuutil: the stand-in, section 0's fakebin): overuse, recorded, held;
# the user's GPU jobs already queued are held too.
QJ=$(submit --begin=now+3600 "$M_SMALL" "$T/sleep.sh") || fail "queued job refused: $(cat "$T/sbatch.err")"
printf '#!/bin/sh\n#GPUCAST model=%s batch=32\ntrue\n' "$MODELS/pointnet.onnx" > "$T/acct-job.sh"
SJ=$(submit -H "$T/acct-job.sh") || fail "accounted job refused: $(cat "$T/sbatch.err")"
printf '%s|600|\n%s.batch|600|cpu=00:09:58,gres/gpumem=2048M,gres/gpuutil=%s,mem=1200M\n' "$SJ" "$SJ" "$WANT_UTIL" > "$T/sacct/$SJ.txt"
scontrol release "$SJ"
epilog_done "$SJ" "OVERUSE by user $TU" || fail "no OVERUSE line for job $SJ: $(cat "$EPI_LOG")"
GS=$(sed -n "s/.*job $SJ: gpucast job \([0-9]*\): observed.*/\1/p" "$EPI_LOG" | head -1)
for _ in $(seq 50); do [ -n "$GS" ] && break; sleep 0.1; GS=$(sed -n "s/.*job $SJ: gpucast job \([0-9]*\): observed.*/\1/p" "$EPI_LOG" | head -1); done
[ "$(svc_job "$GS" | jget overuse)" = true ] || fail "job not marked overuse: $(svc_job "$GS")"
METRICS=$(curl -s "http://127.0.0.1:$DEP_PORT/metrics")
echo "$METRICS" | grep -q '^gpucast_overuse_total{source="slurm"} 1$' ||
  fail "gpucast_overuse_total: $(echo "$METRICS" | grep overuse)"
grep -q "job $SJ: OVERUSE by user $TU: observed $WANT_UTIL.000% GPU utilization (slurm), share $SHARE_PCT% + margin 20; the user's next GPU jobs are held, and the queued ones: $QJ (clear" "$EPI_LOG" ||
  fail "OVERUSE line: $(grep "job $SJ:" "$EPI_LOG")"
[ "$(cat "$T/overuse/$TU")" = "job $SJ: observed $WANT_UTIL.000% GPU utilization (slurm), share $SHARE_PCT% + margin 20" ] ||
  fail "hold record: $(cat "$T/overuse/$TU" 2>&1)"
[ "$(job_field "$QJ" Priority)" = 0 ] || fail "job $QJ, queued before the record, not held: priority $(job_field "$QJ" Priority)"
pass "overuse on per-job evidence (gres/gpuutil $WANT_UTIL% > $SHARE_PCT% + 20): logged, overuse=true and gpucast_overuse_total{source=\"slurm\"} in the service, $TU recorded, the job queued before ($QJ) held"
HJ=$(submit "$M_SMALL" "$T/sleep.sh") || fail "held submission refused: $(cat "$T/sbatch.err")"
grep -q "this job is HELD: an earlier job of yours used more of its GPU than its share (job $SJ:" "$T/sbatch.err" ||
  fail "user not told: $(cat "$T/sbatch.err")"
for _ in $(seq 25); do [ "$(job_field "$HJ" Reason)" != None ] && break; sleep 0.2; done
[ "$(job_field "$HJ" Priority)" = 0 ] && [ "$(job_field "$HJ" JobState)" = PENDING ] ||
  fail "job $HJ not held: priority $(job_field "$HJ" Priority), $(job_field "$HJ" JobState) ($(job_field "$HJ" Reason))"
ctld_log_has "held: user $TU is recorded for overuse in $T/overuse/$TU"
if as_user scontrol release "$HJ" 2>"$T/scontrol.err"; then fail "owner released a job held for overuse"; fi
[ "$(job_field "$HJ" Priority)" = 0 ] || fail "job $HJ released by its owner"
# Another user's release of the held job gets Slurm's own answer, the same as for any job of another user.
as_user2 scontrol release "$HJ" >/dev/null 2>"$T/other-held.err" && fail "$TU2 released $TU's job"
as_user2 scontrol release "$QJ" >/dev/null 2>"$T/other-queued.err" || true  # refused, as any job of another user
sed -i "s/$HJ/ID/g; s/$QJ/ID/g" "$T/other-held.err" "$T/other-queued.err"
cmp -s "$T/other-held.err" "$T/other-queued.err" && ! grep -qi "gres\|overuse" "$T/other-held.err" ||
  fail "another user's release tells more: '$(cat "$T/other-held.err")' vs '$(cat "$T/other-queued.err")'"
pass "$TU's next job $HJ is held ($(job_field "$HJ" Reason)), told why; the owner's scontrol release is refused; $TU2's release gets Slurm's own answer ($(head -1 "$T/other-held.err"))"
rm "$T/overuse/$TU"
as_user scontrol release "$HJ" || fail "release after clearing the record refused"
[ "$(job_field "$HJ" Priority)" != 0 ] || fail "job $HJ still held after release"
pass "operator clears it (rm overuse_dir/$TU); the job is released"
cancel_all
# Issue 32 item 3: a declaration cannot pose as the record id (gpucast_job=N) and redirect an
# observation to another user's record.
BEFORE=$(svc_job "$GS" | jget observed_samples)
printf '#!/bin/sh\n#GPUCAST model=%s batch=32 dim.gpucast_job=%s\ntrue\n' "$MODELS/pointnet.onnx" "$GS" > "$T/forge-job.sh"
if FJ=$(submit -H "$T/forge-job.sh"); then
  scontrol show job "$FJ" | grep -q "AdminComment=gpucast: model=.* dim.gpucast_job=$GS " || fail "forged job's AdminComment: $(scontrol show job "$FJ" | grep -o 'AdminComment=.*')"
  printf '%s|600|\n%s.batch|600|gres/gpuutil=100,mem=1M\n' "$FJ" "$FJ" > "$T/sacct/$FJ.txt"
  scontrol release "$FJ"
  epilog_done "$FJ" "gpucast job [0-9]*: observed" || fail "forged job $FJ: nothing posted: $(grep "job $FJ:" "$EPI_LOG")"
  GF=$(sed -n "s/.*job $FJ: gpucast job \([0-9]*\): observed.*/\1/p" "$EPI_LOG" | head -1)
  [ "$GF" != "$GS" ] && [ "$(svc_job "$GS" | jget observed_samples)" = "$BEFORE" ] ||
    fail "the declared gpucast_job=$GS redirected job $FJ's observation (record $GF)"
  pass "a declaration with dim.gpucast_job=$GS redirects nothing: job $FJ's observation went to its own record $GF, record $GS kept $BEFORE samples"
else
  grep -q "gpucast: rejected" "$T/sbatch.err" || fail "forged job: $(cat "$T/sbatch.err")"
  pass "a declaration with dim.gpucast_job=$GS is refused ($(grep -m1 -o 'gpucast: rejected: .*' "$T/sbatch.err" | cut -c1-100)): it can redirect nothing (epilog_test.sh checks the epilog's reading)"
fi
rm -f "$T/overuse/$TU"
cancel_all
# A utilization file planted in /tmp for another user's job ($TU2's here; in deputy mode the service never reads as root) holds nobody: the
# epilog reads no nvidia-smi log unless nvsmi_log_dir is set, and refuses a world-writable
# one (epilog_test.sh: /tmp-like directories, symlinks, FIFOs, other owners).
write_conf "${DEPUTY_CONF[@]}" "epilog_log=$EPI_LOG" overuse_hold=yes "overuse_dir=$T/overuse"
VJ=$(as_user2 sbatch -H --parsable -o /dev/null --comment="model=$MODELS/pointnet.onnx,batch=32" --wrap true 2>"$T/sbatch.err") ||
  fail "$TU2's job refused: $(cat "$T/sbatch.err")"
as_user sh -c "for i in 1 2 3; do echo '2026/11/30 10:00:00.000, 0, 100 %'; done > /tmp/gpucast-nvsmi-$VJ.csv"
PLANTED="$PLANTED /tmp/gpucast-nvsmi-$VJ.csv"
scontrol release "$VJ"
for _ in $(seq 100); do grep -q "job $VJ: no GPU utilization measured" "$EPI_LOG" 2>/dev/null && break; sleep 0.1; done
grep -q "job $VJ: no GPU utilization measured" "$EPI_LOG" || fail "job $VJ: the epilog measured something: $(grep "job $VJ:" "$EPI_LOG")"
[ ! -e "$T/overuse/$TU2" ] || fail "$TU2 recorded for overuse from a planted file: $(cat "$T/overuse/$TU2")"
pass "a 100% utilization file $TU planted in /tmp for $TU2's job $VJ: nothing measured, nobody held"
cancel_all
stop_daemons 1   # the deputy serve
write_conf mode=service "url=http://127.0.0.1:$SVC_PORT"

stop_daemons 1
expect_reject "gpucast: $MISCONF" "$M_SMALL" "$T/sleep.sh"
ctld_log_has "gpucast service unreachable"
pass "service down: fail closed, cause in slurmctld.log"
cancel_all

# --- 8. mps: the prediction becomes CUDA_MPS_ACTIVE_THREAD_PERCENTAGE --------------------
stop_daemons 2   # slurmd, slurmctld (munged stays)
write_slurm_conf mps
start_slurm
write_conf share=mps
U_PCT=$(share_for "$J_SMALL" 100)
printf '#!/bin/sh\n#GPUCAST model=%s batch=32\necho "pct=$CUDA_MPS_ACTIVE_THREAD_PERCENTAGE"\n' "$MODELS/pointnet.onnx" > "$T/mps.sh"
id=$(submit "$T/mps.sh") || fail "mps job refused: $(cat "$T/sbatch.err")"
[ "$(granted "$id")" = "gres:mps:$U_PCT" ] || fail "mps: $(granted "$id"), want gres:mps:$U_PCT"
for _ in $(seq 100); do grep -q pct= "$T/out/$id.out" 2>/dev/null && break; sleep 0.2; done
[ "$(cat "$T/out/$id.out" 2>/dev/null)" = "pct=$U_PCT" ] || fail "mps job environment: '$(cat "$T/out/$id.out" 2>/dev/null)', want pct=$U_PCT"
pass "share = mps: pointnet ${U_SMALL}%, memory high end $MH_SMALL of $CAP MiB -> gres:mps:$U_PCT; the job sees CUDA_MPS_ACTIVE_THREAD_PERCENTAGE=$U_PCT"
MH=$(submit -H --comment="model=$MODELS/resnet50.onnx,batch=64" "$T/sleep.sh") || fail "mps big refused"
if as_user scontrol update jobid="$MH" TresPerNode=${GRES_PFX}mps:10 2>/dev/null; then fail "mps share lowered"; fi
[ "$(granted "$MH")" = "gres:mps:$(share_for "$J_BIG" 100)" ] || fail "mps big: $(granted "$MH")"
pass "share = mps: lowering a sized mps share is refused too"

# --- 9. SlurmUser=slurm: the sudoers recipe, as shipped (sudoers.example) ---------------
# A throw-away service account stands for slurm; the test user is in the recipe's group,
# a second account is not. Only the site's paths, the group and the account are substituted.
SVC=gpcs$$; OUTSIDER=gpcx$$; EXTRA_GROUP=gpcg$$
groupadd "$EXTRA_GROUP"
for u in "$SVC" "$OUTSIDER"; do
  useradd -M -U -d /nonexistent -s /usr/sbin/nologin "$u" || fail "useradd $u failed"
  EXTRA_USERS="$EXTRA_USERS $u"
done
usermod -aG "$EXTRA_GROUP" "$TU"
SVC_UID=$(id -u "$SVC"); SVC_GID=$(id -g "$SVC"); OUT_UID=$(id -u "$OUTSIDER")
sed -e "s|/usr/local/bin/gpucast |$GPUCAST |" -e "s|/etc/slurm/gpucast-predictor.json |$T/predictor.json |" \
    -e "s|%gpucast-users,|%$EXTRA_GROUP,|" -e "s|^slurm ALL |$SVC ALL |" "$SHARE/slurm/sudoers.example" > "$T/sudoers"
[ "$(diff "$SHARE/slurm/sudoers.example" "$T/sudoers" | grep -c '^>')" = 3 ] ||
  fail "sudoers.example: paths, group and account not substituted: $(diff "$SHARE/slurm/sudoers.example" "$T/sudoers")"
visudo -c -q -f "$T/sudoers" || fail "visudo refuses the recipe: $(visudo -c -f "$T/sudoers" 2>&1)"
SUDOERS=/etc/sudoers.d/gpucast-test-$$   # no '.' in the name: sudo would skip the file
install -m 440 "$T/sudoers" "$SUDOERS"
as_svc() { setpriv --reuid="$SVC_UID" --regid="$SVC_GID" --init-groups -- "$@"; }
PRED=(predict --json --predictor "$T/predictor.json" --batch 32 --model "$T/private/p.onnx")
out=$(as_svc sudo -n -u "#$TUID" -- "$GPUCAST" "${PRED[@]}" 2>&1) || fail "sudo recipe: gpucast predict as $TU refused: $out"
echo "$out" | grep -q '"gpu_util"' || fail "sudo recipe: no prediction: $out"
denied() {  # denied WHAT ARGS...: sudo refuses, the command does not run
  local out
  if out=$(as_svc sudo -n "$@" 2>&1); then fail "sudo recipe allowed $1: $*: $out"; fi
  echo "$out" | grep -q "^sudo: a password is required" || fail "sudo recipe: $*: $out"
}
denied -u "#$TUID" -- /usr/bin/id
denied -u "#$TUID" -- /usr/bin/dd if=/etc/hostname
denied -u "#$TUID" -- /usr/bin/curl -s file:///etc/hostname
denied -u "#$TUID" -- /bin/sh -c id
denied -u "#$TUID" -- "$GPUCAST" analyze --model "$T/private/p.onnx"
denied -u "#$TUID" -- "$GPUCAST" predict --json --predictor /etc/shadow --batch 1 --model "$T/private/p.onnx"
denied -u root -- "$GPUCAST" "${PRED[@]}"
denied -u "#$OUT_UID" -- "$GPUCAST" "${PRED[@]}"
denied -u "#$(id -u daemon)" -- "$GPUCAST" "${PRED[@]}"
# The wildcard lets a second --predictor through to gpucast, which refuses it.
if out=$(as_svc sudo -n -u "#$TUID" -- "$GPUCAST" predict --json --predictor "$T/predictor.json" --predictor /etc/shadow \
         --batch 1 --model "$T/private/p.onnx" 2>&1); then fail "a second --predictor accepted: $out"; fi
echo "$out" | grep -q "^--predictor: At Most 1 required but received 2" || fail "a second --predictor: $out"
pass "sudoers recipe (visudo-checked): the service account runs gpucast predict as $TU and nothing else (not id, dd, curl, sh, analyze, another predictor; not as root, daemon or a user outside the group)"
# job_submit.lua as the service account, run_as = sudo: the owner's private model is read;
# another user's private model gets the missing-file message; a user outside the group
# reaches no process (misconfigured, fail closed).
mkdir -m 755 "$T/sudo-plugin"; mkdir -m 700 "$T/outsider"
cp "$MODELS/pointnet.onnx" "$T/outsider/x.onnx"; chown -R "$OUT_UID" "$T/outsider"
cp "$SHARE/slurm/job_submit.lua" "$T/sudo-plugin/"
{ cat "$T/gpucast.conf.site"; echo "run_as = /usr/bin/sudo -n -u '#{uid}' --   # SlurmUser=slurm (sudoers.example)"; } \
  > "$T/sudo-plugin/gpucast.conf"
cat > "$T/sudo-plugin/submit.lua" <<'LUA'
local log = {}
slurm = { SUCCESS = 0, ERROR = -1 }
for _, f in ipairs({ "log_info", "log_error", "log_user" }) do
  slurm[f] = function(fmt, ...) log[#log + 1] = string.format(fmt, ...) end
end
dofile(arg[1] .. "/job_submit.lua")
local NV = 4294967294
local d = { comment = "model=" .. arg[2] .. ",batch=32", user_id = tonumber(arg[3]), group_id = tonumber(arg[4]),
            min_nodes = NV, max_nodes = NV, num_tasks = NV, ntasks_per_tres = 65534, shared = 65534, name = "j" }
local rc = slurm_job_submit(d, {}, tonumber(arg[3]))
print("rc=" .. rc .. " tres=" .. tostring(d.tres_per_node) .. " | " .. table.concat(log, " | "))
LUA
chmod 644 "$T/sudo-plugin/"*
out=$(as_svc lua5.1 "$T/sudo-plugin/submit.lua" "$T/sudo-plugin" "$T/private/p.onnx" "$TUID" "$TGID")
[[ "$out" == "rc=0 tres=${GRES_PFX}shard:$N_SMALL "* ]] || fail "plugin with run_as = sudo: $out"
out=$(as_svc lua5.1 "$T/sudo-plugin/submit.lua" "$T/sudo-plugin" "$T/outsider/x.onnx" "$TUID" "$TGID")
[[ "$out" == "rc=-1 "*"the model file cannot be read: it does not exist, is not a regular file, or uid $TUID may not read it"* ]] ||
  fail "plugin with run_as = sudo, another user's model: $out"
out=$(as_svc lua5.1 "$T/sudo-plugin/submit.lua" "$T/sudo-plugin" "$T/outsider/x.onnx" "$OUT_UID" "$OUT_UID")
[[ "$out" == "rc=-1 "*"$MISCONF"* ]] || fail "plugin with run_as = sudo, a user outside the group: $out"
pass "job_submit.lua as the service account with run_as = sudo: $TU's private model -> shard:$N_SMALL; another user's model refused like a missing one; a user outside the group: misconfigured (nothing runs)"

# --- 10. data-parallel training on several nodes (issue 32 item 5) --------------------------
# Two slurmd on this host (NodeName gpn1, gpn2: 4 fake GPUs each, their own port, spool and log),
# the plugin in cli mode; -N2 --gpus-per-node=4 with a model runs on 2 x 4 whole GPUs, predicted
# as gpucast predict --gpus 8 --nodes 2, and the epilog registers it with its 8 GPUs.
stop_daemons 2   # slurmd, slurmctld (munged stays)
for i in 2 3 4 5 6 7; do [ -e "$T/dev/nvidia$i" ] || mknod "$T/dev/nvidia$i" c 195 "$i"; done
write_slurm_conf shard
N1_PORT=$(free_port); N2_PORT=$(free_port)
sed -i -e '/^NodeName=/d' -e 's|^SlurmdSpoolDir=.*|SlurmdSpoolDir='"$T"'/spool-multi-%n|' \
  -e 's|^SlurmdPidFile=.*|SlurmdPidFile='"$T"'/slurmd-%n.pid|' -e 's|^SlurmdLogFile=.*|SlurmdLogFile='"$T"'/slurmd-%n.log|' \
  -e 's|^StateSaveLocation=.*|StateSaveLocation='"$T"'/state-multi|' -e 's|Nodes=ALL|Nodes=gpn[1-2]|' "$T/slurm.conf"
{
  echo "NodeName=gpn1 NodeHostname=$HOST NodeAddr=127.0.0.1 Port=$N1_PORT CPUs=8 RealMemory=1000 Gres=gpu:4,shard:$((4 * SHARDS)) State=UNKNOWN"
  echo "NodeName=gpn2 NodeHostname=$HOST NodeAddr=127.0.0.1 Port=$N2_PORT CPUs=8 RealMemory=1000 Gres=gpu:4,shard:$((4 * SHARDS)) State=UNKNOWN"
} >> "$T/slurm.conf"
{
  echo "AutoDetect=off"
  for n in 1 2; do
    for g in 0 1 2 3; do
      dev=$(( (n - 1) * 4 + g ))
      echo "NodeName=gpn$n Name=gpu File=$T/dev/nvidia$dev"
      echo "NodeName=gpn$n Name=shard Count=$SHARDS File=$T/dev/nvidia$dev"
    done
  done
} > "$T/gres.conf"
mkdir -p "$T/state-multi" "$T/spool-multi-gpn1" "$T/spool-multi-gpn2"
/usr/sbin/slurmctld -D -i -f "$T/slurm.conf" >>"$T/slurmctld.out" 2>&1 &
PIDS+=($!)
for n in gpn1 gpn2; do
  /usr/sbin/slurmd -D -N "$n" -f "$T/slurm.conf" >>"$T/slurmd-$n.out" 2>&1 &
  PIDS+=($!)
done
for _ in $(seq 150); do [ "$(sinfo -h -N -o '%N %T' 2>/dev/null | sort -u | grep -c ' idle$')" = 2 ] && break; sleep 0.2; done
[ "$(sinfo -h -N -o '%N %T' 2>/dev/null | sort -u | grep -c ' idle$')" = 2 ] ||
  fail "two slurmd on one host did not come up: $(sinfo -N 2>&1; tail -5 "$T"/slurmd-gpn*.out "$T"/slurmd-gpn*.log 2>/dev/null)"
MN_PORT=$(free_port)
"$GPUCAST" serve --listen "127.0.0.1:$MN_PORT" --db "$T/multi.db" --predictor "$T/predictor.json" \
  --cluster "nodes=2,gpus_per_node=4" --model-root "$MODELS" >"$T/multi.out" 2>"$T/multi.err" &
PIDS+=($!)
for _ in $(seq 50); do curl -sf "http://127.0.0.1:$MN_PORT/healthz" >/dev/null && break; sleep 0.1; done
write_conf "url=http://127.0.0.1:$MN_PORT" "epilog_log=$EPI_LOG"
J_DP=$("$GPUCAST" predict --json --predictor "$T/predictor.json" --model "$MODELS/pointnet.onnx" --batch 32 --gpus 8 --nodes 2)
U_DP=$(echo "$J_DP" | jnum gpu_util)
printf '#!/bin/sh\n#GPUCAST model=%s batch=32\nsleep 8\n' "$MODELS/pointnet.onnx" > "$T/dp-job.sh"
DPJ=$(submit -N2 --gpus-per-node=4 "$T/dp-job.sh") || fail "-N2 --gpus-per-node=4 with a model refused: $(cat "$T/sbatch.err")"
grep -qF "x2 nodes x4 GPUs: predicted GPU utilization $(printf '%.1f' "$U_DP")% per GPU (data-parallel, gpucast predict --gpus 8 --nodes 2)" "$T/sbatch.err" ||
  fail "-N2 x4: the message: $(cat "$T/sbatch.err") (gpucast predict --gpus 8 --nodes 2: $U_DP%)"
[ "$(granted "$DPJ")" = "gres:gpu:4" ] && [ "$(job_field "$DPJ" NumNodes | sed 's/-2$//')" = 2 ] ||
  fail "-N2 x4: TresPerNode=$(granted "$DPJ") NumNodes=$(job_field "$DPJ" NumNodes)"
printf '%s|8|\n%s.batch|8|gres/gpuutil=80,mem=1M\n' "$DPJ" "$DPJ" > "$T/sacct/$DPJ.txt"
wait_state "$DPJ" RUNNING
# scontrol -d: one line per node, or one line for nodes given the same GPUs (Nodes=gpn[1-2]).
ALLOC=$(scontrol -d show job "$DPJ" | { grep -o 'Nodes=gpn[^ ]* .*GRES=gpu[^ ]*' || true; } | sed 's/ CPU_IDs=[^ ]*//; s/ Mem=[^ ]*//' | tr '\n' ';')
[ "$(echo "$ALLOC" | grep -o 'GRES=gpu[^;]*:4' | wc -l)" = 2 ] || echo "$ALLOC" | grep -q 'Nodes=gpn\[1-2\] [^;]*GRES=gpu[^;]*:4' ||
  fail "-N2 x4: not 4 whole GPUs on each node: $ALLOC"
pass "-N2 --gpus-per-node=4 with a model runs on 2 x 4 whole GPUs ($ALLOC) -> gres:gpu:4 per node, predicted as gpucast predict --gpus 8 --nodes 2 ($U_DP% per GPU)"
epilog_done "$DPJ" "gpucast job [0-9]*: observed" || fail "-N2 x4: the epilog posted nothing: $(grep "job $DPJ:" "$EPI_LOG")"
GDP=$(sed -n "s/.*job $DPJ: gpucast job \([0-9]*\): observed.*/\1/p" "$EPI_LOG" | head -1)
RDP=$(curl -s -m 5 "http://127.0.0.1:$MN_PORT/v1/jobs/$GDP")
[ "$(echo "$RDP" | jget gpus)" = 8 ] && awk -v u="$(echo "$RDP" | jget observed_util)" 'BEGIN { exit !(u == 80) }' ||
  fail "-N2 x4: the service's record: $RDP"
pass "-N2 x4 recorded for the closed loop: gpucast job $GDP with 8 GPUs, observed_util 80"
cancel_all

echo "slurm test: every check passed"
