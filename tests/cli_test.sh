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

# --help on the binary and on every subcommand.
expect_rc 0 "$BIN" --help
for cmd in analyze train predict evaluate simulate report serve; do
  expect_out "$cmd"
done
for cmd in analyze train predict evaluate simulate report serve; do
  expect_rc 0 "$BIN" "$cmd" --help
  expect_out "--"
done
expect_rc 2 "$BIN" no-such-command

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
expect_rc 1 "$BIN" predict --predictor "$TMP/p.json" --model "$ROOT/models/vgg.onnx" --batch 8 --attr colour=3
expect_err "job attribute 'colour': unknown key"
expect_rc 0 "$BIN" predict --predictor "$TMP/p.json" --model "$ROOT/models/vgg.onnx" --batch 8 --json
expect_out '"gpu_util"'
printf 'submit_s,duration_s,num_gpus\n0,10,1\n5,abc,1\n' >"$TMP/trace.csv"
expect_rc 1 "$BIN" simulate --trace "$TMP/trace.csv" --policy slot --out "$TMP/sim"
expect_err "trace.csv: line 3: duration_s 'abc' is not a positive number"
expect_rc 0 "$BIN" simulate --trace "$TMP/trace.csv" --policy slot --out "$TMP/sim" --skip-bad-lines
expect_out "1 bad lines skipped"
[ -f "$TMP/sim/summary.json" ] && [ -f "$TMP/sim/jobs.csv" ] && ok || bad "simulate wrote no summary.json/jobs.csv"
expect_rc 1 "$BIN" simulate --trace philly --policy nosuch --out "$TMP/sim2"
expect_err "unknown policy 'nosuch'"

echo "cli: $pass passed, $fail failed"
[ "$fail" = 0 ]
