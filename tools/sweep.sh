#!/usr/bin/env bash
# The simulator comparison of docs/simulator.md, in one command:
#  1. Philly on 256 RTX 3090s at --load-factor LOADS (default 2, the operating
#     point of the acceptance checks): every policy with the default
#     predictions (what `train` ships, leave one workload out), and the
#     prediction-driven policies again with oracle predictions;
#  2. the value of accuracy at load 2: the prediction-driven policies under
#     noisy:15 and noisy:30 (predictive, interference-aware, predictive-feedback, predictive-hybrid;
#     and the dumb controls constant:10, constant:30 and constant:50 for the same policies;
#     FULL=1: every one, and also noisy:0/5/10/20,
#     shuffled and `auto`, the training procedure's selection re-run nested);
#     and predictive under the capacity cap (--cap-rule capacity) with oracle, noisy:15 and noisy:30
#     (each noise level over NOISE_DRAWS draws, default 10: noisy:SD@K);
#  3. the restart cost (profiling-exclusive with --restart-s 60) and recurring
#     jobs (interference-aware, predictive-feedback and predictive-hybrid with --recurring F, F in
#     RECURRING, default 0.25,0.5,0.75) at load 2;
#  4. (OTHER_TRACES=1) Alibaba (26 GPUs of its node list) and Gavel (32 GPUs) at their own load;
# each over SEEDS (arrivals, workloads, noise resampled per seed); then the
# markdown tables of the docs (OUT/tables.md, also printed), the acceptance
# checks (OUT/done_when.txt) and the HTML report of the load-2 Philly runs (OUT/report.html).
# Usage: tools/sweep.sh PATH/TO/gpucast OUT_DIR [SEEDS]   (SEEDS default 1-3; LOADS default 2, e.g. LOADS=1,2,3;
#        JOBS=N keeps the first N jobs of each trace: a quick check of the script, not the docs' numbers)
set -euo pipefail
B=$(realpath "${1:?usage: sweep.sh PATH/TO/gpucast OUT_DIR [SEEDS]}")
OUT=${2:?usage: sweep.sh PATH/TO/gpucast OUT_DIR [SEEDS]}
SEEDS=${3:-1-3}
LOADS=${LOADS:-2}
RECURRING=${RECURRING:-0.25,0.5,0.75}
# The accuracy controls run these (FULL=1: every prediction-driven policy).
ACC="predictive,interference-aware,predictive-feedback,predictive-hybrid"
HERE=$(cd "$(dirname "$0")/.." && pwd)
mkdir -p "$OUT"
# The source the tables come from, named as the sweep starts (the binary should be built from it).
COMMIT=$(git -C "$HERE" rev-parse --short HEAD 2>/dev/null || echo unknown)
DIRTY=$(git -C "$HERE" status --porcelain -- src 2>/dev/null | head -1)
PRED="predictive,predictive-spread,interference-aware,predictive-feedback,predictive-hybrid"
log() { echo "[$(date -u +%H:%M:%S)] $*" >&2; }
"$B" interference --validate --json > "$OUT/interference.json"
J=(${JOBS:+--jobs "$JOBS"})
P=(--trace philly --cluster "256x RTX3090" --seeds "$SEEDS" "${J[@]}")
# Two streams run side by side (each simulate is one thread): A) every policy
# with the default predictions over the loads, then Alibaba and Gavel; B) the
# oracle runs over the loads, then the accuracy controls at load 2.
# recurring STREAM PARITY: the --recurring runs of every other F (the two streams share them).
recurring() {
  local i=0 f
  for f in ${RECURRING//,/ }; do
    if [ $((i % 2)) -eq "$2" ]; then
      log "$1: philly load 2: --recurring $f"
      "$B" simulate "${P[@]}" --load-factor 2 --policy interference-aware,predictive-feedback,predictive-hybrid --recurring "$f" \
        --out "$OUT/recurring/F-$f" >/dev/null
    fi
    i=$((i + 1))
  done
}
stream_a() {
  log "A: philly: every policy, default predictions, loads $LOADS"
  "$B" simulate "${P[@]}" --load-factor "$LOADS" --policy all --out "$OUT/philly/predicted" >/dev/null
  log "A: philly load 2: profiling-exclusive with --restart-s 60"
  "$B" simulate "${P[@]}" --load-factor 2 --policy profiling-exclusive --restart-s 60 --out "$OUT/restart/s-60" >/dev/null
  recurring A 0
  if [ -n "${OTHER_TRACES:-}" ]; then
    log "A: alibaba and gavel"
    "$B" simulate --trace alibaba2023 --cluster "alibaba-nodes:every=200" --seeds "$SEEDS" "${J[@]}" --policy all \
      --out "$OUT/alibaba-26/predicted" >/dev/null
    "$B" simulate --trace alibaba2023 --cluster "alibaba-nodes:every=200" --seeds "$SEEDS" "${J[@]}" --policy "$PRED" \
      --predictions oracle --out "$OUT/alibaba-26/oracle" >/dev/null
    "$B" simulate --trace gavel --cluster "32x RTX3090" --seeds "$SEEDS" "${J[@]}" --policy all \
      --out "$OUT/gavel-32/predicted" >/dev/null
    "$B" simulate --trace gavel --cluster "32x RTX3090" --seeds "$SEEDS" "${J[@]}" --policy "$PRED" \
      --predictions oracle --out "$OUT/gavel-32/oracle" >/dev/null
  fi
  log "A: done"
}
stream_b() {
  log "B: philly: oracle predictions, loads $LOADS"
  "$B" simulate "${P[@]}" --load-factor "$LOADS" --policy "$PRED" --predictions oracle --out "$OUT/philly/oracle" >/dev/null
  # The dumb controls (a constant utilization for every job, memory predictions kept;
  # sim_done_when.sh: the default predictions must not be dominated by any of them).
  SRCS="noisy:15 noisy:30 constant:10 constant:30 constant:50"
  [ -n "${FULL:-}" ] && SRCS="noisy:0 noisy:5 noisy:10 noisy:15 noisy:20 noisy:30 constant:10 constant:30 constant:50 shuffled" && ACC=$PRED
  for src in $SRCS; do
    log "B: philly load 2: predictions $src"
    "$B" simulate "${P[@]}" --load-factor 2 --policy "$ACC" --predictions "$src" \
      --out "$OUT/accuracy/${src/:/-}" >/dev/null
  done
  if [ -n "${FULL:-}" ]; then
    # Its own directory: `gpucast report OUT/accuracy` would take lowo:auto for a second default source (refused).
    log "B: philly load 2: predictions auto (nested)"
    "$B" simulate "${P[@]}" --load-factor 2 --policy "$PRED" --predictions auto --out "$OUT/accuracy-nested/auto" >/dev/null
  fi
  # The noise ordering under the capacity cap (--cap-rule capacity: predictive packs to 100 x the
  # fitted work capacity, 120 on the RTX 3090; tools/sim_done_when.sh checks it).
  # Each noise level over NOISE_DRAWS (10) draws of the noise, noisy:SD@K (K 0 is noisy:SD): the
  # check compares the expectation over draws (tools/sim_done_when.sh).
  DRAWS_=()
  for K in $(seq 1 $((${NOISE_DRAWS:-10} - 1))); do DRAWS_+=("noisy:15@$K" "noisy:30@$K"); done
  for src in oracle noisy:15 noisy:30 "${DRAWS_[@]}"; do
    log "B: philly load 2: predictive --cap-rule capacity, predictions $src"
    "$B" simulate "${P[@]}" --load-factor 2 --policy predictive --cap-rule capacity --predictions "$src" \
      --out "$OUT/capacity-cap/${src/:/-}" >/dev/null
  done
  recurring B 1
  log "B: done"
}
stream_a & A=$!
stream_b & Bp=$!
trap 'kill $A $Bp 2>/dev/null' INT TERM
wait $A
wait $Bp
"$HERE/tools/sweep_tables.py" "$OUT" "$COMMIT${DIRTY:+ (+ uncommitted changes)}" "$SEEDS" | tee "$OUT/tables.md"
# The issue's acceptance checks on these runs (tools/sim_done_when.sh; exit 1 = some check failed).
SKIP_MISSING=1 "$HERE/tools/sim_done_when.sh" --check "$OUT" > "$OUT/done_when.txt" || log "some done-when checks fail: $OUT/done_when.txt"
# The headline is load x2 (given first); the load sweep and the value of accuracy from every Philly run.
"$B" report "$OUT/philly" "$OUT/accuracy" \
  --interference "$OUT/interference.json" --out "$OUT/report.html" >/dev/null
log "wrote $OUT/tables.md and $OUT/report.html"
