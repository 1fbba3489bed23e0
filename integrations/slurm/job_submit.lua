--[[
gpucast job_submit plugin for Slurm 22.05 (JobSubmitPlugins=lua). Operator guide: docs/slurm.md.

For every job (sbatch, salloc, srun; array and heterogeneous components alike) that names
its model, asks gpucast for the job's predicted GPU utilization U and rewrites its GPU
request to a share of ONE GPU:
  share = shard: gres:shard:N, N = ceil(U x shards_per_gpu / 100), 1 <= N <= shards_per_gpu
  share = mps:   gres:mps:P,   P = ceil(U x mps_per_gpu / 100)  (Slurm then sets
                 CUDA_MPS_ACTIVE_THREAD_PERCENTAGE = P x 100 / mps_per_gpu in the job)
With headroom = interval, U is the upper end of gpucast's prediction interval.
With memory = high (the default), N (P) is at least ceil(H x shards_per_gpu / C) for the
high end H of the predicted GPU memory's interval and the GPU's memory C (MiB), and a job
with H > C is refused; memory = none sizes by utilization alone.

A job names its model in either place (the comment wins):
  sbatch --comment=model=/path/m.onnx,batch=32,amp=1,dim.seq=384,attr.loader_workers=2 job.sh
  #GPUCAST model=/path/m.onnx batch=32 amp=1 dim.seq=384 attr.rl_env=1   (a line of the script)
A path with blanks or commas is written percent-encoded (%20 blank, %2C comma, %25 '%'):
  model=/data/my%20models/m.onnx. The AdminComment keeps the path encoded the same way
  (%, blanks, control characters, '=' and ',' as %XX), so it stays one token; gpucast-epilog.sh decodes it.

Overuse (overuse_hold = yes): gpucast-epilog.sh records a user whose job used more than
its share by more than overuse_margin in overuse_dir/USER; while that file exists the
user's model-declaring jobs are submitted held (priority 0) and the owner's release is
refused; the operator clears it with rm overuse_dir/USER (then scontrol release).

The model is read with the job owner's uid and groups (run_as: setpriv), never with
slurmctld's rights: a file the user may not read is refused exactly like a missing one.

Every GPU request form is examined (--gres, typed gres, --gpus, --gpus-per-node,
--gpus-per-task, --gpus-per-socket, -N, --cpus/--mem-per-gpu); other gres are kept.
A job asking for N > 1 GPUs on one node gets N whole GPUs (gres:gpu:N: shards cannot span
GPUs), predicted per GPU (gpucast predict --gpus N where gpucast has it); multi_gpu = refuse
refuses it. Jobs across nodes are refused; node ranges are pinned to one node. The GPU a job is
predicted for comes from its typed request, --constraint, partition (gpucast.conf: gpu_types,
partition_gpus) or default_gpu. --exclusive jobs (every GPU of the node) are GPU jobs.
A MIG slice, a typed gpu gres whose type is a MIG profile as Slurm's AutoDetect=nvml names them
(--gres=gpu:1g.10gb:1, gpu:a100_1g.10gb:1), is kept as asked (an isolated GPU of its own: no
share) and predicted for that slice (gpucast predict --gpu G --mig PROFILE); the AdminComment
records it (mig=PROFILE share=mig:1/1).
slurm_job_modify keeps the decision: lowering a sized job's share or turning it into a
whole-GPU request is refused; more shards are allowed; a new model declaration is refused
(re-predicted when root makes the update).

Every decision is logged in slurmctld.log and kept on the job (AdminComment). Operator
mistakes (gpucast.conf, predictor, binary, service) are logged with slurm.log_error and
reach users only as "gpucast is misconfigured, contact your administrator" (fail closed).
Settings: gpucast.conf beside this file, read per job.
]]

-- Settings: name -> { default, kind }. kind: "string", "int", "map" (KEY:VALUE items
-- separated by commas or blanks), or a list of allowed words.
local SETTINGS = {
  mode = { "cli", { "cli", "service" } },          -- how gpucast is asked
  gpucast = { "/usr/local/bin/gpucast", "string" }, -- mode cli: the binary
  predictor = { "/etc/slurm/gpucast-predictor.json", "string" }, -- mode cli
  -- mode cli: a site's GPUs gpucast's table lacks (gpucast --gpu-table; world-readable), given
  -- to gpucast gpus and predict; "" = none. Mode service: give it to gpucast serve --gpu-table.
  gpu_table = { "", "string" },
  url = { "http://127.0.0.1:8080", "string" },      -- mode service: gpucast serve
  token_file = { "", "string" },                    -- mode service: bearer token file
  -- mode service without a fork per job: lua-socket posts the model's path with the
  -- job owner's uid:gid, and gpucast serve (started with --deputy-token-file, as root)
  -- opens it with that user's file identity. Needs Debian's lua-socket. "" = curl upload.
  deputy_token_file = { "", "string" },
  share = { "shard", { "shard", "mps" } },          -- which sharing gres the plugin hands out
  shards_per_gpu = { 8, "int" },                    -- = gres.conf Name=shard Count per GPU
  mps_per_gpu = { 100, "int" },                     -- = gres.conf Name=mps Count per GPU
  headroom = { "none", { "none", "interval" } },    -- interval: size from interval.high
  -- high: the share also holds the predicted memory's interval high end as a fraction of the
  -- GPU's memory (gpu_mem_interval.high / gpu_mem_capacity_mib, in every mode), and a job
  -- whose high end exceeds the GPU's memory is refused; none: utilization alone (opt-out).
  memory = { "high", { "none", "high" } },
  default_batch = { "", "string" },                 -- "" = a declaration without batch= is refused
  require_model = { 1, "int" },                     -- 1: GPU jobs must name a model
  -- job_modify: 1 lets owners raise a sized share (the epilog then measures overuse against
  -- the predicted share, not the raised one); 0 (default): the share stays as predicted.
  allow_more_shards = { 0, "int" },
  -- slurmctld holds its job lock while the plugin runs: a hard limit for one prediction.
  -- gpucast predict (and the deputy service) get a deadline 0.5 s below it.
  timeout_s = { 2, "int" },
  -- Seconds of prediction (time slurmctld spends in this plugin for a user's jobs) one uid
  -- may use per minute; above it its submissions of models are refused at once. 0: no budget.
  user_budget_s = { 3, "int" },
  -- Components of one heterogeneous job that may declare a model (each is predicted while
  -- slurmctld holds its lock; Slurm allows 128 components).
  max_model_components = { 4, "int" },
  -- slurm.conf and gres.conf the plugin reads (partition flags; shards per GPU); "" = beside
  -- this file (where slurmctld finds job_submit.lua).
  slurm_conf = { "", "string" },
  gres_conf = { "", "string" },
  -- PARTITION:GPU pairs: the GPU (gpucast's name) of each partition's nodes, or "none" for
  -- a partition without GPUs. Partitions not listed have GPUs (default_gpu).
  partition_gpus = { {}, "map" },
  -- TYPE:GPU pairs: a Slurm GPU type, as in --gres=gpu:TYPE:1 and as a node feature
  -- (Feature=TYPE, --constraint=TYPE), and the gpucast GPU it is.
  gpu_types = { {}, "map" },
  default_gpu = { "", "string" },                   -- GPU of jobs nothing else places; "" = the predictor's
  -- A job asking for N > 1 GPUs on one node: "whole" = gres:gpu:N (a job's shards cannot
  -- span GPUs), predicted as data-parallel (gpucast predict --gpus N); "refuse".
  multi_gpu = { "whole", { "whole", "refuse" } },
  -- Runs gpucast (or curl) as the job's owner; {uid} and {gid} are substituted. setpriv
  -- needs slurmctld to run as root (SlurmUser=root); see docs/slurm.md for SlurmUser=slurm.
  run_as = { "/usr/bin/setpriv --reuid={uid} --regid={gid} --init-groups --", "string" },
  -- Overuse (gpucast-epilog.sh reports it; docs/slurm.md "Overuse"): with overuse_hold = yes
  -- the epilog writes overuse_dir/USER and the GPU jobs USER submits next are held.
  overuse_margin = { 20, "int" },                  -- points above the share that count as overuse
  overuse_hold = { "no", { "no", "yes" } },
  overuse_dir = { "/var/lib/gpucast/overuse", "string" },
  -- Read by gpucast-epilog.sh only (accepted here so one gpucast.conf serves both).
  nvsmi_log_dir = { "", "string" },
  acct_freq_s = { 30, "int" },
  epilog_log = { "", "string" },
}

local MISCONFIGURED = "gpucast is misconfigured, contact your administrator (job rejected)"

-- Errors raised inside the plugin: a table { kind = "user"|"config", msg = ... }.
-- Anything else raised (a Lua runtime error) is treated like a configuration error.
local function user_error(msg) error({ kind = "user", msg = msg }, 0) end
local function config_error(msg) error({ kind = "config", msg = msg }, 0) end

-- The service's bounds on a job's batch and dims (src/util/job_limits.h): a declaration every
-- mode accepts alike (cli mode ran gpucast predict on any number; service mode got a 400), and no
-- number Lua 5.1 cannot format with %d (batch=99999999999999999999).
local MAX_BATCH = 16777216
local MAX_DIM = 16777216
local MAX_REPEAT = 1000  -- passes of one network per step (src/service/job.h kMaxModelRepeat)
local function in_limit(v, max)
  return v:match("^%d+$") ~= nil and #v <= 9 and tonumber(v) >= 1 and tonumber(v) <= max
end

local function script_dir()
  local src = debug.getinfo(1, "S").source
  return (src:match("^@(.*/)") or "./")
end

-- gpucast.conf: KEY = VALUE lines; '#' starts a comment (whole line, or after blanks).
local function read_conf()
  local conf = {}
  for k, s in pairs(SETTINGS) do conf[k] = s[1] end
  local path = script_dir() .. "gpucast.conf"
  local f = io.open(path, "r")
  if not f then return conf end
  local n = 0
  for raw in f:lines() do
    n = n + 1
    local line = raw:gsub("^#.*$", ""):gsub("%s+#.*$", ""):match("^%s*(.-)%s*$")
    if line ~= "" then
      local k, v = line:match("^([%w_]+)%s*=%s*(.-)$")
      if not k then f:close(); config_error(path .. ":" .. n .. ": want KEY = VALUE, got '" .. raw .. "'") end
      local s = SETTINGS[k]
      if not s then f:close(); config_error(path .. ":" .. n .. ": unknown setting '" .. k .. "'") end
      if s[2] == "map" then
        local m = {}
        for item in v:gmatch("[^,%s]+") do
          local a, b = item:match("^([%w_%.%-]+):([%w_%.%-]+)$")
          if not a then f:close(); config_error(path .. ":" .. n .. ": '" .. k .. "' wants NAME:VALUE items, got '" .. item .. "'") end
          m[a] = b
        end
        v = m
      elseif s[2] == "int" then
        if not v:match("^%d+$") then f:close(); config_error(path .. ":" .. n .. ": '" .. k .. "' wants an integer, got '" .. v .. "'") end
        v = tonumber(v)
      elseif type(s[2]) == "table" then
        local ok = false
        for _, w in ipairs(s[2]) do ok = ok or (w == v) end
        if not ok then f:close(); config_error(path .. ":" .. n .. ": '" .. k .. "' wants one of " .. table.concat(s[2], "|") .. ", got '" .. v .. "'") end
      end
      conf[k] = v
    end
  end
  f:close()
  if conf.shards_per_gpu < 1 or conf.mps_per_gpu < 1 or conf.timeout_s < 1 then
    config_error(path .. ": shards_per_gpu, mps_per_gpu and timeout_s must be >= 1")
  end
  if conf.default_batch ~= "" and not in_limit(conf.default_batch, MAX_BATCH) then
    config_error(path .. ": 'default_batch' wants an integer in [1, " .. MAX_BATCH .. "] or nothing")
  end
  if not conf.default_gpu:match("^[%w_%.%-]*$") then
    config_error(path .. ": 'default_gpu' wants a GPU name (letters, digits, '_', '.', '-'), got '" .. conf.default_gpu .. "'")
  end
  for t, g in pairs(conf.gpu_types) do
    if g == "none" then config_error(path .. ": 'gpu_types' maps " .. t .. " to none (only partition_gpus has none)") end
  end
  return conf
end

-- A Slurm configuration file (slurm.conf, gres.conf): its lines without comments, each as
-- { n = line number, words = { key (lower case) = value } }; nil if it cannot be read.
local function slurm_conf_lines(path)
  local f = io.open(path, "r")
  if not f then return nil end
  local out, n = {}, 0
  for raw in f:lines() do
    n = n + 1
    local line = raw:gsub("#.*$", "")
    if line:match("%S") then
      local w = {}
      for k, v in line:gmatch("([%w_]+)=(%S+)") do w[k:lower()] = v end
      out[#out + 1] = { n = n, words = w, text = line }
    end
  end
  f:close()
  return out
end

local function beside(conf, key, name)
  return conf[key] ~= "" and conf[key] or (script_dir() .. name)
end

-- Partitions slurm.conf makes whole-node: every job there gets whole nodes, and with them
-- every GPU of the node (OverSubscribe=EXCLUSIVE, ExclusiveUser=YES, ExclusiveTopo=YES).
-- name -> the setting. part_list shows only OverSubscribe (max_share), so slurm.conf is read
-- (PartitionName=DEFAULT lines included; Include files are not followed: logged).
local function whole_node_partitions(conf)
  local path = beside(conf, "slurm_conf", "slurm.conf")
  local lines = slurm_conf_lines(path)
  local out = {}
  if not lines then return out end
  local defaults = {}
  for _, l in ipairs(lines) do
    local w = l.words
    if w.partitionname then
      local t = {}
      for k, v in pairs(defaults) do t[k] = v end
      for k, v in pairs(w) do t[k] = v end
      if w.partitionname:upper() == "DEFAULT" then
        defaults = t
      else
        local why = nil
        if (t.oversubscribe or ""):upper():match("^EXCLUSIVE") then why = "OverSubscribe=EXCLUSIVE"
        elseif (t.exclusiveuser or ""):upper() == "YES" then why = "ExclusiveUser=YES"
        elseif (t.exclusivetopo or ""):upper() == "YES" then why = "ExclusiveTopo=YES" end
        out[w.partitionname] = why
      end
    end
  end
  return out
end

-- Slurm 24.x's SelectTypeParameters=MULTIPLE_SHARING_GRES_PJ lets one job's shards come from
-- several GPUs of a node: gres:shard:5 of 8 may then be 3 on one GPU and 2 on another, which is
-- no share of one GPU (and --gres-flags=one-task-per-sharing does not make it one). The plugin
-- sizes a share of one GPU: with that flag GPU jobs are refused (configuration error).
local function check_select_params(conf)
  if conf.share ~= "shard" then return end
  local path = beside(conf, "slurm_conf", "slurm.conf")
  for _, l in ipairs(slurm_conf_lines(path) or {}) do
    local v = l.words.selecttypeparameters
    if v and v:upper():match("MULTIPLE_SHARING_GRES_PJ") then
      config_error(path .. ":" .. l.n .. ": SelectTypeParameters has MULTIPLE_SHARING_GRES_PJ, which lets a job's " ..
                   "shards come from several GPUs; gpucast sizes a share of one GPU: remove it (or use share = mps)")
    end
  end
end

-- A Slurm GPU type that names a MIG slice. With gres.conf AutoDetect=nvml Slurm makes each MIG
-- device a typed gpu gres named after its profile (docs/slurm.md "MIG slices"): gpu:1g.10gb:1, or
-- with the GPU's type in front, gpu:a100_1g.10gb:1. Returns the profile (lower case, without a
-- "+me" media-engine suffix: same compute and memory, docs/features.md) and the type before it
-- ("" if none); nil for a type that is no MIG profile.
local function mig_type(t)
  if not t then return nil end
  local lt = t:lower():gsub("%+me$", "")
  local prof = lt:match("^(%d+g%.%d+gb)$")
  if prof then return prof, "" end
  local gpu
  gpu, prof = lt:match("^(.+)_(%d+g%.%d+gb)$")
  if prof then return prof, gpu end
  return nil
end

-- Nodes with different GPU types (gres.conf Type=, slurm.conf Gres=gpu:TYPE:N) and a gpucast.conf
-- that maps none of them (gpu_types, partition_gpus) nor chose default_gpu: every job would be
-- predicted for the predictor's GPU, silently. A configuration error that says what to set.
local function check_gpu_types(conf)
  if next(conf.gpu_types) or next(conf.partition_gpus) or conf.default_gpu ~= "" then return end
  local types, order = {}, {}
  local function add(t)
    -- A MIG slice's type is a profile of a GPU: only the GPU's type before it counts.
    if mig_type(t) then t = select(2, mig_type(t)); if t == "" then t = nil end end
    if t and not types[t] then types[t] = true; order[#order + 1] = t end
  end
  for _, l in ipairs(slurm_conf_lines(beside(conf, "gres_conf", "gres.conf")) or {}) do
    if (l.words.name or ""):lower() == "gpu" then add(l.words.type) end
  end
  for _, l in ipairs(slurm_conf_lines(beside(conf, "slurm_conf", "slurm.conf")) or {}) do
    for t in (l.words.gres or ""):gmatch("gpu:([%a][%w_%.%-]*):%d+") do add(t) end
  end
  if #order > 1 then
    table.sort(order)
    config_error("the nodes have GPUs of " .. #order .. " types (" .. table.concat(order, ", ") .. ") but gpucast.conf " ..
                 "maps none (gpu_types, partition_gpus) and sets no default_gpu: every job would be predicted for the " ..
                 "predictor's GPU; set gpu_types = TYPE:GPU,... (and give the nodes Feature=TYPE) or partition_gpus")
  end
end

-- shards_per_gpu (mps_per_gpu) must equal gres.conf's count per GPU: with 16 where gres.conf
-- has 8, a job sized at 16 pends forever; with 4, two jobs at 100% share a GPU. Returns nil
-- when they agree, a note when gres.conf cannot tell (logged), or raises a config error.
local function check_gres_counts(conf)
  local name = conf.share
  local key = name == "mps" and "mps_per_gpu" or "shards_per_gpu"
  local want = conf[key]
  local path = beside(conf, "gres_conf", "gres.conf")
  local lines = slurm_conf_lines(path)
  if not lines then return "gres.conf (" .. path .. ") not read: " .. key .. " not checked against it" end
  local per_gpu, node_total, gpus = {}, nil, 0
  for _, l in ipairs(lines) do
    local w = l.words
    if (w.name or ""):lower() == "gpu" and w.file then
      -- /dev/nvidia[0-3] names 4 GPUs
      local a, b = w.file:match("%[(%d+)%-(%d+)%]")
      gpus = gpus + (a and (tonumber(b) - tonumber(a) + 1) or 1)
    end
    if (w.name or ""):lower() == name and w.count then
      local c = tonumber(w.count:match("^(%d+)$"))
      if not c then config_error(path .. ":" .. l.n .. ": Count=" .. w.count .. " of " .. name .. ": cannot check " .. key) end
      if w.file then per_gpu[#per_gpu + 1] = { c = c, n = l.n } else node_total = { c = c, n = l.n } end
    end
  end
  if #per_gpu == 0 and node_total and gpus > 0 then
    per_gpu[1] = { c = node_total.c / gpus, n = node_total.n, spread = true }
  end
  if #per_gpu == 0 then return "gres.conf (" .. path .. ") gives no " .. name .. " count per GPU: " .. key .. " not checked" end
  for _, e in ipairs(per_gpu) do
    if e.c ~= want then
      config_error("gpucast.conf: " .. key .. " = " .. want .. ", but " .. path .. ":" .. e.n .. " gives " ..
                   string.format("%g", e.c) .. " " .. name .. (e.spread and (" per GPU (Count over " .. gpus .. " GPUs)") or " per GPU") ..
                   ": set " .. key .. " = " .. string.format("%g", e.c) .. " (" ..
                   (e.c < want and ("a job sized at " .. want .. " would pend forever")
                    or ("a job sized at " .. want .. " would hold " .. want .. " of " .. string.format("%g", e.c) ..
                        ": two at 100% would share a GPU")) .. ")")
    end
  end
  return nil
end

-- slurmctld.log lines: every string that reaches one is escaped, so that a control
-- character in a user-controlled field (job name, comment, model path, a declaration's
-- item) cannot end the line and forge another: \n \r \t as such, others as \xHH.
local function esc(v)
  if type(v) ~= "string" then return v end
  return (v:gsub("[%c\\]", function(c)
    if c == "\n" then return "\\n" elseif c == "\r" then return "\\r" elseif c == "\t" then return "\\t"
    elseif c == "\\" then return "\\\\" end
    return string.format("\\x%02x", c:byte())
  end))
end
local unpack = unpack or table.unpack
local function log_info(fmt, ...)
  local a = { ... }
  for i = 1, select("#", ...) do a[i] = esc(a[i]) end
  slurm.log_info(fmt, unpack(a, 1, select("#", ...)))
end
local function log_error(fmt, ...)
  local a = { ... }
  for i = 1, select("#", ...) do a[i] = esc(a[i]) end
  slurm.log_error(fmt, unpack(a, 1, select("#", ...)))
end

-- Single-quotes s for /bin/sh.
local function shq(s)
  return "'" .. tostring(s):gsub("'", "'\\''") .. "'"
end

-- A model path in the AdminComment: '%', whitespace, control characters, '=' and ','
-- as %XX, so the path is one space-free token that cannot pose as another key
-- (gpucast-epilog.sh decodes it). Declarations may use the same encoding.
local function pct_encode(s)
  return (tostring(s):gsub("[%%%s%c=,]", function(c) return string.format("%%%02X", c:byte()) end))
end

local function pct_decode(s)
  return (s:gsub("%%(%x%x)", function(h) return string.char(tonumber(h, 16)) end))
end

local function urlenc(s)
  return (tostring(s):gsub("[^%w%-%._~/]", function(c) return string.format("%%%02X", c:byte()) end))
end

-- A user's value as messages and slurmctld.log show it: at most 256 bytes, then how long it was
-- (a 1 MB job name or declaration item was echoed whole, per submission, into both).
local function shown(v)
  v = tostring(v)
  if #v <= 256 then return v end
  return v:sub(1, 256) .. "... (" .. #v .. " bytes)"
end

-- The job's model declaration ------------------------------------------------

-- Parses "k=v" items separated by `sep` (a Lua pattern class). Raises a user error.
local function parse_items(text, sep, where, conf)
  local d = { dims = {}, attrs = {} }
  for item in text:gmatch("[^" .. sep .. "]+") do
    local k, v = item:match("^([%w_%.]+)=(.+)$")
    if not k then user_error(where .. ": malformed item '" .. shown(item) .. "' (want KEY=VALUE)") end
    if k == "model" then
      -- Each model= is one forward+backward pass of that network per training step, as
      -- `gpucast predict --model` counts them: model=G,model=D,model=D is a GAN step.
      local path = pct_decode(v)
      -- Relative to what? slurmctld's directory means nothing to the user: refuse.
      if path:sub(1, 1) ~= "/" then user_error(where .. ": model=" .. shown(v) .. ": want an absolute path") end
      -- A NUL byte (declared %00) ends the C string popen gets: the command would be cut there.
      if path:find("%z") then user_error(where .. ": model=" .. shown(v) .. ": a path cannot contain a NUL byte (%00)") end
      d.models = d.models or {}
      local found = false
      for _, m in ipairs(d.models) do
        if m.path == path then
          -- gpucast serve's bound (src/service/job.h kMaxModelRepeat); cli mode passes one
          -- --model per pass, so an unbounded count would build an unbounded command line.
          if m.n >= MAX_REPEAT then user_error(where .. ": model=" .. shown(v) .. " given more than " .. MAX_REPEAT .. " times") end
          m.n = m.n + 1; found = true
        end
      end
      if not found then
        if #d.models >= 16 then user_error(where .. ": more than 16 different model= networks") end
        d.models[#d.models + 1] = { path = path, n = 1 }
      end
      d.model = d.models[1].path
    elseif k == "batch" then
      if not in_limit(v, MAX_BATCH) then user_error(where .. ": batch=" .. shown(v) .. ": want an integer in [1, " .. MAX_BATCH .. "]") end
      d.batch = tonumber(v)
    elseif k == "amp" then
      if v ~= "0" and v ~= "1" then user_error(where .. ": amp=" .. shown(v) .. ": want 0 or 1") end
      d.amp = (v == "1")
    elseif k:match("^dim%.[%w_]+$") then
      if not in_limit(v, MAX_DIM) then user_error(where .. ": " .. shown(k) .. "=" .. shown(v) .. ": want an integer in [1, " .. MAX_DIM .. "]") end
      d.dims[k:sub(5)] = tonumber(v)
    elseif k:match("^attr%.[%w_]+$") then
      -- Letters, digits, '_' and '.': the values gpucast predict --attr takes (optimizer=adamw,
      -- loader_ms_per_sample=2.5, trainable_fraction=0.25); gpucast checks them (docs/features.md).
      if not v:match("^[%w_%.]+$") then user_error(where .. ": " .. shown(k) .. "=" .. shown(v) .. ": bad value") end
      d.attrs[k:sub(6)] = v
    else
      user_error(where .. ": unknown key '" .. shown(k) .. "' (known: model, batch, amp, dim.NAME, attr.KEY)")
    end
  end
  if not d.model then user_error(where .. ": no model=PATH") end
  if not d.batch then
    if conf.default_batch == "" then
      user_error(where .. ": no batch=N: the prediction depends on the batch size, add batch=N")
    end
    d.batch = tonumber(conf.default_batch)
    d.batch_defaulted = true
  end
  return d
end

-- The declared networks for messages: "G", or "G + D x3" for several.
local function models_label(d)
  local parts = {}
  for _, m in ipairs(d.models) do parts[#parts + 1] = m.path .. (m.n > 1 and (" x" .. m.n) or "") end
  return table.concat(parts, " + ")
end

-- One network run once per step (the plain case every transport handles).
local function single_network(d) return #d.models == 1 and d.models[1].n == 1 end

-- From the comment (if it mentions model=) or a #GPUCAST line of the script; nil if none.
local function find_declaration(comment, script, conf)
  if comment and comment:match("model=") then
    return parse_items(comment, ",%s", "--comment", conf)
  end
  if script then
    for line in script:gmatch("[^\n]+") do
      local rest = line:match("^#GPUCAST%s+(.*)$")
      if rest then return parse_items(rest, "%s", "#GPUCAST line", conf) end
    end
  end
  return nil
end

-- The job's GPU request ---------------------------------------------------------

local NO_VAL_MIN = 4294967000  -- NO_VAL, NO_VAL - 1, INFINITE: "not set"
local function isset(n) return n ~= nil and n < NO_VAL_MIN and n ~= 65534 and n ~= 65535 end

-- "gres:gpu:a100:2,gres:nic:1" -> list of { name, type, count, text }.
local function parse_tres(s)
  local out = {}
  if not s or s == "" then return out end
  for item in s:gmatch("[^,]+") do
    -- Slurm 22.05 writes gres:gpu:2; 24.11 gres/gpu:2, and TRES forms gres/gpu=2.
    local body = item:gsub("^gres[:/]", ""):gsub("=(%d+)$", ":%1")
    local parts = {}
    for p in body:gmatch("[^:]+") do parts[#parts + 1] = p end
    local e = { name = parts[1] or "", text = item }
    local last = parts[#parts]
    if #parts >= 2 and last:match("^%d+$") then
      -- A count of 10 digits or more (gpu:99999999999999999999) is no count of GPUs or shares:
      -- as a Lua number it would be written back as gres:gpu:1e+20.
      if #last > 9 and (e.name == "gpu" or e.name == "shard" or e.name == "mps") then
        user_error("'" .. shown((item:gsub("^gres[:/]", ""))) .. "': " .. #last .. " digits is no count of " .. e.name ..
                   " (at most 9 digits)")
      end
      e.count = tonumber(last)
      if #parts >= 3 then e.type = parts[2] end
    else
      e.count = 1
      if #parts >= 2 then e.type = parts[2] end
    end
    out[#out + 1] = e
  end
  return out
end

local function is_gpu(e) return e.name == "gpu" end
local function is_share(e) return e.name == "shard" or e.name == "mps" end

local function mentions_gpu(s) return s ~= nil and (s:match("gpu") or s:match("shard") or s:match("mps")) ~= nil end

local REQ_FIELDS = { "tres_per_node", "tres_per_job", "tres_per_task", "tres_per_socket", "cpus_per_tres", "mem_per_tres" }
-- The request fields that name gres (the others of REQ_FIELDS count per GPU).
local GRES_FIELDS = { "tres_per_node", "tres_per_job", "tres_per_task", "tres_per_socket" }

-- Does the request ask for a GPU or a share of one anywhere? (--gres=gpu:0 does not.)
local function wants_gpu(req)
  for _, f in ipairs(GRES_FIELDS) do
    for _, e in ipairs(parse_tres(req[f])) do
      if (is_gpu(e) or is_share(e)) and e.count > 0 then return true end
    end
  end
  return mentions_gpu(req.cpus_per_tres) or mentions_gpu(req.mem_per_tres) or isset(req.ntasks_per_tres)
end

-- The partitions the job may run in: its -p list, else the default partition.
local function job_partitions(partition, part_list)
  local names = {}
  if partition and partition ~= "" then
    for p in partition:gmatch("[^,]+") do names[#names + 1] = p end
  else
    for name, p in pairs(part_list or {}) do
      if tonumber(p.flag_default) == 1 then names[#names + 1] = name end
    end
  end
  return names
end

-- Does the job take whole nodes? Slurm gives such a job every GPU of its node, whatever it
-- asks for (--gres=gpu:0 included: JOB_GRES=gpu:2 in the live test). Every form: --exclusive
-- (job_desc.shared 0), --exclusive=user (2), --exclusive=mcs (3), --exclusive=topo (4,
-- Slurm 24.11), or a partition with OverSubscribe=EXCLUSIVE (part_list max_share 0),
-- ExclusiveUser=YES or ExclusiveTopo=YES (slurm.conf). Returns what makes it so, or nil.
local SHARED_WHOLE = { [0] = "--exclusive", [2] = "--exclusive=user", [3] = "--exclusive=mcs", [4] = "--exclusive=topo" }
local function takes_whole_nodes(shared, parts, part_list, conf)
  if shared ~= nil and SHARED_WHOLE[shared] then return SHARED_WHOLE[shared] end
  local flagged = whole_node_partitions(conf)
  for _, name in ipairs(parts) do
    local p = part_list and part_list[name]
    if p and tonumber(p.max_share) == 0 then return "partition " .. name .. ", OverSubscribe=EXCLUSIVE" end
    if flagged[name] then return "partition " .. name .. ", " .. flagged[name] end
  end
  return nil
end

-- Can the job land on a node with GPUs? Unless every partition it may use is listed as
-- "none" in partition_gpus (fail closed: an unlisted partition has GPUs).
local function may_get_gpus(conf, parts)
  if #parts == 0 then return true end
  for _, name in ipairs(parts) do
    if conf.partition_gpus[name] ~= "none" then return true end
  end
  return false
end

local OPTION = { tres_per_node = "--gres/--gpus-per-node", tres_per_job = "--gpus", tres_per_task = "--gpus-per-task",
                 tres_per_socket = "--gpus-per-socket" }

-- A request for a MIG slice (a typed gpu gres whose type is a MIG profile, mig_type): Slurm
-- hands the job that slice, an isolated GPU of its own, so the request is kept as it is and
-- predicted for the slice (gpucast predict --gpu G --mig PROFILE). One slice, on one node, and
-- nothing else of a GPU beside it. Returns { profile, type, gres, types } (types: the gpu_types
-- key that names the slice's GPU: the whole type, else the GPU's type before the profile), or nil
-- when the request names no MIG slice. Raises a user error naming the gres otherwise.
local function plan_mig(req, conf, nodes, tasks)
  local mig, other = nil, nil
  for _, f in ipairs(GRES_FIELDS) do
    for _, e in ipairs(parse_tres(req[f])) do
      local g = e.text:gsub("^gres[:/]", "")
      local prof, gtype = mig_type(e.type)
      if prof and (is_gpu(e) or is_share(e)) then
        if not is_gpu(e) then
          user_error("'" .. g .. "': a MIG slice is not shared with shards or MPS here; gpucast predicts the job " ..
                     "on the whole slice: ask for it as a GPU (--gres=gpu:" .. e.type .. ":1)")
        end
        if mig then
          user_error("this job asks for two MIG slice requests ('" .. mig.gres .. "', '" .. g .. "'); gpucast predicts " ..
                     "a job on one MIG slice: ask for one (--gres=gpu:" .. mig.type .. ":1)")
        end
        if nodes > 1 then
          user_error("this job asks for " .. nodes .. " nodes and a MIG slice ('" .. g .. "'); a MIG slice is on one " ..
                     "node: drop -N/--nodes")
        end
        local n = e.count
        if f == "tres_per_node" then n = n * nodes elseif f == "tres_per_task" then n = n * tasks end
        if f == "tres_per_socket" or n ~= 1 then
          user_error("'" .. g .. "' via " .. OPTION[f] .. " asks for " .. (f == "tres_per_socket" and "MIG slices per socket" or
                     (n .. " MIG slices")) .. "; gpucast predicts a job on one MIG slice: write --gres=gpu:" .. e.type .. ":1")
        end
        mig = { profile = prof, type = e.type, gres = g, gpu_type = gtype }
      elseif (is_gpu(e) or is_share(e)) and e.count > 0 then
        other = other or g
      end
    end
  end
  if not mig then return nil end
  if other then
    user_error("this job asks for a MIG slice ('" .. mig.gres .. "') and '" .. other .. "': gpucast predicts a job on one " ..
               "MIG slice: drop '" .. other .. "'")
  end
  mig.types = {}
  if conf.gpu_types[mig.type] then mig.types[1] = mig.type
  elseif mig.gpu_type ~= "" and conf.gpu_types[mig.gpu_type] then mig.types[1] = mig.gpu_type end
  return mig
end

-- Checks that the request of a model-declaring job is for (at most) one GPU and rewrites
-- it. Returns the new tres_per_node/job/task strings (other gres kept) and a note on
-- what was replaced. Raises a user error saying what to write instead.
local function plan_request(req, share_gres, conf)
  if mentions_gpu(req.cpus_per_tres) or mentions_gpu(req.mem_per_tres) or isset(req.ntasks_per_tres) then
    user_error("--cpus-per-gpu, --mem-per-gpu and --ntasks-per-gpu count whole GPUs, but gpucast gives this job " ..
               "a share of one GPU: write --cpus-per-task/-c and --mem instead")
  end
  local nodes = isset(req.min_nodes) and req.min_nodes or 1
  local tasks = isset(req.num_tasks) and req.num_tasks or 1
  local mig = plan_mig(req, conf, nodes, tasks)
  if mig then
    return nil, {}, isset(req.max_nodes) and req.max_nodes > 1 and req.max_nodes or nil, mig.types, nil, nil, mig
  end
  local gpus, what, replaced = 0, {}, {}
  local keep = { tres_per_node = {}, tres_per_job = {}, tres_per_task = {} }
  local types = {}
  for _, f in ipairs(GRES_FIELDS) do
    for _, e in ipairs(parse_tres(req[f])) do
      if (is_gpu(e) or is_share(e)) and e.type then
        -- A GPU type the site named (gpu_types): predicted for that GPU, kept there by the feature.
        if not conf.gpu_types[e.type] then
          local known = {}
          for t in pairs(conf.gpu_types) do known[#known + 1] = t end
          table.sort(known)
          user_error("GPU type '" .. e.type .. "' in '" .. e.text:gsub("^gres[:/]", "") .. "' is not one this site " ..
                     (#known > 0 and ("names (" .. table.concat(known, ", ") .. "): choose one of those, or drop the type")
                      or "names to gpucast: drop the type (no GPU option, or --gres=gpu:1) and select nodes with -p") ..
                     "")
        end
        types[#types + 1] = e.type
      end
      if is_gpu(e) then
        if f == "tres_per_socket" then
          user_error("--gpus-per-socket asks for whole GPUs per socket: gpucast gives a job a share of one GPU; " ..
                     "drop the option (or write --gres=gpu:1)")
        end
        local n = e.count
        if f == "tres_per_node" then n = n * nodes elseif f == "tres_per_task" then n = n * tasks end
        gpus = math.max(gpus, n)
        what[#what + 1] = OPTION[f] .. " " .. e.text:gsub("^gres[:/]", "")
        replaced[#replaced + 1] = e.text
      elseif is_share(e) then
        if f ~= "tres_per_node" then
          user_error("'" .. e.text:gsub("^gres[:/]", "") .. "' via " .. OPTION[f] .. ": gpucast sets the job's " ..
                     share_gres .. " itself; drop the option")
        end
        replaced[#replaced + 1] = e.text
      elseif f == "tres_per_socket" then
        -- other per-socket gres: Slurm keeps them; gpucast does not touch that field
      else
        keep[f][#keep[f] + 1] = e.text
      end
    end
  end
  if nodes > 1 then
    -- Data-parallel training on M nodes: K whole GPUs on each (-N M --gpus-per-node=K, --gres=gpu:K,
    -- or --gpus=M*K), predicted as gpucast predict --gpus M*K --nodes M. A share of one GPU cannot
    -- span nodes.
    local per_node, how = nil, nil
    for _, f in ipairs({ "tres_per_node", "tres_per_job", "tres_per_task" }) do
      for _, e in ipairs(parse_tres(req[f])) do
        if is_gpu(e) and e.count > 0 then
          if f == "tres_per_task" then
            user_error("this job asks for " .. nodes .. " nodes and GPUs per task; a job of several nodes gets whole " ..
                       "GPUs per node: write -N " .. nodes .. " --gpus-per-node=K instead of --gpus-per-task")
          end
          local k = e.count
          if f == "tres_per_job" then
            if e.count % nodes ~= 0 then
              user_error("this job asks for " .. e.count .. " GPUs on " .. nodes .. " nodes, which do not divide evenly: " ..
                         "write -N " .. nodes .. " --gpus-per-node=K")
            end
            k = math.floor(e.count / nodes)
          end
          per_node, how = k, OPTION[f] .. " " .. e.text:gsub("^gres[:/]", "")
        end
      end
    end
    if not per_node then
      user_error("this job asks for " .. nodes .. " nodes; a share of one GPU cannot span nodes: ask for whole GPUs " ..
                 "on each node (-N " .. nodes .. " --gpus-per-node=K, data-parallel training), or drop -N/--nodes")
    end
    if conf.multi_gpu ~= "whole" then
      user_error("this job asks for " .. nodes .. " nodes x " .. per_node .. " GPUs (" .. how .. "); this site shares " ..
                 "single GPUs only: ask for one GPU on one node")
    end
    if isset(req.max_nodes) and req.max_nodes ~= nodes then
      user_error("this job asks for " .. nodes .. "-" .. req.max_nodes .. " nodes; a data-parallel job of whole GPUs " ..
                 "is predicted for a fixed number of nodes: write -N " .. nodes)
    end
    return keep, replaced, nil, types, per_node, nodes
  end
  -- A range (-N1-2), or tasks that Slurm might spread: the job is pinned to one node.
  local pinned = isset(req.max_nodes) and req.max_nodes > 1 and req.max_nodes or nil
  local whole = nil
  if gpus > 1 then
    if conf.multi_gpu ~= "whole" then
      user_error("this job asks for " .. gpus .. " GPUs (" .. table.concat(what, ", ") .. "); this site shares " ..
                 "single GPUs only (a job's shards come from one GPU): ask for one GPU (--gres=gpu:1 or no GPU option)")
    end
    whole = gpus  -- whole GPUs of one node: shards cannot span GPUs
  end
  return keep, replaced, pinned, types, whole
end

-- Feature words of a --constraint expression ("a100&ib", "[v100|a100]", "a100*2").
local function feature_words(features)
  local w = {}
  for word in (features or ""):gmatch("[%a_][%w_%.%-]*") do w[#w + 1] = word end
  return w
end

-- The GPU (gpucast's name) the job will run on, from its typed GPU request, its
-- --constraint features (gpu_types), its partitions (partition_gpus), else default_gpu;
-- nil = the predictor's own GPU. Returns the name and where it came from. Raises a user
-- error when those disagree or the job could land on different GPUs.
local function job_gpu(conf, types, features, parts)
  local seen, order = {}, {}
  local function add(gpu, why)
    if not seen[gpu] then seen[gpu] = why; order[#order + 1] = gpu end
  end
  for _, t in ipairs(types) do add(conf.gpu_types[t], "--gres type " .. t) end
  for _, w in ipairs(feature_words(features)) do
    if conf.gpu_types[w] then add(conf.gpu_types[w], "--constraint " .. w) end
  end
  local gpu_parts, none_parts = 0, {}
  for _, name in ipairs(parts) do
    local g = conf.partition_gpus[name]
    if g == "none" then none_parts[#none_parts + 1] = name
    else
      gpu_parts = gpu_parts + 1
      if g then add(g, "partition " .. name) end
    end
  end
  if #parts > 0 and gpu_parts == 0 then
    user_error("partition " .. table.concat(none_parts, ",") .. " has no GPUs: submit a job that names its model " ..
               "to a partition with GPUs")
  end
  if #order > 1 then
    local what = {}
    for _, g in ipairs(order) do what[#what + 1] = g .. " (" .. seen[g] .. ")" end
    user_error("this job could run on different GPUs: " .. table.concat(what, ", ") .. "; gpucast predicts for " ..
               "one: name one partition or one GPU type")
  end
  if #order == 1 then return order[1], seen[order[1]] end
  if conf.default_gpu ~= "" then return conf.default_gpu, "default_gpu" end
  return nil, nil
end

-- Asking gpucast ----------------------------------------------------------------

-- Every process the plugin starts goes through run(). popen's child inherits slurmctld's
-- open descriptors (its pipes to slurmscriptd, which runs as root, among them) and its
-- whole environment. So the child is a root bash started by `env -i` (PATH and LANG=C,
-- nothing of slurmctld's) that first closes every descriptor above 2, points stdin at
-- /dev/null and changes to /; only then does `body` (bash) run, under `timeout -s KILL limit_s`, which
-- kills its whole process group at the deadline. The job's user can ptrace only what
-- runs as them, and nothing that runs as them ever held a controller descriptor.
-- `body` prints its output and "__rc=N" last; a body killed at the deadline prints no
-- __rc, and run returns nil for it.
local CLEAN_PATH = "/usr/sbin:/usr/bin:/sbin:/bin"
local SPAWN = 'for f in /proc/$$/fd/*; do f=${f##*/}; case $f in 0|1|2) ;; *[!0-9]*|"") ' ..
              'echo __gpucast_spawn_failed; exit 0 ;; *) exec {f}>&- ;; esac; done; exec </dev/null; cd / && unset OLDPWD || exit; ' ..
              'exec timeout -s KILL "$1" /bin/bash --noprofile --norc -c "$2" gpucast-plugin'
local OUT_LIMIT = 1048576  -- bytes of a child's output read back

-- The plugin stops waiting this long before timeout_s, so that the whole call, with
-- slurmctld's own work around it, stays within timeout_s.
local KILL_MARGIN_S = 0.2
local function kill_after(limit_s) return math.max(0.3, limit_s - KILL_MARGIN_S) end

local function run(body, limit_s)
  local cmd = "exec /usr/bin/env -i PATH=" .. CLEAN_PATH .. " LANG=C /bin/bash --noprofile --norc -c " .. shq(SPAWN) ..
              " gpucast-plugin " .. string.format("%.2f", kill_after(limit_s)) .. " " .. shq(body) .. " 2>&1"
  local p = io.popen(cmd, "r")
  if not p then config_error("cannot start /bin/bash (io.popen failed)") end
  local out = p:read("*a") or ""
  p:close()
  if out:match("__gpucast_spawn_failed") then
    config_error("cannot list /proc/self/fd to close slurmctld's descriptors before starting a process")
  end
  local rc = tonumber(out:match("__rc=(%d+)%s*$"))
  out = out:gsub("__rc=%d+%s*$", "")
  return rc, out
end

-- The bash that runs `cmd` (a process that may run as the job's user) in run()'s body:
-- its output goes through a pipe to `head` (bounded), never straight to slurmctld, so
-- a process that leaves the timeout's process group cannot keep slurmctld reading.
local function piped(cmd)
  return cmd .. " </dev/null 2>&1 | head -c " .. OUT_LIMIT .. '; echo "__rc=${PIPESTATUS[0]}"'
end

local function first_line(s)
  return (s:match("^%s*([^\n]*)") or s)
end

-- The GPU names gpucast.conf gives (partition_gpus, gpu_types, default_gpu) are checked
-- against gpucast's GPU table (`gpucast gpus NAME...`) when the plugin loads and when a
-- configuration with new names is first read, so a typo is found before a job needs it.
-- Returns a line for the log, or raises a config error naming the setting.
local gpus_known = {}  -- "binary names" -> true once gpucast knew them all (per slurmctld)
local function check_conf_gpus(conf)
  local settings, list = {}, {}
  local function add(g, where)
    if g ~= "" and g ~= "none" and not settings[g] then settings[g] = where; list[#list + 1] = g end
  end
  for p, g in pairs(conf.partition_gpus) do add(g, "partition_gpus " .. p .. ":" .. g) end
  for t, g in pairs(conf.gpu_types) do add(g, "gpu_types " .. t .. ":" .. g) end
  add(conf.default_gpu, "default_gpu")
  if #list == 0 then return "no GPU names to check" end
  table.sort(list)
  local key = conf.gpucast .. " " .. conf.gpu_table .. " " .. table.concat(list, " ")
  if gpus_known[key] then return nil end
  local bin = io.open(conf.gpucast, "r")
  if not bin then
    if conf.mode == "service" then
      return "GPU names " .. table.concat(list, ", ") .. " not checked: no gpucast binary at " .. conf.gpucast ..
             " (the service checks each job's GPU)"
    end
    config_error("gpucast.conf: cannot check the GPU names " .. table.concat(list, ", ") .. ": no gpucast binary at " ..
                 conf.gpucast)
  end
  bin:close()
  local args = {}
  for _, g in ipairs(list) do args[#args + 1] = shq(g) end
  if conf.gpu_table ~= "" then table.insert(args, 1, "--gpu-table " .. shq(conf.gpu_table)) end
  local rc, out = run(piped("{ " .. shq(conf.gpucast) .. " gpus " .. table.concat(args, " ") .. " >/dev/null; }"),
                      conf.timeout_s)
  if rc ~= 0 then
    if conf.gpu_table ~= "" and out:find("site GPU table", 1, true) then
      config_error("gpucast.conf: gpu_table: " .. first_line(out))
    end
    local bad = out:match("unknown GPU '([^'\n]*)'")
    local where = bad and settings[bad] and (settings[bad] .. " names GPU '" .. bad .. "'") or
                  ("the GPU names " .. table.concat(list, ", "))
    config_error("gpucast.conf: " .. where .. ", which gpucast does not know: " ..
                 first_line(out ~= "" and out or ("gpucast gpus exited " .. tostring(rc))))
  end
  gpus_known[key] = true
  return "GPU names checked with gpucast gpus: " .. table.concat(list, ", ")
end

-- One message for every reason a model cannot be read: absent, not a regular file (a
-- FIFO, device or socket: refused before anything opens it), or not readable by the user.
local function unreadable(uid)
  return "the model file cannot be read: it does not exist, is not a regular file, or uid " .. tostring(uid) ..
         " may not read it"
end

-- The start of run()'s body that refuses any model that is not a regular file before
-- anything opens it (a FIFO would block the reader, a device never end). The test is a
-- stat as slurmctld: what slurmctld cannot see (SlurmUser=slurm and a user's private
-- directory) is left to the reader, which opens O_NONBLOCK and checks for itself
-- (gpucast predict, dd iflag=nonblock). Whatever it finds, the user gets the message a
-- missing file gets.
local function regular_files_only(paths)
  local q = {}
  for _, p in ipairs(paths) do q[#q + 1] = shq(p) end
  return "for m in " .. table.concat(q, " ") ..
         '; do [ ! -e "$m" ] || [ -f "$m" ] || { echo __gpucast_unreadable; exit 0; }; done; '
end

-- Prefix that runs a command with the job owner's uid, gid and groups (nothing for root).
local function as_user(conf, uid, gid)
  if uid == 0 then return "" end
  return (conf.run_as:gsub("{uid}", string.format("%d", uid)):gsub("{gid}", string.format("%d", gid))) .. " "
end

-- The memory fields of a prediction (`gpucast predict --json` and the service's reply name
-- them alike): the high end of gpu_mem_interval and gpu_mem_capacity_mib, MiB; nil where
-- absent or null (a predictor without a memory model, a gpucast without them).
local function memory_fields(out)
  local miv = out:match('"gpu_mem_interval"%s*:%s*(%b{})') or ""
  return tonumber(miv:match('"high"%s*:%s*([%d%.eE%+%-]+)')),
         tonumber(out:match('"gpu_mem_capacity_mib"%s*:%s*([%d%.eE%+%-]+)'))
end

-- The service's answer to POST /v1/predict (HTTP code, body) -> { util, low, high, mem_high, mem_cap };
-- raises user errors for what the user can fix and config errors for the rest.
-- `gpus`: the whole GPUs asked for (nil: one); the service predicts one data-parallel rank
-- when its answer echoes them as "gpus": N (docs/api.md).
local function service_answer(code, out, uid, gpus)
  local util = out:match('"predicted_util"%s*:%s*([%d%.eE%+%-]+)')
  local low, high = out:match('"predicted_util_interval"%s*:%s*%[%s*([%d%.eE%+%-]+)%s*,%s*([%d%.eE%+%-]+)')
  if code == 200 and util then
    local echoed = tonumber(out:match('"gpus"%s*:%s*(%d+)'))
    local mem_high, mem_cap = memory_fields(out)
    return { util = tonumber(util), low = tonumber(low or util), high = tonumber(high or util),
             gpu = out:match('"gpu"%s*:%s*"([^"\n]*)"'), service = true,
             data_parallel = gpus ~= nil and echoed == gpus, sent_gpus = gpus, mem_high = mem_high, mem_cap = mem_cap }
  end
  local msg = out:match('"error"%s*:%s*"(.-)"%s*[,}]') or first_line(out)
  if code == 422 and msg:match("cannot be read as uid") then user_error(unreadable(uid)) end
  if code == 400 or code == 413 or code == 422 then user_error(msg) end
  config_error("gpucast service answered HTTP " .. code .. ": " .. msg)
end

-- A Lua string as a JSON string.
local function json_str(s)
  return '"' .. s:gsub('[%c"\\]', function(c)
    if c == '"' then return '\\"' elseif c == "\\" then return "\\\\" end
    return string.format("\\u%04x", c:byte())
  end) .. '"'
end

local socket_http, socket_ltn12, socket_core  -- loaded once per slurmctld

-- socket.http's `create`: a TCP socket whose every connect, send and receive may block
-- only until `deadline` (socket.gettime()), so that the whole request, however slowly
-- the service answers, ends at timeout_s (LuaSocket's own timeout is per call).
local function deadline_tcp(deadline)
  return function()
    local sock, err = socket_core.tcp()
    if not sock then return nil, err end
    local timed = { connect = true, send = true, receive = true }
    return setmetatable({}, { __index = function(_, k)
      if k == "settimeout" then return function() return 1 end end  -- socket.http's own: ignored
      local f = sock[k]
      if type(f) ~= "function" then return f end
      return function(_, ...)
        if timed[k] then
          local left = deadline - socket_core.gettime()
          if left <= 0 then return nil, "timeout" end
          sock:settimeout(left, "t")
        end
        return f(sock, ...)
      end
    end })
  end
end
-- The deadline gpucast predict and the service get: below timeout_s, so that they stop and
-- answer (the refusal names the limit) before the plugin stops waiting.
local function predict_seconds(conf)
  return math.max(0.5, conf.timeout_s - 0.5)
end

-- The "gpus" the service predicts for: one node's (it has no "nodes" field), nil for one GPU.
local function service_gpus(d)
  if not d.gpus then return nil end
  return d.nodes and math.floor(d.gpus / d.nodes) or d.gpus
end

-- An ltn12 sink into table t that stops the request after `limit` bytes: the deputy's answer is
-- held in slurmctld's memory (curl's, in upload mode, goes through head -c OUT_LIMIT). Before,
-- a service sending an endless body filled slurmctld's memory until timeout_s.
local TOO_LARGE = "gpucast: answer too large"
local function bounded_sink(t, limit)
  local n = 0
  return function(chunk, err)
    if chunk then
      n = n + #chunk
      if n > limit then return nil, TOO_LARGE end
      t[#t + 1] = chunk
    end
    return 1
  end
end

-- Mode service with deputy_token_file: one HTTP request from inside slurmctld, no process.
-- The service opens the model as uid:gid (src/service/read_as.h), so nothing is read on
-- the user's behalf that the user could not read.
local function predict_as_deputy(conf, d, uid, gid)
  if not socket_http then
    local ok, http = pcall(require, "socket.http")
    local ok2, ltn12 = pcall(require, "ltn12")
    if not ok or not ok2 then
      config_error("deputy_token_file needs Debian's lua-socket for slurmctld's Lua 5.1 " ..
                   "(apt-get install lua-socket): " .. tostring(ok and ltn12 or http))
    end
    socket_http, socket_ltn12, socket_core = http, ltn12, require("socket")
  end
  if not conf.url:match("^http://") then
    config_error("deputy_token_file: url must be http:// (lua-socket speaks no TLS; keep the service on localhost)")
  end
  local f = io.open(conf.deputy_token_file, "r")
  if not f then config_error("cannot read deputy_token_file " .. conf.deputy_token_file) end
  local token = (f:read("*a") or ""):match("^%s*(%S+)%s*$")
  f:close()
  if not token then config_error("deputy_token_file " .. conf.deputy_token_file .. ": want one token") end
  local dims, attrs = {}, {}
  for k, v in pairs(d.dims) do dims[#dims + 1] = json_str(k) .. ":" .. string.format("%d", v) end
  for k, v in pairs(d.attrs) do attrs[#attrs + 1] = json_str(k) .. ":" .. json_str(tostring(v)) end
  local nets
  if single_network(d) then
    nets = '"model":' .. json_str(d.model)
  else
    local list = {}
    for _, m in ipairs(d.models) do
      list[#list + 1] = '{"path":' .. json_str(m.path) .. ',"repeat":' .. string.format("%d", m.n) .. "}"
    end
    nets = '"models":[' .. table.concat(list, ",") .. "]"
  end
  -- "gpu" only when the site's configuration names one (an older service refuses the key).
  if d.gpu then nets = nets .. ',"gpu":' .. json_str(d.gpu) end
  if d.mig then nets = nets .. ',"mig":' .. json_str(d.mig) end
  local gpus = service_gpus(d)
  if gpus then nets = nets .. ',"gpus":' .. string.format("%d", gpus) end
  local body = "{" .. nets .. ',"batch":' .. string.format("%d", d.batch) ..
               ',"amp":' .. (d.amp and "true" or "false") .. ',"dims":{' .. table.concat(dims, ",") ..
               '},"attrs":{' .. table.concat(attrs, ",") .. "}}"
  local chunks = {}
  local ok, code = socket_http.request{
    url = conf.url .. "/v1/predict", method = "POST", create = deadline_tcp(socket_core.gettime() + kill_after(conf.timeout_s)),
    headers = { ["Content-Type"] = "application/json", ["Content-Length"] = tostring(#body),
                ["Authorization"] = "Bearer " .. token,
                -- The service stops reading and analysing when the plugin stops waiting.
                ["X-Gpucast-Deadline-Ms"] = string.format("%d", math.floor(predict_seconds(conf) * 1000)),
                ["X-Gpucast-Read-As"] = string.format("%d:%d", uid, gid) },
    source = socket_ltn12.source.string(body), sink = bounded_sink(chunks, OUT_LIMIT) }
  if not ok and code == TOO_LARGE then config_error("gpucast service: its answer is larger than " .. OUT_LIMIT .. " bytes") end
  if not ok and code == "timeout" then config_error("gpucast service: no answer within " .. conf.timeout_s .. " s") end
  if not ok then config_error("gpucast service unreachable: " .. tostring(code)) end
  return service_answer(tonumber(code) or 0, table.concat(chunks), uid, gpus)
end

-- gpucast predict's time limit (src/cli/cmd_predict.cc); a gpucast without it is run without.
local DEADLINE_FLAG = "--max-seconds"
local no_deadline_flag = {}  -- gpucast binaries that lack it (per slurmctld)

-- Returns { util, low, high } (percent) and mem_high, mem_cap (MiB, nil if not predicted);
-- raises user/config errors.
local function predict_unchecked(conf, d, uid, gid)
  if conf.mode == "service" and conf.deputy_token_file ~= "" then return predict_as_deputy(conf, d, uid, gid) end
  if conf.mode == "service" and not single_network(d) then
    user_error("this site's gpucast uploads one graph per job (mode service without deputy_token_file): a job " ..
               "of several networks (" .. models_label(d) .. ") cannot be predicted here; declare one model= " ..
               "or ask your administrator")
  end
  if conf.mode == "service" then
    -- The model is read as the user and uploaded to POST /v1/predict (docs/api.md).
    local q = { "batch=" .. d.batch, "amp=" .. (d.amp and 1 or 0) }
    if d.gpu then q[#q + 1] = "gpu=" .. urlenc(d.gpu) end  -- only when configured, as in the deputy's body
    if d.mig then q[#q + 1] = "mig=" .. urlenc(d.mig) end
    if service_gpus(d) then q[#q + 1] = "gpus=" .. string.format("%d", service_gpus(d)) end
    for k, v in pairs(d.dims) do q[#q + 1] = "dim." .. urlenc(k) .. "=" .. v end
    for k, v in pairs(d.attrs) do q[#q + 1] = "attr." .. urlenc(k) .. "=" .. urlenc(v) end
    -- The reader runs as the user and reads the model; curl (as slurmctld, no ~/.curlrc: -q)
    -- uploads it. A file the user cannot read leaves a marker on stderr (curl would
    -- otherwise post an empty body). The token goes to curl through a here-document,
    -- never on a command line (ps shows those to everyone).
    -- dd opens the model O_NONBLOCK: a FIFO swapped in after the check does not block it.
    local body = regular_files_only({ d.model }) .. "{ " .. as_user(conf, uid, gid) .. "dd if=" .. shq(d.model) ..
                 " iflag=nonblock bs=1M status=none </dev/null 2>/dev/null || echo __gpucast_unreadable >&2; } | " ..
                 "curl -q -sS --max-time " .. string.format("%.2f", kill_after(conf.timeout_s)) ..
                 " -X POST -H 'Content-Type: application/octet-stream' --data-binary @- " ..
                 "-H 'X-Gpucast-Deadline-Ms: " .. string.format("%d", math.floor(predict_seconds(conf) * 1000)) .. "' " ..
                 "-w '\\n__http=%{http_code}' " .. shq(conf.url .. "/v1/predict?" .. table.concat(q, "&"))
    local tail = ' 2>&1 | head -c ' .. OUT_LIMIT .. '; echo "__rc=${PIPESTATUS[1]}"'
    if conf.token_file ~= "" then
      local f = io.open(conf.token_file, "r")
      if not f then config_error("cannot read token_file " .. conf.token_file) end
      f:close()
      body = body .. " -H @/dev/fd/4 4<<EOF" .. tail .. "\nAuthorization: Bearer $(cat " .. shq(conf.token_file) ..
             ")\nEOF\n"
    else
      body = body .. tail
    end
    local rc, out = run(body, conf.timeout_s)
    if out:match("__gpucast_unreadable") then user_error(unreadable(uid)) end
    if rc == nil or rc == 137 or rc == 124 or rc == 28 then
      config_error("gpucast service: no answer within " .. conf.timeout_s .. " s")
    end
    if rc ~= 0 then config_error("gpucast service unreachable (exit " .. tostring(rc) .. "): " .. first_line(out)) end
    local code = tonumber(out:match("__http=(%d+)%s*$")) or 0
    return service_answer(code, (out:gsub("\n__http=%d+%s*$", "")), uid, service_gpus(d))
  end
  local cmd = as_user(conf, uid, gid) .. shq(conf.gpucast) .. " predict --json --predictor " ..
              shq(conf.predictor) .. " --batch " .. d.batch
  if conf.gpu_table ~= "" then cmd = cmd .. " --gpu-table " .. shq(conf.gpu_table) end
  for _, m in ipairs(d.models) do
    for _ = 1, m.n do cmd = cmd .. " --model " .. shq(m.path) end
  end
  if d.amp then cmd = cmd .. " --amp" end
  for k, v in pairs(d.dims) do cmd = cmd .. " --dim " .. shq(k .. "=" .. v) end
  for k, v in pairs(d.attrs) do cmd = cmd .. " --attr " .. shq(k .. "=" .. v) end
  if d.gpu then cmd = cmd .. " --gpu " .. shq(d.gpu) end
  if d.mig then cmd = cmd .. " --mig " .. shq(d.mig) end
  local paths = {}
  for _, m in ipairs(d.models) do paths[#paths + 1] = m.path end
  local dp = d.gpus and (" --gpus " .. string.format("%d", d.gpus) ..
                         (d.nodes and (" --nodes " .. string.format("%d", d.nodes)) or "")) or ""
  -- gpucast predict's own deadline, below timeout_s: it stops and says so (timeout_s kills).
  local dl = no_deadline_flag[conf.gpucast] and "" or
             (" " .. DEADLINE_FLAG .. " " .. string.format("%.2f", predict_seconds(conf)))
  local rc, out = run(regular_files_only(paths) .. piped(cmd .. dp .. dl), conf.timeout_s)
  if out:match("^__gpucast_unreadable") then user_error(unreadable(uid)) end
  if dl ~= "" and rc == 2 and out:match("not expected:[^\n]*" .. DEADLINE_FLAG:gsub("%-", "%%-")) then
    -- An older gpucast: timeout_s alone bounds it (logged once per slurmctld).
    no_deadline_flag[conf.gpucast] = true
    log_info("gpucast: %s predict has no %s: predictions are bounded by timeout_s (%d s) alone; upgrade gpucast",
             conf.gpucast, DEADLINE_FLAG, conf.timeout_s)
    dl = ""
    rc, out = run(regular_files_only(paths) .. piped(cmd .. dp), conf.timeout_s)
  end
  if dp ~= "" and rc == 2 and (out:match("not expected:[^\n]*%-%-gpus") or out:match("not expected:[^\n]*%-%-nodes")) then
    dp = ""  -- a gpucast without data-parallel prediction: per GPU as a single-GPU job
    rc, out = run(regular_files_only(paths) .. piped(cmd .. dl), conf.timeout_s)
  end
  if rc == 124 and out:match("stopped: it took longer than") then  -- gpucast predict's own deadline (--max-seconds)
    user_error(string.format("the prediction did not finish within %g s (gpucast's deadline, timeout_s - 0.5); " ..
                             "contact your administrator", predict_seconds(conf)))
  end
  if rc == nil or rc == 137 or rc == 124 then
    user_error("the prediction did not finish within " .. conf.timeout_s .. " s (timeout_s); contact your administrator")
  end
  if rc == 0 then
    local util = tonumber(out:match('"gpu_util"%s*:%s*([%d%.eE%+%-]+)'))
    -- The utilization interval's object: gpu_mem_interval also has low/high (and sorts first).
    local iv = out:match('"interval"%s*:%s*(%b{})') or ""
    local low = tonumber(iv:match('"low"%s*:%s*([%d%.eE%+%-]+)'))
    local high = tonumber(iv:match('"high"%s*:%s*([%d%.eE%+%-]+)'))
    if not util then config_error("gpucast predict printed no gpu_util: " .. first_line(out)) end
    local mem_high, mem_cap = memory_fields(out)
    return { util = util, low = low or util, high = high or util, gpu = out:match('"gpu"%s*:%s*"([^"\n]*)"'),
             data_parallel = dp ~= "", mem_high = mem_high, mem_cap = mem_cap }
  end
  local line = first_line(out)
  -- gpucast predict's error is its last "gpucast predict: " line; warnings (printed first, as
  -- for --mig after the analysis) are not it.
  local msg = nil
  for l in out:gmatch("[^\n]+") do
    local m = l:match("^gpucast predict: (.*)$")
    if m and not m:match("^warning:") then msg = m end
  end
  if rc == 1 and msg then
    if msg:find(conf.predictor, 1, true) then config_error("predictor: " .. msg) end
    if msg:find("site GPU table", 1, true) then config_error("gpu_table: " .. msg) end
    -- The GPU names come from gpucast.conf (partition_gpus, gpu_types, default_gpu).
    if d.gpu and msg:match("unknown GPU") then
      config_error("gpucast.conf names GPU '" .. d.gpu .. "' (" .. d.gpu_why .. "), which gpucast does not know: " .. msg)
    end
    if msg:match("cannot open") or msg:match("No such file") or msg:match("Permission denied") or
       msg:match("not a regular file") or
       msg:match("Not a directory") or msg:match("Too many levels of symbolic links") then
      user_error(unreadable(uid))
    end
    user_error(msg)
  end
  config_error("gpucast predict failed (exit " .. tostring(rc) .. "): " .. line)
end

-- gpucast's predictions are percentages in [0, 100] (src/predict clamps them) and MiB: an answer
-- outside them (a broken or foreign service, a number that does not parse) is no prediction to size
-- a job by. Before, util -5 or 1e999 was sized as 1 or 8 shards, silently.
local function predict(conf, d, uid, gid)
  local p = predict_unchecked(conf, d, uid, gid)
  local from = p.service and "the gpucast service's answer" or "gpucast predict --json"
  local function finite(v) return type(v) == "number" and v == v and v > -math.huge and v < math.huge end
  for _, k in ipairs({ "util", "low", "high" }) do
    if not finite(p[k]) or p[k] < 0 or p[k] > 100 then
      config_error(from .. " has utilization " .. k .. " = " .. tostring(p[k]) .. ", not a percentage in [0, 100]")
    end
  end
  if p.mem_high ~= nil and (not finite(p.mem_high) or p.mem_high < 0) then
    config_error(from .. " has gpu_mem_interval.high = " .. tostring(p.mem_high) .. ", not a finite MiB >= 0")
  end
  if p.mem_cap ~= nil and not finite(p.mem_cap) then
    config_error(from .. " has gpu_mem_capacity_mib = " .. tostring(p.mem_cap) .. ", not a finite MiB")
  end
  return p
end

-- Decisions -----------------------------------------------------------------------

local function share_name(conf) return conf.share end
local function share_units(conf) return conf.share == "mps" and conf.mps_per_gpu or conf.shards_per_gpu end

local function units_for(conf, util)
  local k = share_units(conf)
  local n = math.ceil(util * k / 100 - 1e-9)
  if n < 1 then n = 1 end
  if n > k then n = k end
  return n
end

-- How this slurmctld spells a gres in the tres_per_* strings a plugin writes back: Slurm
-- 22.05 parses "gres:shard:3" and refuses "gres/shard:3" ("Invalid Trackable RESource (TRES)
-- specification"); 24.11 refuses the colon and parses the slash (both measured with the live
-- test's daemons, docs/slurm.md "The test"). Read from the request itself where it names
-- a gres (Slurm wrote that string), else from `slurmctld -V`, once per slurmctld: 23.02 and
-- later are taken to spell it as 24.11 does (assumed: 23.x is not tested).
local gres_sep_of_version = nil
local function gres_sep(req, limit_s)
  for _, f in ipairs(GRES_FIELDS) do
    local c = req[f] and (req[f]:match("^gres([:/])") or req[f]:match(",gres([:/])"))
    if c then return c end
  end
  if not gres_sep_of_version then
    local _, out = run(piped("slurmctld -V"), math.min(limit_s, 2))
    local major, minor = first_line(out or ""):match("^slurm%S*%s+(%d+)%.(%d+)")
    if not major then
      config_error("cannot tell this Slurm's version (`slurmctld -V` printed '" .. first_line(out or "") ..
                   "'): gpucast writes gres as 22.05 (gres:shard:N) or 23.02+ (gres/shard:N) spell them")
    end
    local v = tonumber(major) * 100 + tonumber(minor)
    gres_sep_of_version = v >= 2302 and "/" or ":"
    slurm.log_info("gpucast: Slurm %s.%s: gres written as gres%sKIND:N", major, minor, gres_sep_of_version)
  end
  return gres_sep_of_version
end

local function join_tres(first, rest)
  local t = {}
  if first then t[1] = first end
  for _, x in ipairs(rest) do t[#t + 1] = x end
  return table.concat(t, ",")
end

local function who(uid, name, jobid)
  local s = "uid=" .. tostring(uid)
  if jobid then s = s .. " job=" .. tostring(jobid) end
  if name and name ~= "" then s = s .. " name=" .. shown(name) end
  return s
end

-- The AdminComment's declaration tokens: model=, batch=, amp=1, dim.NAME=, attr.KEY=, each value
-- percent-encoded (read back by gpucast-epilog.sh).
local function declared_tokens(d)
  local extra = {}
  for k, v in pairs(d.dims) do extra[#extra + 1] = "dim." .. pct_encode(k) .. "=" .. v end
  for k, v in pairs(d.attrs) do extra[#extra + 1] = "attr." .. pct_encode(k) .. "=" .. pct_encode(v) end
  table.sort(extra)
  local declared = {}
  for _, m in ipairs(d.models) do
    for _ = 1, m.n do declared[#declared + 1] = "model=" .. pct_encode(m.path) end
  end
  return string.format("%s batch=%d%s%s", table.concat(declared, " "), d.batch, d.amp and " amp=1" or "",
                       #extra > 0 and (" " .. table.concat(extra, " ")) or "")
end

-- A job on a MIG slice (plan_mig): its request is kept (the slice is its own isolated GPU, which
-- Slurm hands to one job: no shards or MPS on it); the prediction, for that slice, is kept in the
-- AdminComment (share=mig:1/1, the whole slice) and told to the user. With memory = high a job whose
-- predicted memory's high end exceeds the slice's memory is refused.
local function size_mig(conf, d, p, req, out, mig, on, pinned)
  on = on .. " MIG " .. mig.profile
  local mem_note, by_mem = "", ""
  if conf.memory == "high" and not (p.mem_high and p.mem_cap and p.mem_cap > 0) then
    config_error("memory = high, but " .. (p.service and "the gpucast service's answer" or "gpucast predict --json") ..
                 " has no GPU memory prediction for MIG slice " .. mig.profile .. " (gpu_mem_interval.high " ..
                 tostring(p.mem_high) .. ", gpu_mem_capacity_mib " .. tostring(p.mem_cap) .. "); set memory = none")
  end
  if conf.memory == "high" then
    if p.mem_high > p.mem_cap then
      user_error(string.format("predicted GPU memory up to %.0f MiB (the high end of its interval, a one-sided 95%% bound) " ..
                               "does not fit in the %.0f MiB of the MIG slice '%s'%s: use a smaller batch or a larger " ..
                               "MIG profile", p.mem_high, p.mem_cap, mig.gres, on))
    end
    mem_note = string.format(" mem=%.0f/%.0f", p.mem_high, p.mem_cap)
    by_mem = string.format("; memory up to %.0f of the slice's %.0f MiB", p.mem_high, p.mem_cap)
  end
  out.max_nodes = 1  -- a MIG slice is on one node
  if isset(req.num_tasks) and req.num_tasks > 1 then
    if isset(req.ntasks_per_node) and req.ntasks_per_node < req.num_tasks then
      user_error("this job asks for " .. req.num_tasks .. " tasks, " .. req.ntasks_per_node .. " per node: that is " ..
                 "more than one node, and a MIG slice is on one node: write --ntasks-per-node=" .. req.num_tasks)
    end
    out.ntasks_per_node = req.num_tasks
  end
  out.admin_comment = string.format("gpucast: %s%s mig=%s util=%.1f interval=%.1f-%.1f basis=%s%s share=mig:1/1",
                                    declared_tokens(d), d.gpu and (" gpu=" .. pct_encode(d.gpu)) or "",
                                    pct_encode(mig.profile), p.util, p.low, p.high,
                                    conf.headroom == "interval" and "high" or "point", mem_note)
  local msg = string.format("gpucast: %s batch %d%s%s%s: predicted GPU utilization %.1f%% of the slice (interval " ..
                            "%.1f-%.1f%%%s) -> %s kept (a MIG slice is a GPU of its own: not shared)",
                            models_label(d), d.batch, d.batch_defaulted and " (site default)" or "", d.amp and " amp" or "",
                            on, p.util, p.low, p.high, by_mem, mig.gres)
  if pinned then msg = msg .. "; on one node (-N1, was up to " .. pinned .. " nodes)" end
  return msg
end

-- Predicts the declared job and writes the share into `out` (a job_desc).
-- `req` holds the request fields to examine. Returns the message for the user.
local function size_job(conf, d, req, out, uid, gid, parts)
  local kind = share_name(conf)
  local keep, replaced, pinned, types, whole, dp_nodes, mig = plan_request(req, kind, conf)
  d.gpu, d.gpu_why = job_gpu(conf, types, req.features, parts)
  d.gpus = whole and whole * (dp_nodes or 1) or nil  -- every GPU of the job, on dp_nodes nodes
  d.nodes = dp_nodes
  d.mig = mig and mig.profile or nil
  if #types > 0 and not mig then  -- the share is untyped: the node feature keeps the job on that GPU type
    local f = req.features and req.features ~= "" and ("(" .. req.features .. ")&") or ""
    out.features = f .. table.concat(types, "&")
  end
  local predicted, p = pcall(predict, conf, d, uid, gid)
  local gpu = d.gpu or (predicted and p.gpu) or nil
  local on = gpu and (" on " .. gpu .. " (" .. (d.gpu_why or "the predictor's GPU") .. ")") or " on the predictor's GPU"
  if not predicted then
    -- A profile the GPU does not have (gpucast predict --mig, the service's 422): the user's gres is named.
    if mig and type(p) == "table" and p.kind == "user" and p.msg:match("MIG profile") then
      user_error("MIG slice '" .. mig.gres .. "'" .. on .. ": " .. p.msg .. " (predicted as gpucast predict" ..
                 (gpu and (" --gpu " .. gpu) or "") .. " --mig " .. mig.profile .. ")")
    end
    error(p, 0)
  end
  if mig then return size_mig(conf, d, p, req, out, mig, on, pinned) end
  local basis = conf.headroom == "interval" and p.high or p.util
  local n = units_for(conf, basis)
  -- Memory: the share must also hold the predicted memory's high end, as a fraction of the GPU's
  -- memory (shards count fractions of one GPU); a job whose high end exceeds the GPU is refused.
  -- Without a memory prediction the site's choice cannot be honoured: fail closed.
  local by_mem, mem_note = "", ""
  if conf.memory == "high" and not (p.mem_high and p.mem_cap and p.mem_cap > 0) then
    config_error("memory = high, but " .. (p.service and "the gpucast service's answer" or "gpucast predict --json") ..
                 " has no GPU memory prediction (gpu_mem_interval.high " .. tostring(p.mem_high) ..
                 ", gpu_mem_capacity_mib " .. tostring(p.mem_cap) .. "): a predictor trained without a memory " ..
                 "column, a GPU without a memory size, or an older gpucast; retrain or upgrade, or set memory = none")
  end
  if conf.memory == "high" then
    mem_note = string.format(" mem=%.0f/%.0f", p.mem_high, p.mem_cap)
    if p.mem_high > p.mem_cap then
      user_error(string.format("predicted GPU memory up to %.0f MiB (the high end of its interval, a one-sided 95%% bound) does not fit in " ..
                               "the %.0f MiB of one GPU%s: use a smaller batch or a GPU with more memory",
                               p.mem_high, p.mem_cap, on))
    end
    if not whole then
      local k = share_units(conf)
      local m = math.min(k, math.max(1, math.ceil(p.mem_high * k / p.mem_cap - 1e-9)))
      by_mem = string.format("; memory up to %.0f of %.0f MiB needs %d", p.mem_high, p.mem_cap, m)
      if m > n then n = m end
    end
  end
  local sep = gres_sep(req, conf.timeout_s)
  local share = "gres" .. sep .. kind .. ":" .. n
  local per_gpu, of = "", share_units(conf)
  if whole then  -- N whole GPUs: the prediction is for the message and the record (per GPU)
    kind, n, of, share = "gpu", whole, whole, "gres" .. sep .. "gpu:" .. whole
    on = on .. (dp_nodes and (" x" .. dp_nodes .. " nodes") or "") .. " x" .. whole .. " GPUs"
    if p.data_parallel then
      per_gpu = " per GPU (data-parallel, " .. (p.service and ("the service's \"gpus\": " .. p.sent_gpus ..
                (dp_nodes and ", one node's GPUs: the service has no \"nodes\"" or ""))
                or ("gpucast predict --gpus " .. d.gpus .. (dp_nodes and (" --nodes " .. dp_nodes) or ""))) .. ")"
    else
      per_gpu = " per GPU, predicted as a single-GPU job (" ..
                (p.service and "the service's answer has no \"gpus\": " .. p.sent_gpus or
                 "this gpucast has no data-parallel prediction") .. ")"
    end
  end
  out.tres_per_node = join_tres(share, keep.tres_per_node)
  out.max_nodes = dp_nodes or 1  -- a share of one GPU is on one node; data-parallel jobs on dp_nodes
  -- Slurm 24.11 spreads -n tasks over as many nodes as their CPUs need even with max_nodes = 1
  -- (measured: -N1-2 -n32 on 16-CPU nodes became NumNodes=2-2, a share on each node); all tasks
  -- per node keeps the job on one node (22.05 then refuses or keeps 1-1, as before).
  if not dp_nodes and isset(req.num_tasks) and req.num_tasks > 1 then
    if isset(req.ntasks_per_node) and req.ntasks_per_node < req.num_tasks then
      user_error("this job asks for " .. req.num_tasks .. " tasks, " .. req.ntasks_per_node .. " per node: that is " ..
                 "more than one node, and a share of one GPU is on one node: write --ntasks-per-node=" ..
                 req.num_tasks .. " (or fewer tasks)")
    end
    out.ntasks_per_node = req.num_tasks
  end
  if req.tres_per_job and req.tres_per_job ~= "" then out.tres_per_job = join_tres(nil, keep.tres_per_job) end
  if req.tres_per_task and req.tres_per_task ~= "" then out.tres_per_task = join_tres(nil, keep.tres_per_task) end
  local from = conf.headroom == "interval" and string.format("interval high %.1f%%", p.high) or "point"
  -- Read back by slurm_job_modify (share=) and by gpucast-epilog.sh (model, batch, amp, dim., attr.).
  -- One model= per pass, as declared (the epilog rebuilds the networks from them).
  -- Tokens KEY=VALUE separated by one blank, each value percent-encoded (no blank, '=' or ','
  -- in it): gpucast-epilog.sh reads them token by token, so no part of a declaration can pose
  -- as another token.
  out.admin_comment = string.format("gpucast: %s%s%s util=%.1f interval=%.1f-%.1f basis=%s%s share=%s:%d/%d",
                                    declared_tokens(d), d.gpu and (" gpu=" .. pct_encode(d.gpu)) or "",
                                    dp_nodes and (" nodes=" .. dp_nodes) or "", p.util, p.low, p.high,
                                    conf.headroom == "interval" and "high" or "point", mem_note, kind, n, of)
  local msg = string.format("gpucast: %s batch %d%s%s%s: predicted GPU utilization %.1f%%%s (interval %.1f-%.1f%%, sized by %s) -> %s",
                            models_label(d), d.batch, d.batch_defaulted and " (site default)" or "", d.amp and " amp" or "",
                            on, p.util, per_gpu, p.low, p.high, from .. by_mem, share)
  msg = msg .. (whole and " (whole GPUs: a job's shards cannot span GPUs)" or (" of " .. of))
  if #replaced > 0 then msg = msg .. " (replaces " .. (table.concat(replaced, ","):gsub("gres[:/]", "")) .. ")" end
  if pinned then msg = msg .. "; on one node (-N1, was up to " .. pinned .. " nodes)" end
  return msg
end

-- The job owner's name (the overuse file is named after it).
local function user_name(job_desc, owner)
  local n = job_desc.user_name
  if n and n ~= "" then return n end
  local rc, out = run("getent passwd " .. string.format("%d", owner) .. " 2>/dev/null | head -c 4096; " ..
                      'echo "__rc=${PIPESTATUS[0]}"', 5)
  if rc ~= 0 then return nil end
  return out:match("^([^:\n]+):")
end

-- With overuse_hold = yes: the first line of overuse_dir/USER if the epilog recorded USER
-- as overusing a GPU share, else nil.
local function overuse_record(conf, name)
  if conf.overuse_hold ~= "yes" or not name or name:match("[/%z]") or name == "." or name == ".." then return nil end
  local f = io.open(conf.overuse_dir .. "/" .. name, "r")
  if not f then return nil end
  local line = f:read("*l") or ""
  f:close()
  return line
end

local function exclusive_no_model(what)
  return "this job takes whole nodes (" .. what .. "), and Slurm gives such a job every GPU of its node, even " ..
         "with --gres=gpu:0: name your model (--comment=model=PATH,batch=N) to get a predicted share, drop " ..
         "--exclusive, or use a partition without GPUs"
end
local function exclusive_model(what)
  return "this job takes whole nodes (" .. what .. "), which gives it every GPU of its node: gpucast gives it " ..
         "its predicted share instead; drop --exclusive (ask for CPUs and memory with -c and --mem) or use a " ..
         "partition that shares nodes"
end

-- The settings' defaults (what the plugin assumes of a gpucast.conf it cannot read).
local function default_conf()
  local conf = {}
  for k, v in pairs(SETTINGS) do conf[k] = v[1] end
  return conf
end

-- gpucast.conf, checked: its keys and values (read_conf), the GPU names it gives (gpucast
-- gpus), shards_per_gpu / mps_per_gpu against gres.conf. Raises a config error naming the
-- setting; notes (what could not be checked) are logged once per slurmctld.
local noted = {}
local function load_conf()
  local conf = read_conf()
  local checked = check_conf_gpus(conf)
  if checked then log_info("gpucast: %s", checked) end
  local note = check_gres_counts(conf)
  if note and not noted[note] then noted[note] = true; log_info("gpucast: %s", note) end
  check_select_params(conf)
  check_gpu_types(conf)
  return conf
end

-- Seconds since boot (/proc/uptime: steady, 10 ms steps); os.time() where it cannot be read.
local function now_s()
  local f = io.open("/proc/uptime", "r")
  if f then
    local v = tonumber(((f:read("*l") or "")):match("^([%d%.]+)"))
    f:close()
    if v then return v end
  end
  return os.time()
end

-- Each uid's predictions of the last minute: { { start, seconds }, ... } (per slurmctld).
-- A uid whose predictions took user_budget_s seconds within the last 60 s is refused at once,
-- before anything is read or started: one user cannot hold slurmctld's job lock for long.
local spent = {}
local function budget_check(conf, uid)
  if conf.user_budget_s <= 0 or uid == 0 then return nil end
  local now = now_s()
  local keep, used = {}, 0
  for _, e in ipairs(spent[uid] or {}) do
    if now - e[1] < 60 then keep[#keep + 1] = e; used = used + e[2] end
  end
  spent[uid] = keep
  if used >= conf.user_budget_s then
    -- When enough of it has aged out of the minute.
    local left, wait = used, 60
    for _, e in ipairs(keep) do
      left = left - e[2]
      if left < conf.user_budget_s then wait = math.max(1, math.ceil(60 - (now - e[1]))); break end
    end
    user_error(string.format("your jobs' predictions took %.1f s of the controller's time in the last minute, " ..
                             "this site's budget per user (user_budget_s = %d s per minute): submit again in %d s " ..
                             "(a job array is one submission)", used, conf.user_budget_s, wait))
  end
  return now
end
local function budget_charge(uid, t0)
  if t0 then table.insert(spent[uid], { t0, now_s() - t0 }) end
end

-- Model-declaring components of the heterogeneous job being submitted: slurmctld calls the
-- plugin for each (het_job_offset 0, 1, ...) within one request, holding its lock.
local het_models = 0

local function submit(job_desc, part_list, uid)
  local name = job_desc.name
  local ok, conf = pcall(load_conf)
  if not ok then
    -- gpucast.conf is wrong: GPU jobs cannot be sized and are refused (fail closed); a job
    -- that can get no GPU passes, and slurmctld.log says why GPU jobs are refused.
    local declares = (job_desc.comment or ""):match("model=") or ("\n" .. (job_desc.script or "")):match("\n#GPUCAST%s")
    local parts = job_partitions(job_desc.partition, part_list)
    if declares or wants_gpu(job_desc) or takes_whole_nodes(job_desc.shared, parts, part_list, default_conf()) then
      error(conf, 0)
    end
    if job_desc.admin_comment and job_desc.admin_comment:match("^gpucast:") then job_desc.admin_comment = "" end
    log_error("gpucast: %s: accepted unchanged (no model, no GPU request), but GPU jobs are refused until the " ..
              "configuration is fixed: %s", who(uid, name), type(conf) == "table" and conf.msg or tostring(conf))
    return slurm.SUCCESS
  end
  local d = find_declaration(job_desc.comment, job_desc.script, conf)
  local het = job_desc.het_job_offset
  if isset(het) then
    if het == 0 then het_models = 0 end
    if d then
      het_models = het_models + 1
      if het_models > conf.max_model_components then
        user_error("this heterogeneous job declares a model in more than " .. conf.max_model_components ..
                   " of its components (this site's limit, max_model_components): each is predicted while the " ..
                   "controller waits; submit the components as separate jobs")
      end
    end
  end
  local parts = job_partitions(job_desc.partition, part_list)
  local whole = takes_whole_nodes(job_desc.shared, parts, part_list, conf)
  if not d then
    if whole and conf.require_model == 1 and may_get_gpus(conf, parts) then user_error(exclusive_no_model(whole)) end
    if conf.require_model == 1 and wants_gpu(job_desc) then
      user_error("GPU jobs must name their model: --comment=model=PATH,batch=N[,amp=1] or a " ..
                 "'#GPUCAST model=PATH batch=N' line in the script")
    end
    -- Only gpucast writes "gpucast:" admin comments.
    if job_desc.admin_comment and job_desc.admin_comment:match("^gpucast:") then job_desc.admin_comment = "" end
    log_info("gpucast: %s: accepted unchanged (%s)", who(uid, name),
                   wants_gpu(job_desc) and "GPU request without a model, require_model=0" or "no model, no GPU request")
    return slurm.SUCCESS
  end
  if whole then user_error(exclusive_model(whole)) end
  -- Read the model as the job's owner (root may submit for another user with --uid).
  local owner = isset(job_desc.user_id) and job_desc.user_id or uid
  local gid = isset(job_desc.group_id) and job_desc.group_id or owner
  local t0 = budget_check(conf, uid)
  local sized, msg = pcall(size_job, conf, d, job_desc, job_desc, owner, gid, parts)
  budget_charge(uid, t0)
  if not sized then error(msg, 0) end
  log_info("gpucast: %s: sized: %s", who(uid, name), (msg:gsub("^gpucast: ", "")))
  -- The owner's name only matters with overuse_hold (finding it may start getent).
  local uname = conf.overuse_hold == "yes" and user_name(job_desc, owner) or nil
  local record = overuse_record(conf, uname)
  if record then
    job_desc.priority = 0  -- held; slurm_job_modify refuses the owner's release while the record exists
    log_info("gpucast: %s: held: user %s is recorded for overuse in %s/%s (%s); release with " ..
                   "rm %s/%s && scontrol release JOBID", who(uid, name), uname, conf.overuse_dir, uname, record,
                   conf.overuse_dir, uname)
    msg = msg .. "\ngpucast: this job is HELD: an earlier job of yours used more of its GPU than its share (" ..
          record .. "); your GPU jobs are held until an administrator clears this (contact them)"
  end
  slurm.log_user("%s", msg)
  return slurm.SUCCESS
end

-- A request field after the modification: the new value if the update sets it, else the job's.
local function merged(job_desc, job_rec, f)
  local v = job_desc[f]
  if v ~= nil then return v end
  local ok, r = pcall(function() return job_rec[f] end)
  if ok then return r end
  return nil
end

-- Does the update change what gpucast decides on: the GPU request, nodes, exclusivity,
-- partition, constraint, or the model declaration?
local function touches_decision(job_desc)
  for _, f in ipairs(REQ_FIELDS) do if job_desc[f] ~= nil then return true end end
  return isset(job_desc.ntasks_per_tres) or isset(job_desc.min_nodes) or isset(job_desc.max_nodes) or
         isset(job_desc.shared) or job_desc.partition ~= nil or job_desc.features ~= nil or
         (job_desc.comment ~= nil and job_desc.comment:match("model=") ~= nil)
end

local function modify(job_desc, job_rec, part_list, uid)
  local ok, conf = pcall(load_conf)
  if not ok then
    -- GPU decisions cannot be checked: updates that touch them are refused (fail closed);
    -- the rest (time limit, name, ...) pass.
    if touches_decision(job_desc) or (job_desc.priority ~= nil and job_rec.admin_comment and
                                      job_rec.admin_comment:match("^gpucast: ")) then
      error(conf, 0)
    end
    return slurm.SUCCESS
  end
  local owner, gid, jobid = job_rec.user_id, job_rec.group_id, job_rec.job_id
  -- scontrol release (priority INFINITE) or a new priority by a non-root user, for a
  -- sized job of a user recorded for overuse: refused until the operator clears the record.
  local prio = job_desc.priority
  if uid ~= 0 and prio ~= nil and prio ~= 0 and prio ~= 4294967294 and job_rec.admin_comment and
     job_rec.admin_comment:match("^gpucast: ") then
    local uname = conf.overuse_hold == "yes" and user_name(job_rec, owner) or nil
    local record = overuse_record(conf, uname)
    if record then
      user_error("job " .. tostring(jobid) .. " is held because user " .. uname .. " is recorded for overusing " ..
                 "a GPU share (" .. record .. "); an administrator must clear it first")
    end
  end
  local sized = job_rec.admin_comment and job_rec.admin_comment:match("^gpucast: ") and job_rec.admin_comment or nil
  local changes_request = false
  for _, f in ipairs(REQ_FIELDS) do if job_desc[f] ~= nil then changes_request = true end end
  if isset(job_desc.ntasks_per_tres) then changes_request = true end
  if isset(job_desc.min_nodes) or isset(job_desc.max_nodes) then changes_request = true end
  if isset(job_desc.shared) then changes_request = true end
  local d = nil
  if job_desc.comment and job_desc.comment:match("model=") then
    d = find_declaration(job_desc.comment, nil, conf)
  end
  local req = {}
  for _, f in ipairs(REQ_FIELDS) do req[f] = merged(job_desc, job_rec, f) end
  req.features = merged(job_desc, job_rec, "features")
  req.partition = merged(job_desc, job_rec, "partition")
  req.min_nodes = isset(job_desc.min_nodes) and job_desc.min_nodes or nil
  req.max_nodes = isset(job_desc.max_nodes) and job_desc.max_nodes or nil
  req.num_tasks = isset(job_desc.num_tasks) and job_desc.num_tasks or nil
  req.ntasks_per_node = isset(job_desc.ntasks_per_node) and job_desc.ntasks_per_node or nil
  req.ntasks_per_tres = job_desc.ntasks_per_tres

  if d then  -- a new model declaration: predict it again (root), or refuse
    -- Slurm lets only operators change AdminComment, where the decision is kept, and the
    -- plugin cannot tell other operators from users: only root's updates are re-predicted.
    if uid ~= 0 then
      user_error("the model declaration of job " .. tostring(jobid) .. " cannot be changed after submission " ..
                 "(its GPU share is predicted from it): cancel it and submit it again with the new declaration")
    end
    local msg = size_job(conf, d, req, job_desc, owner, gid, job_partitions(req.partition, part_list))
    log_info("gpucast: %s modify by uid %s: re-predicted: %s", who(owner, job_rec.name, jobid), tostring(uid),
                   (msg:gsub("^gpucast: ", "")))
    return slurm.SUCCESS
  end
  -- A sized job was predicted for one GPU (gpu= in the AdminComment): a new partition or
  -- constraint may not move it to another.
  if sized and not d and (job_desc.partition ~= nil or job_desc.features ~= nil) then
    local was = sized:match(" gpu=([^ ]+)")
    local ok, now = pcall(job_gpu, conf, {}, req.features, job_partitions(req.partition, part_list))
    if not ok or now ~= was then
      user_error("job " .. tostring(jobid) .. " was predicted for " .. (was or "the predictor's GPU") .. "; the new " ..
                 "partition or constraint would " .. (ok and ("put it on " .. tostring(now or "the predictor's GPU"))
                                                         or ("not do: " .. tostring(type(now) == "table" and now.msg or now))) ..
                 ": declare the model again (scontrol update JobId=" .. tostring(jobid) .. " Comment=model=PATH,batch=N) as root")
    end
  end
  -- Exclusivity after the update, for every job: a new partition (OverSubscribe=EXCLUSIVE,
  -- ExclusiveUser=YES, ExclusiveTopo=YES) or a new --exclusive form gives it whole nodes, and
  -- with them every GPU of the node.
  if job_desc.partition ~= nil or isset(job_desc.shared) then
    local shared = job_desc.shared
    if not isset(shared) then
      local got, v = pcall(function() return job_rec.shared end)
      shared = got and v or nil
    end
    local parts = job_partitions(req.partition, part_list)
    local by = takes_whole_nodes(shared, parts, part_list, conf)
    if by and sized then
      user_error("job " .. tostring(jobid) .. " was sized from its prediction; the update would give it whole " ..
                 "nodes (" .. by .. "), and with them every GPU of its node")
    end
    if by and conf.require_model == 1 and may_get_gpus(conf, parts) then
      user_error("job " .. tostring(jobid) .. ": " .. exclusive_no_model(by))
    end
  end
  if not changes_request then return slurm.SUCCESS end
  if not sized then
    if conf.require_model == 1 and wants_gpu(req) then
      user_error("GPU jobs must name their model: to give job " .. tostring(jobid) .. " a GPU share, set its " ..
                 "declaration (scontrol update JobId=" .. tostring(jobid) .. " Comment=model=PATH,batch=N)")
    end
    return slurm.SUCCESS
  end
  -- A job gpucast sized: only more of the same share on one node may be asked for.
  local kind, n, k = sized:match("share=(%a+):(%d+)/(%d+)")
  n, k = tonumber(n), tonumber(k)
  if kind == "mig" then  -- a job on a MIG slice (size_mig): the same slice, one, on one node
    local was = pct_decode(sized:match(" mig=([^ ]+)") or "")
    local function refuse_mig(why)
      user_error("job " .. tostring(jobid) .. " was predicted for MIG slice " .. was .. "; " .. why .. ". Keep its " ..
                 "MIG gres (gpu:TYPE:1 of profile " .. was .. "), or declare another model to have it predicted again " ..
                 "(scontrol update JobId=" .. tostring(jobid) .. " Comment=model=PATH,batch=N)")
    end
    if (isset(job_desc.min_nodes) and job_desc.min_nodes ~= 1) or (isset(job_desc.max_nodes) and job_desc.max_nodes ~= 1) then
      refuse_mig("a MIG slice is on one node")
    end
    if isset(job_desc.shared) and SHARED_WHOLE[job_desc.shared] then
      refuse_mig(SHARED_WHOLE[job_desc.shared] .. " would give it every GPU of its node")
    end
    local slices = 0
    for _, f in ipairs(GRES_FIELDS) do
      for _, e in ipairs(parse_tres(req[f])) do
        if (is_gpu(e) or is_share(e)) and e.count > 0 then
          local g = e.text:gsub("^gres[:/]", "")
          if not is_gpu(e) or mig_type(e.type) ~= was or f == "tres_per_socket" then
            refuse_mig("'" .. g .. "' is not accepted")
          end
          slices = slices + e.count
        end
      end
    end
    if slices ~= 1 then refuse_mig(slices == 0 and "removing its MIG slice is not accepted" or (slices .. " slices are not accepted")) end
    return slurm.SUCCESS
  end
  local util = sized:match("util=([%d%.]+)") or "?"
  local whole = kind == "gpu"  -- N whole GPUs (multi_gpu = whole): the count stays
  local dp_nodes = tonumber(sized:match(" nodes=(%d+) ")) or 1
  local function refuse(why)
    user_error("job " .. tostring(jobid) .. " was sized gres:" .. kind .. ":" .. n .. (whole and " (whole GPUs)" or (" of " .. k)) ..
               (dp_nodes > 1 and (" on " .. dp_nodes .. " nodes") or "") ..
               " from its predicted GPU utilization (" .. util .. "%); " .. why .. ". Keep gres:" .. kind .. ":" .. n ..
               ((conf.allow_more_shards == 1 and not whole) and (" or more (up to " .. k .. ")") or "") ..
               ", or declare another model to have it predicted again (scontrol update JobId=" .. tostring(jobid) ..
               " Comment=model=PATH,batch=N)")
  end
  if (isset(job_desc.min_nodes) and job_desc.min_nodes ~= dp_nodes) or
     (isset(job_desc.max_nodes) and job_desc.max_nodes ~= dp_nodes) then
    refuse(dp_nodes > 1 and ("it was predicted for " .. dp_nodes .. " nodes") or "it cannot span nodes")
  end
  if isset(job_desc.shared) and SHARED_WHOLE[job_desc.shared] then
    refuse(SHARED_WHOLE[job_desc.shared] .. " would give it every GPU of its node")
  end
  if mentions_gpu(req.cpus_per_tres) or mentions_gpu(req.mem_per_tres) or isset(req.ntasks_per_tres) or
     mentions_gpu(req.tres_per_job) or mentions_gpu(req.tres_per_task) or mentions_gpu(req.tres_per_socket) then
    refuse("GPU options other than --gres=" .. kind .. ":N are not accepted")
  end
  local m = nil
  for _, e in ipairs(parse_tres(req.tres_per_node)) do
    if whole then
      if is_share(e) then refuse("a share (" .. e.text:gsub("^gres[:/]", "") .. ") is not accepted") end
      if is_gpu(e) then m = e.count end
    else
      if is_gpu(e) then refuse("a whole-GPU request (" .. e.text:gsub("^gres[:/]", "") .. ") is not accepted") end
      if is_share(e) then
        if e.name ~= kind then refuse("a request of " .. e.name .. " is not accepted") end
        m = e.count
      end
    end
  end
  if not m then refuse("removing its GPU share is not accepted") end
  if whole and m ~= n then refuse("changing its GPUs to gpu:" .. m .. " is not accepted") end
  if m < n then refuse("lowering it to " .. kind .. ":" .. m .. " is not accepted") end
  if m > n and conf.allow_more_shards ~= 1 then refuse("changing it is not accepted (allow_more_shards = 0)") end
  if m > k then refuse(kind .. ":" .. m .. " is more than one GPU has") end
  log_info("gpucast: %s modify by uid %s: share %s:%d -> %s:%d accepted (not lower than the prediction)",
                 who(owner, job_rec.name, jobid), tostring(uid), kind, n, kind, m)
  return slurm.SUCCESS
end

-- Slurm 22.05 shows no plugin message to the user of a refused modification ("Use of
-- log.user() in job_modify is not supported"); scontrol prints this code's text instead.
local ESLURM_INVALID_GRES = 2072  -- "Invalid generic resource (gres) specification"

-- An update of another user's job by a uid that is not root: slurmctld runs this plugin
-- before its own permission check, so a refusal of the plugin's would tell that uid what
-- Slurm never would (e.g. that the owner is recorded for overuse). Such a refusal gets the
-- code Slurm itself answers a user who may not modify the job (slurmctld's job update:
-- "Security violation, JOB_UPDATE RPC" -> ESLURM_USER_ID_MISSING, "Invalid user id", 22.05
-- and 24.11), so the words are the same; an operator may modify it, and is refused with them
-- when gpucast refuses.
local ESLURM_USER_ID_MISSING = 2010  -- "Invalid user id"

-- Runs fn; turns raised errors into a logged decision and, on submission, a message for
-- the user. Lua error positions (file:line) go to slurmctld.log only. `is_modify`: the
-- owner's uid (a modification), or nil.
local function guarded(what, uid, name, is_modify, fn, ...)
  local ok, rc = pcall(fn, ...)
  if ok then return rc end
  local foreign = is_modify and uid ~= 0 and uid ~= is_modify
  if type(rc) == "table" and rc.kind == "user" then
    log_info("gpucast: %s: %s rejected: %s", who(uid, name), what, rc.msg)
    if foreign then return ESLURM_USER_ID_MISSING end
    if is_modify then return ESLURM_INVALID_GRES end
    slurm.log_user("%s", "gpucast: rejected: " .. rc.msg)
    return slurm.ERROR
  end
  -- Configuration or internal error: details for the operator only; fail closed.
  local detail = type(rc) == "table" and rc.msg or tostring(rc)
  log_error("gpucast: %s: %s rejected, operator action needed: %s", who(uid, name), what, detail)
  if foreign then return ESLURM_USER_ID_MISSING end
  if not is_modify then slurm.log_user("%s", "gpucast: " .. MISCONFIGURED) end
  return slurm.ERROR
end

function slurm_job_submit(job_desc, part_list, submit_uid)
  return guarded("submission", submit_uid, job_desc.name, false, submit, job_desc, part_list, submit_uid)
end

function slurm_job_modify(job_desc, job_rec, part_list, modify_uid)
  return guarded("modification of job " .. tostring(job_rec.job_id), modify_uid, job_rec.name, job_rec.user_id,
                 modify, job_desc, job_rec, part_list, modify_uid)
end

-- The configuration as the plugin loads: a wrong one is logged now (jobs are refused, fail
-- closed, until it is fixed; each is logged again).
do
  local note
  local ok, res = pcall(function()
    local conf = read_conf()
    local checked = check_conf_gpus(conf)
    note = check_gres_counts(conf)
    check_select_params(conf)
    check_gpu_types(conf)
    return checked
  end)
  if ok then
    log_info("gpucast job_submit.lua loaded; %s%s", res or "GPU names checked", note and ("; " .. note) or "")
  else
    log_error("gpucast job_submit.lua loaded, but its configuration is wrong (GPU jobs are refused until it is " ..
              "fixed; jobs that ask for no GPU pass): %s", type(res) == "table" and res.msg or tostring(res))
  end
end
return slurm.SUCCESS
