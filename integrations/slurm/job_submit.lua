--[[
gpucast job_submit plugin for Slurm 22.05 (JobSubmitPlugins=lua).

For every batch job that names its model, asks gpucast for the job's
predicted GPU utilization and rewrites the request to
  gres:shard:N,  N = ceil(util x shards_per_gpu / 100), 1 <= N <= shards_per_gpu
so that jobs with small predictions share one GPU.

A job names its model in either place (the comment wins):
  sbatch --comment=model=/path/m.onnx,batch=32,amp=1,dim.seq=384,attr.loader_workers=2 job.sh
  #GPUCAST model=/path/m.onnx batch=32 amp=1 dim.seq=384 attr.rl_env=1   (a line of the script)

Rejected (slurm.ERROR, message shown by sbatch): a named model that gpucast
cannot read or analyse, a malformed declaration, a GPU job without a model
when require_model=1, a multi-GPU request. Any internal error rejects the job
too (fail closed). Settings: gpucast.conf beside this file (see docs/slurm.md).
]]

local defaults = {
  mode = "cli",              -- "cli": run gpucast predict; "service": POST to gpucast serve
  gpucast = "/usr/local/bin/gpucast",
  predictor = "/etc/slurm/gpucast-predictor.json",
  url = "http://127.0.0.1:8080",  -- mode=service
  token_file = "",           -- mode=service: bearer token, if the service wants one
  shards_per_gpu = 8,        -- must match gres.conf (Name=shard Count=K per GPU)
  timeout_s = 5,             -- slurmctld holds a lock while this runs: keep it short
  require_model = 1,         -- 1: GPU jobs (gres gpu/shard) must name a model
}

local function script_dir()
  local src = debug.getinfo(1, "S").source
  return (src:match("^@(.*/)") or "./")
end

local function read_conf()
  local conf = {}
  for k, v in pairs(defaults) do conf[k] = v end
  local f = io.open(script_dir() .. "gpucast.conf", "r")
  if not f then return conf end
  for line in f:lines() do
    local k, v = line:match("^%s*([%w_]+)%s*=%s*(.-)%s*$")
    if k and not line:match("^%s*#") then
      if defaults[k] == nil then error("gpucast.conf: unknown setting '" .. k .. "'") end
      if type(defaults[k]) == "number" then
        v = tonumber(v)
        if not v then error("gpucast.conf: '" .. k .. "' wants a number") end
      end
      conf[k] = v
    end
  end
  f:close()
  return conf
end

-- Single-quotes s for /bin/sh.
local function shq(s)
  return "'" .. tostring(s):gsub("'", "'\\''") .. "'"
end

-- JSON string literal.
local function jstr(s)
  local out = tostring(s):gsub('[%c"\\]', function(c)
    local map = { ['"'] = '\\"', ['\\'] = '\\\\', ['\n'] = '\\n', ['\t'] = '\\t', ['\r'] = '\\r' }
    return map[c] or string.format("\\u%04x", c:byte())
  end)
  return '"' .. out .. '"'
end

-- Parses "k=v" items separated by `sep` (a Lua pattern class) into a table.
-- Returns nil, message on a malformed item.
local function parse_items(text, sep)
  local d = { dims = {}, attrs = {} }
  for item in text:gmatch("[^" .. sep .. "]+") do
    local k, v = item:match("^([%w_%.]+)=(.+)$")
    if not k then return nil, "malformed item '" .. item .. "' (want KEY=VALUE)" end
    if k == "model" then d.model = v
    elseif k == "batch" then
      if not v:match("^%d+$") or tonumber(v) < 1 then return nil, "batch=" .. v .. ": want an integer >= 1" end
      d.batch = tonumber(v)
    elseif k == "amp" then
      if v ~= "0" and v ~= "1" then return nil, "amp=" .. v .. ": want 0 or 1" end
      d.amp = (v == "1")
    elseif k:match("^dim%.[%w_]+$") then
      if not v:match("^%d+$") then return nil, k .. "=" .. v .. ": want an integer" end
      d.dims[k:sub(5)] = tonumber(v)
    elseif k:match("^attr%.[%w_]+$") then
      if not v:match("^[%w_]+$") then return nil, k .. "=" .. v .. ": bad value" end
      d.attrs[k:sub(6)] = v
    else
      return nil, "unknown key '" .. k .. "' (known: model, batch, amp, dim.NAME, attr.KEY)"
    end
  end
  if not d.model then return nil, "no model=PATH" end
  d.batch = d.batch or 1
  return d
end

-- The job's declaration: from --comment (if it mentions model=) or a #GPUCAST
-- line of the script. Returns decl or nil; nil, nil when there is none.
local function find_declaration(job_desc)
  local comment = job_desc.comment
  if comment and comment:match("model=") then
    local d, err = parse_items(comment, ",%s")
    if not d then return nil, "--comment: " .. err end
    return d
  end
  local script = job_desc.script
  if script then
    for line in script:gmatch("[^\n]+") do
      local rest = line:match("^#GPUCAST%s+(.*)$")
      if rest then
        local d, err = parse_items(rest, "%s")
        if not d then return nil, "#GPUCAST line: " .. err end
        return d
      end
    end
  end
  return nil, nil
end

local function run(cmd)
  local p = io.popen(cmd .. " 2>&1; echo \"__rc=$?\"", "r")
  if not p then error("cannot run " .. cmd) end
  local out = p:read("*a")
  p:close()
  local rc = tonumber(out:match("__rc=(%d+)%s*$"))
  out = out:gsub("__rc=%d+%s*$", "")
  return rc, out
end

local function first_line(s)
  return (s:match("^%s*([^\n]*)") or s)
end

-- Predicted utilization (percent) or nil, message.
local function predict(conf, d)
  if conf.mode == "service" then
    local body = "{" .. '"model":' .. jstr(d.model) .. ',"batch":' .. d.batch ..
                 ',"amp":' .. (d.amp and "true" or "false")
    local dims, attrs = {}, {}
    for k, v in pairs(d.dims) do dims[#dims + 1] = jstr(k) .. ":" .. v end
    for k, v in pairs(d.attrs) do attrs[#attrs + 1] = jstr(k) .. ":" .. jstr(v) end
    body = body .. ',"dims":{' .. table.concat(dims, ",") .. '},"attrs":{' .. table.concat(attrs, ",") .. "}}"
    local auth = ""
    if conf.token_file ~= "" then
      local f = io.open(conf.token_file, "r")
      if not f then error("cannot read token_file " .. conf.token_file) end
      auth = " -H " .. shq("Authorization: Bearer " .. f:read("*l"))
      f:close()
    end
    local cmd = "curl -sS --max-time " .. conf.timeout_s .. " -X POST -H 'Content-Type: application/json'" ..
                auth .. " --data-binary " .. shq(body) .. " " .. shq(conf.url .. "/v1/predict")
    local rc, out = run(cmd)
    if rc ~= 0 then error("gpucast service unreachable: " .. first_line(out)) end
    local util = out:match('"predicted_util"%s*:%s*([%d%.eE%+%-]+)')
    if util then return tonumber(util) end
    local msg = out:match('"error"%s*:%s*"(.-)"%s*}')
    if msg then return nil, msg end
    error("unexpected reply from the gpucast service: " .. first_line(out))
  end
  local cmd = "timeout " .. conf.timeout_s .. " " .. shq(conf.gpucast) .. " predict --json --predictor " ..
              shq(conf.predictor) .. " --model " .. shq(d.model) .. " --batch " .. d.batch
  if d.amp then cmd = cmd .. " --amp" end
  for k, v in pairs(d.dims) do cmd = cmd .. " --dim " .. shq(k .. "=" .. v) end
  for k, v in pairs(d.attrs) do cmd = cmd .. " --attr " .. shq(k .. "=" .. v) end
  local rc, out = run(cmd)
  if rc == 124 then error("gpucast predict timed out after " .. conf.timeout_s .. " s") end
  if rc == 0 then
    local util = tonumber(out:match('"gpu_util"%s*:%s*([%d%.eE%+%-]+)'))
    if not util then error("gpucast predict printed no gpu_util") end
    return util
  end
  if rc == 1 then  -- the model (or its options) is bad: "gpucast predict: <message>"
    return nil, (first_line(out):gsub("^gpucast predict: ", ""))
  end
  error("gpucast predict failed (exit " .. tostring(rc) .. "): " .. first_line(out))
end

local function wants_gpu(job_desc)
  for _, f in ipairs({ "tres_per_node", "tres_per_job", "tres_per_task", "tres_per_socket" }) do
    local v = job_desc[f]
    if v and (v:match("gpu") or v:match("shard")) then return true end
  end
  return false
end

local function submit(job_desc, uid)
  local conf = read_conf()
  local d, err = find_declaration(job_desc)
  if not d then
    if err then
      slurm.log_user("%s", "gpucast: " .. err)
      return slurm.ERROR
    end
    if conf.require_model == 1 and wants_gpu(job_desc) then
      slurm.log_user("gpucast: GPU jobs must name their model: --comment=model=PATH[,batch=N][,amp=1] " ..
                     "or a '#GPUCAST model=PATH batch=N' line in the script")
      return slurm.ERROR
    end
    return slurm.SUCCESS
  end
  local gpus = job_desc.tres_per_node and job_desc.tres_per_node:match("gpu:(%d+)")
  if gpus and tonumber(gpus) > 1 then
    slurm.log_user("%s", "gpucast: multi-GPU jobs are not shared: request at most one GPU per node")
    return slurm.ERROR
  end
  local util, why = predict(conf, d)
  if not util then
    slurm.log_user("%s", "gpucast: rejected: " .. why)
    return slurm.ERROR
  end
  local shards = math.ceil(util * conf.shards_per_gpu / 100 - 1e-9)
  if shards < 1 then shards = 1 end
  if shards > conf.shards_per_gpu then shards = conf.shards_per_gpu end
  job_desc.tres_per_node = "gres:shard:" .. shards
  local msg = string.format("gpucast: %s batch %d%s: predicted GPU utilization %.1f%% -> gres:shard:%d of %d",
                            d.model, d.batch, d.amp and " amp" or "", util, shards, conf.shards_per_gpu)
  slurm.log_info("%s (uid %s)", msg, tostring(uid))
  slurm.log_user("%s", msg)
  return slurm.SUCCESS
end

function slurm_job_submit(job_desc, part_list, submit_uid)
  local ok, rc = pcall(submit, job_desc, submit_uid)
  if ok then return rc end
  -- Fail closed: an internal error never lets an unchecked job through.
  slurm.log_error("gpucast job_submit: %s", tostring(rc))
  slurm.log_user("%s", "gpucast: internal error, job rejected: " .. tostring(rc))
  return slurm.ERROR
end

function slurm_job_modify(job_desc, job_rec, part_list, modify_uid)
  return slurm.SUCCESS
end

slurm.log_info("gpucast job_submit.lua loaded")
return slurm.SUCCESS
