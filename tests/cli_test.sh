#!/usr/bin/env bash
# End-to-end tests of the gpucast binary as a user runs it: help texts, exit
# codes and error messages on bad input, machine-readable output.
# Usage: tests/cli_test.sh BUILD/gpucast
set -u
BIN=${1:?usage: cli_test.sh PATH/TO/gpucast}
ROOT=$(cd "$(dirname "$0")/.." && pwd)
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
pass=0; fail=0

ok()   { pass=$((pass + 1)); }
bad()  { fail=$((fail + 1)); echo "FAIL: $*"; }

# expect_rc WANT CMD...: runs CMD, output to $TMP/out and $TMP/err.
expect_rc() {
  local want=$1; shift
  "$@" >"$TMP/out" 2>"$TMP/err"; local rc=$?
  if [ "$rc" = "$want" ]; then ok; else bad "rc $rc (want $want): $* :: $(head -c 300 "$TMP/err")"; fi
}
expect_err() {  # expect_err TEXT: stderr of the last command contains TEXT
  if grep -qF -- "$1" "$TMP/err"; then ok; else bad "stderr lacks '$1': $(head -c 300 "$TMP/err")"; fi
}
expect_out() {
  if grep -qF -- "$1" "$TMP/out"; then ok; else bad "stdout lacks '$1': $(head -c 300 "$TMP/out")"; fi
}

expect_err_line() {  # expect_err_line REGEX: some stderr line matches the extended regex
  if grep -qE -- "$1" "$TMP/err"; then ok; else bad "no stderr line matches '$1': $(head -c 300 "$TMP/err")"; fi
}

expect_out_line() {  # expect_out_line REGEX: some stdout line matches the extended regex
  if grep -qE -- "$1" "$TMP/out"; then ok; else bad "no stdout line matches '$1': $(head -c 300 "$TMP/out")"; fi
}

# --help on the binary lists every subcommand as a subcommand (an indented
# "NAME  description" row under "Subcommands:", not just the word somewhere).
expect_rc 0 "$BIN" --help
expect_out "Subcommands:"
for cmd in analyze train predict evaluate simulate report serve; do
  expect_out_line "^  $cmd +[A-Za-z]"
done
# Each subcommand's --help is its own (its usage line names it) and lists
# the flags that only it has.
declare -A OWN_FLAGS=(
  [analyze]="--batch --dim --csv --json"
  [train]="--data --out --algo"
  [predict]="--predictor --model --batch --json"
  [evaluate]="--split --repeats --json"
  [simulate]="--trace --policy --cluster --json"
  [report]="--out"
  [serve]="--listen --db --model-root --token-file --max-body-bytes --request-timeout --max-connections-per-client"
)
for cmd in analyze train predict evaluate simulate report serve; do
  expect_rc 0 "$BIN" "$cmd" --help
  expect_out_line "^Usage: .*gpucast $cmd( |$)"
  for flag in ${OWN_FLAGS[$cmd]}; do
    expect_out_line "^ +(-[a-zA-Z], ?)?$flag( |,|$)"
  done
done
expect_rc 2 "$BIN" no-such-command
expect_err "A subcommand is required"
# --help shows no path of this machine (defaults are <data>/..., <home>/...) and no
# unreadable range ("[1 - 4611686018427387904]").
for cmd in analyze train predict evaluate simulate serve; do
  "$BIN" "$cmd" --help >"$TMP/help" 2>&1
  if grep -qF -- "$ROOT" "$TMP/help" || grep -qF -- "$(cd "$(dirname "$BIN")" && pwd)" "$TMP/help"; then bad "$cmd --help shows a local path"; else ok; fi
  if grep -qE -- "[0-9]{12,}" "$TMP/help"; then bad "$cmd --help shows a huge number: $(grep -E '[0-9]{12,}' "$TMP/help")"; else ok; fi
done
# `gpucast predict` and `analyze` processes load neither XGBoost (dlopen'ed when a forest
# is fitted) nor the service's HTTP/TLS libraries (in gpucast-serve only): start-up time.
if ldd "$BIN" | grep -qE "xgboost|httplib|libssl|libcrypto|brotli"; then
  bad "gpucast links $(ldd "$BIN" | grep -oE "lib(xgboost|cpp-httplib|ssl|crypto|brotli)[^ ]*" | tr '\n' ' ')"
else ok; fi
expect_rc 0 "$BIN" serve --help
expect_out "--listen"
expect_rc 2 "$BIN" serve
expect_err "--listen is required"

# analyze: bad input files get a message naming the file and a non-zero exit.
: >"$TMP/empty.onnx"
expect_rc 1 "$BIN" analyze "$TMP/empty.onnx" --batch 1
expect_err "$TMP/empty.onnx"
head -c 4096 /dev/urandom >"$TMP/random.onnx"
expect_rc 1 "$BIN" analyze "$TMP/random.onnx" --batch 1
expect_err "$TMP/random.onnx"
expect_rc 1 "$BIN" analyze "$TMP/missing.onnx" --batch 1
expect_err "missing.onnx"
M="$ROOT/models/resnet50.onnx"
if [ -f "$M" ]; then
  head -c 2000 "$M" >"$TMP/truncated.onnx"
  expect_rc 1 "$BIN" analyze "$TMP/truncated.onnx" --batch 1
  expect_err "truncated.onnx"
  expect_rc 2 "$BIN" analyze "$M" --batch 0
  expect_rc 1 "$BIN" analyze "$M" --batch 2 --dim bogus=3
  expect_err "bogus"
  # --json is one object with the stable top-level keys.
  expect_rc 0 "$BIN" analyze "$M" --batch 2 --json
  for key in '"nodes"' '"totals"' '"features"' '"unsupported"' '"forward_flops"' '"backward_flops"'; do
    expect_out "$key"
  done
  expect_rc 0 "$BIN" analyze "$M" --batch 2 --csv
  expect_out "name,op_type,category"
else
  bad "models/resnet50.onnx missing"
fi

# train / predict / evaluate / simulate: bad input names the file and line or the key.
printf 'model,dataset,batchsize,amp,speed,gpu_util,gmem_util,gmem,label\nResNet50,ImageNet,abc,0,1,2,3,4,0\n' >"$TMP/bad.csv"
expect_rc 1 "$BIN" train --data "$TMP/bad.csv" --out "$TMP/p.json"
expect_err "bad.csv:2: column 'batchsize': 'abc' is not an integer >= 1"
expect_rc 1 "$BIN" evaluate --split bogus:3
expect_err "split 'bogus:3': unknown kind"
expect_rc 1 "$BIN" predict --predictor "$TMP/bad.csv" --model "$ROOT/models/vgg.onnx" --batch 8
expect_err "bad.csv: not a JSON object"
expect_rc 0 "$BIN" train --out "$TMP/p.json"
# train's default data: Lucid's RTX 3090 rows and MIGProfiler's A100 rows (docs/predictor.md).
grep -q "trained physics (features all) on 89 rows (12 workloads" "$TMP/out" && ok || bad "train's default data: $(tail -2 "$TMP/out")"
expect_rc 1 "$BIN" predict --predictor "$TMP/p.json" --model "$ROOT/models/vgg.onnx" --batch 8 --attr colour=3
expect_err "job attribute 'colour': unknown key"
expect_rc 0 "$BIN" predict --predictor "$TMP/p.json" --model "$ROOT/models/vgg.onnx" --batch 8 --json
expect_out '"gpu_util"'
# GPU memory: the point, its interval, the capacity and whether it fits, in JSON and in text.
expect_out '"gpu_mem_mib"'
expect_out '"gpu_mem_interval"'
expect_out '"gpu_mem_capacity_mib": 24576.0'
expect_out '"gpu_mem_fit": "fits"'
expect_out '"optimizer": "adam"'
# Whether the model counts the power-limited clock (its setting, on by default): in --json always,
# in text a line only when off (a model trained with --no-power-limited-clock).
expect_out '"power_limited_clock": true'
expect_rc 0 "$BIN" predict --predictor "$TMP/p.json" --model "$ROOT/models/vgg.onnx" --batch 8
if grep -qF "  boost clock:" "$TMP/out"; then bad "predict with the power-limited clock printed the boost-clock line"; else ok; fi
expect_rc 0 "$BIN" train --algo physics --no-power-limited-clock --out "$TMP/p_boost.json" --quiet
expect_rc 0 "$BIN" predict --predictor "$TMP/p_boost.json" --model "$ROOT/models/vgg.onnx" --batch 8 --json
expect_out '"power_limited_clock": false'
expect_rc 0 "$BIN" predict --predictor "$TMP/p_boost.json" --model "$ROOT/models/vgg.onnx" --batch 8
expect_out_line "^  boost clock: the model counts every GPU's compute peaks at its boost clock, not the power-limited clock \(docs/predictor.md\)$"
expect_rc 0 "$BIN" predict --predictor "$TMP/p.json" --model "$ROOT/models/vgg.onnx" --batch 8 --attr optimizer=sgd_momentum
expect_out_line '^predicted GPU memory \(peak\): [0-9]+ MiB  \(interval [0-9]+-[0-9]+ MiB at 80%: low end a one-sided 85.0% bound, high end a one-sided 95.0% bound; optimizer sgd_momentum\); fits the 24576 MiB of RTX3090$'
# BERT-base at batch 128, sequence 128 does not fit a 10 GB MIG slice (measured 8.7 GB at batch 128, sequence 64).
expect_rc 0 "$BIN" predict --predictor "$TMP/p.json" --model "$ROOT/models/bert-base.onnx" --batch 128 --dim seq=128 \
  --gpu A100-80GB --mig 1g.10gb --attr optimizer=adamw
expect_out_line '^predicted GPU memory \(peak\): [0-9]+ MiB .*; does not fit the 9728 MiB of A100-80GB MIG 1g.10gb$'
expect_rc 1 "$BIN" predict --predictor "$TMP/p.json" --model "$ROOT/models/vgg.onnx" --batch 8 --attr optimizer=lamb
expect_err "job attribute 'optimizer': value 'lamb' is not one of sgd, sgd_momentum, adam, adamw"
# evaluate reports GPU memory beside utilization (leave one workload out: MAPE, MAE, high end).
expect_rc 0 "$BIN" evaluate --split lowo --algo ridge --repeats 1 --per-workload
expect_out "GPU memory (one physical model per fold, no selection: nested and plain give the same)"
expect_out_line '^\| lowo \| ridge \| 89 \| 0\.[0-9]{3} \| [0-9]+ \| [01]\.[0-9]{2} \|'
expect_out_line '^\| ResNet50/ImageNet \| 6 \| 7437 \| [0-9]+ \| 0\.[0-9]{3} \|'
# A predictor file from before the lowo accuracy (format_version 4) is refused with what to do.
sed 's/"format_version":5/"format_version":4/' "$TMP/p.json" >"$TMP/p3.json"
expect_rc 1 "$BIN" predict --predictor "$TMP/p3.json" --model "$ROOT/models/vgg.onnx" --batch 8
expect_err "p3.json: format_version 4: this build reads 5 (4 adds the GPU memory model, 5 the lowo accuracy and job-fact offsets); retrain with 'gpucast train'"
# A graph that cannot be costed completely is refused by predict (BERT's position table has 512
# rows); analyze shows the partial report, marked, and exits 1 with --strict.
expect_rc 1 "$BIN" predict --predictor "$TMP/p.json" --model "$ROOT/models/bert.onnx" --batch 2 --dim seq=1024
expect_err "models/bert.onnx: cannot predict from a partial cost report: 989 of 1625 nodes could not be costed; first: node '/Add' (Add): input or output shape unknown (input shapes [2,1024,768] [1,512,768]"
expect_rc 0 "$BIN" analyze "$ROOT/models/bert.onnx" --batch 2 --dim seq=1024
expect_out "PARTIAL REPORT: 989 of 1625 nodes could not be costed"
expect_err "gpucast analyze: warning: $ROOT/models/bert.onnx: partial cost report"
expect_rc 1 "$BIN" analyze "$ROOT/models/bert.onnx" --batch 2 --dim seq=1024 --strict
expect_err "partial cost report: 989 of 1625 nodes"
printf 'submit_s,duration_s,num_gpus\n0,10,1\n5,abc,1\n' >"$TMP/trace.csv"
expect_rc 1 "$BIN" simulate --trace "$TMP/trace.csv" --policy slot --out "$TMP/sim"
expect_err "trace.csv: line 3: duration_s 'abc' is not a positive number"
expect_rc 0 "$BIN" simulate --trace "$TMP/trace.csv" --policy slot --out "$TMP/sim" --skip-bad-lines
expect_out "1 bad lines skipped"
[ -f "$TMP/sim/summary.json" ] && [ -f "$TMP/sim/jobs.csv" ] && ok || bad "simulate wrote no summary.json/jobs.csv"
expect_rc 1 "$BIN" simulate --trace philly --policy nosuch --out "$TMP/sim2"
expect_err "unknown policy 'nosuch'"
# A cluster of an unknown GPU type stops at start, naming the closest known ones.
expect_rc 1 "$BIN" simulate --trace philly --cluster "128x RTX3900" --policy slot --out "$TMP/sim2"
expect_err "--cluster '128x RTX3900': unknown GPU 'RTX3900'; closest: RTX3090"
expect_rc 1 "$BIN" simulate --trace philly --load-factor 0 --policy slot --out "$TMP/sim2"
expect_err "--load-factor '0': want a number in [0.001, 1000]"
# Number flags must be finite: NaN passed every 'x <= 0' check and ran (inf, nan in the output).
expect_rc 1 "$BIN" simulate --trace philly --load-factor 1e-308 --policy slot --out "$TMP/sim2"
expect_err "--load-factor '1e-308': want a number in [0.001, 1000]"
expect_rc 1 "$BIN" simulate --trace philly --jobs 0 --policy slot --out "$TMP/sim2"
expect_err "--jobs must be a positive number of jobs"
for bad_flag in "--cap nan" "--profile-s nan" "--measure-noise inf" "--oom-after-s nan" "--restart-s inf" \
                "--confident-sd nan" "--max-slowdown nan" "--checkpoint-s inf"; do
  expect_rc 1 "$BIN" simulate --trace philly $bad_flag --policy slot --out "$TMP/sim2"
  expect_err "${bad_flag%% *} must be"
done
expect_rc 1 "$BIN" simulate --trace philly --predictions noisy:abc --policy predictive --out "$TMP/sim2"
expect_err "--predictions 'noisy:abc': the noise sd must be a number in [0, 100] (points)"
# --cap-rule: sum (the paper's, --cap) or capacity (100 x the fitted work capacity, 120 on the RTX 3090).
expect_rc 1 "$BIN" simulate --trace philly --cap-rule bogus --policy predictive --out "$TMP/sim2"
expect_err "--cap-rule 'bogus': want sum or capacity"
expect_rc 1 "$BIN" simulate --trace philly --cap-rule capacity --cap 90 --policy predictive --out "$TMP/sim2"
expect_err "--cap applies to --cap-rule sum; --cap-rule capacity takes the cap from the physics"
# serve takes the same rule, and refuses a bad one at start, before anything listens.
expect_rc 1 "$BIN" serve --listen 127.0.0.1:0 --db "$TMP/caprule.db" --predictor "$TMP/p.json" --cap-rule bogus
expect_err "gpucast serve: cap rule 'bogus': want sum or capacity"
# A database path that is not a regular file says what it is (train said "no such database file",
# serve SQLite's "disk I/O error"); a FIFO is refused without an open that would wait for a writer.
mkfifo "$TMP/obs.fifo"; mkdir "$TMP/obs.dir"
for db in "$TMP/obs.fifo:a FIFO" "$TMP/obs.dir:a directory" "/dev/zero:a character device"; do
  expect_rc 1 timeout 60 "$BIN" train --observations "${db%%:*}" --out "$TMP/pobs.json"
  expect_err "gpucast train: ${db%%:*}: is ${db#*:}, not a regular file"
  expect_rc 1 timeout 60 "$BIN" serve --listen 127.0.0.1:0 --db "${db%%:*}" --predictor "$TMP/p.json"
  expect_err "gpucast serve: --db ${db%%:*}: is ${db#*:}, not a regular file"
done
expect_rc 1 "$BIN" train --observations "$TMP/absent.db" --out "$TMP/pobs.json"
expect_err "gpucast train: $TMP/absent.db: no such database file"
[ ! -e "$TMP/obs.dir.models" ] && [ ! -e "$TMP/pobs.json" ] && ok || bad "a refused --db or --observations left files"
expect_rc 0 "$BIN" simulate --trace philly --jobs 200 --cluster "8x RTX3090" --cap-rule capacity --policy predictive \
  --predictions oracle --quiet --out "$TMP/simcap"
grep -q '"cap_rule": "capacity"' "$TMP/simcap/summary.json" && grep -q '"cap": 120' "$TMP/simcap/summary.json" && ok ||
  bad "simulate --cap-rule capacity: summary.json does not record cap_rule capacity, cap 120"

# interference: the fitted physics, inspectable; bounded by construction.
expect_rc 0 "$BIN" interference --util 100 --util 100 --util 100 --json
# (at least the time-slicing third each, at most the capacity term's 1.2 GPUs of work together)
/usr/bin/python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); r=d["rates"]; assert len(r)==3 and all(1/3-1e-9<=x<=0.41 for x in r), r; assert d["device_busy"]<=100+1e-9' "$TMP/out" && ok || bad "three 100% jobs do not get about 1/3 each: $(head -c 300 "$TMP/out")"
expect_rc 0 "$BIN" interference --util 10 --util 10 --json
/usr/bin/python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); assert min(d["rates"])>0.97, d' "$TMP/out" && ok || bad "light jobs slow each other: $(head -c 300 "$TMP/out")"
expect_rc 1 "$BIN" interference --util 150
expect_err "--util 150"
expect_rc 1 "$BIN" interference --util 50 --gpu T4
expect_err "--gpu T4: no co-located pairs were measured on it"
# Per GPU type: two saturating jobs on a V100 share it (Gavel's pairs).
expect_rc 0 "$BIN" interference --util 100 --util 100 --gpu V100 --json
/usr/bin/python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); r=d["rates"]; assert d["gpu"]=="V100" and abs(r[0]-0.5)<1e-9 and abs(r[1]-0.5)<1e-9, d' "$TMP/out" && ok || bad "--gpu V100: $(head -c 300 "$TMP/out")"
# --validate: on models it was not fitted on, the selected physics is no worse
# than the time-slicing bound, for every source and GPU type.
expect_rc 0 "$BIN" interference --validate --json
/usr/bin/python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); t=d["tables"]; assert [(x["source"],x["gpu"]) for x in t]==[("lucid","RTX3090"),("gavel","K80"),("gavel","P100"),("gavel","V100")], t; assert all(x["selected_nested"]["mae"]<=x["time_slicing_bound"]["mae"]+1e-12 for x in t), t; assert "| Gavel V100 |" in d["markdown"]' "$TMP/out" && ok || bad "interference --validate: $(head -c 300 "$TMP/out")"
# simulate: placements.csv audits every run; useful work recomputed from the
# records lies between what finished in the window and what could have run.
expect_rc 0 "$BIN" simulate --trace philly --jobs 1500 --cluster "16x RTX3090" --policy slot,profiling-exclusive,predictive-feedback \
  --predictions oracle --seed 2 --out "$TMP/simp"
# Progress when stderr is not a terminal (here a file): each run's result as it finishes.
for pol in slot profiling-exclusive predictive-feedback; do
  expect_err_line "^gpucast simulate \[[0-9.]+ s\] $pol seed 2 done in [0-9.]+ s: useful work [0-9.]+%"
done
expect_rc 0 "$BIN" simulate --trace "$TMP/trace.csv" --policy slot --out "$TMP/simq" --skip-bad-lines --quiet
[ -s "$TMP/err" ] && bad "simulate --quiet wrote to stderr: $(head -c 200 "$TMP/err")" || ok
for pol in slot profiling-exclusive predictive-feedback; do
  /usr/bin/python3 - "$TMP/simp/$pol" <<'PY' && ok || bad "simulate $pol: records disagree with summary.json"
import csv, json, sys, collections
d = sys.argv[1]
s = json.load(open(d + "/summary.json"))
jobs = list(csv.DictReader(open(d + "/jobs.csv")))
rows = list(csv.DictReader(open(d + "/placements.csv")))
t0 = min(float(j["submit_s"]) for j in jobs); t1 = t0 + s["window_end_s"]
assert s["bound_kind"] in ("capacity", "demand") and 0 < s["window_end_s"] <= s["trace_window_s"] + 1e-9, s
G = s["num_gpus"]; W = t1 - t0
by_job = collections.defaultdict(list)
for r in rows: by_job[r["job_id"]].append(r)
lo = hi = 0.0
for j in jobs:
    if j["status"] != "done": continue
    u, g, d_s = float(j["true_util"]) / 100, int(j["num_gpus"]), float(j["duration_s"])
    rs = by_job[j["job_id"]]
    assert rs and all(r["end_s"] for r in rs), j["job_id"]
    assert abs(max(float(r["end_s"]) for r in rs) - float(j["end_s"])) < 1e-2, j["job_id"]
    if float(j["end_s"]) <= t1: lo += u * g * d_s; hi += u * g * d_s
    else: hi += u * g * min(d_s, max(0.0, t1 - float(j["start_s"])))
useful = 100 * sum(float(j["true_util"]) / 100 * int(j["num_gpus"]) * float(j["work_in_window_s"]) for j in jobs) / (G * W)
assert abs(useful - s["useful_work_utilization"]) < 1e-2, (useful, s["useful_work_utilization"])
assert 100 * lo / (G * W) - 1e-6 <= useful <= 100 * hi / (G * W) + 1e-6, (lo, useful, hi)
assert useful <= s["ideal_work_utilization"] + 1e-9
# A profiling run is alone on its GPU; no GPU holds a job twice at once.
ev = collections.defaultdict(list)
for r in rows: ev[r["gpu"]].append((float(r["start_s"]), float(r["end_s"] or "inf"), r["kind"], r["job_id"]))
for g, iv in ev.items():
    iv.sort()
    for a, b in zip(iv, iv[1:]):
        if b[0] < a[1] - 1e-6: assert a[2] == b[2] == "run" and a[3] != b[3], (g, a, b)
PY
done
# simulate --threads: the policies' runs at once give the files and results of one at a time
# (only the wall times and output paths differ).
expect_rc 0 "$BIN" simulate --trace philly --jobs 1500 --cluster "16x RTX3090" --policy slot,profiling-exclusive,predictive-feedback \
  --predictions oracle --seed 2 --threads 3 --out "$TMP/simt" --quiet
/usr/bin/python3 - "$TMP/simp" "$TMP/simt" <<'PY' && ok || bad "simulate --threads 3 differs from --threads default"
import filecmp, json, os, sys
a, b = sys.argv[1:]
def strip(x):
    if isinstance(x, dict): return {k: strip(v) for k, v in x.items() if k not in ("wall_s", "out")}
    if isinstance(x, list): return [strip(v) for v in x]
    return x
assert strip(json.load(open(a + "/runs.json"))) == strip(json.load(open(b + "/runs.json")))
for pol in ("slot", "profiling-exclusive", "predictive-feedback"):
    for f in sorted(os.listdir(os.path.join(a, pol))):
        assert filecmp.cmp(os.path.join(a, pol, f), os.path.join(b, pol, f), shallow=False), (pol, f)
PY
expect_rc 2 "$BIN" simulate --trace philly --jobs 10 --policy slot --threads -1 --out "$TMP/simt2"
expect_err "--threads: Value -1 not in range 0 to 256"
# simulate --predictor: the leave-one-workload-out predictions `train` stored (its algorithm, fitted
# without each workload) give the same runs, bit for bit, as computing that algorithm's lowo
# predictions (--predictions ALGO); a file whose predictions do not apply (other data, no stored
# predictions, another seed) falls back to computing them and says why on stderr; same runs again.
# The simulator's rows are Lucid's (an RTX 3090 cluster): a predictor trained on them, not on
# train's default data, holds stored predictions for exactly those rows.
DATA=${GPUCAST_DATA:-$(dirname "$BIN")/share/gpucast/data}
expect_rc 0 "$BIN" train --data "$DATA/lucid/single_data.csv" --out "$TMP/pl.json" --quiet
ALGO=$(/usr/bin/python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["algo"])' "$TMP/pl.json")
SM=(simulate --trace philly --jobs 300 --cluster "8x RTX3090" --policy predictive,predictive-feedback --seed 3)
same_runs() {  # same_runs DIR_A DIR_B WHAT: every policy's summary.json and jobs.csv identical
  local p
  for p in predictive predictive-feedback; do
    cmp -s "$1/$p/summary.json" "$2/$p/summary.json" && cmp -s "$1/$p/jobs.csv" "$2/$p/jobs.csv" && ok ||
      bad "simulate $3: $p differs from --predictions $ALGO"
  done
}
expect_rc 0 "$BIN" "${SM[@]}" --predictions "$ALGO" --out "$TMP/simc"
grep -q "\"predictions\": \"lowo:$ALGO\"" "$TMP/simc/predictive/summary.json" && ok || bad "simulate --predictions $ALGO: label"
expect_rc 0 "$BIN" "${SM[@]}" --predictor "$TMP/pl.json" --out "$TMP/simm"
expect_err "gpucast simulate: lowo:$ALGO predictions of 52 rows from $TMP/pl.json (its training pass), not recomputed"
grep -q "computing the leave-one-workload-out" "$TMP/err" && bad "simulate --predictor recomputed" || ok
same_runs "$TMP/simc" "$TMP/simm" "--predictor"
# The default (neither flag): the predictor `train` makes on these rows (pl.json: `train --data` the
# simulator's rows, its other options the defaults), which simulate trains and caches itself,
# replayed the same way: the same runs.
expect_rc 0 "$BIN" "${SM[@]}" --out "$TMP/simd"
grep -q "\"predictions\": \"lowo:$ALGO\"" "$TMP/simd/predictive/summary.json" && ok || bad "simulate default: label"
same_runs "$TMP/simc" "$TMP/simd" "(the default)"
# A control on top: shuffled permutes the file's predictions as shuffled:ALGO permutes the computed ones.
expect_rc 0 "$BIN" "${SM[@]}" --predictions "shuffled:$ALGO" --out "$TMP/simsc"
expect_rc 0 "$BIN" "${SM[@]}" --predictor "$TMP/pl.json" --predictions shuffled --out "$TMP/simsm"
for p in predictive predictive-feedback; do
  cmp -s "$TMP/simsc/$p/summary.json" "$TMP/simsm/$p/summary.json" && ok || bad "simulate --predictor --predictions shuffled: $p"
done
stale() {  # stale NAME PYTHON-EDIT REASON
  /usr/bin/python3 -c "import json,sys; j=json.load(open(sys.argv[1])); $2; json.dump(j, open(sys.argv[2], 'w'))" \
    "$TMP/pl.json" "$TMP/$1.json"
  expect_rc 0 "$BIN" "${SM[@]}" --predictor "$TMP/$1.json" --out "$TMP/sim-$1"
  expect_err "gpucast simulate: $TMP/$1.json: its stored predictions do not apply: $3; computing lowo:$ALGO"
  same_runs "$TMP/simc" "$TMP/sim-$1" "--predictor $1.json"
}
DIGEST=$(/usr/bin/python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["training"]["digest"])' "$TMP/pl.json")
stale otherdata 'j["training"]["digest"]="fnv1a64:0000000000000000"' \
  "it was trained on data fnv1a64:0000000000000000, the simulator's rows are $DIGEST"
stale older 'del j["lowo_predictions"]' \
  "it holds no leave-one-workload-out predictions (written by an older gpucast, or trained on fewer than 3 workloads)"
stale seed 'j["training"]["seed"]=1' "it was trained with --seed 1; the simulator's use seed 0"
stale rows 'j["lowo_predictions"]["rows"].pop()' \
  "it was trained on 51 rows, the simulator's data has 52 (rows added by --observations or --data?)"
# train's default predictor (Lucid's and MIGProfiler's rows) is not trained on the simulator's rows:
# its predictions are computed, and the message says which predictor's would apply.
expect_rc 0 "$BIN" "${SM[@]}" --predictor "$TMP/p.json" --out "$TMP/sim-default"
expect_err "its stored predictions do not apply: it was trained on data"
expect_err "the simulator's rows are Lucid's RTX 3090 jobs: a predictor trained with --data <data>/lucid/single_data.csv alone holds predictions that apply"
same_runs "$TMP/simc" "$TMP/sim-default" "--predictor (train's default data)"
# Not a predictor file, or none: an error naming the file (the user named it).
echo '[1]' >"$TMP/notp.json"
expect_rc 1 "$BIN" "${SM[@]}" --predictor "$TMP/notp.json" --predictions oracle --out "$TMP/simn"
expect_err "gpucast simulate: --predictor: $TMP/notp.json: not a JSON object"
expect_rc 1 "$BIN" "${SM[@]}" --predictor "$TMP/nosuch.json" --out "$TMP/simn"
expect_err "gpucast simulate: --predictor: $TMP/nosuch.json: cannot open"
# --model is the ONNX graph in every other command: simulate does not take it.
expect_rc 2 "$BIN" "${SM[@]}" --model "$TMP/p.json" --out "$TMP/simn"
expect_err "The following arguments were not expected"
expect_rc 0 "$BIN" report "$TMP/simp" --out "$TMP/simp.html"
grep -q "Useful work beside busy time" "$TMP/simp.html" && ok || bad "report lacks the useful-work chart"
# A run reached twice (its directory and one above it) counts once.
n1=$("$BIN" report "$TMP/simp" --out "$TMP/simp.html")
n2=$("$BIN" report "$TMP/simp" "$TMP/simp/" "$TMP/simp/." --out "$TMP/simp2.html")
[ "$n1" != "" ] && [ "${n1#wrote * (}" = "${n2#wrote * (}" ] && ok || bad "report counted a run twice: '$n1' vs '$n2'"

# gpus: the GPU table; any spelling of a name (nvidia-smi's included) reaches its row; an unknown
# name is an error naming the closest ones, in gpus and in predict alike.
expect_rc 0 "$BIN" gpus --help
expect_out_line "^ +--json"
expect_rc 0 "$BIN" gpus
expect_out_line "^RTX3090 +desktop +Ampere +PCIe +35.6 +71.0 +35.6 +936 +24 +350 +PCIe 4.0 x16, NVLink 3 bridge 112.5 GB/s"
expect_out_line "^RTX3080-Laptop +laptop +Ampere +laptop +21.0 "
expect_rc 0 "$BIN" gpus "NVIDIA GeForce RTX 3080 Laptop GPU" "Tesla V100-SXM2-32GB" --json
/usr/bin/python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); assert [g["name"] for g in d]==["RTX3080-Laptop","V100-32GB"], d; assert d[0]["class"]=="laptop" and d[0]["power_w"]=={"min":80,"max":150}, d[0]; assert d[1]["nvlink"]["gbps_per_direction"]==150 and d[1]["source"], d[1]' "$TMP/out" && ok || bad "gpus --json: $(head -c 300 "$TMP/out")"
expect_rc 1 "$BIN" gpus RTX3900
expect_err "gpucast gpus: unknown GPU 'RTX3900'; closest: RTX3090, RTX3050, RTX3060, RTX3070, RTX3080 (gpucast gpus lists all; a GPU it lacks goes in a site table: --gpu-table)"
expect_rc 1 "$BIN" predict --predictor "$TMP/p.json" --model "$ROOT/models/vgg.onnx" --batch 8 --gpu RTX3900
expect_err "gpucast predict: --gpu: unknown GPU 'RTX3900'; closest: RTX3090"
expect_rc 0 "$BIN" predict --predictor "$TMP/p.json" --model "$ROOT/models/vgg.onnx" --batch 8 --gpu "NVIDIA A100-PCIE-40GB" --json
expect_out '"gpu": "A100-PCIE-40GB"'

# predict --gpus: one rank of a data-parallel job; --batch per GPU; bad counts and links named.
expect_rc 0 "$BIN" predict --predictor "$TMP/p.json" --model "$ROOT/models/vgg.onnx" --batch 32 --gpus 8 --interconnect pcie4x16 --json
/usr/bin/python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); dp=d["data_parallel"]; assert d["gpus"]==8; assert abs(dp["allreduce_bytes"]-9231114*4)<1, dp; assert dp["intra_node"]["name"]=="pcie4x16" and dp["intra_node"]["from"]=="--interconnect"; assert 0<dp["scaling_efficiency"]<1 and dp["compute_util"]<=dp["single_gpu_util"]<=d["gpu_util"]<=100, dp; assert dp["single_gpu_interval"][0]<=dp["single_gpu_util"]<=dp["single_gpu_interval"][1]; assert dp["single_gpu_step_ms"]<dp["step_ms"]; t=open(sys.argv[1]).read(); assert t.count("\"gpu_util\"")==1 and t.count("\"interval\"")==1 and "low" in d["interval"] and "high" in d["interval"]; assert dp["exposed_comm_ms"]<=dp["comm_ms"], dp' "$TMP/out" && ok || bad "predict --gpus 8 --json: $(head -c 400 "$TMP/out")"
expect_rc 0 "$BIN" predict --predictor "$TMP/p.json" --model "$ROOT/models/vgg.onnx" --batch 32 --gpus 16 --nodes 2
expect_out "one rank of 16 GPUs on 2 nodes (pcie4x16, eth100 assumed)"
expect_rc 1 "$BIN" predict --predictor "$TMP/p.json" --model "$ROOT/models/vgg.onnx" --batch 32 --gpus 6 --nodes 4
expect_err "gpucast predict: --gpus 6 --nodes 4: GPUs must divide evenly over nodes"
expect_rc 1 "$BIN" predict --predictor "$TMP/p.json" --model "$ROOT/models/vgg.onnx" --batch 32 --gpus 4 --interconnect warp9
expect_err "--interconnect 'warp9': unknown link"
expect_rc 2 "$BIN" predict --predictor "$TMP/p.json" --model "$ROOT/models/vgg.onnx" --batch 32 --gpus 0
# The CLI takes the jobs the service takes (util/job_limits.h): a batch, GPU count or dimension the
# service refuses (400) was predicted here (batch 16777217: a 10-hour step); an empty --gpu was the
# predictor's GPU here and a 400 there.
expect_rc 2 "$BIN" predict --predictor "$TMP/p.json" --model "$ROOT/models/vgg.onnx" --batch 16777217
expect_err "--batch: Value 16777217 not in range 1 to 16777216"
expect_rc 2 "$BIN" analyze "$ROOT/models/vgg.onnx" --batch 16777217
expect_err "--batch: Value 16777217 not in range 1 to 16777216"
expect_rc 2 "$BIN" predict --predictor "$TMP/p.json" --model "$ROOT/models/vgg.onnx" --batch 32 --gpus 1025
expect_err "--gpus: Value 1025 not in range 1 to 1024"
expect_rc 1 "$BIN" predict --predictor "$TMP/p.json" --model "$ROOT/models/bert.onnx" --batch 1 --dim seq=16777217
expect_err "gpucast predict: --dim 'seq=16777217': VALUE must be at most 16777216 (the service's limit on dims)"
expect_rc 2 "$BIN" predict --predictor "$TMP/p.json" --model "$ROOT/models/vgg.onnx" --batch 32 --gpu ""
expect_err "--gpu: unknown GPU ''"
expect_rc 1 "$BIN" predict --predictor "$TMP/p.json" --model "$ROOT/models/vgg.onnx" --batch 8 --attr loader_workers=1 \
  --attr loader_workers=8
expect_err "gpucast predict: --attr 'loader_workers=8': key given twice"
# A profile no GPU has is unknown (POST /v1/predict: 400, the same words after "field 'mig': ");
# a known profile this GPU lacks names the GPU's profiles (POST /v1/predict: 422).
expect_rc 1 "$BIN" predict --predictor "$TMP/p.json" --model "$ROOT/models/vgg.onnx" --batch 8 --gpu A100-80GB --mig 7g.99gb
expect_err "gpucast predict: --mig: unknown MIG profile '7g.99gb' (MIG profiles of gpucast's GPUs: 1g.5gb, "
expect_rc 1 "$BIN" predict --predictor "$TMP/p.json" --model "$ROOT/models/vgg.onnx" --batch 8 --gpu A100-80GB --mig 1g.5gb
expect_err "gpucast predict: --mig: GPU 'A100-80GB' has no MIG profile '1g.5gb' (profiles: 1g.10gb, 2g.20gb, 3g.40gb, 4g.40gb, 7g.80gb)"
expect_rc 1 "$BIN" predict --predictor "$TMP/p.json" --model "$ROOT/models/vgg.onnx" --batch 8 --mig 1g.10gb
expect_err "gpucast predict: --mig: GPU 'RTX3090' has no MIG profiles (MIG-capable: "
# --attr's help names every key the parser knows (the list in its unknown-key error).
"$BIN" predict --predictor "$TMP/p.json" --model "$ROOT/models/vgg.onnx" --batch 8 --attr colour=3 2>"$TMP/err" >/dev/null
keys=$(sed -n 's/.*unknown key (known: \(.*\))$/\1/p' "$TMP/err" | tr -d ' ' | tr ',' ' ')
[ -n "$keys" ] && ok || bad "no key list in: $(cat "$TMP/err")"
for cmd in analyze predict; do
  "$BIN" "$cmd" --help >"$TMP/help" 2>&1
  for k in $keys; do grep -q -- "$k" "$TMP/help" && ok || bad "$cmd --help: --attr does not name '$k'"; done
done

# A site's GPU table (--gpu-table; docs/features.md "A site's GPUs"): a row with the A10's datasheet
# numbers under another name predicts exactly as gpucast's A10, in predict and in POST /v1/predict, and
# says whose numbers they are; a bad table is an error naming the file, the row and the field.
cat >"$TMP/site.json" <<'EOF_SITE'
{"gpus": [{"name": "Site-A10", "aliases": ["NVIDIA Site A10"], "architecture": "Ampere",
  "fp32_tflops": 31.2, "fp16_tensor_tflops": 125, "bf16_tensor_tflops": 125, "tf32_tensor_tflops": 62.5,
  "memory_gb": 24, "mem_bandwidth_gbs": 600, "sms": 72, "boost_mhz": 1695, "power_w": 150,
  "pcie_gen": 4, "pcie_lanes": 16, "gpu_class": "datacenter", "form_factor": "PCIe",
  "source": "NVIDIA A10 Tensor Core GPU datasheet (gpucast's A10 row under another name)"}]}
EOF_SITE
expect_rc 0 "$BIN" gpus --gpu-table "$TMP/site.json" "NVIDIA Site A10" --json
/usr/bin/python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); assert [g["name"] for g in d]==["Site-A10"] and d[0]["site_table"]==sys.argv[2] and d[0]["sms"]==72, d' "$TMP/out" "$TMP/site.json" && ok || bad "gpus --gpu-table: $(head -c 300 "$TMP/out")"
expect_rc 1 "$BIN" gpus "Site-A10"
expect_err "gpucast gpus: unknown GPU 'Site-A10'"
expect_rc 0 "$BIN" predict --predictor "$TMP/p.json" --model "$ROOT/models/vgg.onnx" --batch 32 --gpu A10 --json
cp "$TMP/out" "$TMP/a10.json"
expect_rc 0 "$BIN" predict --predictor "$TMP/p.json" --model "$ROOT/models/vgg.onnx" --batch 32 --gpu-table "$TMP/site.json" --gpu "NVIDIA Site A10" --json
cp "$TMP/out" "$TMP/site-cli.json"
. "$ROOT/tests/lib/serve.sh"
"$BIN" serve --listen 127.0.0.1:0 --db "$TMP/site.db" --predictor "$TMP/p.json" --model-root "$ROOT/models" \
  --gpu-table "$TMP/site.json" --cluster "2x Site-A10" >"$TMP/site-serve.out" 2>"$TMP/site-serve.err" &
spid=$!
if url=http://$(serve_addr "$TMP/site-serve.out" "$spid" 20 "$TMP/site-serve.err"); then
  curl -s -m 60 -X POST "$url/v1/predict" -H 'Content-Type: application/json' \
    -d '{"model": "vgg.onnx", "batch": 32, "gpu": "NVIDIA Site A10"}' >"$TMP/site-http.json" && ok || bad "POST /v1/predict on Site-A10"
else
  bad "serve --gpu-table did not start: $(tail -3 "$TMP/site-serve.err")"
fi
kill "$spid" 2>/dev/null; wait "$spid" 2>/dev/null
/usr/bin/python3 - "$TMP/a10.json" "$TMP/site-cli.json" "$TMP/site-http.json" <<'PY' && ok || bad "Site-A10 is not predicted as the A10: $(head -c 400 "$TMP/site-http.json")"
import json, sys
a, c, h = (json.load(open(p)) for p in sys.argv[1:4])
for k in ("gpu_util", "step_ms", "gpu_mem_mib"):
    assert a[k] == c[k] and abs(h[k] - c[k]) <= 1e-9 * abs(c[k]), (k, a[k], c[k], h[k])
assert a["interval"] == c["interval"] and a["gpu_mem_interval"] == c["gpu_mem_interval"], (a["interval"], c["interval"])
assert a["gpu_measured"] is False and c["gpu_measured"] is False and h["gpu_measured"] is False
assert c["gpu"] == h["gpu"] == "Site-A10", (c["gpu"], h["gpu"])
for w in (c["warnings"], h["warnings"]):
    assert any("GPU Site-A10 is the site's, from " in x and "not gpucast's table" in x for x in w), w
assert not any("is the site's" in x for x in a["warnings"]), a["warnings"]
PY
echo '{"gpus": [{"name": "A100"}]}' >"$TMP/taken.json"
expect_rc 1 "$BIN" predict --predictor "$TMP/p.json" --model "$ROOT/models/vgg.onnx" --batch 8 --gpu-table "$TMP/taken.json"
expect_err "gpucast predict: site GPU table $TMP/taken.json: gpus[0] ('A100'): the name 'A100' is gpucast's A100-40GB already"
expect_rc 1 "$BIN" serve --listen 127.0.0.1:0 --db "$TMP/site2.db" --predictor "$TMP/p.json" --gpu-table "$TMP/taken.json"
expect_err "site GPU table $TMP/taken.json: gpus[0] ('A100')"
expect_rc 1 "$BIN" simulate --trace "$TMP/trace.csv" --policy slot --out "$TMP/sim-site" --gpu-table "$TMP/missing.json"
expect_err "gpucast simulate: site GPU table: $TMP/missing.json"

echo "cli: $pass passed, $fail failed"
[ "$fail" = 0 ]
