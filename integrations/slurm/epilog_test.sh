#!/usr/bin/env bash
# Offline test of gpucast-epilog.sh: its parsing of sacct and nvidia-smi
# output (sample text in the formats those tools print, expected values
# computed by hand), then the whole epilog against a real `gpucast serve` on
# loopback with sacct/scontrol replaced by stubs printing that sample text.
# No Slurm needed. Usage: integrations/slurm/epilog_test.sh BUILD/gpucast
set -u
BIN=$(realpath "${1:?usage: epilog_test.sh PATH/TO/gpucast}")
HERE=$(cd "$(dirname "$0")" && pwd)
ROOT=$(cd "$HERE/../.." && pwd)
. "$ROOT/tests/lib/serve.sh"
EPI="$HERE/gpucast-epilog.sh"
T=$(mktemp -d /tmp/gpucast-epilog.XXXXXX)
PID=""
cleanup() { [ -n "$PID" ] && kill "$PID" 2>/dev/null; wait 2>/dev/null; rm -rf "$T"; }
trap cleanup EXIT
pass=0
failn=0
check() {  # check NAME GOT WANT
  if [ "$2" = "$3" ]; then pass=$((pass + 1)); else failn=$((failn + 1)); echo "epilog: FAIL: $1: got '$2', want '$3'"; fi
}

# sacct -P -n --format=JobID,ElapsedRaw,TRESUsageInAve: the allocation line
# has no usage; the batch step ran 600 s at 80%, step 0 ran 1800 s at 40%:
# (80*600 + 40*1800) / 2400 = 50.
cat >"$T/sacct.txt" <<'EOF'
42|2400|
42.batch|600|cpu=00:09:58,energy=0,fs/disk=5302,gres/gpumem=2048M,gres/gpuutil=80,mem=1200M,pages=0,vmem=1500M
42.0|1800|cpu=00:29:40,energy=0,fs/disk=11092,gres/gpumem=9000M,gres/gpuutil=40,mem=3000M,pages=2,vmem=3300M
EOF
check "sacct weighted" "$(bash "$EPI" --parse-sacct <"$T/sacct.txt")" "50.000 2400"
cp "$T/sacct.txt" "$T/sacct50.txt"
printf '42|100|cpu=00:01:00,mem=10M\n' >"$T/nogpu.txt"
check "sacct without gpuutil" "$(bash "$EPI" --parse-sacct <"$T/nogpu.txt")" ""
printf '42|100|gres/gpuutil=140\n' >"$T/bad.txt"
check "sacct out of range ignored" "$(bash "$EPI" --parse-sacct <"$T/bad.txt")" ""

# nvidia-smi --query-gpu=timestamp,index,utilization.gpu --format=csv -l 5:
# (90 + 30 + 60 + 100) / 4 = 70.
cat >"$T/nvsmi.csv" <<'EOF'
timestamp, index, utilization.gpu [%]
2026/11/30 10:00:00.101, 0, 90 %
2026/11/30 10:00:05.102, 0, 30 %
2026/11/30 10:00:10.103, 0, 60 %
2026/11/30 10:00:15.104, 0, 100 %
EOF
check "nvidia-smi log" "$(bash "$EPI" --parse-nvsmi "$T/nvsmi.csv")" "70.000 4"
printf '25\n35\n' >"$T/nounits.csv"  # --format=csv,noheader,nounits, one column
check "nvidia-smi noheader" "$(bash "$EPI" --parse-nvsmi "$T/nounits.csv")" "30.000 2"

# AdminComment as job_submit.lua writes it.
c='gpucast: model=/shared/models/pointnet.onnx batch=32 amp=1 util=10.2 interval=8.0-14.1 basis=point share=shard:1/8'
check "comment" "$(bash "$EPI" --parse-comment "$c")" \
  'JOB {"model": "/shared/models/pointnet.onnx", "batch": 32, "amp": true, "dims": {}, "attrs": {}, "duration_s": 0}'
check "a job on a MIG slice (mig=): registered with its mig, marked MIG (no observation)" \
  "$(bash "$EPI" --parse-comment 'gpucast: model=/m/p.onnx batch=8 gpu=A100-80GB mig=1g.10gb util=52.5 interval=40.0-61.0 basis=point mem=9000/9728 share=mig:1/1')" \
  'MIG {"model": "/m/p.onnx", "batch": 8, "amp": false, "dims": {}, "attrs": {}, "gpu": "A100-80GB", "mig": "1g.10gb", "duration_s": 0}'
check "a MIG job's share is the whole slice (100%)" \
  "$(bash "$EPI" --parse-share 'gpucast: model=/m/p.onnx batch=8 mig=1g.10gb util=52.5 share=mig:1/1')" "100.000"
check "id set by an operator (the whole AdminComment)" "$(bash "$EPI" --parse-comment "gpucast_job=17")" "ID 17"
# Issue 32 item 3: a gpucast_job anywhere else redirected the observation to another user's record.
check "gpucast_job before the plugin's comment: not an id" "$(bash "$EPI" --parse-comment "gpucast_job=17 $c")" ""
check "a declared dim named gpucast_job: a dim, not an id" \
  "$(bash "$EPI" --parse-comment 'gpucast: model=/m/p.onnx batch=8 dim.gpucast_job=5 util=1.0 share=shard:1/8')" \
  'JOB {"model": "/m/p.onnx", "batch": 8, "amp": false, "dims": {"gpucast_job": 5}, "attrs": {}, "duration_s": 0}'
check "a gpucast_job token in the plugin's comment: ignored" \
  "$(bash "$EPI" --parse-comment 'gpucast: model=/m/p.onnx gpucast_job=5 batch=8 util=1.0 share=shard:1/8')" \
  'JOB {"model": "/m/p.onnx", "batch": 8, "amp": false, "dims": {}, "attrs": {}, "duration_s": 0}'
check "a model path cannot hold another token (its = is encoded, a raw one voids the token)" \
  "$(bash "$EPI" --parse-comment 'gpucast: model=/m/a=gpucast_job=5 model=/m/p.onnx batch=8')" \
  'JOB {"model": "/m/p.onnx", "batch": 8, "amp": false, "dims": {}, "attrs": {}, "duration_s": 0}'
# Whole GPUs on several nodes (share=gpu:K/K, nodes=M) and the GPU: recorded as M x K GPUs.
check "comment, data-parallel on 2 nodes x 4 GPUs" \
  "$(bash "$EPI" --parse-comment 'gpucast: model=/m/p.onnx batch=8 gpu=H100 nodes=2 util=50.0 share=gpu:4/4')" \
  'JOB {"model": "/m/p.onnx", "batch": 8, "amp": false, "dims": {}, "attrs": {}, "gpus": 8, "gpu": "H100", "duration_s": 0}'
# Attributes as job_submit.lua writes them (sorted): an integer as a number, a fractional or named
# value as a string (the epilog dropped them: the observed job lost its optimizer and loader cost).
check "comment, attributes of every kind" \
  "$(bash "$EPI" --parse-comment 'gpucast: model=/m/p.onnx batch=8 attr.loader_ms_per_sample=2.5 attr.loader_workers=4 attr.optimizer=adamw util=50.0 share=shard:4/8')" \
  'JOB {"model": "/m/p.onnx", "batch": 8, "amp": false, "dims": {}, "attrs": {"loader_ms_per_sample": "2.5", "loader_workers": 4, "optimizer": "adamw"}, "duration_s": 0}'
check "no comment" "$(bash "$EPI" --parse-comment "")" ""
# A model path with blanks, '%', '=' and ',' as job_submit.lua writes it (%XX; plugin_test.sh checks the writer).
c='gpucast: model=/shared/my%20models/a%3Db%2Cc%2550%25%09x.onnx batch=8 util=10.2 interval=8.0-14.1 basis=point share=shard:1/8'
check "comment, encoded path" "$(bash "$EPI" --parse-comment "$c")" \
  "JOB {\"model\": \"/shared/my models/a=b,c%50%$(printf '\t')x.onnx\", \"batch\": 8, \"amp\": false, \"dims\": {}, \"attrs\": {}, \"duration_s\": 0}"
# Several networks: one model= per pass (plugin_test.sh checks the writer) -> "models" with repeats.
cm='gpucast: model=/m/g.onnx model=/m/my%20d.onnx model=/m/my%20d.onnx batch=64 util=80.0 interval=1.0-99.0 basis=point share=shard:7/8'
check "comment, several networks" "$(bash "$EPI" --parse-comment "$cm")" \
  'JOB {"models": [{"path": "/m/g.onnx", "repeat": 1}, {"path": "/m/my d.onnx", "repeat": 2}], "batch": 64, "amp": false, "dims": {}, "attrs": {}, "duration_s": 0}'
check "a lone % is kept" "$(bash "$EPI" --parse-comment 'gpucast: model=/m/100%.onnx batch=8' | sed 's/.*"model": "\([^"]*\)".*/\1/')" "/m/100%.onnx"
# The job's share of its GPU: AdminComment share=KIND:K/N, as predicted (a share the owner
# raised afterwards does not count: issue 32 item 3).
check "share shard 1/8" "$(bash "$EPI" --parse-share "$c")" "12.500"
check "share raised to shard:6: still the predicted 1/8" "$(bash "$EPI" --parse-share "$c" "gres:nic:1,gres:shard:6")" "12.500"
check "share mps 53/100" "$(bash "$EPI" --parse-share "gpucast: model=m batch=1 share=mps:53/100" "gres:mps:53")" "53.000"
check "no share" "$(bash "$EPI" --parse-share "gpucast_job=17")" ""

# The whole epilog: stubs on PATH, a real service, the observation arrives.
# The predictor: the one make test trains once for every suite (GPUCAST_TEST_PREDICTOR), else train.
if [ -n "${GPUCAST_TEST_PREDICTOR:-}" ]; then
  cp "$GPUCAST_TEST_PREDICTOR" "$T/p.json" || { echo "epilog: FAIL: cannot copy $GPUCAST_TEST_PREDICTOR"; exit 1; }
else
  "$BIN" train --out "$T/p.json" >/dev/null || { echo "epilog: FAIL: train"; exit 1; }
fi
mkdir -p "$T/my models"
cp "$ROOT/models/pointnet.onnx" "$T/my models/point net%.onnx"
"$BIN" serve --listen 127.0.0.1:0 --db "$T/jobs.db" --predictor "$T/p.json" --cluster "2x RTX3090" \
  --model-root "$T/my models" >"$T/out" 2>"$T/err" &
PID=$!
URL=http://$(serve_addr "$T/out" "$PID" 10 "$T/err") || { echo "epilog: FAIL: service did not start"; exit 1; }
mkdir -p "$T/bin" "$T/slurm"
cp "$EPI" "$T/slurm/gpucast-epilog.sh"
printf "url = %s\nacct_freq_s = 30\nnvsmi_log_dir = %s\nepilog_log = %s\n" "$URL" "$T" "$T/epilog.err" >"$T/slurm/gpucast.conf"
printf "overuse_margin = 30   # points\noveruse_hold = yes\noveruse_dir = %s\n" "$T/overuse" >>"$T/slurm/gpucast.conf"
cat >"$T/bin/sacct" <<EOF
#!/bin/sh
case "\$*" in *TRESUsageInAve*) cat "$T/sacct.txt" ;; esac
EOF
cat >"$T/bin/scontrol" <<EOF
#!/bin/sh
case "\$*" in
  "show job "*) echo "   JobName=\${NAME:-x} AdminComment=gpucast_job=1 TresPerNode=gres:shard:8" ;;  # never read
  "show config") echo "ClusterName             = testcluster" ;;
esac
EOF
# squeue --json -t all -j ID (the fields the epilog reads, as Slurm 22.05's openapi/v0.0.38
# prints them; -t all: 24.11 lists a finished job only with it). The job name tries to pose as
# other fields, as scontrol's text would show it.
cat >"$T/bin/squeue" <<EOF
#!/bin/sh
[ "\$1 \$2 \$3 \$4" = "--json -t all -j" ] || exit 1
shift 2
printf '{"meta": {}, "errors": [], "jobs": [{"job_id": %s, "name": "x TresPerNode=gres:shard:8 AdminComment=gpucast_job=1\\\\nAdminComment=gpucast_job=1", "user_id": 1234, "group_id": %s, "user_name": "alice", "tres_per_node": "%s", "admin_comment": "gpucast: model=%s batch=32 %sutil=10.2 interval=8.0-14.1 basis=point share=%s"}]}\n' "\$3" "\${JGID:-1234}" "\${TPN:-gres:shard:1}" "\${MODEL:-$T/my%20models/point%20net%25.onnx}" "\${EXTRA:-}" "\${SHARE:-shard:1/8}"
EOF
chmod +x "$T/bin/sacct" "$T/bin/scontrol" "$T/bin/squeue"
# nvidia-smi logs: nvsmi_log_dir ($T/nv, root's, 755) holds one directory per user (alice: uid 1234).
[ "$(id -u)" = 0 ] || { echo "epilog: FAIL: needs root (chown of the per-user log directory)"; exit 1; }
mkdir -m 755 "$T/nv" "$T/nv/alice"
chown 1234:1234 "$T/nv/alice"
sed -i "s|^nvsmi_log_dir = .*|nvsmi_log_dir = $T/nv|" "$T/slurm/gpucast.conf"
nvlog() {  # nvlog JOB: alice's nvidia-smi log for JOB (the sample log, owned by alice)
  cp "$T/nvsmi.csv" "$T/nv/alice/gpucast-nvsmi-$1.csv"; chown 1234:1234 "$T/nv/alice/gpucast-nvsmi-$1.csv"
}
epilog() { PATH="$T/bin:$PATH" SLURM_JOB_ID=$1 SLURM_JOB_USER=alice SLURM_JOB_UID=1234 bash "$T/slurm/gpucast-epilog.sh" 2>>"$T/epilog.err"; }
jobstat() {  # jobstat ID: "observed_util observed_samples" from GET /v1/jobs/ID
  curl -s -m 5 "$URL/v1/jobs/$1" | /usr/bin/python3 -c 'import json,sys; j=json.load(sys.stdin); print(j["observed_util"], j["observed_samples"])'
}
for run in 1 2; do epilog 42; done  # Slurm reruns the epilog: the same record, the samples counted once
job=$(curl -s -m 5 "$URL/v1/jobs/1")
got=$(echo "$job" | /usr/bin/python3 -c 'import json,sys; j=json.load(sys.stdin); print(j["observed_util"], j["observed_samples"], j["batch"], j["name"] == "")')
check "epilog posted (sacct), once" "$got" "50.0 80 32 True"  # 2400 s / 30 s, not doubled by the rerun
check "model path with blanks and % decoded" "$(echo "$job" | /usr/bin/python3 -c 'import json,sys; print(json.load(sys.stdin)["model"])')" \
  "$T/my models/point net%.onnx"
check "one record" "$(curl -s -m 5 "$URL/v1/jobs" | /usr/bin/python3 -c 'import json,sys; print(len(json.load(sys.stdin)["jobs"]))')" "1"
check "rerun logged as already stored" "$(grep -c 'already stored by an earlier run' "$T/epilog.err")" "1"
# Without sacct's gpuutil: the job's nvidia-smi log (job 43, a new record).
cp "$T/nogpu.txt" "$T/sacct.txt"
nvlog 43
for run in 1 2; do epilog 43; done
check "epilog posted (nvidia-smi), once" "$(jobstat 2)" "70.0 4"
# A rerun that measures something else for the same job is refused, not added.
nvlog 42
epilog 42
check "changed measurement under the same key refused" "$(jobstat 1)" "50.0 80"
check "refusal logged" "$(grep -c "HTTP 422 .*Idempotency-Key 'slurm-epilog-testcluster-42' was already used" "$T/epilog.err")" "1"
metrics=$(curl -s -m 5 "$URL/metrics")
check "slurm source counted once" "$(echo "$metrics" | grep -c '^gpucast_observations_total{source="slurm"} 1$')" "1"
check "nvidia-smi source counted once" "$(echo "$metrics" | grep -c '^gpucast_observations_total{source="nvidia-smi"} 1$')" "1"
# Overuse: share shard:1/8 = 12.5%, margin 30: job 42 (50%, sacct) and job 43 (70%, nvidia-smi)
# are over 42.5%. Only sacct's gres/gpuutil (slurmd's, per job) is evidence: the nvidia-smi log
# is written by the job and shows the whole device (issue 32 item 3: a user wrote 5% and was
# never held; an honest user sharing a GPU read 100% and was).
ov() { curl -s -m 5 "$URL/v1/jobs/$1" | /usr/bin/python3 -c 'import json,sys; j=json.load(sys.stdin); print(j.get("overuse"), j.get("share_pct"))'; }
check "job 42 (sacct) overuse shown" "$(ov 1)" "True 12.5"
check "job 43 (nvidia-smi) posted without a share: no overuse" "$(ov 2)" "False None"
check "overuse counted for the sacct job only" "$(echo "$metrics" | grep -c -e '^gpucast_overuse_total{source="slurm"} 1$' -e '^gpucast_overuse_total{source="nvidia-smi"} [1-9]')" "1"
check "overuse logged for the operator (by each of the two runs)" \
  "$(grep -c "job 42: OVERUSE by user alice: observed 50.000% GPU utilization (slurm), share 12.500% + margin 30; the user's next GPU jobs are held (clear: rm $T/overuse/alice" "$T/epilog.err")" "2"
check "the nvidia-smi log's 70% logged as no evidence" \
  "$(grep -c "job 43: observed 70.000% GPU utilization (nvidia-smi, whole-device and written by the job) above the share 12.500% + margin 30: not evidence of overuse, nobody held" "$T/epilog.err")" "2"
check "hold recorded for the sacct job only, once" "$(cat "$T/overuse/alice")" "job 42: observed 50.000% GPU utilization (slurm), share 12.500% + margin 30"
# Job 44 at 50% (sacct) on a share its owner raised to shard:6 (75%): measured against the
# predicted 12.5% (allow_more_shards let a user declare the smallest model and raise to 8).
cp "$T/sacct50.txt" "$T/sacct.txt"
TPN=gres:shard:6 epilog 44
check "raised share: measured against the predicted share, overuse" "$(ov 3)" "True 12.5"
check "a second hold record" "$(wc -l <"$T/overuse/alice")" "2"
cp "$T/nogpu.txt" "$T/sacct.txt"
check "service logged the overuse" "$(grep -c '^gpucast serve: job [13] overuse: ' "$T/err")" "2"
check "the job name posing as TresPerNode/AdminComment is not read (job 42 not hidden, not posted elsewhere)" \
  "$(ov 1)" "True 12.5"

# The epilog trusts nothing a user can write. Each case: job N at 70% (over its 12.5% + 30),
# whose log is refused, so nothing is posted and nobody is held.
records() { curl -s -m 5 "$URL/v1/jobs" | /usr/bin/python3 -c 'import json,sys; print(len(json.load(sys.stdin)["jobs"]))'; }
holds() { wc -l <"$T/overuse/alice"; }
refused_log() {  # refused_log NAME JOB WANT_IN_LOG
  local before_r before_h; before_r=$(records); before_h=$(holds)
  local t0; t0=$(date +%s%N)
  epilog "$2"
  local ms=$(( ($(date +%s%N) - t0) / 1000000 ))
  check "$1: refused" "$(grep -c -F -- "$3" "$T/epilog.err" | awk '{ print ($1 > 0) }')" "1"
  check "$1: nothing posted, nobody held" "$(records) $(holds)" "$before_r $before_h"
  check "$1: done in under 5 s" "$(( ms < 5000 ))" "1"
}
mkfifo "$T/nv/alice/gpucast-nvsmi-50.csv"; chown 1234:1234 "$T/nv/alice/gpucast-nvsmi-50.csv"
refused_log "a FIFO as the log" 50 "gpucast-nvsmi-50.csv refused: not a regular file"
ln -s "$T/nvsmi.csv" "$T/nv/alice/gpucast-nvsmi-51.csv"
refused_log "a symlink (to root's 70% log)" 51 "gpucast-nvsmi-51.csv refused: cannot open it: Too many levels of symbolic links"
cp "$T/nvsmi.csv" "$T/nv/alice/gpucast-nvsmi-52.csv"  # root's file in alice's directory
refused_log "a log not owned by the job's user" 52 "gpucast-nvsmi-52.csv refused: owned by uid 0, not by the job's uid 1234"
nvlog 53; ln "$T/nv/alice/gpucast-nvsmi-53.csv" "$T/nv/alice/link"
refused_log "a log with a second hard link" 53 "gpucast-nvsmi-53.csv refused: it has 2 links"
nvlog 54; chmod 775 "$T/nv/alice"
refused_log "a per-user directory others may write" 54 "$T/nv/alice refused: writable by group or others (mode 775)"
chmod 755 "$T/nv/alice"
# A world-writable nvsmi_log_dir (/tmp-like): any user could plant any job's log there.
mkdir -m 1777 "$T/tmp"; mkdir -m 755 "$T/tmp/alice"; chown 1234:1234 "$T/tmp/alice"
cp "$T/nvsmi.csv" "$T/tmp/alice/gpucast-nvsmi-55.csv"; chown 1234:1234 "$T/tmp/alice/gpucast-nvsmi-55.csv"
sed -i "s|^nvsmi_log_dir = .*|nvsmi_log_dir = $T/tmp|" "$T/slurm/gpucast.conf"
refused_log "a world-writable nvsmi_log_dir" 55 "nvsmi_log_dir $T/tmp refused: writable by group or others (mode 1777)"
# By default no nvidia-smi log is read at all (it used to be /tmp).
sed -i "/^nvsmi_log_dir = /d" "$T/slurm/gpucast.conf"
cp "$T/nvsmi.csv" "/tmp/gpucast-nvsmi-56.csv"
refused_log "no nvsmi_log_dir: a log planted in /tmp" 56 "job 56: no GPU utilization measured"
rm -f "/tmp/gpucast-nvsmi-56.csv"
# overuse_dir is what job_submit.lua holds users by: one that others may write is refused.
echo "nvsmi_log_dir = $T/nv" >> "$T/slurm/gpucast.conf"
chmod 777 "$T/overuse"; cp "$T/sacct50.txt" "$T/sacct.txt"; epilog 57; cp "$T/nogpu.txt" "$T/sacct.txt"
check "a world-writable overuse_dir: no hold recorded" "$(holds)" "2"
check "a world-writable overuse_dir: logged" "$(grep -c "job 57: OVERUSE by user alice: .*overuse_dir $T/overuse refused: writable by group or others (mode 777)" "$T/epilog.err" | awk '{ print ($1 > 0) }')" "1"
chmod 755 "$T/overuse"
# Deputy mode (mode = service, deputy_token_file): the model is not under the service's model
# roots; the epilog registers the job with the deputy token as the job's uid:gid, so the service
# reads it as that user (issue 32 item 4: the recommended deployment got 422 and recorded nothing).
D=$(mktemp -d /tmp/gpucast-epilog-deputy.XXXXXX); chmod 755 "$D"
cp "$ROOT/models/pointnet.onnx" "$D/p.onnx"; chmod 644 "$D/p.onnx"
echo deputy-secret > "$T/deputy.token"; chmod 600 "$T/deputy.token"
"$BIN" serve --listen 127.0.0.1:0 --db "$T/deputy.db" --predictor "$T/p.json" --cluster "2x RTX3090" \
  --deputy-token-file "$T/deputy.token" >"$T/dout" 2>"$T/derr" &
DPID=$!
DURL=http://$(serve_addr "$T/dout" "$DPID" 10 "$T/derr") ||
  { echo "epilog: FAIL: the deputy-mode service did not start"; kill "$DPID" 2>/dev/null; rm -rf "$D"; exit 1; }
cp "$T/slurm/gpucast.conf" "$T/gpucast.conf.plain"
printf "url = %s\nmode = service\ndeputy_token_file = %s\n" "$DURL" "$T/deputy.token" >>"$T/slurm/gpucast.conf"
cp "$T/sacct50.txt" "$T/sacct.txt"
MODEL=$D/p.onnx JGID=65534 PATH="$T/bin:$PATH" SLURM_JOB_ID=60 SLURM_JOB_USER=nobody SLURM_JOB_UID=65534 \
  bash "$T/slurm/gpucast-epilog.sh" 2>>"$T/epilog.err"
check "deputy mode: the job registered as read by uid 65534, the observation stored" \
  "$(curl -s -m 5 -H 'Authorization: Bearer deputy-secret' "$DURL/v1/jobs/1" | /usr/bin/python3 -c 'import json,sys; j=json.load(sys.stdin); print(j["model"], j["observed_util"], j["observed_samples"])')" \
  "$D/p.onnx 50.0 80"
check "deputy mode: logged" "$(grep -c "job 60: gpucast job 1: observed 50.000% over 80 samples (slurm)" "$T/epilog.err")" "1"
# A model the job's user may not read is not registered (the service reads as that user).
chmod 600 "$D/p.onnx"
MODEL=$D/p.onnx JGID=65534 PATH="$T/bin:$PATH" SLURM_JOB_ID=61 SLURM_JOB_USER=nobody SLURM_JOB_UID=65534 \
  bash "$T/slurm/gpucast-epilog.sh" 2>>"$T/epilog.err"
check "deputy mode: a model uid 65534 cannot read is refused by the service" \
  "$(grep -c "job 61: registering with gpucast failed: HTTP 422 .*cannot be read as uid 65534" "$T/epilog.err")" "1"
kill "$DPID" 2>/dev/null; wait "$DPID" 2>/dev/null
rm -rf "$D"
cp "$T/gpucast.conf.plain" "$T/slurm/gpucast.conf"; cp "$T/nogpu.txt" "$T/sacct.txt"
# A job on a MIG slice (job_submit.lua's mig=): registered through POST /v1/jobs with its "mig"
# on a service whose cluster has A100-80GBs, predicted and placed as a slice, measured or not;
# no observation is posted (nvidia-smi and sacct's gpuutil read the whole GPU's counter).
"$BIN" serve --listen 127.0.0.1:0 --db "$T/mig.db" --predictor "$T/p.json" --cluster "1x A100-80GB" \
  --model-root "$T/my models" >"$T/mout" 2>"$T/merr" &
MPID=$!
MURL=http://$(serve_addr "$T/mout" "$MPID" 10 "$T/merr") ||
  { echo "epilog: FAIL: the MIG service did not start"; kill "$MPID" 2>/dev/null; exit 1; }
printf "url = %s\n" "$MURL" >>"$T/slurm/gpucast.conf"
cp "$T/sacct50.txt" "$T/sacct.txt"
for run in 1 2; do  # a rerun: the same record (Idempotency-Key), nothing posted
  EXTRA="gpu=A100-80GB mig=1g.10gb " SHARE=mig:1/1 epilog 70
done
check "MIG: registered once, with its mig, placed on GPU 0, no observation" \
  "$(curl -s -m 5 "$MURL/v1/jobs" | /usr/bin/python3 -c 'import json,sys; js=json.load(sys.stdin)["jobs"]; print(len(js), js[0]["mig"], js[0]["gpu"], js[0]["placement"], js[0]["observed_samples"])')" \
  "1 1g.10gb A100-80GB [0] 0"
check "MIG: the record's prediction is POST /v1/predict's for the same body" \
  "$(curl -s -m 5 "$MURL/v1/jobs/1" | /usr/bin/python3 -c 'import json,sys; j=json.load(sys.stdin); print(j["predicted_util"], j["gpu_mem_capacity_mib"])')" \
  "$(curl -s -m 5 -X POST "$MURL/v1/predict" -H 'Content-Type: application/json' \
      -d "{\"model\": \"$T/my models/point net%.onnx\", \"batch\": 32, \"gpu\": \"A100-80GB\", \"mig\": \"1g.10gb\"}" |
     /usr/bin/python3 -c 'import json,sys; j=json.load(sys.stdin); print(j["predicted_util"], j["gpu_mem_capacity_mib"])')"
check "MIG: logged by each run" \
  "$(grep -c "job 70: gpucast job 1: registered on a MIG 1g.10gb slice; no observation posted" "$T/epilog.err")" "2"
cp "$T/nogpu.txt" "$T/sacct.txt"
EXTRA="gpu=A100-80GB mig=1g.10gb " SHARE=mig:1/1 epilog 71
check "MIG: registered without a measurement too" \
  "$(grep -c "job 71: gpucast job 2: registered on a MIG 1g.10gb slice" "$T/epilog.err")" "1"
kill "$MPID" 2>/dev/null; wait "$MPID" 2>/dev/null
cp "$T/gpucast.conf.plain" "$T/slurm/gpucast.conf"
# A long job (40,000,000 s at 30 s a sample: 1,333,333 samples) or a long nvidia-smi log has more
# samples than one observation may carry (the service's 1,000,000, 400 past it): the observation
# was refused and lost. The epilog posts at most 1,000,000 (the mean is the same).
printf '80|40000000|\n80.batch|40000000|gres/gpuutil=60\n' >"$T/sacct.txt"
epilog 80
check "samples capped at one observation's 1000000" \
  "$(grep -c 'job 80: gpucast job [0-9]*: observed 60.000% over 1000000 samples (slurm)' "$T/epilog.err")" "1"
cp "$T/sacct50.txt" "$T/sacct.txt"
# Log lines: control characters escaped.
check "control characters escaped" "$(bash "$EPI" --esc "$(printf 'a\nerror: b\tc\033d\\')")" 'a\nerror: b\tc\x1bd\\'
check "every line of the epilog's log is one entry" "$(grep -cv '^20[0-9-]*T[0-9:]*Z gpucast-epilog: job \|^gpucast-epilog: job ' "$T/epilog.err")" "0"
echo "epilog: $pass passed, $failn failed"
[ "$failn" = 0 ]
