#!/usr/bin/env bash
# Every --json layout against its description in docs/json.md: each command is run, and the
# fields it prints must be exactly the documented ones (top level, and the documented nested
# objects), with the documented "schema" name and version. A field added to the output without
# the doc, or documented but gone, fails here.
# Usage: tests/json_layouts.sh BUILD/gpucast
set -u
BIN=$(realpath "${1:?usage: json_layouts.sh PATH/TO/gpucast}")
ROOT=$(cd "$(dirname "$0")/.." && pwd)
. "$ROOT/tests/lib/serve.sh"
T=$(mktemp -d /tmp/gpucast-json.XXXXXX)
PID=""
cleanup() { [ -n "$PID" ] && kill "$PID" 2>/dev/null; wait 2>/dev/null; rm -rf "$T"; }
trap cleanup EXIT
die() { echo "json layouts: FAIL: $*"; echo "json layouts: 0 passed, 1 failed"; exit 1; }
run() {  # run NAME CMD...: stdout to $T/NAME.json
  local name=$1; shift
  "$@" >"$T/$name.json" 2>"$T/$name.err" || die "$name: $* exited $?: $(head -c 400 "$T/$name.err")"
}
M="$ROOT/models"
run gpucast.analyze "$BIN" analyze "$M/resnet50.onnx" --batch 8 --json
# The predictor: the one make test trains once for every suite (GPUCAST_TEST_PREDICTOR), else train.
if [ -n "${GPUCAST_TEST_PREDICTOR:-}" ]; then
  cp "$GPUCAST_TEST_PREDICTOR" "$T/p.json" || die "cannot copy $GPUCAST_TEST_PREDICTOR"
else
  "$BIN" train --out "$T/p.json" --quiet >/dev/null || die "train"
fi
run gpucast.predict "$BIN" predict --predictor "$T/p.json" --model "$M/vgg.onnx" --batch 64 --json
run gpucast.evaluate "$BIN" evaluate --split lowo --algo ridge --repeats 1 --bootstrap 10 --json --quiet
run gpucast.evaluate.steps "$BIN" evaluate --steps "${GPUCAST_DATA:-$ROOT/../shared/data}/zeus" --algo physics --json --quiet
run gpucast.memory-evaluation "$BIN" evaluate --memory-only --split lowo --json --quiet
run gpucast.simulate "$BIN" simulate --trace philly --jobs 300 --cluster "8x RTX3090" --policy slot \
  --predictions oracle --out "$T/sim" --json --quiet
run gpucast.interference "$BIN" interference --util 60 --util 30 --json

# A service database with two observed jobs of one workload, for the learning curve.
"$BIN" serve --listen 127.0.0.1:0 --db "$T/jobs.db" --predictor "$T/p.json" --model-root "$M" >"$T/out" 2>"$T/err" &
PID=$!
URL=http://$(serve_addr "$T/out" "$PID" 10 "$T/err") || die "serve did not start"
for b in 96 80; do
  id=$(curl -s -m 10 -X POST "$URL/v1/jobs" -H 'Content-Type: application/json' -d "{\"model\": \"vgg.onnx\", \"batch\": $b}" |
       /usr/bin/python3 -c 'import json,sys; print(json.load(sys.stdin)["id"])') || die "submit"
  curl -s -m 10 -X POST "$URL/v1/jobs/$id/observations" -H 'Content-Type: application/json' \
    -d '{"gpu_util": 40, "source": "slurm", "samples": 10}' >/dev/null || die "observe"
done
kill "$PID"; wait "$PID" 2>/dev/null; PID=""
run gpucast.learning-curve "$BIN" evaluate --observations "$T/jobs.db" --algo ridge --json

/usr/bin/python3 - "$ROOT/docs/json.md" "$T" <<'PY'
import json, re, sys
doc, out = sys.argv[1], sys.argv[2]
text = open(doc).read()
layouts, nested = {}, []
for line in text.splitlines():
    cells = [c.strip() for c in line.strip().strip("|").split("|")] if line.startswith("| `gpucast.") else None
    if not cells:
        continue
    names = lambda cell: re.findall(r"`([^`]+)`", cell)
    if len(cells) == 4:    # | `schema` | version | printed by | fields |
        layouts[names(cells[0])[0]] = (int(cells[1]), set(names(cells[3])))
    elif len(cells) == 3:  # | `schema` | `object path` | fields |
        nested.append((names(cells[0])[0], names(cells[1])[0], set(names(cells[2]))))
passed, failed = 0, []
def check(cond, msg):
    global passed
    if cond: passed += 1
    else: failed.append(msg)
def at(obj, path):
    for part in path.split("."):
        many = part.endswith("[]")
        obj = obj[part[:-2] if many else part]
        if many:
            if not obj: return None
            obj = obj[0]
    return obj
check(len(layouts) == 8, f"docs/json.md lists {len(layouts)} layouts, want 8")
for name, (version, fields) in layouts.items():
    try:
        j = json.load(open(f"{out}/{name}.json"))
    except FileNotFoundError:
        failed.append(f"{name}: documented but not run by this test"); continue
    check(j.get("schema") == {"name": name, "version": version}, f"{name}: schema field {j.get('schema')}")
    got = set(j)
    required = {f for f in fields if not f.endswith("?")}
    optional = {f[:-1] for f in fields if f.endswith("?")}
    check(required <= got <= required | optional,
          f"{name}: printed but not documented: {sorted(got - required - optional)}; documented but not printed: "
          f"{sorted(required - got)}")
    for n, path, want in nested:
        if n != name: continue
        sub = at(j, path)
        if sub is None:
            failed.append(f"{name}: {path} is empty in this run"); continue
        check(set(sub) == want, f"{name} {path}: printed but not documented: {sorted(set(sub) - want)}; "
                                f"documented but not printed: {sorted(want - set(sub))}")
for f in failed: print("FAIL:", f)
print(f"json layouts: {passed} passed, {len(failed)} failed")
sys.exit(1 if failed else 0)
PY
