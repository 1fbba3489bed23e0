#!/usr/bin/env bash
# The simulator comparison of docs/simulator.md, in one command: every policy
# over seeds (mean +- sd), with LOWO predictions and with oracle predictions,
# on Philly over a load sweep (128/256/512 GPUs) and on Alibaba and Gavel at their
# default clusters; the interference validation; the markdown tables of the
# docs (OUT/tables.md, also printed) and the HTML report (OUT/report.html).
# Usage: tools/sweep.sh PATH/TO/gpucast OUT_DIR [SEEDS]   (SEEDS default 1-5)
set -euo pipefail
B=$(realpath "${1:?usage: sweep.sh PATH/TO/gpucast OUT_DIR [SEEDS]}")
OUT=${2:?usage: sweep.sh PATH/TO/gpucast OUT_DIR [SEEDS]}
SEEDS=${3:-1-5}
HERE=$(cd "$(dirname "$0")/.." && pwd)
mkdir -p "$OUT"
PRED="predictive,predictive-spread,interference-aware,predictive-feedback"
"$B" interference --validate --json > "$OUT/interference.json"
# Progress: a line per step here, and each simulate run's result on stderr as it finishes.
run() {  # run NAME TRACE CLUSTER
  echo "sweep: $1 ($2 on $3), every policy, seeds $SEEDS: LOWO predictions, then oracle" >&2
  "$B" simulate --trace "$2" --cluster "$3" --policy all --seeds "$SEEDS" --out "$OUT/$1/predicted" >/dev/null
  "$B" simulate --trace "$2" --cluster "$3" --policy "$PRED" --predictions oracle --seeds "$SEEDS" \
    --out "$OUT/$1/oracle" >/dev/null
}
for n in 256 128 512; do run "philly-$n" philly "${n}x RTX3090"; done
run alibaba-26 alibaba2023 "alibaba-nodes:every=200"
run gavel-32 gavel "32x RTX3090"
COMMIT=$(git -C "$HERE" rev-parse --short HEAD 2>/dev/null || echo unknown)
DIRTY=$(git -C "$HERE" status --porcelain -- src 2>/dev/null | head -1)
"$HERE/tools/sweep_tables.py" "$OUT" "$COMMIT${DIRTY:+ (+ uncommitted changes)}" "$SEEDS" | tee "$OUT/tables.md"
"$B" report "$OUT/philly-256" "$OUT/philly-128" "$OUT/philly-512" \
  --interference "$OUT/interference.json" --out "$OUT/report.html" >/dev/null
echo "wrote $OUT/tables.md and $OUT/report.html" >&2
