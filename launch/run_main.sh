#!/usr/bin/env bash
# The main job on the embedded defaults: set up (once), then the whole recipe
# on the devices JAX sees: on a GPU or TPU the learning run sized for one
# accelerator (tpu_configs/pipeline.py:learn_accel), on CPU the tiny one
# (:tiny): index the bundled corpus, make tasks, pretrain (or import the
# shipped base), collect teacher demonstrations, filter, SFT, evaluate, RL,
# evaluate again; runs/main/report.md and report.json at the end. The first
# line of the pipeline's output says which variant runs and why.
#   bash launch/run_main.sh [--variant=tiny|learn_accel|learn] [FLAGS...]
# --variant names the variant instead; other arguments go to launch.pipeline
# (e.g. --config.stages=...). Stages already done with the same inputs are
# reused.
set -euo pipefail
cd "$(dirname "$0")/.."
variant=''
args=()
for arg in "$@"; do
  case "$arg" in
    --variant=*) variant=":${arg#--variant=}" ;;
    *) args+=("$arg") ;;
  esac
done
bash launch/setup.sh
workdir=${WORKDIR:-runs/main}
exec .venv/bin/python -m launch.pipeline \
  --config="tpu_configs/pipeline.py${variant}" --workdir="$workdir" \
  ${args[@]+"${args[@]}"}
