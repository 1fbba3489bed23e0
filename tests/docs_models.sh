#!/usr/bin/env bash
# docs/models.md, run as written: every "$ " command of its ```sh blocks runs in order in a
# scratch directory (examples/ of the checkout beside it, gpucast and gpucast-export on PATH)
# and must exit 0, or with the status a "# exit N" comment on the command states. The output
# shown under a command is compared line by line where it cannot change with the predictor:
# "wrote ..." lines of gpucast-export, the printed predict line, and error messages exactly;
# a "predicted GPU utilization" line by its form only (the numbers come from the predictor
# trained in the walk-through, which moves with the predictor's code).
# Usage: tests/docs_models.sh BUILD/gpucast
set -u
BIN=$(realpath "${1:?usage: docs_models.sh PATH/TO/gpucast}")
ROOT=$(cd "$(dirname "$0")/.." && pwd)
T=$(mktemp -d /tmp/gpucast-docs.XXXXXX)
trap 'rm -rf "$T"' EXIT
mkdir -p "$T/bin" "$T/work"
ln -s "$BIN" "$T/bin/gpucast"
ln -s "$ROOT/tools/gpucast-export" "$T/bin/gpucast-export"
ln -s "$ROOT/examples" "$T/work/examples"
export PATH="$T/bin:/usr/bin:$PATH" GPUCAST=""  # /usr/bin first: Debian's python3 has torch
cd "$T/work" || exit 1
/usr/bin/python3 - "$ROOT/docs/models.md" <<'PY'
import re, subprocess, sys
doc = open(sys.argv[1]).read()
steps = []  # (command, expected rc, shown output lines)
for block in re.findall(r"```sh\n(.*?)```", doc, re.S):
    for line in block.splitlines():
        if line.startswith("$ "):
            cmd = line[2:]
            m = re.search(r"\s+# exit (\d+)$", cmd)
            steps.append([cmd, int(m.group(1)) if m else 0, []])
        elif steps and line.strip():
            steps[-1][2].append(line)
passed, failed = 0, []
for cmd, want_rc, shown in steps:
    r = subprocess.run(["bash", "-c", cmd], capture_output=True, text=True)
    got = (r.stdout + r.stderr).splitlines()
    if r.returncode != want_rc:
        failed.append(f"$ {cmd}\n  exit {r.returncode} (want {want_rc}):\n  " + "\n  ".join(got[-10:]))
        continue
    passed += 1
    for s in shown:
        exact = s.startswith(("wrote ", "  gpucast predict ", "gpucast-export: ", "gpucast analyze: ",
                              "gpucast predict: ", "  warning: "))
        if exact:
            ok = s in got
        elif s.startswith("predicted GPU utilization"):
            form = re.sub(r"[0-9]+\.[0-9]", "#", s)
            ok = any(re.sub(r"[0-9]+\.[0-9]", "#", g) == form for g in got)
        else:
            continue  # shown for reading only (tables, summaries)
        if ok:
            passed += 1
        else:
            failed.append(f"$ {cmd}\n  shown in docs/models.md but not printed:\n  {s}\n  printed:\n  " + "\n  ".join(got))
for f in failed:
    print("FAIL:", f)
print(f"docs/models.md: {len(steps)} commands, {passed} checks passed, {len(failed)} failed")
sys.exit(1 if failed or not steps else 0)
PY
