#!/usr/bin/env bash
# gpucast predict as a whole process on a weight-free graph: wall time of N
# runs (median and min) and, when valgrind is installed, a load-independent
# instruction-count breakdown (callgrind): dynamic linking, libonnx's schema
# registry, graph loading, costing, predictor loading. A benchmark, not a test:
# nothing fails on a slow machine. Numbers: docs/performance.md.
# Usage: bench/predict_process.sh BUILD_DIR [RUNS]   (predictor trained once into BUILD_DIR)
set -euo pipefail
BUILD=${1:-build}
RUNS=${2:-30}
ROOT=$(cd "$(dirname "$0")/.." && pwd)
BIN="$BUILD/gpucast"
P="$BUILD/bench-predictor.json"
[ -f "$P" ] || "$BIN" train --out "$P" --quiet >/dev/null
ARGS=(predict --predictor "$P" --model "$ROOT/models/resnet50.onnx" --batch 32 --json)

# median_ms CMD...: median and min wall time of RUNS runs of CMD, in ms.
median_ms() {
  local times=() t0 t1
  for _ in $(seq "$RUNS"); do
    t0=$(date +%s%N); "$@" >/dev/null; t1=$(date +%s%N)
    times+=("$(( (t1 - t0) / 1000 ))")
  done
  local sorted
  sorted=$(printf "%s\n" "${times[@]}" | sort -n)
  awk -v med="$(echo "$sorted" | sed -n "$(( (RUNS + 1) / 2 ))p")" -v min="$(echo "$sorted" | head -1)" \
    'BEGIN { printf "median %.1f ms   min %.1f ms\n", med / 1000, min / 1000 }'
}
echo "== $RUNS runs of each as a process (load average $(cut -d' ' -f1 /proc/loadavg), $(nproc) CPUs)"
"$BIN" "${ARGS[@]}" >/dev/null  # warm the page cache
printf "%-58s " "gpucast predict, resnet50 weight-free b32:"; median_ms "$BIN" "${ARGS[@]}"
printf "%-58s " "gpucast --version (process start and exit only):"; median_ms "$BIN" --version
printf "%-58s " "/bin/true (an empty process on this machine):"; median_ms /bin/true
echo "== shared libraries the predict process loads: $(ldd "$BIN" | grep -c '=>')"

# The floor the libraries set: an empty main() linked against exactly the
# binary's NEEDED libraries (readelf -d), so that it loads, relocates and runs
# the same library constructors and nothing else. Needs a C++ compiler.
if command -v c++ >/dev/null && command -v readelf >/dev/null; then
  FLOOR_DIR=$(mktemp -d)
  LIBS=()
  while read -r so; do
    base=${so#lib}; base=${base%%.so*}
    case "$base" in c|m|gcc_s|stdc++) ;; *) LIBS+=("-l:$so") ;; esac
  done < <(readelf -d "$BIN" | sed -n 's/.*(NEEDED).*\[\(.*\)\]/\1/p')
  echo 'int main() { return 0; }' >"$FLOOR_DIR/empty.cc"
  if c++ -O2 "$FLOOR_DIR/empty.cc" -o "$FLOOR_DIR/empty" -Wl,--no-as-needed "${LIBS[@]}" 2>/dev/null; then
    printf "%-58s " "empty main() linked to the same libraries:"; median_ms "$FLOOR_DIR/empty"
  else
    echo "(could not link an empty program against: ${LIBS[*]})"
  fi
  rm -rf "$FLOOR_DIR"
fi

if command -v valgrind >/dev/null && command -v callgrind_annotate >/dev/null; then
  OUT=$(mktemp)
  valgrind --tool=callgrind --callgrind-out-file="$OUT" "$BIN" "${ARGS[@]}" >/dev/null 2>&1
  echo "== instructions (callgrind, inclusive; independent of machine load)"
  callgrind_annotate --inclusive=yes --threshold=100 "$OUT" 2>/dev/null | awk '
    /PROGRAM TOTALS/ { printf "%-58s %14s\n", "total", $1 }
    /rtld.c:_dl_start / { printf "%-58s %14s\n", "dynamic linking (ld.so _dl_start)", $1 }
    /_dl_init / && !i++ { printf "%-58s %14s\n", "shared-library static constructors (_dl_init)", $1 }
    /OpSchemaRegistry::map/ && !r++ { printf "%-58s %14s\n", "libonnx schema registry (OpSchemaRegistry::map)", $1 }
    /gpucast::FindOpSchema\(/ && !f++ { printf "%-58s %14s\n", "lazily built ONNX schemas (gpucast::FindOpSchema)", $1 }
    /gpucast::Predictor::Load/ && !p++ { printf "%-58s %14s\n", "predictor file (Predictor::Load)", $1 }
    /gpucast::JobStepReports/ && !j++ { printf "%-58s %14s\n", "graph load + shapes + cost (JobStepReports)", $1 }
    /gpucast::Predictor::Predict\(/ && !q++ { printf "%-58s %14s\n", "features + regressor (Predictor::Predict)", $1 }'
  rm -f "$OUT"
fi
