#!/usr/bin/env bash
# The HTML report in headless Chromium: a short simulate run (Philly's first
# 400 jobs on 16 RTX 3090s, seeds 1-2, --load-factor 1 and 2, profiling-pool,
# slot and two prediction-driven policies; oracle and noisy:10 / constant:50
# controls at load 2), `gpucast report` over all of it, then Chromium loads
# the page: it must log no console message, and its DOM must hold the verdict
# and both plots (load sweep; value of accuracy) with lines and seed bands.
# A page with a console error must fail the same check (the check can fail).
# Usage: tests/report_chromium.sh BUILD/gpucast
# Needs Debian's chromium (make deps installs it). Without it the test fails,
# unless GPUCAST_SKIP_CHROMIUM=1 is set: then it says SKIPPED and exits 0.
set -euo pipefail
BIN=$(realpath "${1:?usage: report_chromium.sh PATH/TO/gpucast}")
ROOT=$(cd "$(dirname "$0")/.." && pwd)
if ! command -v "${CHROMIUM:-chromium}" >/dev/null; then
  if [ "${GPUCAST_SKIP_CHROMIUM:-}" = 1 ]; then
    echo "report_chromium: SKIPPED: chromium is not installed and GPUCAST_SKIP_CHROMIUM=1" >&2
    exit 0
  fi
  echo "report_chromium: FAILED: chromium not found (apt-get install chromium; GPUCAST_SKIP_CHROMIUM=1 skips)" >&2
  exit 1
fi
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
# The model's leave-one-workload-out predictions, whose memory predictions the noisy and constant
# controls keep too: those a trained predictor file stored (simulate --predictor: not recomputed; the
# predictor make test trains once, GPUCAST_TEST_PREDICTOR, else one trained here, ~40 s of CPU),
# not the default auto's nested ones (about 330 s of CPU; the report renders either alike).
if [ -n "${GPUCAST_TEST_PREDICTOR:-}" ]; then
  P=$GPUCAST_TEST_PREDICTOR
else
  P=$TMP/predictor.json
  "$BIN" train --out "$P" --quiet >/dev/null
fi
S=(--trace philly --jobs 400 --cluster "16x RTX3090" --seeds 1-2 --quiet --predictor "$P")
"$BIN" simulate "${S[@]}" --load-factor 1,2 --policy slot,profiling-pool,predictive,predictive-feedback \
  --out "$TMP/runs/default" >/dev/null
"$BIN" simulate "${S[@]}" --load-factor 2 --policy predictive,predictive-feedback --predictions oracle \
  --out "$TMP/runs/oracle" >/dev/null
for src in noisy:10 constant:50; do
  "$BIN" simulate "${S[@]}" --load-factor 2 --policy predictive,predictive-feedback --predictions "$src" \
    --out "$TMP/runs/accuracy/${src/:/-}" >/dev/null
done
"$BIN" report "$TMP/runs" --out "$TMP/report.html" >/dev/null

# check DOM CONSOLE: no console message; the verdict and both plots present.
check() {
  /usr/bin/python3 - "$1" "$2" <<'PY'
import sys
from html.parser import HTMLParser

dom, console = open(sys.argv[1]).read(), open(sys.argv[2]).read()
errors = []
if console.strip():
    errors.append("console messages:\n" + console.strip())

class Page(HTMLParser):
    def __init__(self):
        super().__init__()
        self.svgs, self.stack, self.verdict, self.in_verdict = {}, [], "", 0
    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        if tag == "svg" and a.get("id"):
            self.stack.append(a["id"])
            self.svgs[a["id"]] = {"lines": 0, "bands": 0, "markers": 0}
        elif self.stack and tag == "polyline" and len(a.get("points", "").split()) >= 2:
            self.svgs[self.stack[-1]]["lines"] += 1
        elif self.stack and tag == "polygon" and a.get("class") == "band":
            self.svgs[self.stack[-1]]["bands"] += 1
        elif self.stack and tag in ("rect", "polygon") and a.get("stroke-width") == "0.6":
            self.svgs[self.stack[-1]]["markers"] += 1
        if a.get("id") == "verdict":
            self.in_verdict = 1
        elif self.in_verdict and tag not in ("br",):
            self.in_verdict += 1
    def handle_endtag(self, tag):
        if tag == "svg" and self.stack:
            self.stack.pop()
        if self.in_verdict:
            self.in_verdict -= 1
    def handle_data(self, data):
        if self.in_verdict:
            self.verdict += data

p = Page()
p.feed(dom)
v = " ".join(p.verdict.split())
if not v.startswith("Verdict: At --load-factor 2 (measured load "):
    errors.append("verdict missing or not at load 2: %r" % v[:300])
elif "profiling-pool, the best profiling baseline" not in v or "predictive" not in v:
    errors.append("verdict does not compare a prediction-driven policy with profiling-pool: %r" % v[:300])
elif "--load-factor 1 (measured load" not in v:
    errors.append("verdict lacks load 1: %r" % v[:300])
for svg in ("load-sweep-useful", "load-sweep-jct", "accuracy-useful-16-2.00", "accuracy-jct-16-2.00"):
    s = p.svgs.get(svg)
    if s is None:
        errors.append("no <svg id=%s>" % svg)
        continue
    if s["lines"] < 2 or s["bands"] < 2:
        errors.append("%s: %d lines, %d seed bands (want 2 or more of each)" % (svg, s["lines"], s["bands"]))
    if svg.startswith("accuracy") and s["markers"] < 4:  # the default and constant:50, two policies
        errors.append("%s: %d markers (want the default and constant:50 of both policies)" % (svg, s["markers"]))
if errors:
    print("\n".join(errors))
    sys.exit(1)
print("verdict: " + v)
PY
}

"$ROOT/tools/report_view.sh" dom "$TMP/report.html" >"$TMP/dom.html" 2>"$TMP/console.log"
check "$TMP/dom.html" "$TMP/console.log" || { echo "report_chromium: FAILED (report: the page above)" >&2; exit 1; }
# The negative control: the same page with a script that logs an error must fail.
sed 's|</body>|<script>console.error("injected")</script></body>|' "$TMP/report.html" >"$TMP/bad.html"
"$ROOT/tools/report_view.sh" dom "$TMP/bad.html" >"$TMP/dom-bad.html" 2>"$TMP/console-bad.log"
if check "$TMP/dom-bad.html" "$TMP/console-bad.log" >"$TMP/bad.out"; then
  echo "report_chromium: FAILED: a console error went unnoticed" >&2
  exit 1
fi
grep -q 'injected' "$TMP/bad.out" || { echo "report_chromium: FAILED: control: $(cat "$TMP/bad.out")" >&2; exit 1; }
echo "report_chromium: passed"
