#!/usr/bin/env bash
# The main job on the embedded defaults: set up (once), then the whole recipe,
# tiny, on this CPU (tpu_configs/pipeline.py:tiny): index the bundled corpus,
# make tasks, pretrain, collect teacher demonstrations, filter, SFT, evaluate,
# RL, evaluate again; runs/main/report.md and report.json at the end.
# Stages already done with the same inputs are reused; extra arguments go to
# launch.pipeline (e.g. --config.stages=...).
set -euo pipefail
cd "$(dirname "$0")/.."
bash launch/setup.sh
workdir=${WORKDIR:-runs/main}
exec .venv/bin/python -m launch.pipeline \
  --config=tpu_configs/pipeline.py:tiny --workdir="$workdir" "$@"
