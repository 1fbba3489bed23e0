#!/usr/bin/env bash
# Opens a gpucast report (or any local HTML file) in headless Chromium (Debian
# package chromium), with no network and a fresh profile.
#   tools/report_view.sh dom FILE.html          the DOM after load on stdout; every
#                                               console message (CONSOLE lines) on stderr
#   tools/report_view.sh png FILE.html OUT.png [WIDTH HEIGHT]
#                                               a screenshot of the top WIDTHxHEIGHT px
#                                               (default 1100x2600)
# Exit status: Chromium's (124 when it ran past 120 s).
set -euo pipefail
usage() { echo "usage: report_view.sh dom FILE.html | png FILE.html OUT.png [WIDTH HEIGHT]" >&2; exit 2; }
MODE=${1:-}; FILE=${2:-}
[ -n "$MODE" ] && [ -n "$FILE" ] || usage
[ -f "$FILE" ] || { echo "report_view.sh: $FILE: no such file" >&2; exit 2; }
CHROME=${CHROMIUM:-$(command -v chromium || true)}
[ -n "$CHROME" ] || { echo "report_view.sh: chromium not found (apt-get install chromium)" >&2; exit 127; }
PROFILE=$(mktemp -d)
LOG=$(mktemp)
trap 'rm -rf "$PROFILE" "$LOG"' EXIT
URL="file://$(realpath "$FILE")"
# As root Chromium needs --no-sandbox; the rest keeps it off the network
# (this machine has none) and makes every console message a log line.
FLAGS=(--headless --no-sandbox --disable-gpu --disable-quic --no-first-run --disable-background-networking
  --disable-component-update --disable-sync --disable-extensions --user-data-dir="$PROFILE"
  --enable-logging=stderr --v=0 --hide-scrollbars)
case "$MODE" in
  dom)
    rc=0
    timeout 120 "$CHROME" "${FLAGS[@]}" --dump-dom "$URL" 2>"$LOG" || rc=$?
    grep -F ':CONSOLE' "$LOG" >&2 || true
    [ "$rc" = 0 ] || { tail -n 20 "$LOG" >&2; exit "$rc"; }
    ;;
  png)
    OUT=${3:-}; [ -n "$OUT" ] || usage
    W=${4:-1100}; H=${5:-2600}
    rc=0
    timeout 120 "$CHROME" "${FLAGS[@]}" --window-size="$W,$H" --screenshot="$(realpath -m "$OUT")" "$URL" 2>"$LOG" || rc=$?
    grep -F ':CONSOLE' "$LOG" >&2 || true
    [ "$rc" = 0 ] && [ -s "$OUT" ] || { tail -n 20 "$LOG" >&2; exit "${rc/#0/1}"; }
    ;;
  *) usage ;;
esac
