#!/usr/bin/env bash
# docs/predictor.md's "Tensor cores at their own efficiency" comparison: the `steps` section of
# tools/predictor_tables.sh (lowo and logo with the Pollux one-GPU runs as step-only rows; evaluate --steps
# on Pollux and Zeus) run with `evaluate --tensor-core-split` (the physics model's eff_tensor_core for the
# compute of AMP rows; off by default), so the comparison's figures come from a script as the default's do.
# Usage: tools/tensor_core_tables.sh PATH/TO/gpucast (markdown on stdout, progress on stderr; about 40
# minutes on 2 shared cores).
set -euo pipefail
B=$(realpath "${1:?usage: tensor_core_tables.sh PATH/TO/gpucast}")
DATA=${GPUCAST_DATA:-$(dirname "$0")/../../shared/data}
LUCID=$DATA/lucid/single_data.csv MIG=$DATA/migprofiler-a100/bert_train.csv
POLLUX=$DATA/pollux-t4 ZEUS=$DATA/zeus
ROOT=$(cd "$(dirname "$0")/.." && pwd)
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
ev() {  # name, then evaluate arguments: JSON in $T/name.json
  local name=$1; shift
  echo "## $name: gpucast evaluate --tensor-core-split $*" >&2
  nice -n 10 "$B" evaluate --tensor-core-split "$@" --json --quiet > "$T/$name.json"
}
ev steps_lowo --data "$LUCID" --data "$MIG" --data "$POLLUX" --split lowo --algo physics --repeats 1 & p1=$!
ev steps_logo --data "$LUCID" --data "$MIG" --data "$POLLUX" --split logo --algo physics --repeats 1
wait $p1
ev steps --data "$LUCID" --data "$MIG" --steps "$POLLUX" --steps "$ZEUS" --algo physics
/usr/bin/python3 "$ROOT/tools/predictor_md.py" steps "$T/steps_lowo.json" "$T/steps_logo.json" "$T/steps.json"
