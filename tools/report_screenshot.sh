#!/usr/bin/env bash
# Regenerates docs/simulator-report.png: a small real sweep (Philly's first
# 1,000 jobs on 32 RTX 3090s, seeds 1-3, --load-factor 1 and 2, slot, the two
# fairer profiling baselines and two prediction-driven policies; at load 2 the
# oracle and the accuracy controls noisy:5/15/30, constant:50, shuffled),
# `gpucast report` over it, and a headless-Chromium screenshot of the page's
# top (verdict, headline, load sweep, value of accuracy).
# Usage: tools/report_screenshot.sh BUILD/gpucast OUT_DIR [PNG]   (PNG default: docs/simulator-report.png)
set -euo pipefail
B=$(realpath "${1:?usage: report_screenshot.sh PATH/TO/gpucast OUT_DIR [PNG]}")
OUT=${2:?usage: report_screenshot.sh PATH/TO/gpucast OUT_DIR [PNG]}
HERE=$(cd "$(dirname "$0")/.." && pwd)
PNG=${3:-$HERE/docs/simulator-report.png}
S=(--trace philly --jobs 1000 --cluster "32x RTX3090" --seeds 1-3)
"$B" simulate "${S[@]}" --load-factor 1,2 --policy slot,profiling,profiling-pool,predictive,predictive-feedback \
  --out "$OUT/default" >/dev/null
"$B" simulate "${S[@]}" --load-factor 2 --policy predictive,predictive-feedback --predictions oracle \
  --out "$OUT/oracle" >/dev/null
for src in noisy:5 noisy:15 noisy:30 constant:50 shuffled; do
  "$B" simulate "${S[@]}" --load-factor 2 --policy predictive,predictive-feedback --predictions "$src" \
    --out "$OUT/accuracy/${src/:/-}" >/dev/null
done
"$B" report "$OUT" --out "$OUT/report.html"
"$HERE/tools/report_view.sh" png "$OUT/report.html" "$PNG" 1100 2600
echo "wrote $OUT/report.html and $PNG" >&2
