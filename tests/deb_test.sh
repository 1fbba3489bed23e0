#!/usr/bin/env bash
# The Debian package (make deb) as a user gets it: its control fields, then its files
# extracted into a temporary root (dpkg-deb -x; installing into this shared machine is not
# done) and used from there: the binary finds its models and data under the package's
# /usr/share/gpucast, trains, predicts; the export tool and the Python client start.
# Usage: tests/deb_test.sh BUILD_DIR
set -u
BUILD=${1:?usage: deb_test.sh BUILD_DIR}
T=$(mktemp -d /tmp/gpucast-deb.XXXXXX)
trap 'rm -rf "$T"' EXIT
pass=0; fail=0
ok() { pass=$((pass + 1)); }
bad() { fail=$((fail + 1)); echo "FAIL: $*"; }

DEB=$(ls -t "$BUILD"/gpucast_*.deb 2>/dev/null | head -1)
[ -n "$DEB" ] || { echo "deb: no $BUILD/gpucast_*.deb (run make deb)"; echo "deb: 0 passed, 1 failed"; exit 1; }
info=$(dpkg-deb -I "$DEB")
for field in "Package: gpucast" "Architecture: $(dpkg --print-architecture)" "Section: science"; do
  grep -qF "$field" <<<"$info" && ok || bad "control lacks '$field'"
done
# Depends comes from the binary's shared libraries (dpkg-shlibdeps).
for lib in libonnx1 libprotobuf32 libsqlite3-0 libxgboost0 libcpp-httplib0.11; do
  grep -E "^ Depends:.*\b$lib\b" <<<"$info" >/dev/null && ok || bad "Depends lacks $lib: $(grep Depends <<<"$info")"
done
R="$T/root"
dpkg-deb -x "$DEB" "$R" || { bad "dpkg-deb -x failed"; echo "deb: $pass passed, $fail failed"; exit 1; }
for f in usr/bin/gpucast usr/lib/gpucast/gpucast-serve usr/bin/gpucast-export usr/share/gpucast/models/catalog.json \
         usr/share/gpucast/data/lucid/single_data.csv usr/share/gpucast/slurm/job_submit.lua \
         usr/share/gpucast/grafana/gpucast-dashboard.json usr/lib/python3/dist-packages/gpucast_client/__main__.py; do
  [ -e "$R/$f" ] && ok || bad "package lacks /$f"
done
B="$R/usr/bin/gpucast"
# No path of the build machine's checkout in the installed binary.
if strings "$B" | grep -qF "$(cd "$(dirname "$0")/.." && pwd)"; then bad "binary holds the source-tree path"; else ok; fi
"$B" --version | grep -qx "gpucast $(sed -n 's/^Version: //p' <<<"$(dpkg-deb -f "$DEB")")" && ok || bad "--version"
# Trained and used from the packaged data and models only (no GPUCAST_* variables).
env -u GPUCAST_DATA -u GPUCAST_HOME "$B" train --out "$T/p.json" --quiet >/dev/null 2>"$T/err" && ok || bad "train: $(cat "$T/err")"
out=$(env -u GPUCAST_DATA -u GPUCAST_HOME "$B" predict --predictor "$T/p.json" \
        --model "$R/usr/share/gpucast/models/resnet50.onnx" --batch 32 --json 2>"$T/err")
python3 -c 'import json,sys; d=json.loads(sys.argv[1]); assert 0 <= d["gpu_util"] <= 100' "$out" 2>/dev/null && ok \
  || bad "predict: $out $(cat "$T/err")"
"$B" serve --help | grep -q -- "--listen" && ok || bad "gpucast serve --help (runs /usr/lib/gpucast/gpucast-serve)"
"$R/usr/bin/gpucast-export" --help | grep -q "training mode" && ok || bad "gpucast-export --help"
PYTHONPATH="$R/usr/lib/python3/dist-packages" python3 -m gpucast_client --help | grep -q "predict" && ok \
  || bad "python3 -m gpucast_client --help"
echo "deb: $pass passed, $fail failed"
[ "$fail" = 0 ]
