#!/usr/bin/env bash
# Submission overhead of the Slurm plugin (not a test): sbatch latency on the live test
# cluster of integrations/slurm/test.sh (real munged/slurmctld/slurmd on localhost, fake
# GPUs), N held submissions each without the plugin, in cli mode and in service mode.
# Needs root. Usage: bench/slurm_submit.sh [BUILD_DIR] [N=200]
set -euo pipefail
BUILD=${1:-build}
N=${2:-200}
exec bash "$(dirname "$0")/../integrations/slurm/test.sh" --bench "$N" "$BUILD/gpucast"
