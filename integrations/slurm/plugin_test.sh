#!/usr/bin/env bash
# Offline test of job_submit.lua's rules (no Slurm, no root): the plugin runs under Debian's
# lua5.1 (the Lua slurmctld embeds) with a fake `slurm` table and a stub gpucast that
# answers 52.5% (interval 40.0-61.0) for any readable model. Expected shares are hand
# computed: ceil(52.5 x 8 / 100) = ceil(4.2) = 5 shards; ceil(61.0 x 8 / 100) = ceil(4.88) = 5;
# ceil(52.5 x 100 / 100) = 53 mps. The live test (test.sh) checks the same rules in Slurm.
# Usage: integrations/slurm/plugin_test.sh
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
command -v lua5.1 >/dev/null || { echo "plugin test: FAILED: lua5.1 missing (make deps)" >&2; exit 1; }
T=$(mktemp -d /tmp/gpucast-plugin.XXXXXX)
trap 'rm -rf "$T"' EXIT
cp "$HERE/job_submit.lua" "$T/"
# The stub also records what it inherited: its open descriptors (a child lists the stub's
# /proc/PID/fd, so that the listing's own redirection is not seen) and its environment.
cat > "$T/gpucast" <<'EOF'
#!/bin/sh
sh -c 'ls -l /proc/$PPID/fd > "$1"' record "$(dirname "$0")/spawn.fds"
env > "$(dirname "$0")/spawn.env"
m=""; ms=""; while [ $# -gt 0 ]; do case "$1" in --model) m=$2; ms="$ms --model $2"; shift ;; esac; shift; done
echo "$ms" > "$(dirname "$0")/models.args"
[ -r "$m" ] || { echo "gpucast predict: $m: cannot open: No such file or directory" >&2; exit 1; }
case "$m" in *bad*) echo "gpucast predict: $m: not an ONNX model (malformed protobuf)" >&2; exit 1 ;; esac
echo '{ "gpu_util": 52.5, "interval": { "high": 61.0, "level": 0.8, "low": 40.0 } }'
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
touch "$T/m.onnx" "$T/bad.onnx" "$T/d.onnx"
mkdir -p "$T/my models" "$T/overuse"
touch "$T/my models/m%1.onnx" "$T/my models/a=b,c.onnx"
sed -e "s|^gpucast = /usr/local/bin/gpucast |gpucast = $T/gpucast |" "$HERE/gpucast.conf.example" > "$T/gpucast.conf.site"
cat > "$T/test.lua" <<'EOF'
local T = arg[1]
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
local function submit(d)
  log = {}
  for k, v in pairs({ min_nodes = NV, num_tasks = NV, ntasks_per_tres = 65534, user_id = 0, group_id = 0, name = "j" }) do
    if d[k] == nil then d[k] = v end
  end
  return slurm_job_submit(d, {}, 0), d, table.concat(log, "\n")
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
      "gpucast: model=" .. T .. "/m.onnx batch=8 util=52.5 interval=40.0-61.0 basis=point share=shard:5/8", d.admin_comment)
check("decision logged", l:find("log_info gpucast: uid=0 name=j: sized:", 1, true) ~= nil, l)
sized("--gres=gpu:1", { comment = M, tres_per_node = "gres:gpu:1" }, "gres:shard:5")
sized("other gres kept", { comment = M, tres_per_node = "gres:gpu:1,gres:nic:1" }, "gres:shard:5,gres:nic:1")
d = sized("--gpus=1", { comment = M, tres_per_job = "gres:gpu:1" }, "gres:shard:5")
check("--gpus cleared", d.tres_per_job == "", d.tres_per_job)
d = sized("-n1 --gpus-per-task=1", { comment = M, tres_per_task = "gres:gpu:1", num_tasks = 1 }, "gres:shard:5")
check("--gpus-per-task cleared", d.tres_per_task == "", d.tres_per_task)
refused("typed", { comment = M, tres_per_node = "gres:gpu:a100:2" }, "typed GPU request 'gpu:a100:2'")
-- Several networks per step: each model= is one forward+backward pass (as gpucast predict --model).
d, l = sized("GAN: model=G,model=D,model=D", { comment = M .. ",model=" .. T .. "/d.onnx,model=" .. T .. "/d.onnx" },
             "gres:shard:5")
check("every pass reaches gpucast predict", io.open(T .. "/models.args"):read("*l") ==
      " --model " .. T .. "/m.onnx --model " .. T .. "/d.onnx --model " .. T .. "/d.onnx",
      io.open(T .. "/models.args"):read("*a"))
check("AdminComment keeps one model= per pass", d.admin_comment ==
      "gpucast: model=" .. T .. "/m.onnx model=" .. T .. "/d.onnx model=" .. T .. "/d.onnx batch=8 util=52.5 " ..
      "interval=40.0-61.0 basis=point share=shard:5/8", d.admin_comment)
check("the user sees the networks", l:find(T .. "/m.onnx + " .. T .. "/d.onnx x2 batch 8", 1, true) ~= nil, l)
local many = M
for i = 1, 16 do many = many .. ",model=" .. T .. "/n" .. i .. ".onnx" end
refused("17 networks", { comment = many }, "more than 16 different model= networks")
conf("mode = service\nurl = http://127.0.0.1:9\n")  -- curl upload: one graph per request, refused before any request
refused("GAN in upload mode", { comment = M .. ",model=" .. T .. "/d.onnx" }, "uploads one graph per job")
conf()
refused("--gpus=4", { comment = M, tres_per_job = "gres:gpu:4" }, "this job asks for 4 GPUs")
refused("-n2 --gpus-per-task=1", { comment = M, tres_per_task = "gres:gpu:1", num_tasks = 2 }, "this job asks for 2 GPUs")
refused("-N4", { comment = M, tres_per_node = "gres:gpu:1", min_nodes = 4 }, "this job asks for 4 nodes")
refused("--cpus-per-gpu", { comment = M, cpus_per_tres = "gres:gpu:2" }, "--cpus-per-gpu")
refused("--gpus-per-socket", { comment = M, tres_per_socket = "gres:gpu:1" }, "--gpus-per-socket")
refused("no model, --gres=shard:1", { tres_per_node = "gres:shard:1" }, "GPU jobs must name their model")
local rc
rc, d, l = submit({ tres_per_node = "gres:nic:1" })
check("no model, no GPU: unchanged", rc == 0 and d.tres_per_node == "gres:nic:1" and l:find("accepted unchanged"), l)
local a = refused("missing model", { comment = "model=" .. T .. "/missing.onnx,batch=8" }, "the model file cannot be read")
refused("bad model", { comment = "model=" .. T .. "/bad.onnx,batch=8" }, "not an ONNX model")
refused("no batch", { comment = "model=" .. T .. "/m.onnx" }, "no batch=N")
-- Model paths with spaces, '%', '=' and ',': declared percent-encoded (a comment splits
-- at blanks and commas), kept percent-encoded in the AdminComment as one token.
local SP = T .. "/my%20models/"
d = sized("path with a space, declared %20", { comment = "model=" .. SP .. "m%251.onnx,batch=8" }, "gres:shard:5")
check("AdminComment encodes ' ' and '%'", d.admin_comment ==
      "gpucast: model=" .. SP .. "m%251.onnx batch=8 util=52.5 interval=40.0-61.0 basis=point share=shard:5/8", d.admin_comment)
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
local rec = { user_id = 0, group_id = 0, job_id = 7, name = "j", tres_per_node = "gres:shard:8",
              admin_comment = "gpucast: model=x batch=64 util=99.0 interval=98.0-100.0 basis=point share=shard:8/8" }
local function modify(desc, uid)
  log = {}
  for k, v in pairs({ min_nodes = NV, num_tasks = NV, ntasks_per_tres = 65534 }) do if desc[k] == nil then desc[k] = v end end
  return slurm_job_modify(desc, rec, {}, uid or 1001), desc, table.concat(log, "\n")
end
for _, tpn in ipairs({ "gres:shard:1", "gres:gpu:1", "gres:nic:1", "gres:mps:50" }) do
  rc, _, l = modify({ tres_per_node = tpn })
  check("modify to " .. tpn .. " refused (ESLURM_INVALID_GRES), reason logged", rc == 2072 and l:find("was sized gres:shard:8"), l)
end
rc = modify({ tres_per_job = "gres:gpu:2" })
check("modify adding --gpus=2 refused", rc == 2072, rc)
rec.admin_comment = rec.admin_comment:gsub("shard:8/8", "shard:5/8")
rc = modify({ tres_per_node = "gres:shard:6" })
check("modify raising shard:5 -> 6 accepted", rc == 0, rc)
rc, d, l = modify({ comment = M })
check("new model declaration by the owner refused", rc == 2072 and l:find("cannot be changed after submission"), l)
rc, d, l = modify({ comment = M }, 0)
check("new model declaration by root re-predicted", rc == 0 and d.tres_per_node == "gres:shard:5", tostring(rc) .. " " .. tostring(d.tres_per_node) .. " " .. l)
rc = modify({ comment = "just a note" })
check("plain comment change untouched", rc == 0, rc)
rec.admin_comment = nil
rc = modify({ tres_per_node = "gres:shard:1" })
check("GPU share added to a job without model refused", rc == 2072, rc)

if failed > 0 then print("plugin test: FAILED (" .. failed .. ")"); os.exit(1) end
print("plugin test: PASSED")
EOF
env SLURM_CONF=/etc/slurm/slurm.conf SLURM_JOB_ID=7 GPUCAST_TEST_CONTROLLER_SECRET=s3cret \
  lua5.1 "$T/test.lua" "$T"
