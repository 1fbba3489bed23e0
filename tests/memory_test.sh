#!/usr/bin/env bash
# GPU memory end to end (docs/predictor.md, "GPU memory"):
#  1. two training-mode exports of one network, ONNX opsets 13 and 17 (LayerNorm as nine ops, or
#     one), predict the same memory within 2% (the fused-export rules of src/cost/saved_rules.cc);
#  2. `gpucast predict --json` and `POST /v1/predict` give the same memory for the same job, memory
#     facts included (one library call, Predictor::Predict; the Slurm plugin runs one of the two,
#     the Kubernetes webhook the second);
#  3. the memory facts move the prediction the documented way;
#  4. an eval-mode export (BatchNorm folded: half the activation memory) is warned about by the CLI
#     and in POST /v1/predict's reply;
#  5. a tied embedding the exporter wrote twice, and parameters an eval-mode export merged, are counted
#     as torch counts them by the CLI and the service alike (models/ties);
#  6. so are a DLRM's embedding bags, a repeat_interleave and a mixture of experts (models/unseen).
# Needs /usr/bin/python3 with torch (python3-torch) for the exports.
# Usage: tests/memory_test.sh BUILD/gpucast
set -u
BIN=$(realpath "${1:?usage: memory_test.sh PATH/TO/gpucast}")
ROOT=$(cd "$(dirname "$0")/.." && pwd)
. "$ROOT/tests/lib/serve.sh"
T=$(mktemp -d /tmp/gpucast-memory.XXXXXX)
PID=""
cleanup() { [ -n "$PID" ] && kill "$PID" 2>/dev/null; wait 2>/dev/null; rm -rf "$T"; }
trap cleanup EXIT
pass=0; fail=0
ok()  { pass=$((pass + 1)); }
bad() { fail=$((fail + 1)); echo "FAIL: $*"; }
die() { echo "memory: FAIL: $*"; echo "memory: $pass passed, $((fail + 1)) failed"; exit 1; }
py() { /usr/bin/python3 "$@"; }

py "$ROOT/tests/memory_exports.py" "$T" 2>"$T/export.err" || die "export (python3-torch needed): $(tail -3 "$T/export.err")"
if [ -n "${GPUCAST_TEST_PREDICTOR:-}" ]; then
  cp "$GPUCAST_TEST_PREDICTOR" "$T/p.json" || die "cannot copy $GPUCAST_TEST_PREDICTOR"
else
  "$BIN" train --out "$T/p.json" --quiet >/dev/null 2>"$T/train.err" || die "train: $(tail -3 "$T/train.err")"
fi

# 1. Opsets 13 and 17, fp32 and AMP, on two GPUs.
for args in "--batch 8" "--batch 32 --amp" "--batch 16 --gpu A100-80GB --mig 3g.40gb"; do
  for o in 13 17; do
    "$BIN" predict -p "$T/p.json" -m "$T/block$o.onnx" $args --json --quiet >"$T/o$o.json" 2>"$T/err" ||
      bad "predict block$o $args: $(head -c 300 "$T/err")"
  done
  py - "$T/o13.json" "$T/o17.json" "$args" <<'PY' && ok || bad "opsets 13 and 17 differ ($3)"
import json, sys
a, b = (json.load(open(p)) for p in sys.argv[1:3])
m13, m17 = a["gpu_mem_mib"], b["gpu_mem_mib"]
print(f"  opset 13 {m13:.0f} MiB, opset 17 {m17:.0f} MiB ({sys.argv[3]}): {abs(m13 - m17) / m17:.2%}")
assert abs(m13 - m17) <= 0.02 * m17, (m13, m17)
a13, a17 = a["gpu_mem_components_mib"]["activations"], b["gpu_mem_components_mib"]["activations"]
assert abs(a13 - a17) <= 0.02 * a17, (a13, a17)
PY
done

# 2. CLI and HTTP: the same job, the same memory.
mkdir -p "$T/root" && cp "$T/block17.onnx" "$T/cnn_eval.onnx" "$T/root/"
"$BIN" serve --listen 127.0.0.1:0 --db "$T/jobs.db" --predictor "$T/p.json" --model-root "$T/root" >"$T/out" 2>"$T/serve.err" &
PID=$!
URL=http://$(serve_addr "$T/out" "$PID" 20 "$T/serve.err") || die "serve did not start"
for job in '8||' '16|1|' '8||"optimizer": "sgd", "activation_checkpointing": "1"' \
           '4||"trainable_fraction": "0.25", "variable_shapes": "1"' '8||"cuda_module_loading": "lazy"' \
           '8||"cuda_module_loading": "eager"'; do
  IFS='|' read -r batch amp attrs <<<"$job"
  cli=(--batch "$batch"); [ -n "$amp" ] && cli+=(--amp)
  attr_flags=$(py -c 'import json,sys; print(" ".join(f"--attr {k}={v}" for k, v in json.loads("{" + sys.argv[1] + "}").items()))' "$attrs")
  # shellcheck disable=SC2086
  "$BIN" predict -p "$T/p.json" -m "$T/block17.onnx" "${cli[@]}" $attr_flags --json --quiet >"$T/cli.json" 2>"$T/err" ||
    bad "predict $job: $(head -c 300 "$T/err")"
  amp_json=false; [ -n "$amp" ] && amp_json=true
  body="{\"model\": \"block17.onnx\", \"batch\": $batch, \"amp\": $amp_json, \"attrs\": {$attrs}}"
  curl -s -m 60 -X POST "$URL/v1/predict" -H 'Content-Type: application/json' -d "$body" >"$T/http.json" ||
    bad "POST /v1/predict $body"
  py - "$T/cli.json" "$T/http.json" "$job" <<'PY' && ok || bad "CLI and HTTP memory differ for $job: $(head -c 300 "$T/http.json")"
import json, sys
c, h = (json.load(open(p)) for p in sys.argv[1:3])
print(f"  {sys.argv[3]}: CLI {c['gpu_mem_mib']:.1f} MiB (high {c['gpu_mem_interval']['high']:.1f}), "
      f"HTTP {h['gpu_mem_mib']:.1f} MiB (high {h['gpu_mem_interval']['high']:.1f})")
assert abs(c["gpu_mem_mib"] - h["gpu_mem_mib"]) <= 1e-6 * c["gpu_mem_mib"]
assert abs(c["gpu_mem_interval"]["high"] - h["gpu_mem_interval"]["high"]) <= 1e-6 * c["gpu_mem_mib"]
assert abs(c["gpu_mem_interval"]["low"] - h["gpu_mem_interval"]["low"]) <= 1e-6 * c["gpu_mem_mib"]
want = {"lazy": "lazy", "eager": "eager"}.get(json.loads("{" + sys.argv[3].split("|", 2)[2] + "}").get("cuda_module_loading"), "unknown")
assert c["gpu_mem_context"]["cuda_module_loading"] == h["gpu_mem_context"]["cuda_module_loading"] == want
PY
done
# 4. The eval-mode warning, in the CLI's JSON and in the service's reply.
"$BIN" predict -p "$T/p.json" -m "$T/root/cnn_eval.onnx" --batch 8 --json --quiet >"$T/cli.json" 2>"$T/err" ||
  bad "predict cnn_eval: $(head -c 300 "$T/err")"
curl -s -m 60 -X POST "$URL/v1/predict" -H 'Content-Type: application/json' \
  -d '{"model": "cnn_eval.onnx", "batch": 8}' >"$T/http.json" || bad "POST /v1/predict cnn_eval"
py - "$T/cli.json" "$T/http.json" <<'PY' && ok || bad "eval-mode warning missing: $(head -c 300 "$T/http.json")"
import json, sys
c, h = (json.load(open(p)) for p in sys.argv[1:3])
assert any("eval-mode export" in w for w in c["warnings"]), c["warnings"]
assert any("eval-mode export" in w for w in h["warnings"]), h["warnings"]
# Each warning is "FILE: ...", the file as each front end was given it; a hint "(state it: ...)" names the
# CLI's flags or the request's fields (InputWording): the same warnings otherwise.
text = lambda ws: [w.split(": ", 1)[-1].split(" (state it: ")[0] for w in ws]
assert text(h["warnings"]) == text(c["warnings"]), (h.get("warnings"), c["warnings"])
assert any("(state it: --attr " in w for w in c["warnings"]) == any("(state it: attrs." in w for w in h["warnings"])
assert abs(c["gpu_mem_mib"] - h["gpu_mem_mib"]) <= 1e-6 * c["gpu_mem_mib"]
print("  eval-mode export: warned by the CLI and the service alike")
PY
# 5. A tied embedding the exporter wrote twice, and parameters an eval-mode export merged
# (models/ties, tools/tie_export.py): the CLI (which reads the file) and the service (which loads
# the bytes it filtered once) count torch's parameters alike: weights of 4 bytes x torch's count.
cp "$ROOT/models/ties/lm-train.onnx" "$ROOT/models/ties/lm-eval.onnx" "$T/root/"
for f in lm-train lm-eval; do
  "$BIN" predict -p "$T/p.json" -m "$T/root/$f.onnx" --batch 2 --json --quiet >"$T/cli.json" 2>"$T/err" ||
    bad "predict $f: $(head -c 300 "$T/err")"
  curl -s -m 60 -X POST "$URL/v1/predict" -H 'Content-Type: application/json' \
    -d "{\"model\": \"$f.onnx\", \"batch\": 2}" >"$T/http.json" || bad "POST /v1/predict $f"
  py - "$T/cli.json" "$T/http.json" "$ROOT/models/ties/reference.json" "$f" <<'PY' && ok || bad "$f: CLI and HTTP weights differ or are not torch's: $(head -c 300 "$T/http.json")"
import json, sys
c, h, ref = (json.load(open(p)) for p in sys.argv[1:4])
want = 4 * ref["params"] / 2**20
for d in (c, h):
    assert abs(d["gpu_mem_components_mib"]["weights"] - want) < 1e-9, (d["gpu_mem_components_mib"], want)
assert abs(c["gpu_mem_mib"] - h["gpu_mem_mib"]) <= 1e-6 * c["gpu_mem_mib"]
if sys.argv[4] == "lm-train":
    for d in (c, h):
        assert any("hold the transpose of another" in w for w in d["warnings"]), d["warnings"]
print(f"  {sys.argv[4]}: weights {want:.4f} MiB (torch's {ref['params']} parameters) from the CLI and the service")
PY
done
# 6. Exports whose ops torch writes as Loops, Ifs or value-sized nodes (src/graph/torch_loops.h: a
# DLRM's nn.EmbeddingBag, weighted and max bags, a multi-view net's repeat_interleave; folded_if.h:
# AlexNet's LRN squeezes; unrolled_loop.h: a torch.jit.script'ed loop over time steps; a mixture of
# experts' routing read as balanced, a masked LM's mask as selecting every position): the CLI and the
# service alike count torch's parameters (models/unseen/reference.json) and cost every node; the
# routing, mask, If and Loop warnings reach both.
for spec in dlrm: bags: multiview: alexnet_lrn: scripted_rnn:12 moe:16 masked_lm:16; do
  f=${spec%%:*}; seq=${spec#*:}
  cp "$ROOT/models/unseen/$f-opset17.onnx" "$T/root/"
  dims=(); body="{\"model\": \"$f-opset17.onnx\", \"batch\": 8}"
  if [ -n "$seq" ]; then
    dims=(--dim "seq=$seq"); body="{\"model\": \"$f-opset17.onnx\", \"batch\": 8, \"dims\": {\"seq\": $seq}}"
  fi
  "$BIN" predict -p "$T/p.json" -m "$T/root/$f-opset17.onnx" --batch 8 "${dims[@]}" --json --quiet >"$T/cli.json" \
    2>"$T/err" || bad "predict $f: $(head -c 300 "$T/err")"
  curl -s -m 60 -X POST "$URL/v1/predict" -H 'Content-Type: application/json' -d "$body" >"$T/http.json" ||
    bad "POST /v1/predict $f"
  py - "$T/cli.json" "$T/http.json" "$ROOT/models/unseen/reference.json" "$f" <<'PY' && ok || bad "$f: CLI and HTTP differ or are not torch's: $(head -c 300 "$T/http.json")"
import json, sys
c, h, ref = (json.load(open(p)) for p in sys.argv[1:4])
name = sys.argv[4]
want = 4 * ref["models"][name]["params"] / 2**20
for d in (c, h):
    assert abs(d["gpu_mem_components_mib"]["weights"] - want) < 1e-9, (d["gpu_mem_components_mib"], want)
assert abs(c["gpu_mem_mib"] - h["gpu_mem_mib"]) <= 1e-6 * c["gpu_mem_mib"]
assert abs(c["step_ms"] - h["step_ms"]) <= 1e-6 * c["step_ms"]
for said, model in (("mixture-of-experts router", "moe"), ("read as selecting every element", "masked_lm"),
                    ("read as the branch taken", "alexnet_lrn"), ("read as its iterations", "scripted_rnn")):
    seen = [any(said in w for w in d["warnings"]) for d in (c, h)]
    assert seen == [name == model] * 2, (said, seen)
for d in (c, h):
    assert d["uncertainty"]["unknown_selection"] == (name == "masked_lm"), (name, d["uncertainty"])
print(f"  {name}: weights {want:.4f} MiB (torch's {ref['models'][name]['params']} parameters), "
      f"{c['gpu_mem_mib']:.0f} MiB and {c['step_ms']:.2f} ms from the CLI and the service")
PY
done
# The masked LM with the fraction its mask selects stated (selected_fraction): the CLI and the
# service give the same smaller memory than the bound, a step no longer, and nothing is unknown.
cp "$T/cli.json" "$T/bound.json"
"$BIN" predict -p "$T/p.json" -m "$T/root/masked_lm-opset17.onnx" --batch 8 --dim seq=16 --attr selected_fraction=0.15 \
  --json --quiet >"$T/cli.json" 2>"$T/err" || bad "predict masked_lm selected_fraction: $(head -c 300 "$T/err")"
curl -s -m 60 -X POST "$URL/v1/predict" -H 'Content-Type: application/json' \
  -d '{"model": "masked_lm-opset17.onnx", "batch": 8, "dims": {"seq": 16}, "attrs": {"selected_fraction": 0.15}}' \
  >"$T/http.json" || bad "POST /v1/predict masked_lm selected_fraction"
py - "$T/cli.json" "$T/http.json" "$T/bound.json" <<'PY' && ok || bad "masked_lm selected_fraction: $(head -c 300 "$T/http.json")"
import json, sys
c, h, b = (json.load(open(p)) for p in sys.argv[1:4])
assert abs(c["gpu_mem_mib"] - h["gpu_mem_mib"]) <= 1e-6 * c["gpu_mem_mib"]
assert abs(c["step_ms"] - h["step_ms"]) <= 1e-6 * c["step_ms"]
assert c["gpu_mem_components_mib"]["activations"] < b["gpu_mem_components_mib"]["activations"]
assert c["step_ms"] <= b["step_ms"], (c["step_ms"], b["step_ms"])
for d in (c, h):
    assert d["uncertainty"]["unknown_selection"] is False
    assert not any("selected every element" in w for w in d["warnings"]), d["warnings"]
print(f"  masked_lm at selected_fraction 0.15: activations {c['gpu_mem_components_mib']['activations']:.1f} MiB "
      f"(bound {b['gpu_mem_components_mib']['activations']:.1f}), step {c['step_ms']:.2f} ms (bound {b['step_ms']:.2f})")
PY
kill "$PID"; wait "$PID" 2>/dev/null; PID=""

# 3. Facts: checkpointing keeps less, ZeRO-3 on 8 GPUs shards weights and optimizer state, a
# quarter of the parameters trained needs less, variable shapes widen the high end.
m() { "$BIN" predict -p "$T/p.json" -m "$T/block17.onnx" --batch 32 "$@" --json --quiet 2>"$T/err" |
      py -c 'import json,sys; d=json.load(sys.stdin); print(d["gpu_mem_mib"], d["gpu_mem_interval"]["high"])'; }
read -r base base_hi <<<"$(m)"
read -r ck ck_hi <<<"$(m --attr activation_checkpointing=1)"
read -r ddp _ <<<"$(m --gpus 8)"
read -r z3 _ <<<"$(m --gpus 8 --attr zero_stage=3)"
read -r ft _ <<<"$(m --attr trainable_fraction=0.25)"
read -r vs vs_hi <<<"$(m --attr variable_shapes=1)"
py - "$base" "$ck" "$ddp" "$z3" "$ft" "$vs" "$base_hi" "$vs_hi" <<'PY' && ok || bad "memory facts: $*"
import sys
base, ck, ddp, z3, ft, vs, base_hi, vs_hi = map(float, sys.argv[1:])
print(f"  batch 32: {base:.0f} MiB; checkpointing {ck:.0f}; 8 GPUs DDP {ddp:.0f}, ZeRO-3 {z3:.0f}; "
      f"a quarter trained {ft:.0f}; variable shapes {vs:.0f} (high {base_hi:.0f} -> {vs_hi:.0f})")
assert ck < base and z3 < ddp and ft < base and vs > base and vs_hi - vs > base_hi - base
PY

echo "memory: $pass passed, $fail failed"
[ "$fail" = 0 ]
