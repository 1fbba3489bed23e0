#!/usr/bin/env bash
# The tables of docs/predictor.md from the current build and the shared data.
# Usage: tools/predictor_tables.sh PATH/TO/gpucast SECTION
#   lowo   leave one workload out (Lucid): utilization and memory of physics, forest and the nested
#          auto selection, the interval's width/coverage trade-off (normalized and logit), per workload
#          (about 20 min on 2 shared cores)
#   a100   trained on the RTX 3090 rows, every A100 80GB row predicted (physics and nested auto)
#   dp     data-parallel predictions of a physics predictor trained on the Lucid rows
#   gpus   the GPU table's sources
#   steps [EVALUATE FLAGS...]
#          step time: lowo and leave-one-GPU-type-out with the Pollux single-GPU runs as step-only rows, and
#          evaluate --steps on Pollux (data-parallel, all-reduce vs sync_time) and Zeus (ratios between GPUs);
#          flags after `steps` go to every evaluate run, for the variants' tables (`steps
#          --no-power-limited-clock`, `steps --tensor-core-split`; about 10 minutes each on 2 shared cores)
#   OUT_DIR  (any other argument) the former full set of runs, JSON and OUT_DIR/tables.md (about an hour)
# Markdown on stdout, progress on stderr; the sections are generated blocks of docs/predictor.md
# (tools/docs.py, `make docs DOCS_ALL=1`).
set -euo pipefail
B=$(realpath "${1:?usage: predictor_tables.sh PATH/TO/gpucast SECTION|OUT_DIR}")
OUT=${2:?usage: predictor_tables.sh PATH/TO/gpucast SECTION|OUT_DIR}
DATA=${GPUCAST_DATA:-$(dirname "$0")/../../shared/data}
LUCID=$DATA/lucid/single_data.csv
MIG=$DATA/migprofiler-a100/bert_train.csv
ROOT=$(cd "$(dirname "$0")/.." && pwd)
section() {  # the sections printed as generated blocks
  T=$(mktemp -d)
  trap 'rm -rf "$T"' EXIT
  ev() {  # name, then evaluate arguments: JSON in $T/name.json
    local name=$1; shift
    echo "## $name: gpucast evaluate $*" >&2
    nice -n 10 "$B" evaluate "$@" --repeats 1 --json --quiet > "$T/$name.json"
  }
  case $1 in
  lowo)
    local p1 p2
    ev lowo --data "$LUCID" --split lowo --algo physics --algo forest & p1=$!
    ev auto --data "$LUCID" --split lowo --algo auto & p2=$!
    wait $p1
    ev logit --data "$LUCID" --split lowo --algo physics --interval logit
    wait $p2
    /usr/bin/python3 "$ROOT/tools/predictor_md.py" lowo "$T/lowo.json" "$T/auto.json" "$T/logit.json" ;;
  a100)
    ev a100 --data "$LUCID" --data "$MIG" --split gpu:A100-80GB --algo physics --algo auto
    /usr/bin/python3 "$ROOT/tools/predictor_md.py" a100 "$T/a100.json" ;;
  dp)
    nice -n 10 "$B" train --data "$LUCID" --algo physics --out "$T/p.json" --quiet >&2
    for m in resnet50 vgg; do
      for n in 1 2 4 8 16; do
        "$B" predict -p "$T/p.json" -m "$ROOT/models/$m.onnx" --batch 32 --gpus $n --interconnect pcie4x16 --json \
          > "$T/dp_${m}_$n.json"
      done
    done
    /usr/bin/python3 "$ROOT/tools/predictor_md.py" dp "$T"/dp_resnet50_*.json "$T"/dp_vgg_*.json ;;
  steps)
    shift
    local POLLUX=$DATA/pollux-t4 ZEUS=$DATA/zeus p1
    ev steps_lowo "$@" --data "$LUCID" --data "$MIG" --data "$POLLUX" --split lowo --algo physics & p1=$!
    ev steps_logo "$@" --data "$LUCID" --data "$MIG" --data "$POLLUX" --split logo --algo physics
    wait $p1
    echo "## steps: gpucast evaluate $* --steps" >&2
    nice -n 10 "$B" evaluate "$@" --data "$LUCID" --data "$MIG" --steps "$POLLUX" --steps "$ZEUS" --algo physics --json \
      --quiet > "$T/steps.json"
    /usr/bin/python3 "$ROOT/tools/predictor_md.py" steps "$T/steps_lowo.json" "$T/steps_logo.json" "$T/steps.json" ;;
  gpus)
    "$B" gpus --json | /usr/bin/python3 "$ROOT/tools/predictor_md.py" gpus ;;
  *) return 2 ;;
  esac
}
case $OUT in
  steps) shift 2; section steps "$@"; exit ;;
  lowo|a100|dp|gpus) [ $# -eq 2 ] || { echo "predictor_tables.sh: only 'steps' takes evaluate flags" >&2; exit 2; }
    section "$OUT"; exit ;;
esac
mkdir -p "$OUT"
run() {  # name, then evaluate arguments
  local name=$1; shift
  echo "## $name" >&2
  "$B" evaluate "$@" --json > "$OUT/$name.json"
}
# Markdown from the JSON.
table() {
  /usr/bin/python3 - "$@" <<'PY'
import json, sys
print("| split | features | algo | RMSLE | 90% CI (workload bootstrap) | MAE | coverage | median width | mean-baseline RMSLE [90% CI] | selected (nested) |")
print("|---|---|---|---|---|---|---|---|---|---|")
for path in sys.argv[1:]:
    d = json.load(open(path))
    for r in d["results"]:
        sel = {}
        for s in r["selected"]:
            sel[s] = sel.get(s, 0) + 1
        sel = ", ".join("%s x%d" % kv for kv in sorted(sel.items(), key=lambda kv: -kv[1]))
        print("| %s | %s | %s | %.3f | [%.3f, %.3f] | %.1f | %.2f | %.1f | %.3f [%.3f, %.3f] | %s |" % (
            r["split"], r["features"], r["algo"] if not r["nested"] else "nested selection",
            r["rmsle"]["mean"], r["rmsle_ci90"]["low"], r["rmsle_ci90"]["high"], r["mae"]["mean"],
            r["interval_coverage"]["mean"], r["interval_median_width"], r["mean_baseline_rmsle"],
            r["mean_baseline_rmsle_ci90"]["low"], r["mean_baseline_rmsle_ci90"]["high"], sel))
PY
}
per_config() {
  /usr/bin/python3 - "$@" <<'PY'
import json, sys, math
for path in sys.argv[1:]:
    d = json.load(open(path))
    for r in d["results"]:
        if r["algo"] not in ("physics", "hybrid", "forest") and not r["algo"].startswith("auto"):
            continue
        print("\n%s, %s\n" % (r["split"], r["algo"]))
        print("| MIG profile | n | RMSLE | measured | predicted | coverage |")
        print("|---|---|---|---|---|---|")
        by = {}
        for p in r["predictions"]:
            by.setdefault(p["mig_profile"], []).append(p)
        for k, ps in sorted(by.items()):
            e = math.sqrt(sum((math.log1p(p["predicted"]) - math.log1p(p["measured"])) ** 2 for p in ps) / len(ps))
            cov = sum(p["low"] <= p["measured"] <= p["high"] for p in ps) / len(ps)
            print("| %s | %d | %.3f | %.1f | %.1f | %.2f |" % (k, len(ps), e, sum(p["measured"] for p in ps) / len(ps),
                                                            sum(p["predicted"] for p in ps) / len(ps), cov))
PY
}
per_workload() {
  /usr/bin/python3 - "$@" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
for r in d["results"]:
    print("\n%s, %s, %s\n" % (r["split"], r["features"], r["algo"]))
    print("| workload | n | RMSLE | MAE | measured | predicted |")
    print("|---|---|---|---|---|---|")
    for w in r["per_workload"]:
        print("| %s | %d | %.3f | %.1f | %.1f | %.1f |" % (w["workload"], w["predictions"], w["rmsle"], w["mae"],
                                                         w["mean_measured"], w["mean_predicted"]))
PY
}

# Independent runs, two at a time (each is one process, single-threaded).
jobs_run() { while [ "$(jobs -rp | wc -l)" -ge "${PARALLEL:-2}" ]; do sleep 2; done; run "$@" & }
# The families of interest (and the former default), plus auto (the default: a selection on the
# training rows, evaluated nested). Set ALGOS="--algo all --algo auto" for every algorithm.
A=${ALGOS:---algo physics --algo hybrid --algo mono --algo forest --algo auto}
# 1. Leave one workload out (the headline), and the same auto with the pooled-RMSLE criterion.
jobs_run lowo --data "$LUCID" --split lowo --repeats 1 $A
# 2. Extrapolation in batch: each workload's largest batch held out.
jobs_run largest --data "$LUCID" --split largest-batch --repeats 1 $A
# 3. Another GPU and MIG: trained on RTX 3090 rows only, predicting every A100 row; then each
#    A100 MIG configuration held out with the other A100 rows in training.
jobs_run a100_transfer --data "$LUCID" --data "$MIG" --split gpu:A100-80GB --repeats 1 $A
jobs_run a100_loco --data "$LUCID" --data "$MIG" --split loco:A100-80GB --repeats 1 $A
# 4. The issue's finding: nested selection by pooled inner RMSLE among the former algorithms and
#    feature sets; auto with the pooled criterion; the paper's random 80/20 protocol (5 seeds).
jobs_run nested_old --data "$LUCID" --split lowo --nested --select-by-pooled-rmsle --repeats 1 \
  --algo forest --algo gbm --algo ridge --algo knn --algo roofline --features each
jobs_run lowo_auto_pooled --data "$LUCID" --split lowo --repeats 1 --algo auto --select-by-pooled-rmsle
jobs_run random --data "$LUCID" --split random:0.2 --repeats 5 $A
wait

{
  echo "### lowo, and auto (nested)"; table "$OUT/lowo.json" "$OUT/lowo_auto_pooled.json"
  echo; echo "### nested lowo, former candidates (pooled criterion)"; table "$OUT/nested_old.json"
  echo; echo "### largest batch held out"; table "$OUT/largest.json"
  echo; echo "### A100 80GB"; table "$OUT/a100_transfer.json" "$OUT/a100_loco.json"
  echo; echo "### random:0.2"; table "$OUT/random.json"
  echo; echo "### per workload, lowo"; per_workload "$OUT/lowo.json"
  echo; echo "### per configuration, A100"; per_config "$OUT/a100_transfer.json" "$OUT/a100_loco.json"
} > "$OUT/tables.md"
echo "tables in $OUT/tables.md" >&2
