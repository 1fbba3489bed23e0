#!/usr/bin/env bash
# gpucast Slurm epilog: posts a finished job's measured GPU utilization to
# `gpucast serve` as an observation (POST /v1/jobs/{id}/observations), so that
# `gpucast train --observations DB` can learn from the site's own jobs.
# Operator guide: docs/operations.md, docs/slurm.md ("Measured utilization back").
#
# Install as EpilogSlurmctld (slurm.conf); it runs once per job with
# SLURM_JOB_ID set. Settings: gpucast.conf beside this script (url,
# token_file) as for job_submit.lua, plus optional
#   nvsmi_log_dir = DIR     where jobs write nvidia-smi logs, DIR/USER/ per user
#                           (default: none, no nvidia-smi source). DIR must be
#                           owned by root and not writable by group or others;
#                           DIR/USER a directory of USER, not writable by others
#   acct_freq_s = N         JobAcctGatherFrequency task period in s (default 30)
#   epilog_log = FILE       also append this script's log lines there (default: syslog only)
#   overuse_margin = PCT    a job whose measured utilization exceeds its share
#                           (AdminComment share=, TresPerNode) by more than PCT
#                           points is overuse (default 20): logged, posted with
#                           share_pct (gpucast_overuse_total, "overuse" on the job)
#   overuse_hold = yes|no   also record the job's user in overuse_dir/USER, which
#                           job_submit.lua reads: that user's next GPU jobs are held
#                           until the operator removes the file (default no)
#   overuse_dir = DIR       default /var/lib/gpucast/overuse
#
# Where the utilization comes from, first that has it:
#   1. sacct TRESUsageInAve gres/gpuutil of the job's steps (sites that gather
#      it: AccountingStorageTRES=gres/gpuutil with AcctGatherGpu NVML); the
#      steps' values averaged weighted by their run time; source "slurm".
#   2. DIR/USER/gpucast-nvsmi-$SLURM_JOB_ID.csv written by the job with
#        nvidia-smi --query-gpu=timestamp,index,utilization.gpu --format=csv -l 5 \
#          > DIR/$USER/gpucast-nvsmi-$SLURM_JOB_ID.csv &
#      every sample line's utilization.gpu averaged; source "nvidia-smi". The
#      file must be a regular file of the job's user with one link: it is opened
#      O_NOFOLLOW|O_NONBLOCK (a symlink or FIFO planted there neither redirects
#      nor blocks the read), read under a 10 s timeout, at most 16 MiB.
# The job's fields (AdminComment, TresPerNode, user) come from `squeue --json`
# (jq), never from scontrol's text, where a job name can pose as another field.
# The job's gpucast record: AdminComment "gpucast_job=N" if present, else the
# epilog registers the job as job_submit.lua described it in its AdminComment
# ("gpucast: model=P batch=B [amp=1] ...") with POST /v1/jobs (duration_s 0,
# Idempotency-Key slurm-<cluster>-<jobid>, so a retried epilog posts to the
# same record). A job without either, or without a measurement, is left alone
# (exit 0: an epilog failure would drain the node).
#
# Offline parsing (tests): --parse-sacct < FILE, --parse-nvsmi FILE,
# --parse-comment STRING, --esc STRING print what the epilog would use.
set -u

# sacct -P -n --format=JobID,ElapsedRaw,TRESUsageInAve lines on stdin ->
# "UTIL SECONDS" (run-time weighted gres/gpuutil), nothing if no step has it.
parse_sacct() {
  awk -F'|' '
    NF >= 3 {
      n = split($3, tres, ",")
      for (i = 1; i <= n; i++) {
        if (tres[i] ~ /^gres\/gpuutil=/) {
          v = substr(tres[i], length("gres/gpuutil=") + 1)
          if (v ~ /^[0-9]+(\.[0-9]+)?$/ && v + 0 <= 100 && $2 ~ /^[0-9]+$/) {
            w = ($2 + 0 > 0) ? $2 + 0 : 1
            sum += v * w; secs += w; found = 1
          }
        }
      }
    }
    END { if (found) printf "%.3f %d\n", sum / secs, secs }'
}

# nvidia-smi CSV log -> "UTIL SAMPLES" (mean utilization.gpu over sample lines).
parse_nvsmi() {
  awk -F',' '
    NR == 1 || col == 0 {
      for (i = 1; i <= NF; i++) if ($i ~ /utilization\.gpu/) col = i
      if (col) next
    }
    {
      c = (col ? col : NF)
      v = $c; gsub(/[ %]/, "", v)
      if (v ~ /^[0-9]+(\.[0-9]+)?$/ && v + 0 <= 100) { sum += v; n++ }
    }
    END { if (n) printf "%.3f %d\n", sum / n, n }' "$1"
}

# AdminComment -> "ID N" or a JSON job for POST /v1/jobs, or nothing. job_submit.lua writes
# "gpucast: " and then KEY=VALUE tokens separated by one blank, every value percent-encoded
# (%XX for %, blanks, control characters, '=' and ','): the comment is read token by token,
# each key whole, so nothing a user declared (a dim or attr named gpucast_job, a path) can pose
# as another token. "ID N" only from an AdminComment that is exactly "gpucast_job=N" (set by an
# operator: users cannot set AdminComment, and job_submit.lua writes only "gpucast: ...").
parse_comment() {
  local c="$1"
  if [[ "$c" =~ ^gpucast_job=([0-9]{1,18})$ ]]; then echo "ID ${BASH_REMATCH[1]}"; return 0; fi
  [[ "$c" == "gpucast: "* ]] || return 0
  printf '%s\n' "${c#gpucast: }" | tr ' ' '\n' | awk '
    function q(s) { gsub(/\\/, "\\\\", s); gsub(/"/, "\\\"", s); return "\"" s "\"" }
    # job_submit.lua writes values with %XX for %, blanks, control characters, = and ,
    function dec(s,   out, i, h) {
      out = ""
      while ((i = index(s, "%")) > 0) {
        h = tolower(substr(s, i + 1, 2))
        if (h ~ /^[0-9a-f][0-9a-f]$/) {
          out = out substr(s, 1, i - 1) sprintf("%c", 16 * (index("0123456789abcdef", substr(h, 1, 1)) - 1) + \
                                                      index("0123456789abcdef", substr(h, 2, 1)) - 1)
          s = substr(s, i + 3)
        } else {
          out = out substr(s, 1, i); s = substr(s, i + 1)
        }
      }
      return out s
    }
    {
      eq = index($0, "=")
      if (eq < 2) next                   # not a KEY=VALUE token
      k = substr($0, 1, eq - 1); v = substr($0, eq + 1)
      if (index(v, "=") > 0) next        # a value is encoded: no "=" in it
    }
    # one model= per forward+backward pass: several networks, or one run k times, are "models"
    k == "model" { p = dec(v); if (!(p in cnt)) order[++nm] = p; cnt[p]++ }
    k == "batch" && v ~ /^[0-9]+$/ { batch = v }
    k == "amp" { amp = (v == "1") ? "true" : "false" }
    k == "gpu" && v ~ /^[A-Za-z0-9_.-]+$/ { gpu = v }
    k == "mig" && v ~ /^[A-Za-z0-9_.+-]+$/ { mig = v }
    k == "nodes" && v ~ /^[0-9]+$/ { nodes = v + 0 }
    k == "share" && v ~ /^gpu:[0-9]+\/[0-9]+$/ { split(substr(v, 5), g, "/"); per_node = g[1] + 0 }
    k ~ /^dim\.[A-Za-z0-9_]+$/ && v ~ /^[0-9]+$/ { dims = dims (dims ? ", " : "") q(dec(substr(k, 5))) ": " v }
    # an integer as a number, any other value job_submit.lua lets through (optimizer=adamw,
    # loader_ms_per_sample=2.5) as a string: the service parses both as gpucast predict --attr does
    k ~ /^attr\.[A-Za-z0-9_]+$/ && v ~ /^[0-9]+$/ { attrs = attrs (attrs ? ", " : "") q(dec(substr(k, 6))) ": " v; next }
    k ~ /^attr\.[A-Za-z0-9_]+$/ && v ~ /^[A-Za-z0-9_.]+$/ { attrs = attrs (attrs ? ", " : "") q(dec(substr(k, 6))) ": " q(v) }
    END {
      if (nm == 0) exit
      if (nm == 1 && cnt[order[1]] == 1) {
        nets = "\"model\": " q(order[1])
      } else {
        nets = "\"models\": ["
        for (i = 1; i <= nm; i++) nets = nets (i > 1 ? ", " : "") "{\"path\": " q(order[i]) ", \"repeat\": " cnt[order[i]] "}"
        nets = nets "]"
      }
      # Whole GPUs (share=gpu:K/K), on nodes=M nodes: the job had M x K GPUs.
      extra = ""
      if (per_node > 1 || nodes > 1) extra = extra ", \"gpus\": " per_node * (nodes > 1 ? nodes : 1)
      if (gpu != "") extra = extra ", \"gpu\": " q(gpu)
      # A job on a MIG slice (job_submit.lua: mig=PROFILE): registered with its "mig", so that
      # the record is of the slice (POST /v1/jobs predicts and places it as one); "MIG" in front:
      # no observation is posted for it (every source reads the counter of the whole GPU).
      if (mig != "") extra = extra ", \"mig\": " q(mig)
      printf "%s {%s, \"batch\": %d, \"amp\": %s, \"dims\": {%s}, \"attrs\": {%s}%s, \"duration_s\": 0}\n",
             mig != "" ? "MIG" : "JOB", nets, batch ? batch : 1, amp ? amp : "false", dims, attrs, extra
    }'
}

# AdminComment -> the job's predicted share of one GPU in percent, or nothing:
# share=KIND:K/N -> 100 K / N (shards of N per GPU; mps of N per GPU; gpu:K/K whole GPUs:
# 100). Always the share gpucast predicted: a share the owner raised afterwards
# (allow_more_shards = 1) does not raise what the job may use.
parse_share() {
  local kn
  kn=$(printf '%s\n' "$1" | tr ' ' '\n' | sed -n 's/^share=\([a-z]*\):\([0-9][0-9]*\)\/\([0-9][0-9]*\)$/\2 \3/p' | head -1)
  [[ "$1" == "gpucast: "* ]] && [ -n "$kn" ] || return 0
  awk -v k="${kn% *}" -v n="${kn#* }" 'BEGIN { if (n > 0) printf "%.3f\n", (k > n ? 100 : 100 * k / n) }'
}

# A log line's text with control characters escaped (\n \r \t, others \xHH), so that
# nothing a user wrote (a model path, a service's echo of it) can end the line.
esc() {
  local s=$1 c h
  s=${s//\\/\\\\}; s=${s//$'\n'/\\n}; s=${s//$'\r'/\\r}; s=${s//$'\t'/\\t}
  while [[ $s =~ [[:cntrl:]] ]]; do
    c=${BASH_REMATCH[0]}; printf -v h '\\x%02x' "'$c"; s=${s//"$c"/$h}
  done
  printf '%s' "$s"
}

case "${1:-}" in
  --parse-sacct) parse_sacct; exit 0 ;;
  --parse-share) parse_share "${2-}" "${3-}"; exit 0 ;;
  --parse-nvsmi) parse_nvsmi "${2:?--parse-nvsmi FILE}"; exit 0 ;;
  --parse-comment) parse_comment "${2-}"; exit 0 ;;
  --esc) LC_ALL=C esc "${2-}"; echo; exit 0 ;;
esac

# slurmctld discards what an EpilogSlurmctld prints: lines go to syslog
# (logger -t gpucast-epilog; journalctl -t gpucast-epilog) and, with
# epilog_log = FILE in gpucast.conf, to that file as well.
EPILOG_LOG=""
log() {
  local line
  line=$(LC_ALL=C esc "job ${SLURM_JOB_ID:-?}: $*")
  [ -n "$EPILOG_LOG" ] && printf '%s gpucast-epilog: %s\n' "$(date -u +%Y-%m-%dT%H:%M:%SZ)" "$line" >>"$EPILOG_LOG" 2>/dev/null
  logger -t gpucast-epilog -- "$line" 2>/dev/null || echo "gpucast-epilog: $line" >&2
}
JOB="${SLURM_JOB_ID:-}"
[ -n "$JOB" ] || { log "no SLURM_JOB_ID"; exit 0; }
CONF="$(cd "$(dirname "$0")" && pwd)/gpucast.conf"
conf() {  # conf KEY DEFAULT
  local v=""
  [ -r "$CONF" ] && v=$(sed -n "s/^[[:space:]]*$1[[:space:]]*=[[:space:]]*\([^#]*\).*/\1/p" "$CONF" | tail -1 | sed 's/[[:space:]]*$//')
  echo "${v:-$2}"
}
URL=$(conf url http://127.0.0.1:8080)
TOKEN_FILE=$(conf token_file "")
MODE=$(conf mode cli)
DEPUTY_TOKEN_FILE=$(conf deputy_token_file "")
LOGDIR=$(conf nvsmi_log_dir "")
FREQ=$(conf acct_freq_s 30)
EPILOG_LOG=$(conf epilog_log "")
MARGIN=$(conf overuse_margin 20)
HOLD=$(conf overuse_hold no)
HOLD_DIR=$(conf overuse_dir /var/lib/gpucast/overuse)
case "$MARGIN" in ''|*[!0-9]*) log "gpucast.conf: overuse_margin '$MARGIN' is not an integer, using 20"; MARGIN=20 ;; esac
AUTH=()
HDRS=$(mktemp /tmp/gpucast-epilog.XXXXXX) || exit 0
trap 'rm -f "$HDRS"' EXIT
[ -n "$TOKEN_FILE" ] && AUTH=(-H "Authorization: Bearer $(timeout 5 tr -d ' \t\r\n' <"$TOKEN_FILE")")
# Deputy mode (mode = service, deputy_token_file): job_submit.lua had the service read the
# model as the job's user; the epilog registers the job the same way (the deputy token and
# X-Gpucast-Read-As: the job's uid:gid), so the service reads the path the deputy read, as
# that user, instead of looking for it under its model roots (which refused it: 422).
DEPUTY=0
if [ "$MODE" = service ] && [ -n "$DEPUTY_TOKEN_FILE" ]; then
  dtok=$(timeout 5 tr -d ' \t\r\n' <"$DEPUTY_TOKEN_FILE" 2>/dev/null)
  if [ -n "$dtok" ]; then AUTH=(-H "Authorization: Bearer $dtok"); DEPUTY=1
  else log "cannot read deputy_token_file $DEPUTY_TOKEN_FILE: the job is registered without it"; fi
fi
case "$JOB" in *[!0-9_]*) log "SLURM_JOB_ID is not a job id"; exit 0 ;; esac

# The job, field by field: squeue --json -t all (jq): 24.11 lists a finished job only with
# -t all (an operator's rerun after the job ended found no user: measured), 22.05 with or
# without it. Every field is a JSON string or number: a job name cannot pose as a field.
command -v jq >/dev/null || { log "jq is missing (apt-get install jq): cannot read the job's fields"; exit 0; }
# One line, fields separated by US (0x1f; control characters inside a field become blanks).
# Slurm 24.11 wraps numbers as {"set": true, "infinite": false, "number": N}: unwrapped here.
IFS=$'\x1f' read -r comment tres juser juid jgid < <(timeout 20 squeue --json -t all -j "$JOB" 2>/dev/null | jq -r --arg id "$JOB" \
  'def num: if type == "object" then (if .set then .number else null end) else . end;
   first(.jobs[] | select((.job_id | num | tostring) == $id)) | [.admin_comment, .tres_per_node, .user_name,
     (.user_id | num), (.group_id | num)]
   | map(. // "" | tostring | gsub("[[:cntrl:]]"; " ")) | join("\u001f")' 2>/dev/null | head -c 65536)
[ -n "$comment" ] || comment=$(timeout 20 sacct -j "$JOB" -X -P -n --format=AdminComment 2>/dev/null | head -1)
p=$(parse_comment "$comment")
share=$(parse_share "$comment")
# A MIG slice is isolated: its share is the whole slice, and the whole GPU's counters can show
# no overuse of it; it is registered whatever was measured, and no observation is posted.
[[ "$p" == "MIG "* ]] && share=""
user=${SLURM_JOB_USER:-$juser}
juid=${SLURM_JOB_UID:-$juid}
jgid=${SLURM_JOB_GID:-$jgid}

# read_user_file PATH UID: the file's bytes (at most 16 MiB) on stdout if PATH is a regular
# file owned by UID with one link; opened O_NOFOLLOW|O_NONBLOCK, so that a symlink or a
# FIFO planted there neither redirects nor blocks the read, under a 10 s timeout. Else the
# reason on stderr and exit 1. (perl: perl-base is Essential in Debian.)
read_user_file() {
  timeout 10 perl -e '
    use Fcntl qw(O_RDONLY O_NOFOLLOW O_NONBLOCK :mode);
    my ($path, $uid) = @ARGV;
    sysopen(my $fh, $path, O_RDONLY | O_NOFOLLOW | O_NONBLOCK) or do { print STDERR "cannot open it: $!\n"; exit 1 };
    my @st = stat($fh);
    S_ISREG($st[2]) or do { print STDERR "not a regular file\n"; exit 1 };
    $st[4] == $uid or do { print STDERR "owned by uid $st[4], not by the job'"'"'s uid $uid\n"; exit 1 };
    $st[3] == 1 or do { print STDERR "it has $st[3] links\n"; exit 1 };
    my ($left, $buf) = (16 << 20, "");
    while ($left > 0) {
      my $n = sysread($fh, $buf, $left < 65536 ? $left : 65536);
      last unless $n;
      print $buf; $left -= $n;
    }' -- "$1" "$2"
}
# trusted_dir DIR UID [UID2]: DIR is a directory (not a symlink) owned by UID (or UID2)
# that neither group nor others may write; else the reason on stdout.
trusted_dir() {
  local st
  [ -d "$1" ] && [ ! -L "$1" ] || { echo "not a directory"; return 1; }
  st=$(stat -c '%u %a' -- "$1") || { echo "cannot stat it"; return 1; }
  [ "${st% *}" = "$2" ] || [ "${st% *}" = "${3:-$2}" ] || { echo "owned by uid ${st% *}, not ${3:+$3 or }$2"; return 1; }
  (( (8#${st#* } & 8#022) == 0 )) || { echo "writable by group or others (mode ${st#* })"; return 1; }
}
ME=$(id -u)
# A user name that can name a file: letters, digits, '_', '.', '-', not starting with '.' or '-'.
[[ "$user" =~ ^[A-Za-z0-9_][A-Za-z0-9_.-]*$ ]] || { [ -n "$user" ] && log "job user '$user' cannot name a file"; user=""; }

# The measurement.
source="" util="" samples=""
m=$(timeout 20 sacct -j "$JOB" -P -n --format=JobID,ElapsedRaw,TRESUsageInAve 2>/dev/null | parse_sacct)
if [ -n "$m" ]; then
  source=slurm util=${m% *}
  samples=$(( ${m#* } / (FREQ > 0 ? FREQ : 30) ))
  [ "$samples" -ge 1 ] || samples=1
elif [ -n "$LOGDIR" ]; then
  # Only a file the job's own user wrote, in a directory only they may write into.
  f="$LOGDIR/$user/gpucast-nvsmi-$JOB.csv"
  if ! why=$(trusted_dir "$LOGDIR" 0 "$ME"); then
    log "nvsmi_log_dir $LOGDIR refused: $why (it must be root's, not writable by others)"
  elif [ -z "$user" ] || [[ ! "$juid" =~ ^[0-9]+$ ]]; then
    log "no job user known: the nvidia-smi log is not read"
  elif ! why=$(trusted_dir "$LOGDIR/$user" "$juid"); then
    [ -e "$LOGDIR/$user" ] && log "$LOGDIR/$user refused: $why (it must be $user's, not writable by others)"
  elif [ -e "$f" ] || [ -L "$f" ]; then
    if data=$(read_user_file "$f" "$juid" 2>"$HDRS"); then
      m=$(printf '%s\n' "$data" | parse_nvsmi /dev/stdin)
      [ -n "$m" ] && source=nvidia-smi util=${m% *} samples=${m#* }
    else
      log "nvidia-smi log $f refused: $(head -c 300 "$HDRS")"
    fi
  fi
fi
# One observation carries at most 1,000,000 samples (the service refuses more, 400): a job of
# 347 days at 30 s a sample, or an nvidia-smi log of 1.5M lines, would lose its observation.
# The mean is the same; the weight is capped.
[ -n "$samples" ] && [ "$samples" -gt 1000000 ] && samples=1000000
[ -n "$source" ] || [[ "$p" == "MIG "* ]] || { log "no GPU utilization measured (no sacct gres/gpuutil, no nvidia-smi log)"; exit 0; }

# Overuse: measured above the share by more than the margin. Only per-job evidence counts
# (source slurm: sacct's gres/gpuutil, gathered by slurmd for the job's own GPUs): a
# nvidia-smi log is written by the job itself (a user writes 5% and is never held) and shows
# the whole device (an honest job sharing its GPU reads its neighbours' 100%). Such a log
# is posted as an observation, without a share: it neither marks overuse nor holds anyone.
extra=""
if [ -n "$share" ] && [ "$source" != slurm ]; then
  awk -v u="$util" -v s="$share" -v m="$MARGIN" 'BEGIN { exit !(u > s + m) }' &&
    log "observed $util% GPU utilization ($source, whole-device and written by the job) above the share $share% + margin $MARGIN: not evidence of overuse, nobody held (gather gres/gpuutil with Slurm for that)"
elif [ -n "$share" ]; then
  extra=", \"share_pct\": $share, \"overuse_margin\": $MARGIN"
  if awk -v u="$util" -v s="$share" -v m="$MARGIN" 'BEGIN { exit !(u > s + m) }'; then
    what="observed $util% GPU utilization ($source), share $share% + margin $MARGIN"
    if [ "$HOLD" = yes ] && [ -n "$user" ]; then
      # job_submit.lua holds whoever has a file here: a directory others may write is refused.
      why=""
      if ! mkdir -p "$HOLD_DIR" 2>/dev/null || ! why=$(trusted_dir "$HOLD_DIR" 0 "$ME"); then
        log "OVERUSE by user $user: $what; overuse_dir $HOLD_DIR refused: ${why:-cannot create it} (it must be root's or SlurmUser's, not writable by others)"
      elif { grep -qs "^job $JOB:" "$HOLD_DIR/$user" ||
           printf 'job %s: %s\n' "$JOB" "$what" >>"$HOLD_DIR/$user"; }; then
        # The user's GPU jobs queued before this record: held now (the plugin holds later ones).
        # Slurm 22.05's squeue --json ignores -u and -t (every job is listed): the user and the
        # pending state are selected here (24.11: job_state is a list, numbers are wrapped).
        held=$(timeout 20 squeue --json -u "$user" -t PD 2>/dev/null | jq -r --arg u "$user" \
          'def num: if type == "object" then (if .set then .number else null end) else . end;
           def states: if (.job_state | type) == "array" then .job_state else [.job_state] end;
           .jobs[] | select((.user_name // "") == $u) | select(any(states[]; . == "PENDING"))
           | select((.admin_comment // "") | startswith("gpucast: ")) | .job_id | num | tostring' 2>/dev/null |
          grep -E '^[0-9]+$' | head -1000 | tr '\n' ' ')
        for j in $held; do timeout 20 scontrol hold "$j" >/dev/null 2>&1 || log "cannot hold job $j of $user"; done
        log "OVERUSE by user $user: $what; the user's next GPU jobs are held${held:+, and the queued ones: ${held% }} (clear: rm $HOLD_DIR/$user, then scontrol release their held jobs)"
      else
        log "OVERUSE by user $user: $what; cannot record the hold in $HOLD_DIR/$user"
      fi
    else
      log "OVERUSE by user ${user:-?}: $what"
    fi
  fi
fi
# slurmctld sets SLURM_CLUSTER_NAME for EpilogSlurmctld; a rerun by hand asks scontrol.
cluster=${SLURM_CLUSTER_NAME:-$(timeout 20 scontrol show config 2>/dev/null | sed -n 's/^ClusterName *= *//p')}
case "$p" in
  "ID "*) id=${p#ID } ;;
  "JOB "*|"MIG "*)
    READ_AS=()
    if [ "$DEPUTY" = 1 ]; then
      [[ "$juid" =~ ^[0-9]+$ && "$jgid" =~ ^[0-9]+$ ]] || { log "deputy mode: the job's uid:gid are unknown: not registered"; exit 0; }
      READ_AS=(-H "X-Gpucast-Read-As: $juid:$jgid")
    fi
    resp=$(curl -s -m 10 -w '\n%{http_code}' -X POST "$URL/v1/jobs" "${AUTH[@]}" "${READ_AS[@]}" \
      -H 'Content-Type: application/json' -H "Idempotency-Key: slurm-${cluster:-cluster}-$JOB" -d "${p#* }")
    code=$(echo "$resp" | tail -1)
    id=$(echo "$resp" | head -1 | sed -n 's/.*"id":\([0-9][0-9]*\).*/\1/p')
    [ "$code" = 201 ] && [ -n "$id" ] || { log "registering with gpucast failed: HTTP $code $(echo "$resp" | head -1)"; exit 0; }
    if [[ "$p" == "MIG "* ]]; then
      mig=$(echo "$resp" | head -1 | sed -n 's/.*"mig":"\([A-Za-z0-9_.+-]*\)".*/\1/p')
      log "gpucast job $id: registered on a MIG ${mig:-?} slice; no observation posted (nvidia-smi and Slurm's gpuutil read the whole GPU's counter, not the slice's)"
      exit 0
    fi
    ;;
  *) log "no gpucast AdminComment: not a gpucast job"; exit 0 ;;
esac
# Idempotency-Key: a rerun of this epilog for the same job (Slurm retries it,
# an operator reruns it by hand, curl timed out after the service stored it)
# is answered with the stored observation instead of adding the samples again.
resp=$(curl -s -m 10 -D "$HDRS" -w '\n%{http_code}' -X POST "$URL/v1/jobs/$id/observations" "${AUTH[@]}" \
  -H 'Content-Type: application/json' -H "Idempotency-Key: slurm-epilog-${cluster:-cluster}-$JOB" \
  -d "{\"gpu_util\": $util, \"source\": \"$source\", \"samples\": $samples$extra}")
code=$(echo "$resp" | tail -1)
if [ "$code" = 201 ] && grep -qi '^Idempotent-Replayed: *true' "$HDRS"; then
  log "gpucast job $id: observation already stored by an earlier run of this epilog (not counted again)"
elif [ "$code" = 201 ]; then
  log "gpucast job $id: observed $util% over $samples samples ($source)"
else
  log "posting the observation failed: HTTP $code $(echo "$resp" | head -1)"
fi
exit 0
