#!/usr/bin/env bash
# Offline test of job_submit.lua's rules (no Slurm, no root): the plugin runs under Debian's
# lua5.1 (the Lua slurmctld embeds) with a fake `slurm` table and a stub gpucast that
# answers 52.5% (interval 40.0-61.0) and a memory high end of 9000 of 24576 MiB for any
# readable model. Expected shares are hand computed: ceil(52.5 x 8 / 100) = ceil(4.2) = 5
# shards (memory: ceil(9000 x 8 / 24576) = ceil(2.93) = 3); ceil(61.0 x 8 / 100) = ceil(4.88) = 5;
# ceil(52.5 x 100 / 100) = 53 mps (memory 37). The live test (test.sh) checks the same rules in Slurm.
# Usage: integrations/slurm/plugin_test.sh [BUILD/gpucast]  (with a binary: also the MIG check against it)
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
. "$HERE/../../tests/lib/serve.sh"
command -v lua5.1 >/dev/null || { echo "plugin test: FAILED: lua5.1 missing (make deps)" >&2; exit 1; }
T=$(mktemp -d /tmp/gpucast-plugin.XXXXXX)
SLOW_PID=""; CAPTURE_PID=""; SERVE_PID=""; EVIL_PID=""
cleanup() {
  [ -n "$SERVE_PID" ] && kill "$SERVE_PID" 2>/dev/null
  [ -n "$SLOW_PID" ] && kill "$SLOW_PID" 2>/dev/null
  [ -n "$CAPTURE_PID" ] && kill "$CAPTURE_PID" 2>/dev/null
  [ -n "$EVIL_PID" ] && kill "$EVIL_PID" 2>/dev/null
  [ -s "$T/escaped.pid" ] && kill "$(cat "$T/escaped.pid")" 2>/dev/null
  rm -rf "$T"
}
trap cleanup EXIT
cp "$HERE/job_submit.lua" "$T/"
# The stub also records what it inherited: its open descriptors (a child lists the stub's
# /proc/PID/fd, so that the listing's own redirection is not seen) and its environment.
cat > "$T/gpucast" <<'EOF'
#!/bin/sh
# gpucast gpus NAME...: the GPU table knows every name but "bogus" (and records the call).
if [ "$1" = gpus ]; then
  shift; echo "$*" >> "$(dirname "$0")/gpus.calls"
  for n in "$@"; do
    [ "$n" != bogus ] || { echo "gpucast gpus: unknown GPU 'bogus'; closest: B200, P100 (gpucast gpus lists all; a GPU it lacks goes in a site table: --gpu-table)" >&2; exit 1; }
  done
  echo "(the GPU table)"; exit 0
fi
sh -c 'ls -l /proc/$PPID/fd > "$1"' record "$(dirname "$0")/spawn.fds"
env > "$(dirname "$0")/spawn.env"
m=""; ms=""; gpu=RTX3090; gpus=""; nodes=""; dl=""; mig=""; gt=""
while [ $# -gt 0 ]; do
  case "$1" in --model) m=$2; ms="$ms --model $2"; shift ;; --gpu) gpu=$2; shift ;; --gpus) gpus=$2; shift ;;
    --mig) mig=$2; shift ;; --gpu-table) gt=$2; shift ;;
    --nodes) nodes=$2; shift ;; --max-seconds) dl=$2; shift ;; esac; shift
done
# --max-seconds (gpucast predict's deadline) unless $T/no-deadline exists (an older gpucast).
echo "$dl" > "$(dirname "$0")/deadline.arg"
[ -z "$dl" ] || [ ! -e "$(dirname "$0")/no-deadline" ] ||
  { echo "The following arguments were not expected: $dl --max-seconds" >&2; exit 2; }
echo "$nodes" > "$(dirname "$0")/nodes.arg"
# --gpus (data-parallel prediction) only when $T/dp exists; else as a gpucast without it.
echo "$gpus" > "$(dirname "$0")/gpus.arg"
[ -z "$gpus" ] || [ -e "$(dirname "$0")/dp" ] ||
  { echo "The following arguments were not expected: $gpus --gpus" >&2; echo "Run with --help for more information." >&2; exit 2; }
echo "$ms" > "$(dirname "$0")/models.args"
echo "$gpu" > "$(dirname "$0")/gpu.arg"
echo "$gt" > "$(dirname "$0")/gpu_table.arg"
echo "$mig" > "$(dirname "$0")/mig.arg"
# --mig: the slice's memory is the capacity (1g.10gb: 9728 MiB, 3g.40gb: 40192, the A100-80GB's in
# docs/features.md); any other profile is refused as gpucast predict refuses it (src/cli/cmd_predict.cc).
cap=24576.0
case "$mig" in
  "") ;; 1g.10gb) cap=9728.0 ;; 3g.40gb) cap=40192.0 ;;
  *) echo "gpucast predict: --mig: GPU '$gpu' has no MIG profile '$mig' (profiles: 1g.10gb, 3g.40gb)" >&2; exit 1 ;;
esac
[ "$gpu" != bogus ] || { echo "gpucast predict: features: unknown GPU 'bogus'; closest: B200, P100" >&2; exit 1; }
[ -r "$m" ] || { echo "gpucast predict: $m: cannot open: No such file or directory" >&2; exit 1; }
case "$m" in *bad*) echo "gpucast predict: $m: not an ONNX model (malformed protobuf)" >&2; exit 1 ;; esac
case "$m" in *hang*) sleep 30 ;; esac
case "$m" in *slow*) sleep 0.4 ;; esac  # a prediction that takes 0.4 s (the per-user budget)
# A graph that takes longer than --max-seconds: gpucast's watchdog ends it (src/cli/flags.cc).
case "$m" in *overdeadline*) sleep "$dl"; echo "gpucast predict: stopped: it took longer than $dl s (--max-seconds)" >&2; exit 124 ;; esac
# A process that leaves the timeout's process group and keeps the output pipe open.
case "$m" in *escape*) setsid sleep 30 & echo $! > "$(dirname "$0")/escaped.pid"; sleep 30 ;; esac
# As gpucast predict --json prints it: keys sorted, so gpu_mem_interval's low/high come first.
# Memory: high end 9000 MiB of a 24576 MiB GPU (ceil(9000 x 8 / 24576) = 3 shards, fewer than the 5 of
# the utilization); *bigmem*: 20000 (ceil(6.51) = 7 shards); *hugemem*: 30000, more than the GPU;
# *nomem*: null, as gpucast prints it for a predictor without a memory model.
mh=9000.0; ml=7000.0; mp=8000.0
case "$m" in *bigmem*) mh=20000.0 ;; *hugemem*) mh=30000.0 ;; *nomem*) mh=null; ml=null; mp=null ;; esac
echo '{ "gpu": "'"$gpu"'", "gpu_mem_capacity_mib": '"$cap"', "gpu_mem_interval": { "high": '"$mh"', "low": '"$ml"' }, "gpu_mem_mib": '"$mp"', "gpu_util": 52.5, "interval": { "high": 61.0, "level": 0.8, "low": 40.0 } }'
EOF
chmod +x "$T/gpucast"
# A run_as prefix that records the same and runs the rest (the process run as the user).
cat > "$T/record-as" <<'EOF'
#!/bin/sh
sh -c 'ls -l /proc/$PPID/fd > "$1"' record "$(dirname "$0")/spawn-as.fds"
env > "$(dirname "$0")/spawn-as.env"
shift 3
exec "$@"
EOF
chmod +x "$T/record-as"
touch "$T/m.onnx" "$T/bad.onnx" "$T/d.onnx" "$T/hang.onnx" "$T/escape.onnx" "$T/slow.onnx" "$T/overdeadline.onnx"
# Their names in their bytes too: the upload (curl) sends the bytes, not the path.
for n in bigmem hugemem nomem; do echo "$n" > "$T/$n.onnx"; done
mkfifo "$T/fifo.onnx"
# What the stub services below share (they import it from $T): a listening socket whose port is
# written to a file, and one HTTP request read whole.
cat > "$T/httpreq.py" <<'EOF'
import socket

def listen(port_file):
    """A socket listening on a free port of 127.0.0.1; the port is written to port_file."""
    s = socket.socket(); s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    s.bind(("127.0.0.1", 0)); s.listen(8)
    open(port_file, "w").write(str(s.getsockname()[1]))
    return s

def read_request(c):
    """(everything read, head, body): up to the blank line, then Content-Length bytes of body."""
    data = b""
    while b"\r\n\r\n" not in data:
        data += c.recv(65536)
    head, body = data.split(b"\r\n\r\n", 1)
    n = 0
    for line in head.split(b"\r\n"):
        if line.lower().startswith(b"content-length:"):
            n = int(line.split(b":")[1])
    while len(body) < n:
        body += c.recv(65536)
    return data, head, body
EOF
# A service that answers a header line every 0.25 s (the deputy's deadline must end it).
cat > "$T/slow.py" <<'EOF'
import sys, time
from httpreq import listen
s = listen(sys.argv[1])
while True:
    c, _ = s.accept()
    c.recv(65536)
    try:
        c.sendall(b"HTTP/1.1 200 OK\r\n")
        for i in range(40):  # a header line every 0.25 s: each read alone is quick
            c.sendall(b"X-Pad-%d: x\r\n" % i); time.sleep(0.25)
        c.sendall(b"Content-Length: 2\r\n\r\n{}")
    except OSError:
        pass
    c.close()
EOF
/usr/bin/python3 "$T/slow.py" "$T/slow.port" & SLOW_PID=$!
# A service that records each request (line and body) and answers 52.5% (interval 40-61).
cat > "$T/capture.py" <<'EOF'
import sys
from httpreq import listen, read_request
s = listen(sys.argv[1])
while True:
    c, _ = s.accept()
    data, head, body = read_request(c)
    open(sys.argv[2], "wb").write(head + b"\n" + body)
    # As the service does: a request with "gpus": N (body or query) is answered for one
    # data-parallel rank, and the answer echoes "gpus"; the file "no-gpus-echo" stops the echo.
    import os, re
    m = re.search(rb'"gpus":(\d+)', body) or re.search(rb'[?&]gpus=(\d+)', head.split(b"\r\n")[0])
    echo = b', "gpus": %s' % m.group(1) if m and not os.path.exists(sys.argv[2] + ".no-gpus-echo") else b""
    # Memory as the service names it (AddPredictionJson), with the stub gpucast's numbers:
    # the model's path (deputy) or bytes (upload) say which; "no-mem": an older service.
    mh = b"20000.0" if b"bigmem" in data + body else b"30000.0" if b"hugemem" in data + body else b"9000.0"
    mem = b', "gpu_mem_mib": 8000.0, "gpu_mem_interval": {"high": %s, "low": 7000.0}, "gpu_mem_capacity_mib": 24576.0' % mh
    if b"nomem" in data + body: mem = b', "gpu_mem_mib": null, "gpu_mem_interval": {"high": null, "low": null}, "gpu_mem_capacity_mib": 24576.0'
    if os.path.exists(sys.argv[2] + ".no-mem"): mem = b""
    # "mig" (body or query): the slice's memory as the stub gpucast's; another profile: 422 as the service.
    mg = re.search(rb'"mig":"([^"]*)"', body) or re.search(rb'[?&]mig=([^& ]*)', head.split(b"\r\n")[0])
    if mg and mg.group(1) not in (b"1g.10gb", b"3g.40gb"):
        err = b'{"error": "GPU \'A100-80GB\' has no MIG profile \'%s\' (profiles: 1g.10gb, 3g.40gb)"}' % mg.group(1)
        c.sendall(b"HTTP/1.1 422 Unprocessable Entity\r\nContent-Type: application/json\r\nConnection: close\r\nContent-Length: %d\r\n\r\n" % len(err) + err)
        c.close(); continue
    if mg: mem = mem.replace(b"24576.0", b"9728.0" if mg.group(1) == b"1g.10gb" else b"40192.0")
    answer = b'{"predicted_util": 52.5, "predicted_util_interval": [40.0, 61.0]%s%s}' % (echo, mem)
    c.sendall(b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nConnection: close\r\nContent-Length: %d\r\n\r\n" % len(answer) + answer)
    c.close()
EOF
/usr/bin/python3 "$T/capture.py" "$T/capture.port" "$T/captured" & CAPTURE_PID=$!
# A broken service (mode in $T/evil.port.mode): closes at once, answers garbage, an endless body
# (4000 MiB), or a 200 whose numbers are no prediction (util:V, mem:V, cap:V).
cat > "$T/evil.py" <<'EOF'
import sys, os
from httpreq import listen, read_request
s = listen(sys.argv[1])
mode_file = sys.argv[1] + ".mode"  # what to answer: written by the test
while True:
    c, _ = s.accept()
    try:
        c.settimeout(2)
        data, head, body = read_request(c)  # the whole request (unread bytes at close would reset the connection)
        mode = open(mode_file).read().strip()
        def ans(body, code=b"200 OK"):
            c.sendall(b"HTTP/1.1 " + code + b"\r\nContent-Type: application/json\r\nConnection: close\r\nContent-Length: %d\r\n\r\n" % len(body) + body)
        if mode == "close": pass
        elif mode == "garbage": c.sendall(b"\x00\xff garbage\r\n\r\n")
        elif mode == "huge":
            c.sendall(b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nConnection: close\r\n\r\n")
            chunk = b"x" * 1048576
            for i in range(4000): c.sendall(chunk)
        elif mode.startswith("util:"):
            u = mode[5:].encode()
            ans(b'{"predicted_util": ' + u + b', "predicted_util_interval": [' + u + b', ' + u + b'], "gpu_mem_interval": {"high": 100.0, "low": 50.0}, "gpu_mem_capacity_mib": 24576.0}')
        elif mode.startswith("mem:"):
            u = mode[4:].encode()
            ans(b'{"predicted_util": 52.5, "predicted_util_interval": [40.0, 61.0], "gpu_mem_interval": {"high": ' + u + b', "low": 50.0}, "gpu_mem_capacity_mib": 24576.0}')
        elif mode.startswith("cap:"):
            u = mode[4:].encode()
            ans(b'{"predicted_util": 52.5, "predicted_util_interval": [40.0, 61.0], "gpu_mem_interval": {"high": 100.0, "low": 50.0}, "gpu_mem_capacity_mib": ' + u + b'}')
    except OSError:
        pass
    c.close()
EOF
/usr/bin/python3 "$T/evil.py" "$T/evil.port" & EVIL_PID=$!
for _ in $(seq 50); do [ -s "$T/evil.port" ] && [ -s "$T/slow.port" ] && [ -s "$T/capture.port" ] && break; sleep 0.1; done
echo "0123456789abcdef" > "$T/deputy.token"
mkdir -p "$T/my models" "$T/overuse"
touch "$T/my models/m%1.onnx" "$T/my models/a=b,c.onnx"
sed -e "s|^gpucast = /usr/local/bin/gpucast |gpucast = $T/gpucast |" "$HERE/gpucast.conf.example" > "$T/gpucast.conf.site"
# The shipped example configurations set what gpucast's shares require (docs/slurm.md "Installing"):
# devices constrained by cgroup (a job reaches only its GPUs), processes tracked by cgroup.
for want in "slurm.conf.example:ProctrackType=proctrack/cgroup" "slurm.conf.example:TaskPlugin=task/cgroup" \
            "cgroup.conf.example:ConstrainDevices=yes"; do
  grep -q "^${want#*:}" "$HERE/${want%%:*}" || { echo "plugin test: FAILED: ${want%%:*} lacks ${want#*:}" >&2; exit 1; }
  echo "  ok: ${want%%:*} sets ${want#*:}"
done
! grep -qi '^SelectTypeParameters=.*MULTIPLE_SHARING_GRES_PJ' "$HERE/slurm.conf.example" ||
  { echo "plugin test: FAILED: slurm.conf.example sets MULTIPLE_SHARING_GRES_PJ" >&2; exit 1; }
cat > "$T/test.lua" <<'EOF'
local T = arg[1]
local HERE = arg[2]
local log = {}
slurm = { SUCCESS = 0, ERROR = -1 }
for _, f in ipairs({ "log_info", "log_error", "log_user" }) do
  slurm[f] = function(fmt, ...) log[#log + 1] = f .. " " .. string.format(fmt, ...) end
end
local function conf(extra)
  local src = io.open(T .. "/gpucast.conf.site"):read("*a")
  local f = io.open(T .. "/gpucast.conf", "w"); f:write(src .. (extra or "")); f:close()
end
conf()
dofile(T .. "/job_submit.lua")
-- slurmctld's descriptors and environment: this harness holds a descriptor open without
-- close-on-exec (io.open), and runs with SLURM_* and a secret in its environment
-- (plugin_test.sh sets them). Neither may reach a process the plugin starts.
local held = assert(io.open(T .. "/controller-pipe", "w"))
local function inherited(who)  -- descriptors and environment of the last run of the stub (or record-as)
  who = who or "spawn"
  local fds = {}
  for line in io.open(T .. "/" .. who .. ".fds"):lines() do
    local fd, target = line:match(" (%d+) %-> (.*)$")
    -- (the shell running a stub opens the stub itself after exec: not inherited)
    if fd and target ~= T .. "/gpucast" and target ~= T .. "/record-as" then fds[#fds + 1] = fd .. "->" .. target end
  end
  local env = {}
  for line in io.open(T .. "/" .. who .. ".env"):lines() do env[#env + 1] = line end
  table.sort(env)
  return fds, env
end
local function clean_env(env)
  -- PWD, SHLVL and _ are bash's own (the plugin's bash starts in /).
  local allowed = { PATH = "/usr/sbin:/usr/bin:/sbin:/bin", LANG = "C", PWD = "/", SHLVL = true, _ = true }
  for _, kv in ipairs(env) do
    local k, v = kv:match("^([^=]*)=(.*)$")
    if not k or not allowed[k] or (allowed[k] ~= true and allowed[k] ~= v) then return false end
  end
  return true
end
local NV = 4294967294
local M = "model=" .. T .. "/m.onnx,batch=8"
local failed = 0
local function check(name, ok, detail)
  if ok then print("  ok: " .. name) else failed = failed + 1; print("  FAIL: " .. name .. ": " .. tostring(detail)) end
end
-- The partitions slurmctld passes (name -> record); "test" is the default, as in the live test.
local PARTS = { test = { name = "test", flag_default = 1, max_share = 1 }, cpu = { name = "cpu", flag_default = 0, max_share = 1 },
                whole = { name = "whole", flag_default = 0, max_share = 0 } }
local function submit(d)
  log = {}
  for k, v in pairs({ min_nodes = NV, max_nodes = NV, num_tasks = NV, ntasks_per_tres = 65534, shared = 65534, user_id = 0,
                      group_id = 0, name = "j" }) do
    if d[k] == nil then d[k] = v end
  end
  return slurm_job_submit(d, PARTS, 0), d, table.concat(log, "\n")
end
local function sized(name, d, want)
  local rc, out, l = submit(d)
  check(name .. " -> " .. want, rc == 0 and out.tres_per_node == want, tostring(out.tres_per_node) .. " " .. l)
  return out, l
end
local function refused(name, d, want)
  local rc, _, l = submit(d)
  check(name .. " refused", rc == -1 and l:find(want, 1, true) ~= nil, l)
  check(name .. ": no Lua position shown", not l:match("log_user[^\n]*%.lua:%d"), l)
  return l
end

local d, l = sized("model only", { comment = M }, "gres:shard:5")
-- memory = high (the default): the share also holds the memory interval's high end (stub:
-- 24576 MiB GPU), the same in cli, deputy and upload mode (the service names the fields alike).
check("memory = high by default, high end 9000 of 24576 MiB: 3 shards, the utilization's 5 stand",
      l:find("(interval 40.0-61.0%, sized by point; memory up to 9000 of 24576 MiB needs 3) -> gres:shard:5 of 8", 1, true), l)
local CAPTURE = "url = http://127.0.0.1:" .. io.open(T .. "/capture.port"):read("*a") .. "\n"
local MODES = { { "cli", "" }, { "deputy", "mode = service\n" .. CAPTURE .. "deputy_token_file = " .. T .. "/deputy.token\n" },
                { "upload", "mode = service\n" .. CAPTURE } }
local BIGMEM = "predicted GPU utilization 52.5% (interval 40.0-61.0%, sized by point; memory up to 20000 of 24576 MiB needs 7) " ..
               "-> gres:shard:7 of 8"
local HUGEMEM = "predicted GPU memory up to 30000 MiB (the high end of its interval, a one-sided 95% bound) does not fit in the 24576 MiB of one GPU on "
for _, mode in ipairs(MODES) do
  conf(mode[2])
  local dm, lm = sized(mode[1] .. " mode: memory high end 20000 of 24576 MiB: ceil(20000 x 8 / 24576) = 7 shards",
                       { comment = "model=" .. T .. "/bigmem.onnx,batch=8" }, "gres:shard:7")
  check(mode[1] .. " mode: the message says memory decided", lm:find(BIGMEM, 1, true) ~= nil, lm)
  check(mode[1] .. " mode: AdminComment keeps the memory (mem=HIGH/CAPACITY)",
        dm.admin_comment:find(" basis=point mem=20000/24576 share=shard:7/8", 1, true) ~= nil, dm.admin_comment)
  local lx = refused(mode[1] .. " mode: memory high end 30000 > 24576 MiB", { comment = "model=" .. T .. "/hugemem.onnx,batch=8" },
              "gpucast: rejected: " .. HUGEMEM)
  check(mode[1] .. " mode: the refusal says what to do", lx:find(": use a smaller batch or a GPU with more memory", 1, true), lx)
  -- A predictor without a memory model (gpucast prints null): the site's memory = high cannot be kept.
  lx = refused(mode[1] .. " mode: no memory prediction, memory = high", { comment = "model=" .. T .. "/nomem.onnx,batch=8" },
              "gpucast is misconfigured")
  check(mode[1] .. " mode: the operator is told why", lx:find("log_error[^\n]*memory = high, but [^\n]* has no GPU memory " ..
        "prediction %(gpu_mem_interval.high nil, gpu_mem_capacity_mib 24576%)[^\n]*set memory = none") ~= nil, lx)
  -- memory = none: the explicit opt-out sizes by utilization alone.
  conf(mode[2] .. "memory = none\n")
  dm, lm = sized(mode[1] .. " mode: memory = none, high end 20000: utilization alone", { comment = "model=" .. T .. "/bigmem.onnx,batch=8" },
                 "gres:shard:5")
  check(mode[1] .. " mode: memory = none: no memory in the message or the AdminComment",
        not lm:find("memory", 1, true) and not dm.admin_comment:find("mem=", 1, true), lm .. " " .. dm.admin_comment)
  sized(mode[1] .. " mode: memory = none, no memory prediction: sized", { comment = "model=" .. T .. "/nomem.onnx,batch=8" },
        "gres:shard:5")
end
conf("mode = service\n" .. CAPTURE .. "deputy_token_file = " .. T .. "/deputy.token\n")
io.open(T .. "/captured.no-mem", "w"):close()
local lx = refused("a service that answers no memory fields, memory = high", { comment = M }, "gpucast is misconfigured")
check("the operator is told the service's answer lacks them", lx:find("memory = high, but the gpucast service's answer has " ..
      "no GPU memory prediction (gpu_mem_interval.high nil, gpu_mem_capacity_mib nil)", 1, true) ~= nil, lx)
os.remove(T .. "/captured.no-mem")
conf("partition_gpus = test:H100\n")
refused("the memory refusal names the GPU and why it was chosen", { comment = "model=" .. T .. "/hugemem.onnx,batch=8" },
            "does not fit in the 24576 MiB of one GPU on H100 (partition test)")
conf()
local fds, env = inherited()
check("gpucast predict inherits only descriptors 0, 1, 2 (not slurmctld's " .. tostring(held) .. ")",
      #fds == 3 and fds[1] == "0->/dev/null" and fds[2]:match("^1%->pipe:") and fds[3]:match("^2%->pipe:"),
      table.concat(fds, " "))
check("gpucast predict gets PATH and LANG=C only, nothing of slurmctld's environment", clean_env(env),
      table.concat(env, " "))
local function only_std_fds(fds)
  return #fds == 3 and fds[1] == "0->/dev/null" and fds[2]:match("^1%->pipe:") ~= nil and fds[3]:match("^2%->pipe:") ~= nil
end
-- The same for what runs as a user (run_as, here a recorder), in cli mode and in upload mode.
conf("run_as = " .. T .. "/record-as {uid} {gid} --\n")
sized("uid 1001 through run_as", { comment = M, user_id = 1001, group_id = 1001 }, "gres:shard:5")
fds, env = inherited("spawn-as")
check("cli mode: run_as inherits only 0, 1, 2", only_std_fds(fds), table.concat(fds, " "))
check("cli mode: run_as gets PATH and LANG=C only", clean_env(env), table.concat(env, " "))
os.remove(T .. "/spawn-as.fds")
conf("mode = service\nurl = http://127.0.0.1:9\nrun_as = " .. T .. "/record-as {uid} {gid} --\n")
refused("upload mode, service down", { comment = M, user_id = 1001, group_id = 1001 }, "gpucast is misconfigured")
fds, env = inherited("spawn-as")
check("upload mode: the reader run as the user inherits only 0 (/dev/null), 1 (the pipe to curl), 2 (/dev/null)",
      #fds == 3 and fds[1] == "0->/dev/null" and fds[2]:match("^1%->pipe:") and fds[3] == "2->/dev/null",
      table.concat(fds, " "))
check("upload mode: the reader gets PATH and LANG=C only", clean_env(env), table.concat(env, " "))
conf()
check("AdminComment keeps the prediction", d.admin_comment ==
      "gpucast: model=" .. T .. "/m.onnx batch=8 util=52.5 interval=40.0-61.0 basis=point mem=9000/24576 share=shard:5/8",
      d.admin_comment)
check("decision logged", l:find("log_info gpucast: uid=0 name=j: sized:", 1, true) ~= nil, l)
sized("--gres=gpu:1", { comment = M, tres_per_node = "gres:gpu:1" }, "gres:shard:5")
sized("other gres kept", { comment = M, tres_per_node = "gres:gpu:1,gres:nic:1" }, "gres:shard:5,gres:nic:1")
d = sized("--gpus=1", { comment = M, tres_per_job = "gres:gpu:1" }, "gres:shard:5")
check("--gpus cleared", d.tres_per_job == "", d.tres_per_job)
d = sized("-n1 --gpus-per-task=1", { comment = M, tres_per_task = "gres:gpu:1", num_tasks = 1 }, "gres:shard:5")
check("--gpus-per-task cleared", d.tres_per_task == "", d.tres_per_task)
refused("typed, no gpu_types", { comment = M, tres_per_node = "gres:gpu:a100:1" },
        "GPU type 'a100' in 'gpu:a100:1' is not one this site names to gpucast")
-- The GPU the job will run on: typed request, --constraint, partition (gpucast.conf), default.
local function gpu_arg() return io.open(T .. "/gpu.arg"):read("*l") end
d, l = sized("no GPU configured", { comment = M }, "gres:shard:5")
check("the message says the predictor's GPU", l:find("batch 8 on RTX3090 (the predictor's GPU): predicted", 1, true), l)
check("no --gpu passed", gpu_arg() == "RTX3090", gpu_arg())
conf("gpu_types = a100:A100-80GB, v100:V100-32GB\npartition_gpus = test:RTX3090, big:A100-80GB, cpu:none\n")
d, l = sized("partition test (the default)", { comment = M }, "gres:shard:5")
check("predicted for RTX3090 (--gpu), said so", gpu_arg() == "RTX3090" and
      l:find("on RTX3090 (partition test): predicted", 1, true) and d.admin_comment:find(" gpu=RTX3090 ", 1, true), l)
d, l = sized("-p big", { comment = M, partition = "big" }, "gres:shard:5")
check("-p big: --gpu A100-80GB", gpu_arg() == "A100-80GB" and l:find("on A100-80GB (partition big)", 1, true), l)
d, l = sized("-p big --gres=gpu:a100:1", { comment = M, partition = "big", tres_per_node = "gres:gpu:a100:1" }, "gres:shard:5")
check("typed a100: --gpu A100-80GB, kept on a100 nodes by the feature", gpu_arg() == "A100-80GB" and d.features == "a100", d.features)
d, l = sized("-p big --constraint=a100&ib", { comment = M, partition = "big", features = "a100&ib" }, "gres:shard:5")
check("--constraint a100: A100-80GB, features unchanged", gpu_arg() == "A100-80GB" and d.features == "a100&ib", d.features)
d = sized("typed with a constraint", { comment = M, partition = "big", features = "ib", tres_per_node = "gres:gpu:a100:1" }, "gres:shard:5")
check("the type joins the constraint", d.features == "(ib)&a100", d.features)
refused("--gres=gpu:a100:1 in partition test (RTX3090)", { comment = M, tres_per_node = "gres:gpu:a100:1" },
        "this job could run on different GPUs: A100-80GB (--gres type a100), RTX3090 (partition test)")
refused("-p test,big", { comment = M, partition = "test,big" }, "this job could run on different GPUs")
refused("--constraint=a100|v100", { comment = M, partition = "big", features = "a100|v100" }, "could run on different GPUs")
refused("--gres=gpu:h100:1 (not a site type)", { comment = M, tres_per_node = "gres:gpu:h100:1" },
        "GPU type 'h100' in 'gpu:h100:1' is not one this site names (a100, v100): choose one of those")
refused("-p cpu (no GPUs)", { comment = M, partition = "cpu" }, "partition cpu has no GPUs")
conf("default_gpu = H100\n")
d, l = sized("default_gpu", { comment = M }, "gres:shard:5")
check("default_gpu: --gpu H100, said so", gpu_arg() == "H100" and l:find("on H100 (default_gpu)", 1, true), l)
conf("default_gpu = bogus\n")
l = refused("a GPU gpucast does not know in gpucast.conf", { comment = M }, "gpucast is misconfigured")
check("the operator is told which setting, from gpucast gpus, before any prediction",
      l:find("log_error[^\n]*gpucast.conf: default_gpu names GPU 'bogus', which gpucast does not know: gpucast gpus: " ..
             "unknown GPU 'bogus'; closest: B200, P100") ~= nil, l)
l = refused("a GPU job without a model, same configuration", { tres_per_node = "gres:gpu:1" }, "gpucast is misconfigured")
check("GPU jobs are refused while the configuration names an unknown GPU", l:find("default_gpu names GPU 'bogus'", 1, true), l)
-- Issue 32 item 4: a configuration error refused CPU jobs too.
rc, d, l = submit({ tres_per_node = "gres:nic:1" })
check("a CPU job passes while the configuration is wrong, and the log says GPU jobs are refused",
      rc == 0 and l:find("log_error gpucast: uid=0 name=j: accepted unchanged (no model, no GPU request), but GPU jobs " ..
                         "are refused until the configuration is fixed: gpucast.conf: default_gpu names GPU 'bogus'", 1, true), l)
refused("a --exclusive job without a model, same configuration", { shared = 0 }, "gpucast is misconfigured")
refused("a #GPUCAST script, same configuration", { script = "#!/bin/sh\n#GPUCAST model=/x batch=1\n" }, "gpucast is misconfigured")
-- Loading the plugin with that configuration logs it at once; with known names, that they were checked.
local function load_log()
  local n = #log
  dofile(T .. "/job_submit.lua")
  return table.concat(log, "\n", n + 1)
end
l = load_log()
check("loading with default_gpu = bogus logs the error at once",
      l:find("log_error gpucast job_submit.lua loaded, but its configuration is wrong (GPU jobs are refused until it is " ..
             "fixed; jobs that ask for no GPU pass): gpucast.conf: default_gpu names GPU 'bogus', which gpucast does not know",
             1, true), l)
conf("partition_gpus = test:RTX3090, big:A100-80GB, cpu:none\ngpu_types = a100:A100-80GB\ndefault_gpu = H100\n")
os.remove(T .. "/gpus.calls")
l = load_log()
check("loading with known names checks them once, in one gpucast gpus call",
      l:find("log_info gpucast job_submit.lua loaded; GPU names checked with gpucast gpus: A100-80GB, H100, RTX3090", 1, true) and
      io.open(T .. "/gpus.calls"):read("*a") == "A100-80GB H100 RTX3090\n", l .. " calls: " .. io.open(T .. "/gpus.calls"):read("*a"))
sized("a job after the check", { comment = M, partition = "test" }, "gres:shard:5")
check("the checked names are not checked again per job", io.open(T .. "/gpus.calls"):read("*a") == "A100-80GB H100 RTX3090\n",
      io.open(T .. "/gpus.calls"):read("*a"))
-- A site's GPU table (gpu_table): given to gpucast gpus (the load-time check) and to every predict.
conf("gpu_table = " .. T .. "/site gpus.json\npartition_gpus = test:Site-A10\n")
os.remove(T .. "/gpus.calls")
l = load_log()
check("the names are checked against the site's table too",
      io.open(T .. "/gpus.calls"):read("*a") == "--gpu-table " .. T .. "/site gpus.json Site-A10\n",
      io.open(T .. "/gpus.calls"):read("*a"))
d, l = sized("a job on a site GPU", { comment = M }, "gres:shard:5")
check("predict gets --gpu-table and --gpu",
      io.open(T .. "/gpu_table.arg"):read("*l") == T .. "/site gpus.json" and gpu_arg() == "Site-A10", gpu_arg())
conf()
sized("without gpu_table", { comment = M }, "gres:shard:5")
check("no --gpu-table", io.open(T .. "/gpu_table.arg"):read("*l") == "", io.open(T .. "/gpu_table.arg"):read("*a"))
conf("gpu_types = a100:none\n")
refused("gpu_types to none", { comment = M }, "gpucast is misconfigured")
-- Deputy and upload mode send the GPU only when gpucast.conf names one.
local CAP = "url = http://127.0.0.1:" .. io.open(T .. "/capture.port"):read("*a") .. "\n"
local function captured() return io.open(T .. "/captured"):read("*a") end
conf("mode = service\n" .. CAP .. "deputy_token_file = " .. T .. "/deputy.token\npartition_gpus = test:A100-80GB\n")
d, l = sized("deputy, partition test:A100-80GB", { comment = M }, "gres:shard:5")
check("deputy body has \"gpu\":\"A100-80GB\"", captured():find('"gpu":"A100-80GB"', 1, true) and
      l:find("on A100-80GB (partition test)", 1, true), captured() .. l)
conf("mode = service\n" .. CAP .. "deputy_token_file = " .. T .. "/deputy.token\n")
d, l = sized("deputy, no GPU configured", { comment = M }, "gres:shard:5")
check("deputy body without gpu; the message says the predictor's GPU", not captured():find('"gpu"', 1, true) and
      l:find("batch 8 on the predictor's GPU: predicted", 1, true), captured() .. l)
conf("mode = service\n" .. CAP .. "partition_gpus = test:A100-80GB\n")
sized("upload, partition test:A100-80GB", { comment = M }, "gres:shard:5")
check("upload query has gpu=A100-80GB", captured():find("^POST /v1/predict%?[^\n]*&gpu=A100%-80GB") ~= nil, captured())
conf()
-- Several networks per step: each model= is one forward+backward pass (as gpucast predict --model).
d, l = sized("GAN: model=G,model=D,model=D", { comment = M .. ",model=" .. T .. "/d.onnx,model=" .. T .. "/d.onnx" },
             "gres:shard:5")
check("every pass reaches gpucast predict", io.open(T .. "/models.args"):read("*l") ==
      " --model " .. T .. "/m.onnx --model " .. T .. "/d.onnx --model " .. T .. "/d.onnx",
      io.open(T .. "/models.args"):read("*a"))
check("AdminComment keeps one model= per pass", d.admin_comment ==
      "gpucast: model=" .. T .. "/m.onnx model=" .. T .. "/d.onnx model=" .. T .. "/d.onnx batch=8 util=52.5 " ..
      "interval=40.0-61.0 basis=point mem=9000/24576 share=shard:5/8", d.admin_comment)
check("the user sees the networks", l:find(T .. "/m.onnx + " .. T .. "/d.onnx x2 batch 8", 1, true) ~= nil, l)
local many = M
for i = 1, 16 do many = many .. ",model=" .. T .. "/n" .. i .. ".onnx" end
refused("17 networks", { comment = many }, "more than 16 different model= networks")
conf("mode = service\nurl = http://127.0.0.1:9\n")  -- curl upload: one graph per request, refused before any request
refused("GAN in upload mode", { comment = M .. ",model=" .. T .. "/d.onnx" }, "uploads one graph per job")
conf()
-- Several GPUs on one node: whole GPUs (a job's shards cannot span GPUs), predicted per GPU.
d, l = sized("--gpus=4", { comment = M, tres_per_job = "gres:gpu:4" }, "gres:gpu:4")
check("--gpus=4: whole GPUs on one node, --gpus cleared", d.tres_per_job == "" and d.max_nodes == 1, d.tres_per_job)
check("--gpus=4 with a gpucast without --gpus: predicted as a single-GPU job, said so",
      l:find("batch 8 on RTX3090 (the predictor's GPU) x4 GPUs: predicted GPU utilization 52.5% per GPU, predicted as a " ..
             "single-GPU job (this gpucast has no data-parallel prediction) (interval 40.0-61.0%, sized by point) -> " ..
             "gres:gpu:4 (whole GPUs: a job's shards cannot span GPUs)", 1, true), l)
check("AdminComment share=gpu:4/4", d.admin_comment:find(" share=gpu:4/4$") ~= nil, d.admin_comment)
io.open(T .. "/dp", "w"):close()
d, l = sized("-n2 --gpus-per-task=1", { comment = M, tres_per_task = "gres:gpu:1", num_tasks = 2 }, "gres:gpu:2")
check("with gpucast predict --gpus: data-parallel, said so", io.open(T .. "/gpus.arg"):read("*l") == "2" and
      l:find("x2 GPUs: predicted GPU utilization 52.5% per GPU (data-parallel, gpucast predict --gpus 2)", 1, true), l)
os.remove(T .. "/dp")
sized("--gres=gpu:2,nic:1", { comment = M, tres_per_node = "gres:gpu:2,gres:nic:1" }, "gres:gpu:2,gres:nic:1")
conf("multi_gpu = refuse\n")
refused("--gpus=4, multi_gpu = refuse", { comment = M, tres_per_job = "gres:gpu:4" }, "this job asks for 4 GPUs")
conf("mode = service\n" .. "url = http://127.0.0.1:" .. io.open(T .. "/capture.port"):read("*a") .. "\n" ..
     "deputy_token_file = " .. T .. "/deputy.token\n")
d, l = sized("deputy, --gpus=2", { comment = M, tres_per_job = "gres:gpu:2" }, "gres:gpu:2")
check("deputy body has \"gpus\":2", io.open(T .. "/captured"):read("*a"):find('"gpus":2', 1, true), io.open(T .. "/captured"):read("*a"))
check("deputy --gpus=2: the service predicts one data-parallel rank, said so (not 'single-GPU')",
      l:find("x2 GPUs: predicted GPU utilization 52.5% per GPU (data-parallel, the service's \"gpus\": 2) " ..
             "(interval 40.0-61.0%, sized by point) -> gres:gpu:2", 1, true) and not l:find("single-GPU", 1, true), l)
io.open(T .. "/captured.no-gpus-echo", "w"):close()
d, l = sized("deputy, --gpus=2, an answer without \"gpus\"", { comment = M, tres_per_job = "gres:gpu:2" }, "gres:gpu:2")
check("an answer that does not echo \"gpus\" is not called data-parallel",
      l:find("per GPU, predicted as a single-GPU job (the service's answer has no \"gpus\": 2)", 1, true), l)
os.remove(T .. "/captured.no-gpus-echo")
conf()
-- Several nodes (issue 32 item 5): data-parallel on whole GPUs, -N M --gpus-per-node=K, predicted
-- as gpucast predict --gpus M*K --nodes M; a share of one GPU cannot span nodes.
io.open(T .. "/dp", "w"):close()
d, l = sized("-N2 --gpus-per-node=4", { comment = M, tres_per_node = "gres:gpu:4", min_nodes = 2 }, "gres:gpu:4")
check("-N2 x4: on 2 nodes, predicted with --gpus 8 --nodes 2, said so",
      d.max_nodes == 2 and io.open(T .. "/gpus.arg"):read("*l") == "8" and io.open(T .. "/nodes.arg"):read("*l") == "2" and
      l:find("x2 nodes x4 GPUs: predicted GPU utilization 52.5% per GPU (data-parallel, gpucast predict --gpus 8 --nodes 2)",
             1, true) ~= nil, tostring(d.max_nodes) .. " " .. l)
check("-N2 x4: AdminComment nodes=2 share=gpu:4/4", d.admin_comment:find(" nodes=2 util=52.5 .* share=gpu:4/4$") ~= nil,
      d.admin_comment)
d = sized("-N4 --gpus=8", { comment = M, tres_per_job = "gres:gpu:8", min_nodes = 4 }, "gres:gpu:2")
check("-N4 --gpus=8: 2 per node, --gpus cleared", d.tres_per_job == "" and io.open(T .. "/gpus.arg"):read("*l") == "8", d.tres_per_job)
os.remove(T .. "/dp")
refused("-N2 without a GPU option", { comment = M, min_nodes = 2 }, "a share of one GPU cannot span nodes")
refused("-N2-4 --gres=gpu:1", { comment = M, tres_per_node = "gres:gpu:1", min_nodes = 2, max_nodes = 4 },
        "is predicted for a fixed number of nodes: write -N 2")
refused("-N3 --gpus=4", { comment = M, tres_per_job = "gres:gpu:4", min_nodes = 3 }, "which do not divide evenly")
refused("-N2 --gpus-per-task=1", { comment = M, tres_per_task = "gres:gpu:1", min_nodes = 2, num_tasks = 2 },
        "write -N 2 --gpus-per-node=K instead of --gpus-per-task")
conf("multi_gpu = refuse\n")
refused("-N2 --gpus-per-node=1, multi_gpu = refuse", { comment = M, tres_per_node = "gres:gpu:1", min_nodes = 2 },
        "this site shares single GPUs only")
conf()
d, l = sized("-N1-2: a range", { comment = M, min_nodes = 1, max_nodes = 2 }, "gres:shard:5")
check("-N1-2 pinned to one node, and the user told", d.max_nodes == 1 and l:find("on one node (-N1, was up to 2 nodes)", 1, true),
      tostring(d.max_nodes) .. " " .. l)
d = sized("-n32 without -N", { comment = M, num_tasks = 32 }, "gres:shard:5")
check("tasks cannot spread the share over nodes (max_nodes 1)", d.max_nodes == 1, d.max_nodes)
-- Slurm 24.11 ignores max_nodes = 1 where the tasks' CPUs need more nodes (-N1-2 -n32 became
-- NumNodes=2-2 in the 24.11 live test): every task on the one node.
check("... and all 32 tasks on that node (ntasks_per_node 32)", d.ntasks_per_node == 32, tostring(d.ntasks_per_node))
d = sized("-n1: no tasks per node set", { comment = M, num_tasks = 1 }, "gres:shard:5")
check("... ntasks_per_node untouched", d.ntasks_per_node == nil, tostring(d.ntasks_per_node))
refused("-n8 --ntasks-per-node=4", { comment = M, num_tasks = 8, ntasks_per_node = 4 },
        "this job asks for 8 tasks, 4 per node: that is more than one node, and a share of one GPU is on one node")
-- --exclusive: Slurm 22.05 gives the job every GPU of its node, whatever it asks for.
refused("--exclusive, no model", { shared = 0 }, "this job takes whole nodes (--exclusive), and Slurm gives such a job every GPU")
refused("--exclusive --gres=gpu:0, no model", { shared = 0, tres_per_node = "gres:gpu:0" }, "even with --gres=gpu:0")
refused("exclusive partition, no model", { partition = "whole" }, "this job takes whole nodes (partition whole, OverSubscribe=EXCLUSIVE)")
refused("--exclusive with a model", { comment = M, shared = 0 }, "drop --exclusive")
rc, d, l = submit({ tres_per_node = "gres:gpu:0" })
check("--gres=gpu:0 without a model: no GPU, accepted unchanged", rc == 0 and l:find("no model, no GPU request", 1, true), l)
rc, d, l = submit({ shared = 1 })
check("--oversubscribe without a model: accepted", rc == 0, l)
-- Issue 32 item 2: every whole-node form (--exclusive=user got every GPU of its node).
refused("--exclusive=user, no model", { shared = 2 }, "this job takes whole nodes (--exclusive=user)")
refused("--exclusive=mcs, no model", { shared = 3 }, "this job takes whole nodes (--exclusive=mcs)")
refused("--exclusive=topo (Slurm 24.11), no model", { shared = 4 }, "this job takes whole nodes (--exclusive=topo)")
refused("--exclusive=user with a model", { comment = M, shared = 2 }, "drop --exclusive")
-- Partitions slurm.conf makes whole-node, which part_list does not show.
local sc = io.open(T .. "/slurm.conf", "w")
sc:write("PartitionName=DEFAULT MaxTime=INFINITE\nPartitionName=test Nodes=ALL Default=YES\n" ..
         "PartitionName=peruser Nodes=ALL ExclusiveUser=YES # a comment\nPartitionName=topo Nodes=ALL exclusivetopo=yes\n" ..
         "PartitionName=DEFAULT OverSubscribe=EXCLUSIVE\nPartitionName=late Nodes=ALL\n")
sc:close()
refused("a partition with ExclusiveUser=YES, no model", { partition = "peruser" }, "(partition peruser, ExclusiveUser=YES)")
refused("a partition with ExclusiveTopo=YES, no model", { partition = "topo" }, "(partition topo, ExclusiveTopo=YES)")
refused("a partition after PartitionName=DEFAULT OverSubscribe=EXCLUSIVE", { partition = "late" }, "(partition late, OverSubscribe=EXCLUSIVE)")
rc, d, l = submit({})
check("the default partition (no flag) still passes", rc == 0, l)
conf("partition_gpus = cpu:none, test:RTX3090\n")
rc, d, l = submit({ shared = 0, partition = "cpu" })
check("--exclusive in a partition listed as none (no GPUs): accepted", rc == 0, l)
refused("--exclusive in -p cpu,test (test has GPUs)", { shared = 0, partition = "cpu,test" }, "this job takes whole nodes")
conf("partition_gpus = cpu\n")
refused("partition_gpus without :GPU", { comment = M }, "gpucast is misconfigured")
conf()
-- Log lines: a newline in the job name or (percent-encoded) in the model path forges nothing.
-- ctld(): what went to slurmctld.log (log_info, log_error), each entry one line.
local function ctld()
  local out, clean = {}, true
  for _, e in ipairs(log) do
    if not e:match("^log_user") then out[#out + 1] = e; clean = clean and not e:find("%c") end
  end
  return table.concat(out, "\n"), clean
end
local text, clean
submit({ comment = M, name = "x\nerror: forged by a job name" })
text, clean = ctld()
check("a newline in the job name is escaped in slurmctld.log", clean and
      text:find("name=x\\nerror: forged by a job name: sized:", 1, true), text)
io.open(T .. "/x\nerror: forged.onnx", "w"):close()
rc = submit({ comment = "model=" .. T .. "/x%0Aerror:%20forged.onnx,batch=8", name = "j" })
text, clean = ctld()
check("a newline in the model path (declared %0A) is escaped in slurmctld.log", rc == 0 and clean and
      text:find("x\\nerror: forged.onnx", 1, true) ~= nil, text)
rc = submit({ comment = "model=" .. T .. "/m.onnx,batch=8,x\27y=1", name = "j" })
text, clean = ctld()
check("an escape character in a declaration item is escaped in slurmctld.log", rc == -1 and clean and
      text:find("'x\\x1by=1'", 1, true) ~= nil, text)
refused("--cpus-per-gpu", { comment = M, cpus_per_tres = "gres:gpu:2" }, "--cpus-per-gpu")
refused("--gpus-per-socket", { comment = M, tres_per_socket = "gres:gpu:1" }, "--gpus-per-socket")
refused("no model, --gres=shard:1", { tres_per_node = "gres:shard:1" }, "GPU jobs must name their model")
local rc
rc, d, l = submit({ tres_per_node = "gres:nic:1" })
check("no model, no GPU: unchanged", rc == 0 and d.tres_per_node == "gres:nic:1" and l:find("accepted unchanged"), l)
local a = refused("missing model", { comment = "model=" .. T .. "/missing.onnx,batch=8" }, "the model file cannot be read")
refused("bad model", { comment = "model=" .. T .. "/bad.onnx,batch=8" }, "not an ONNX model")
refused("no batch", { comment = "model=" .. T .. "/m.onnx" }, "no batch=N")
-- The service's bounds (src/util/job_limits.h), in every mode: cli mode passed batch=16777217 to
-- gpucast predict (answered), service mode got a 400; 1e20 is not formatted as an integer by Lua 5.1.
refused("batch above the service's bound", { comment = "model=" .. T .. "/m.onnx,batch=16777217" },
        "batch=16777217: want an integer in [1, 16777216]")
refused("batch of 20 digits", { comment = "model=" .. T .. "/m.onnx,batch=99999999999999999999" },
        "batch=99999999999999999999: want an integer in [1, 16777216]")
refused("batch=0", { comment = "model=" .. T .. "/m.onnx,batch=0" }, "batch=0: want an integer in [1, 16777216]")
refused("dim.seq=0", { comment = M .. ",dim.seq=0" }, "dim.seq=0: want an integer in [1, 16777216]")
refused("dim above the service's bound", { comment = M .. ",dim.seq=16777217" },
        "dim.seq=16777217: want an integer in [1, 16777216]")
-- Attribute values with a '.' (gpucast predict --attr loader_ms_per_sample=2.5, trainable_fraction=0.25)
-- were refused as "bad value"; the AdminComment keeps them for the epilog.
d = sized("attr.loader_ms_per_sample=2.5, attr.optimizer=adamw", { comment = M .. ",attr.loader_ms_per_sample=2.5,attr.optimizer=adamw" },
          "gres:shard:5")
check("the AdminComment keeps the fractional and the named attribute",
      d.admin_comment:find(" attr.loader_ms_per_sample=2.5 attr.optimizer=adamw ", 1, true) ~= nil, d.admin_comment)
refused("an attribute value with a quote", { comment = M .. ",attr.optimizer=ad'am" }, "attr.optimizer=ad'am: bad value")
sized("batch and dim at the bound", { comment = "model=" .. T .. "/m.onnx,batch=16777216,dim.seq=16777216" }, "gres:shard:5")
refused("relative model path", { comment = "model=m.onnx,batch=8" }, "model=m.onnx: want an absolute path")
-- Nothing may block: a FIFO is refused before anything opens it; the whole prediction has
-- a hard deadline (timeout_s), also against a process that leaves the process group, and
-- in deputy mode against a service that answers a line at a time.
local socket = require("socket")
local function timed(f) local t0 = socket.gettime(); local r = { f() }; return socket.gettime() - t0, unpack(r) end
local secs = timed(function() return refused("a FIFO as the model", { comment = "model=" .. T .. "/fifo.onnx,batch=8" },
                                             "is not a regular file") end)
check(string.format("the FIFO refused at once (%.3f s)", secs), secs < 0.5, secs)
conf("mode = service\nurl = http://127.0.0.1:9\n")
secs = timed(function() return refused("a FIFO as the model, upload mode", { comment = "model=" .. T .. "/fifo.onnx,batch=8" },
                                       "is not a regular file") end)
check(string.format("upload mode: the FIFO refused at once (%.3f s)", secs), secs < 0.5, secs)
conf("timeout_s = 1\n")
secs = timed(function() return refused("gpucast predict hangs", { comment = "model=" .. T .. "/hang.onnx,batch=8" },
                                       "did not finish within 1 s") end)
-- killed 0.2 s before timeout_s (the plugin's margin for slurmctld's own work), so within timeout_s
check(string.format("a hanging prediction ends within timeout_s = 1 (%.2f s)", secs), secs >= 0.75 and secs <= 1.0, secs)
secs = timed(function() return refused("a process escapes the process group", { comment = "model=" .. T .. "/escape.onnx,batch=8" },
                                       "did not finish within 1 s") end)
check(string.format("an escaped process holding the output does not hold the plugin (%.2f s)", secs), secs <= 1.0, secs)
conf("mode = service\nurl = http://127.0.0.1:" .. io.open(T .. "/slow.port"):read("*a") ..
     "\ndeputy_token_file = " .. T .. "/deputy.token\ntimeout_s = 1\n")
local l
secs, _, _, l = timed(function() return submit({ comment = M }) end)
check(string.format("deputy mode: a service trickling its answer is cut within timeout_s = 1 (%.2f s)", secs),
      secs >= 0.75 and secs <= 1.0 and l:find("no answer within 1 s", 1, true) ~= nil, tostring(secs) .. " " .. tostring(l))
conf()
-- Model paths with spaces, '%', '=' and ',': declared percent-encoded (a comment splits
-- at blanks and commas), kept percent-encoded in the AdminComment as one token.
local SP = T .. "/my%20models/"
d = sized("path with a space, declared %20", { comment = "model=" .. SP .. "m%251.onnx,batch=8" }, "gres:shard:5")
check("AdminComment encodes ' ' and '%'", d.admin_comment ==
      "gpucast: model=" .. SP .. "m%251.onnx batch=8 util=52.5 interval=40.0-61.0 basis=point mem=9000/24576 share=shard:5/8",
      d.admin_comment)
d = sized("#GPUCAST line, path with '=' and ','", { script = "#!/bin/sh\n#GPUCAST model=" .. SP .. "a%3Db%2Cc.onnx batch=8\n" },
          "gres:shard:5")
check("AdminComment encodes '=' and ','", d.admin_comment:find("model=" .. SP .. "a%3Db%2Cc.onnx batch=8 ", 1, true) ~= nil,
      d.admin_comment)
refused("unencoded space", { comment = "model=" .. T .. "/my models/m%251.onnx,batch=8" }, "malformed item 'models/m%251.onnx'")
-- The epilog's settings may sit in the same gpucast.conf.
conf("nvsmi_log_dir = /var/tmp\nacct_freq_s = 10\nepilog_log = /var/log/gpucast-epilog.log\noveruse_margin = 15\n")
sized("epilog settings in gpucast.conf accepted", { comment = M }, "gres:shard:5")
-- Overuse hold: the epilog recorded alice in overuse_dir.
conf("overuse_hold = yes\noveruse_dir = " .. T .. "/overuse\n")
d, l = sized("overuse_hold, bob not recorded", { comment = M, user_name = "bob" }, "gres:shard:5")
check("bob not held", d.priority == nil, tostring(d.priority))
local f = io.open(T .. "/overuse/alice", "w")
f:write("job 41: observed 90.0% GPU utilization, share 62.5% + margin 20\n"); f:close()
d, l = sized("overuse_hold, alice recorded", { comment = M, user_name = "alice" }, "gres:shard:5")
check("alice's job held (priority 0)", d.priority == 0, tostring(d.priority))
check("alice told why", l:find("log_user gpucast: .*this job is HELD: an earlier job of yours used more of its GPU " ..
      "than its share %(job 41: observed 90.0%% GPU utilization, share 62.5%% %+ margin 20%)") ~= nil, l)
check("operator told how to release", l:find("held: user alice is recorded for overuse in " .. T .. "/overuse/alice", 1, true)
      ~= nil and l:find("rm " .. T .. "/overuse/alice && scontrol release JOBID", 1, true) ~= nil, l)
rc, d, l = submit({ tres_per_node = "gres:nic:1", user_name = "alice" })
check("alice's CPU job not held", rc == 0 and d.priority == nil, tostring(d.priority))
local arec = { user_id = 1001, group_id = 1001, job_id = 9, name = "j", user_name = "alice", tres_per_node = "gres:shard:5",
               admin_comment = "gpucast: model=x batch=8 util=52.5 interval=40.0-61.0 basis=point share=shard:5/8" }
log = {}
rc = slurm_job_modify({ priority = 4294967295 }, arec, {}, 1001)
check("alice's own release refused while recorded", rc == 2072 and table.concat(log, "\n"):find("is held because user alice"),
      table.concat(log, "\n"))
rc = slurm_job_modify({ priority = 4294967295 }, arec, {}, 0)
check("root's release accepted", rc == 0, rc)
os.remove(T .. "/overuse/alice")
rc = slurm_job_modify({ priority = 4294967295 }, arec, {}, 1001)
check("release accepted once the record is removed", rc == 0, rc)
d = sized("alice not held once the record is removed", { comment = M, user_name = "alice" }, "gres:shard:5")
check("not held", d.priority == nil, tostring(d.priority))
conf("default_batch = 16777217\n")
refused("default_batch above the service's bound", { comment = "model=" .. T .. "/m.onnx" },
        "'default_batch' wants an integer in [1, 16777216] or nothing")
conf("default_batch = 32\n")
sized("default_batch", { comment = "model=" .. T .. "/m.onnx" }, "gres:shard:5")
conf("headroom = interval\nshards_per_gpu = 16\n")
sized("headroom = interval, 16 shards: ceil(61.0 x 16 / 100) = 10", { comment = M }, "gres:shard:10")
conf("share = mps\n")
sized("share = mps", { comment = M }, "gres:mps:53")
for _, bad in ipairs({ "shards_per_gpu = many\n", "colour = blue\n", "mode = magic\n", "gpucast = /nonexistent/gpucast\n" }) do
  conf(bad)
  l = refused("misconfigured: " .. bad:gsub("\n", ""), { comment = M }, "gpucast is misconfigured, contact your administrator")
  check("cause logged for the operator", l:find("log_error gpucast:", 1, true) ~= nil, l)
end
conf()

-- job_modify of a job sized at shard:8
local rec = { user_id = 1001, group_id = 1001, job_id = 7, name = "j", tres_per_node = "gres:shard:8",
              admin_comment = "gpucast: model=x batch=64 util=99.0 interval=98.0-100.0 basis=point share=shard:8/8" }
local function modify(desc, uid)
  log = {}
  for k, v in pairs({ min_nodes = NV, max_nodes = NV, num_tasks = NV, ntasks_per_tres = 65534, shared = 65534 }) do
    if desc[k] == nil then desc[k] = v end
  end
  return slurm_job_modify(desc, rec, PARTS, uid or 1001), desc, table.concat(log, "\n")
end
for _, tpn in ipairs({ "gres:shard:1", "gres:gpu:1", "gres:nic:1", "gres:mps:50" }) do
  rc, _, l = modify({ tres_per_node = tpn })
  check("modify to " .. tpn .. " refused (ESLURM_INVALID_GRES), reason logged", rc == 2072 and l:find("was sized gres:shard:8"), l)
end
rc = modify({ tres_per_job = "gres:gpu:2" })
check("modify adding --gpus=2 refused", rc == 2072, rc)
rec.admin_comment = rec.admin_comment:gsub("shard:8/8", "shard:5/8")
rc, _, l = modify({ tres_per_node = "gres:shard:6" })
check("modify raising shard:5 -> 6 refused by default (allow_more_shards = 0)",
      rc == 2072 and l:find("changing it is not accepted (allow_more_shards = 0)", 1, true), l)
conf("allow_more_shards = 1\n")
rc = modify({ tres_per_node = "gres:shard:6" })
check("modify raising shard:5 -> 6 accepted with allow_more_shards = 1", rc == 0, rc)
conf()
rc, d, l = modify({ comment = M })
check("new model declaration by the owner refused", rc == 2072 and l:find("cannot be changed after submission"), l)
conf("run_as = " .. T .. "/record-as {uid} {gid} --\n")  -- the owner (uid 1001) has no account here
rc, d, l = modify({ comment = M }, 0)
check("new model declaration by root re-predicted", rc == 0 and d.tres_per_node == "gres:shard:5", tostring(rc) .. " " .. tostring(d.tres_per_node) .. " " .. l)
conf()
-- A job of whole GPUs keeps its count.
local saved = rec.admin_comment
rec.admin_comment = "gpucast: model=x batch=64 util=52.5 interval=40.0-61.0 basis=point share=gpu:2/2"
rc, _, l = modify({ tres_per_node = "gres:gpu:1" })
check("whole GPUs: gpu:2 -> gpu:1 refused", rc == 2072 and l:find("changing its GPUs to gpu:1 is not accepted", 1, true), l)
rc, _, l = modify({ tres_per_node = "gres:shard:8" })
check("whole GPUs: a share instead refused", rc == 2072 and l:find("a share (shard:8) is not accepted", 1, true), l)
rc = modify({ tres_per_node = "gres:gpu:2" })
check("whole GPUs: gpu:2 kept accepted", rc == 0, rc)
rec.admin_comment = saved
rc = modify({ comment = "just a note" })
check("plain comment change untouched", rc == 0, rc)
rec.admin_comment = nil
rc = modify({ tres_per_node = "gres:shard:1" })
check("GPU share added to a job without model refused", rc == 2072, rc)
rc, _, l = modify({ shared = 0 })
check("--exclusive added to a job without a model refused", rc == 2072 and l:find("takes whole nodes", 1, true), l)
rec.admin_comment = "gpucast: model=x batch=64 util=99.0 interval=98.0-100.0 basis=point share=shard:8/8"
rc, _, l = modify({ max_nodes = 2 })
check("NumNodes=1-2 of a sized job refused", rc == 2072 and l:find("cannot span nodes", 1, true), l)
rc, _, l = modify({ shared = 0 })
check("--exclusive (OverSubscribe=no) on a sized job refused", rc == 2072 and l:find("every GPU of its node", 1, true), l)
-- A job predicted for one GPU cannot be moved to another by a partition or constraint update.
conf("gpu_types = a100:A100-80GB\npartition_gpus = test:RTX3090, big:A100-80GB, other:RTX3090\n")
rec.partition = "test"
rec.admin_comment = "gpucast: model=x batch=64 gpu=RTX3090 util=99.0 interval=98.0-100.0 basis=point share=shard:8/8"
rc, _, l = modify({ partition = "big" })
check("Partition=big (A100-80GB) for a job predicted on RTX3090 refused", rc == 2072 and
      l:find("was predicted for RTX3090; the new partition or constraint would put it on A100-80GB", 1, true), l)
rc, _, l = modify({ features = "a100" })
check("Features=a100 for a job predicted on RTX3090 refused (the partition says RTX3090)", rc == 2072, l)
rc = modify({ partition = "other" })
check("Partition=other (also RTX3090) accepted", rc == 0, rc)
conf()

-- Issue 32 item 1: what one user can cost slurmctld.
-- gpucast predict gets a deadline 0.5 s below timeout_s; the deputy service gets it as a header.
local function arg_of(name) return io.open(T .. "/" .. name .. ".arg"):read("*l") end
sized("default timeout_s (2)", { comment = M }, "gres:shard:5")
check("gpucast predict --max-seconds 1.50 (timeout_s 2 - 0.5)", arg_of("deadline") == "1.50", arg_of("deadline"))
conf("timeout_s = 5\n")
sized("timeout_s = 5", { comment = M }, "gres:shard:5")
check("gpucast predict --max-seconds 4.50", arg_of("deadline") == "4.50", arg_of("deadline"))
conf()
secs, rc, d, l = timed(function() return submit({ comment = "model=" .. T .. "/overdeadline.onnx,batch=8" }) end)
check(string.format("gpucast predict stops at its deadline (%.2f s, timeout_s 2) and the user is told", secs),
      rc == -1 and secs >= 1.4 and secs < 1.8 and l:find("log_user gpucast: rejected: the prediction did not finish " ..
      "within 1.5 s (gpucast's deadline, timeout_s - 0.5)", 1, true) ~= nil, l)
io.open(T .. "/no-deadline", "w"):close()
d, l = sized("a gpucast without --max-seconds", { comment = M }, "gres:shard:5")
check("it is run again without the flag, and the operator told once",
      arg_of("deadline") == "" and l:find("predict has no --max-seconds: predictions are bounded by timeout_s (2 s) " ..
                                          "alone; upgrade gpucast", 1, true) ~= nil, l)
d, l = sized("the next job", { comment = M }, "gres:shard:5")
check("... and not tried again", arg_of("deadline") == "" and not l:find("has no --max-seconds", 1, true), l)
os.remove(T .. "/no-deadline")
conf("mode = service\n" .. CAP .. "deputy_token_file = " .. T .. "/deputy.token\n")
sized("deputy mode", { comment = M }, "gres:shard:5")
check("deputy request carries X-Gpucast-Deadline-Ms: 1500", captured():lower():find("\nx%-gpucast%-deadline%-ms: 1500\r") ~= nil,
      captured())
io.open(T .. "/dp", "w"):close()
d, l = sized("deputy, -N2 --gpus-per-node=2", { comment = M, tres_per_node = "gres:gpu:2", min_nodes = 2 }, "gres:gpu:2")
check("deputy, 2 nodes: the service predicts one node's GPUs (\"gpus\":2), said so",
      captured():find('"gpus":2', 1, true) and l:find("(data-parallel, the service's \"gpus\": 2, one node's GPUs: the " ..
                                                      "service has no \"nodes\")", 1, true), l)
os.remove(T .. "/dp")
conf("mode = service\n" .. CAP)
sized("upload mode", { comment = M }, "gres:shard:5")
check("upload request carries X-Gpucast-Deadline-Ms: 1500", captured():lower():find("\nx%-gpucast%-deadline%-ms: 1500\r") ~= nil,
      captured())
-- A per-uid budget of prediction seconds per minute: above it, refused at once.
local function submit_as(dd, uid)
  log = {}
  for k, v in pairs({ min_nodes = NV, max_nodes = NV, num_tasks = NV, ntasks_per_tres = 65534, shared = 65534,
                      user_id = uid, group_id = uid, name = "j" }) do
    if dd[k] == nil then dd[k] = v end
  end
  return slurm_job_submit(dd, PARTS, uid), dd, table.concat(log, "\n")
end
conf("user_budget_s = 2\nrun_as = " .. T .. "/record-as {uid} {gid} --\n")
local SLOW = "model=" .. T .. "/slow.onnx,batch=8"
-- Each takes at least the stub's 0.4 s (more with the process starts): the 2 s are spent after
-- 5 at most, and no fewer than 2 pass (each under 1 s).
local passed, used = 0, 0
for _ = 1, 6 do
  local t
  t, rc = timed(function() return (submit_as({ comment = SLOW }, 1001)) end)
  if rc ~= 0 then break end
  passed, used = passed + 1, used + t
end
check(string.format("uid 1001: %d predictions of %.2f s in all pass, then the budget of 2 s is spent", passed, used),
      passed >= 2 and passed <= 5 and used >= 2, passed)
secs, rc, d, l = timed(function() return submit_as({ comment = SLOW }, 1001) end)
check(string.format("the next is refused at once (%.3f s), with the budget and when to retry", secs),
      rc == -1 and secs < 0.2 and l:find("log_user gpucast: rejected: your jobs' predictions took [2-9]%.%d s of the " ..
      "controller's time in the last minute, this site's budget per user %(user_budget_s = 2 s per minute%): submit again " ..
      "in [0-9]+ s") ~= nil, l)
rc, d, l = submit_as({ comment = "model=" .. T .. "/missing.onnx,batch=8" }, 1001)
check("... whatever the model (nothing is read)", rc == -1 and l:find("user_budget_s", 1, true) ~= nil, l)
rc, d, l = submit_as({ tres_per_node = "gres:nic:1" }, 1001)
check("a job without a model costs no prediction and passes", rc == 0, l)
rc, d, l = submit_as({ comment = SLOW }, 1002)
check("another uid has its own budget", rc == 0 and d.tres_per_node == "gres:shard:5", l)
rc, d, l = submit_as({ comment = SLOW }, 0)
check("root has none", rc == 0, l)
conf()
-- Components of a heterogeneous job that declare a model: at most max_model_components.
conf("max_model_components = 2\n")
local function het(off, dd) dd.het_job_offset = off; return submit(dd) end
check("component 0 with a model", (het(0, { comment = M })) == 0, "")
check("component 1 without a model", (het(1, {})) == 0, "")
check("component 2 with a model (the 2nd)", (het(2, { comment = M })) == 0, "")
rc, d, l = het(3, { comment = M })
check("component 3 with a model (the 3rd) refused", rc == -1 and l:find("this heterogeneous job declares a model in more " ..
      "than 2 of its components (this site's limit, max_model_components)", 1, true) ~= nil, l)
check("the next heterogeneous job counts from 0", (het(0, { comment = M })) == 0 and (het(1, { comment = M })) == 0, "")
conf()
-- Issue 32 item 4: shards_per_gpu against gres.conf (beside the plugin).
local function gres(text) local g = io.open(T .. "/gres.conf", "w"); g:write(text); g:close() end
gres("AutoDetect=off\nName=gpu File=/dev/nvidia0\nName=shard Count=16 File=/dev/nvidia0  # 16 per GPU\n")
l = refused("shards_per_gpu = 8, gres.conf 16 per GPU", { comment = M }, "gpucast is misconfigured")
check("the operator is told the mismatch, where, and what to set",
      l:find("gpucast.conf: shards_per_gpu = 8, but " .. T .. "/gres.conf:3 gives 16 shard per GPU: set shards_per_gpu = " ..
             "16 (a job sized at 8 would hold 8 of 16: two at 100% would share a GPU)", 1, true) ~= nil, l)
rc, d, l = submit({ tres_per_node = "gres:nic:1" })
check("a CPU job passes meanwhile", rc == 0, l)
gres("Name=gpu File=/dev/nvidia[0-1]\nName=shard Count=16\n")
sized("Count=16 over 2 GPUs (File=/dev/nvidia[0-1]): 8 per GPU", { comment = M }, "gres:shard:5")
gres("Name=gpu File=/dev/nvidia[0-1]\nName=shard Count=8\n")
l = refused("Count=8 over 2 GPUs: 4 per GPU", { comment = M }, "gpucast is misconfigured")
check("... the spread count is named", l:find("gives 4 shard per GPU (Count over 2 GPUs): set shards_per_gpu = 4 (a job sized " ..
      "at 8 would pend forever)", 1, true) ~= nil, l)
os.remove(T .. "/gres.conf")
-- Slurm 24.11's spellings of a GPU request (gres/gpu:1, gres/gpu=1) are the same requests, and the
-- share is written back in the request's spelling: 24.11 refuses "gres:shard:5" as an invalid TRES
-- specification, 22.05 refuses "gres/shard:5" (the live tests, test.sh and chroot_test.sh). A
-- request without a gres is answered in the spelling of this host's slurmctld (Debian 12: 22.05,
-- "gres:", the checks above).
sized("--gres=gpu:1 as Slurm 24.11 writes it (gres/gpu:1)", { comment = M, tres_per_node = "gres/gpu:1" }, "gres/shard:5")
sized("TRES form gres/gpu=1", { comment = M, tres_per_job = "gres/gpu=1" }, "gres/shard:5")
sized("--gres=gpu:1,nic:1 as 24.11 writes it: the nic kept as written", { comment = M, tres_per_node = "gres/gpu:1,gres/nic:1" },
      "gres/shard:5,gres/nic:1")
refused("no model, gres/gpu=1", { tres_per_node = "gres/gpu=1" }, "GPU jobs must name their model")
-- Slurm 24.x: SelectTypeParameters=MULTIPLE_SHARING_GRES_PJ (a job's shards from several GPUs).
local sc_saved = io.open(T .. "/slurm.conf"):read("*a")
local sc2 = io.open(T .. "/slurm.conf", "w")
sc2:write(sc_saved .. "SelectType=select/cons_tres\nSelectTypeParameters=CR_Core,MULTIPLE_SHARING_GRES_PJ\n"); sc2:close()
l = refused("MULTIPLE_SHARING_GRES_PJ in slurm.conf", { comment = M }, "gpucast is misconfigured")
check("... the operator is told why", l:find("SelectTypeParameters has MULTIPLE_SHARING_GRES_PJ, which lets a job's shards " ..
      "come from several GPUs; gpucast sizes a share of one GPU", 1, true) ~= nil, l)
conf("share = mps\n")
sized("... share = mps is not affected", { comment = M }, "gres:mps:53")
conf()
sc2 = io.open(T .. "/slurm.conf", "w"); sc2:write(sc_saved); sc2:close()
-- The shipped examples agree: gres.conf.example's shards per GPU = gpucast.conf.example's shards_per_gpu,
-- and slurm.conf.example passes the plugin's checks.
conf("gres_conf = " .. HERE .. "/gres.conf.example\nslurm_conf = " .. HERE .. "/slurm.conf.example\n")
sized("the shipped gres.conf.example and slurm.conf.example", { comment = M, partition = "gpu" }, "gres:shard:5")
conf()
-- Mixed GPU types that gpucast.conf maps to nothing: refused, saying what to set.
gres("Name=gpu Type=a100 File=/dev/nvidia0\nName=gpu Type=v100 File=/dev/nvidia1\nName=shard Count=8 File=/dev/nvidia0\n")
l = refused("two GPU types in gres.conf, no gpu_types/partition_gpus/default_gpu", { comment = M }, "gpucast is misconfigured")
check("... the operator is told which types and what to set", l:find("the nodes have GPUs of 2 types (a100, v100) but " ..
      "gpucast.conf maps none (gpu_types, partition_gpus) and sets no default_gpu", 1, true) ~= nil, l)
conf("gpu_types = a100:A100-80GB, v100:V100-32GB\n")
sized("... with gpu_types", { comment = M }, "gres:shard:5")
conf()
os.remove(T .. "/gres.conf")
-- Issue 32 item 2: job_modify keeps what job_submit decided.
conf()
rec.admin_comment = nil
rec.partition = "test"
rc, _, l = modify({ partition = "whole" })
check("a CPU job moved to an OverSubscribe=EXCLUSIVE partition refused", rc == 2072 and
      l:find("takes whole nodes (partition whole, OverSubscribe=EXCLUSIVE)", 1, true) ~= nil, l)
rc, _, l = modify({ partition = "peruser" })
check("a CPU job moved to an ExclusiveUser=YES partition refused", rc == 2072 and
      l:find("(partition peruser, ExclusiveUser=YES)", 1, true) ~= nil, l)
rc, _, l = modify({ shared = 2 })
check("--exclusive=user added to a CPU job refused", rc == 2072 and l:find("(--exclusive=user)", 1, true) ~= nil, l)
rec.shared = 0
conf("partition_gpus = cpu:none, test:RTX3090\n")
rec.partition = "cpu"
rc, _, l = modify({ partition = "test" })
check("an --exclusive CPU job (allowed in cpu:none) moved to a GPU partition refused",
      rc == 2072 and l:find("(--exclusive)", 1, true) ~= nil, l)
rc = modify({ partition = "cpu" })
check("... and within cpu:none accepted", rc == 0, rc)
rec.shared = nil
conf()
rec.partition = "test"
rec.admin_comment = "gpucast: model=x batch=64 util=99.0 interval=98.0-100.0 basis=point share=shard:8/8"
rc, _, l = modify({ partition = "whole" })
check("a sized job moved to an exclusive partition refused", rc == 2072 and
      l:find("the update would give it whole nodes (partition whole, OverSubscribe=EXCLUSIVE)", 1, true) ~= nil, l)
rc = modify({ time_limit = 60 })
check("a time limit update passes", rc == 0, rc)
-- Another uid's update: refused with Slurm's own "Invalid user id", nothing of gpucast's reasons.
rc, _, l = modify({ tres_per_node = "gres:shard:1" }, 1002)
check("another user's refused update gets Slurm's code for it (2010, Invalid user id), not gpucast's", rc == 2010, rc)
local f2 = io.open(T .. "/overuse/alice", "w"); f2:write("job 41: observed 90%\n"); f2:close()
conf("overuse_hold = yes\noveruse_dir = " .. T .. "/overuse\n")
rc = slurm_job_modify({ priority = 4294967295 }, arec, {}, 1002)
check("another user's release of alice's held job: 2010, as Slurm answers any job of another user", rc == 2010, rc)
rc = slurm_job_modify({ priority = 4294967295 }, arec, {}, 1001)
check("alice's own release: refused, held (2072)", rc == 2072, rc)
os.remove(T .. "/overuse/alice")
conf()
-- Issue 32 item 3: AdminComment tokens are percent-encoded: a declared dim or attr cannot pose as another token.
d = sized("dim.gpucast_job=5 declared", { comment = M .. ",dim.gpucast_job=5,attr.loader_workers=2" }, "gres:shard:5")
check("AdminComment: each item one KEY=VALUE token", d.admin_comment ==
      "gpucast: model=" .. T .. "/m.onnx batch=8 attr.loader_workers=2 dim.gpucast_job=5 util=52.5 interval=40.0-61.0 " ..
      "basis=point mem=9000/24576 share=shard:5/8", d.admin_comment)

-- MIG slices (docs/slurm.md "MIG slices"): Slurm (gres.conf AutoDetect=nvml) types each MIG device
-- by its profile, gpu:1g.10gb:1 or gpu:a100_1g.10gb:1. The request is kept; gpucast predicts the
-- slice (--gpu G --mig PROFILE); the stub's slice 1g.10gb has 9728 MiB, its memory high end 9000.
local function mig_arg() return io.open(T .. "/mig.arg"):read("*l") end
conf("gpu_types = a100:A100-80GB\npartition_gpus = test:A100-80GB\n")
d, l = sized("MIG --gres=gpu:a100_1g.10gb:1: kept", { comment = M, tres_per_node = "gres:gpu:a100_1g.10gb:1,gres:nic:1" },
             "gres:gpu:a100_1g.10gb:1,gres:nic:1")
check("MIG: gpucast predict --gpu A100-80GB --mig 1g.10gb", gpu_arg() == "A100-80GB" and mig_arg() == "1g.10gb",
      gpu_arg() .. " " .. mig_arg())
check("MIG: no feature added (the typed gres keeps the job on the slice), one node", d.features == nil and d.max_nodes == 1,
      tostring(d.features) .. " " .. tostring(d.max_nodes))
check("MIG: AdminComment keeps the prediction of the slice (share=mig:1/1)", d.admin_comment ==
      "gpucast: model=" .. T .. "/m.onnx batch=8 gpu=A100-80GB mig=1g.10gb util=52.5 interval=40.0-61.0 basis=point " ..
      "mem=9000/9728 share=mig:1/1", d.admin_comment)
check("MIG: the user is told", l:find("on A100-80GB (--gres type a100) MIG 1g.10gb: predicted GPU utilization 52.5% of the " ..
      "slice (interval 40.0-61.0%; memory up to 9000 of the slice's 9728 MiB) -> gpu:a100_1g.10gb:1 kept", 1, true), l)
d = sized("MIG --gres=gpu:1g.10gb:1 (no GPU type in front): the partition's GPU", { comment = M, tres_per_node = "gres/gpu:1g.10gb:1" },
          "gres/gpu:1g.10gb:1")
check("MIG: --gpu from partition test", gpu_arg() == "A100-80GB" and mig_arg() == "1g.10gb", gpu_arg())
rc, d, l = submit({ comment = M, tres_per_job = "gres:gpu:a100_3g.40gb:1" })
check("MIG: --gpus=a100_3g.40gb:1 kept as asked, --mig 3g.40gb", rc == 0 and d.tres_per_job == "gres:gpu:a100_3g.40gb:1" and
      d.tres_per_node == nil and mig_arg() == "3g.40gb", tostring(d.tres_per_job) .. " " .. mig_arg() .. " " .. l)
sized("MIG +me variant: predicted as its base profile", { comment = M, tres_per_node = "gres:gpu:a100_1g.10gb+me:1" },
      "gres:gpu:a100_1g.10gb+me:1")
check("MIG +me: --mig 1g.10gb", mig_arg() == "1g.10gb", mig_arg())
sized("a non-MIG job after a MIG job: no --mig", { comment = M }, "gres:shard:5")
check("no --mig passed", mig_arg() == "", mig_arg())
refused("MIG profile the GPU lacks", { comment = M, tres_per_node = "gres:gpu:a100_2g.20gb:1" },
        "gpucast: rejected: MIG slice 'gpu:a100_2g.20gb:1' on A100-80GB (--gres type a100): --mig: GPU " ..
        "'A100-80GB' has no MIG profile '2g.20gb' (profiles: 1g.10gb, 3g.40gb) (predicted as gpucast predict --gpu A100-80GB " ..
        "--mig 2g.20gb)")
refused("MIG: memory high end 20000 > the slice's 9728 MiB", { comment = "model=" .. T .. "/bigmem.onnx,batch=8",
        tres_per_node = "gres:gpu:a100_1g.10gb:1" }, "predicted GPU memory up to 20000 MiB (the high end of its interval, " ..
        "a one-sided 95% bound) does not fit in the 9728 MiB of the MIG slice 'gpu:a100_1g.10gb:1' on A100-80GB " ..
        "(--gres type a100) MIG 1g.10gb: use a smaller batch or a larger MIG profile")
refused("MIG: two slices", { comment = M, tres_per_node = "gres:gpu:a100_1g.10gb:2" },
        "'gpu:a100_1g.10gb:2' via --gres/--gpus-per-node asks for 2 MIG slices; gpucast predicts a job on one MIG slice")
refused("MIG: shards of a slice", { comment = M, tres_per_node = "gres:shard:a100_1g.10gb:2" },
        "a MIG slice is not shared with shards or MPS here")
refused("MIG and a whole GPU", { comment = M, tres_per_node = "gres:gpu:a100_1g.10gb:1", tres_per_job = "gres:gpu:1" },
        "this job asks for a MIG slice ('gpu:a100_1g.10gb:1') and 'gpu:1'")
refused("MIG on two nodes", { comment = M, tres_per_node = "gres:gpu:a100_1g.10gb:1", min_nodes = 2 },
        "a MIG slice is on one node")
conf("gpu_types = a100:A100-80GB, h100:H100\n")
refused("MIG typed a100 in a partition of H100", { comment = M, tres_per_node = "gres:gpu:a100_1g.10gb:1", features = "h100" },
        "this job could run on different GPUs: A100-80GB (--gres type a100), H100 (--constraint h100)")
for _, mode in ipairs(MODES) do
  conf(mode[2] .. "gpu_types = a100:A100-80GB\n")
  os.remove(T .. "/captured")
  d = sized(mode[1] .. " mode: MIG slice kept", { comment = M, tres_per_node = "gres:gpu:a100_1g.10gb:1" }, "gres:gpu:a100_1g.10gb:1")
  check(mode[1] .. " mode: MIG AdminComment with the slice's memory", d.admin_comment:find(" gpu=A100-80GB mig=1g.10gb util=52.5 " ..
        "interval=40.0-61.0 basis=point mem=9000/9728 share=mig:1/1", 1, true), d.admin_comment)
  if mode[1] == "deputy" then
    local c = io.open(T .. "/captured"):read("*a")
    check("deputy mode: the body has \"mig\":\"1g.10gb\"", c:find('"gpu":"A100-80GB","mig":"1g.10gb"', 1, true), c)
  elseif mode[1] == "upload" then
    local c = io.open(T .. "/captured"):read("*a")
    check("upload mode: the query has mig=1g.10gb", c:find("&gpu=A100-80GB&mig=1g.10gb", 1, true), c)
  end
  refused(mode[1] .. " mode: MIG profile the GPU lacks", { comment = M, tres_per_node = "gres:gpu:a100_2g.20gb:1" },
          "MIG slice 'gpu:a100_2g.20gb:1' on A100-80GB (--gres type a100): ")
end
-- slurmctld's check of GPU types: MIG types are profiles of a GPU, not GPUs of their own.
local gres_mig = T .. "/gres-mig.conf"
local gf = io.open(gres_mig, "w"); gf:write("AutoDetect=nvml\n"); gf:close()
local sc_mig = T .. "/slurm-mig.conf"
gf = io.open(sc_mig, "w"); gf:write("NodeName=n1 Gres=gpu:a100_1g.10gb:4,gpu:a100_3g.40gb:1\n"); gf:close()
conf("gres_conf = " .. gres_mig .. "\nslurm_conf = " .. sc_mig .. "\n")
d = sized("MIG types of one GPU (a100_1g.10gb, a100_3g.40gb) are one GPU type: no configuration error",
          { comment = M, tres_per_node = "gres:gpu:a100_1g.10gb:1" }, "gres:gpu:a100_1g.10gb:1")
gf = io.open(sc_mig, "w"); gf:write("NodeName=n1 Gres=gpu:a100_1g.10gb:4\nNodeName=n2 Gres=gpu:h100_1g.10gb:4\n"); gf:close()
refused("MIG slices of two GPU types, nothing mapped", { comment = M, tres_per_node = "gres:gpu:a100_1g.10gb:1" },
        "gpucast is misconfigured")
conf()
-- job_modify of a job on a MIG slice: the same slice only.
rec.tres_per_node = "gres:gpu:a100_1g.10gb:1"
rec.admin_comment = "gpucast: model=x batch=8 gpu=A100-80GB mig=1g.10gb util=52.5 interval=40.0-61.0 basis=point share=mig:1/1"
rc = modify({ tres_per_node = "gres:gpu:a100_1g.10gb:1,gres:nic:1" })
check("MIG modify: same slice, another gres added: accepted", rc == 0, rc)
for _, tpn in ipairs({ "gres:gpu:a100_3g.40gb:1", "gres:gpu:1", "gres:shard:2", "gres:gpu:a100_1g.10gb:2", "gres:nic:1" }) do
  rc, _, l = modify({ tres_per_node = tpn })
  check("MIG modify to " .. tpn .. " refused", rc == 2072 and l:find("was predicted for MIG slice 1g.10gb", 1, true), l)
end

-- Hostile declarations and requests (docs/security.md "Slurm plugin inputs"): each is refused at once
-- with a message that names it, never a shell error shown as a timeout, a stall, or a count Slurm cannot read.
conf()
for _, nul in ipairs({ "%00", "\0" }) do
  local t0 = socket.gettime()
  refused("a NUL byte in the model path (" .. (nul == "\0" and "raw" or "%00") .. ")",
          { comment = "model=" .. T .. "/m.onnx" .. nul .. "x,batch=8" }, "a path cannot contain a NUL byte (%00)")
  check(string.format("... refused at once (%.3f s)", socket.gettime() - t0), socket.gettime() - t0 < 0.5, socket.gettime() - t0)
end
do
  local t0 = socket.gettime()
  refused("one model= given 1001 times (the service's bound is 1000 passes)",
          { comment = M .. string.rep(",model=" .. T .. "/m.onnx", 1000) }, "/m.onnx given more than 1000 times")
  check(string.format("... refused at once (%.3f s)", socket.gettime() - t0), socket.gettime() - t0 < 0.5, socket.gettime() - t0)
  t0 = socket.gettime()
  refused("one model= given 100001 times (a 4 MB comment)",
          { comment = M .. string.rep(",model=" .. T .. "/m.onnx", 100000) }, "given more than 1000 times")
  check(string.format("... refused within 1 s (%.3f s)", socket.gettime() - t0), socket.gettime() - t0 < 1, socket.gettime() - t0)
end
refused("--gres=gpu:99999999999999999999", { comment = M, tres_per_node = "gres:gpu:99999999999999999999" },
        "'gpu:99999999999999999999': 20 digits is no count of gpu (at most 9 digits)")
refused("--gpus-per-task=4294967295", { comment = M, tres_per_task = "gres:gpu:4294967295" },
        "'gpu:4294967295': 10 digits is no count of gpu")
refused("--gres=shard:99999999999 without a model", { tres_per_node = "gres:shard:99999999999" }, "11 digits is no count of shard")
do
  local rc, dd, l = submit({ tres_per_node = "gres:nic:99999999999" })
  check("another gres with a long count is not gpucast's: accepted unchanged", rc == 0 and dd.tres_per_node == "gres:nic:99999999999", l)
end
-- A broken service, in deputy and upload mode: refused as the operator's problem (fail closed),
-- within timeout_s, never sized by numbers that are no prediction.
do
  local EVP = io.open(T .. "/evil.port"):read("*a")
  -- want: the operator's log line (upload mode: curl's own words for close and huge).
  local function broken(mode, want)
    local f = io.open(T .. "/evil.port.mode", "w"); f:write(mode); f:close()
    for _, m in ipairs({ "deputy", "upload" }) do
      conf("mode = service\nurl = http://127.0.0.1:" .. EVP .. "\n" ..
           (m == "deputy" and ("deputy_token_file = " .. T .. "/deputy.token\n") or ""))
      local t0 = socket.gettime()
      local rc, _, l = submit({ comment = M })
      local dt = socket.gettime() - t0
      check(string.format("%s mode, service answers %s: refused as misconfigured, naming why (%.3f s)", m, mode, dt),
            rc == -1 and l:find("log_user gpucast: " .. "gpucast is misconfigured", 1, true) ~= nil and
            ((m == "upload" and (mode == "close" or mode == "huge")) or l:find(want, 1, true) ~= nil) and dt < 2, l)
    end
  end
  broken("close", "unreachable")
  broken("huge", "its answer is larger than 1048576 bytes")
  for _, v in ipairs({ "-5", "150", "1e999", "-1e999", "1e-" }) do broken("util:" .. v, "not a percentage in [0, 100]") end
  broken("mem:-5", "gpu_mem_interval.high = -5, not a finite MiB >= 0")
  broken("mem:1e999", "gpu_mem_interval.high = inf")
  broken("cap:1e999", "gpu_mem_capacity_mib = inf, not a finite MiB")
  local f = io.open(T .. "/evil.port.mode", "w"); f:write("util:0"); f:close()
  conf("mode = service\nurl = http://127.0.0.1:" .. EVP .. "\ndeputy_token_file = " .. T .. "/deputy.token\n")
  sized("a service predicting 0% (a real percentage): one shard", { comment = M }, "gres:shard:1")
  conf()
end
-- A 1 MB job name and a 1 MB declaration item reach the user and slurmctld.log as 256 bytes and
-- their length (they were echoed whole, per submission).
do
  local big = string.rep("x", 1048576)
  local rc, _, l = submit({ comment = "model=" .. big, name = big })
  check(string.format("a 1 MB name and a 1 MB item: refused, %d bytes of log in all", #l),
        rc == -1 and #l < 4096 and l:find("name=" .. string.rep("x", 256) .. "... (1048576 bytes)", 1, true) ~= nil and
        l:find("log_user gpucast: rejected: --comment: model=" .. string.rep("x", 256) .. "... (1048576 bytes): want an " ..
               "absolute path", 1, true) ~= nil,
        l:sub(1, 2000))
  rc, _, l = submit({ comment = M .. ",dim." .. big .. "=0" })
  check(string.format("a 1 MB dim name: refused, %d bytes of log", #l), rc == -1 and #l < 4096, #l)
end
if failed > 0 then print("plugin test: FAILED (" .. failed .. ")"); os.exit(1) end
print("plugin test: PASSED")
EOF
env SLURM_CONF=/etc/slurm/slurm.conf SLURM_JOB_ID=7 GPUCAST_TEST_CONTROLLER_SECRET=s3cret \
  lua5.1 "$T/test.lua" "$T" "$HERE"

# With a gpucast binary (make test passes BUILD/gpucast): the plugin's prediction of a job on a
# MIG slice, in cli mode with the real binary, is `gpucast predict --gpu G --mig P` of the same job
# (the same numbers in the AdminComment), not the whole GPU's; a profile the GPU lacks names the gres.
if [ -n "${1:-}" ]; then
  BIN=$(realpath "$1"); MODEL=$(realpath "$HERE/../../models/pointnet.onnx")
  PRED=${GPUCAST_TEST_PREDICTOR:-}
  if [ -z "$PRED" ] || [ ! -s "$PRED" ]; then PRED=$T/predictor.json; "$BIN" train --out "$PRED" --quiet >/dev/null; fi
  mkdir -p "$T/real"; cp "$HERE/job_submit.lua" "$T/real/"
  printf 'gpucast = %s\npredictor = %s\ntimeout_s = 60\nuser_budget_s = 0\ngpu_types = a100:A100-80GB\n' "$BIN" "$PRED" \
    > "$T/real/gpucast.conf"
  cat > "$T/real/run.lua" <<'EOF'
local log = {}
slurm = { SUCCESS = 0, ERROR = -1, log_info = function() end,
          log_error = function(f, ...) io.stderr:write(string.format(f, ...) .. "\n") end,
          log_user = function(f, ...) log[#log + 1] = string.format(f, ...) end }
dofile(arg[1] .. "/job_submit.lua")
local NV = 4294967294
local owner = tonumber(arg[4] or "0")
local d = { comment = "model=" .. arg[2] .. ",batch=32", tres_per_node = arg[3], min_nodes = NV, max_nodes = NV,
            num_tasks = NV, ntasks_per_tres = 65534, shared = 65534, user_id = owner, group_id = owner, name = "j" }
local rc = slurm_job_submit(d, {}, 0)
print(rc .. "\31" .. (d.admin_comment or "") .. "\31" .. (d.tres_per_node or "") .. "\31" .. table.concat(log, " | "))
EOF
  real_fail=0
  real_check() { if [ "$2" = "$3" ]; then echo "  ok: real gpucast: $1"; else echo "  FAIL: real gpucast: $1: got '$2', want '$3'"; real_fail=1; fi; }
  # The reference: gpucast predict itself, its numbers as the AdminComment formats them.
  ref() {
    "$BIN" predict --json --predictor "$PRED" --model "$MODEL" --batch 32 --gpu A100-80GB "$@" 2>/dev/null | /usr/bin/python3 -c '
import json, sys; j = json.load(sys.stdin)
print("util=%.1f interval=%.1f-%.1f basis=point mem=%.0f/%.0f" % (j["gpu_util"], j["interval"]["low"], j["interval"]["high"],
      j["gpu_mem_interval"]["high"], j["gpu_mem_capacity_mib"]))'
  }
  want=$(ref --mig 1g.10gb); whole=$(ref)
  IFS=$'\x1f' read -r rc comment tpn msg < <(lua5.1 "$T/real/run.lua" "$T/real" "$MODEL" "gres:gpu:a100_1g.10gb:1")
  real_check "gpu:a100_1g.10gb:1 accepted, kept" "$rc $tpn" "0 gres:gpu:a100_1g.10gb:1"
  real_check "AdminComment = gpucast predict --gpu A100-80GB --mig 1g.10gb" "$comment" \
    "gpucast: model=$MODEL batch=32 gpu=A100-80GB mig=1g.10gb $want share=mig:1/1"
  [ "$want" != "$whole" ] && echo "  ok: real gpucast: the slice's prediction is not the whole GPU's ($whole)" ||
    { echo "  FAIL: real gpucast: the slice predicted as the whole GPU ($whole)"; real_fail=1; }
  IFS=$'\x1f' read -r rc comment tpn msg < <(lua5.1 "$T/real/run.lua" "$T/real" "$MODEL" "gres:gpu:a100_2g.10gb:1")
  real_check "a profile A100-80GB lacks: refused, naming the gres and gpucast's reason" "$rc $msg" \
    "-1 gpucast: rejected: MIG slice 'gpu:a100_2g.10gb:1' on A100-80GB (--gres type a100): --mig: GPU 'A100-80GB' has no MIG profile '2g.10gb' (profiles: 1g.10gb, 2g.20gb, 3g.40gb, 4g.40gb, 7g.80gb) (predicted as gpucast predict --gpu A100-80GB --mig 2g.10gb)"
  # The service front end (POST /v1/predict: the upload and, as uid 1 (daemon), the deputy): the same numbers.
  # (The deputy reads files as other users: gpucast serve refuses --deputy-token-file without root.)
  modes=upload; dep=()
  if [ "$(id -u)" = 0 ]; then modes="upload deputy"; dep=(--deputy-token-file "$T/deputy.token" --deputy-min-uid 1)
  else echo "  (real gpucast: deputy mode not checked: it needs root)"; fi
  "$BIN" serve --listen 127.0.0.1:0 --db "$T/real/serve.db" --predictor "$PRED" --cluster "1x A100-80GB" \
    "${dep[@]}" >"$T/real/serve.out" 2>"$T/real/serve.err" &
  SERVE_PID=$!
  SURL=http://$(serve_addr "$T/real/serve.out" "$SERVE_PID" 10 "$T/real/serve.err") ||
    { echo "plugin test: FAILED: gpucast serve did not start"; exit 1; }
  cp "$T/real/gpucast.conf" "$T/real/gpucast.conf.cli"
  for mode in $modes; do
    owner=0; extra=""
    if [ "$mode" = deputy ]; then owner=1; extra="deputy_token_file = $T/deputy.token"; fi
    { cat "$T/real/gpucast.conf.cli"; printf 'mode = service\nurl = %s\n%s\n' "$SURL" "$extra"; } > "$T/real/gpucast.conf"
    IFS=$'\x1f' read -r rc comment tpn msg < <(lua5.1 "$T/real/run.lua" "$T/real" "$MODEL" "gres:gpu:a100_1g.10gb:1" "$owner")
    real_check "$mode mode (gpucast serve): AdminComment = gpucast predict --gpu A100-80GB --mig 1g.10gb" "$rc $comment" \
      "0 gpucast: model=$MODEL batch=32 gpu=A100-80GB mig=1g.10gb $want share=mig:1/1"
    IFS=$'\x1f' read -r rc comment tpn msg < <(lua5.1 "$T/real/run.lua" "$T/real" "$MODEL" "gres:gpu:a100_2g.10gb:1" "$owner")
    case "$msg" in
      "gpucast: rejected: MIG slice 'gpu:a100_2g.10gb:1' on A100-80GB (--gres type a100): "*"GPU 'A100-80GB' has no MIG profile '2g.10gb'"*)
        echo "  ok: real gpucast: $mode mode: a profile A100-80GB lacks: refused, naming the gres" ;;
      *) echo "  FAIL: real gpucast: $mode mode: a profile A100-80GB lacks: got '$rc $msg'"; real_fail=1 ;;
    esac
  done
  kill "$SERVE_PID"; wait "$SERVE_PID" 2>/dev/null || true; SERVE_PID=""
  [ "$real_fail" = 0 ] || { echo "plugin test: FAILED (real gpucast)"; exit 1; }
  echo "plugin test (real gpucast, MIG): PASSED"
fi
