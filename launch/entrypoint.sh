#!/usr/bin/env bash
# The image's entrypoint: runs one of the project's binaries.
#
#   docker run IMAGE search_agent.train.sft --config=tpu_configs/sft.py ...
#     -> python -m search_agent.train.sft --config=... (from /app)
#   docker run IMAGE            (or --help) -> this help
#   docker run IMAGE bash ...   -> any other command, run as is
set -euo pipefail
cd "$(dirname "$0")/.."
PYTHON="${PYTHON:-python}"

usage() {
  cat <<'HELP'
usage: IMAGE MODULE [FLAGS...]   runs `python -m MODULE FLAGS...` from /app
       IMAGE COMMAND [ARGS...]   runs any other command (bash, pytest, ...)
       IMAGE --help              this help

Binaries (each takes --help; WORKSPACE.md lists them):
  index.build  index.serve  index.query  index.calibrate  index.bench
  search_agent.filtering.run  search_agent.synthesis.run
  search_agent.train.sft  search_agent.train.rl.run
  search_agent.train.rl.simulator_benchmark
  search_agent.model.tools.import_hf  search_agent.model.tools.export_hf
  eval.run  eval.compare  eval.view  launch.local  launch.xpk
HELP
}

if [ "$#" -eq 0 ] || [ "$1" = "--help" ] || [ "$1" = "-h" ]; then
  usage
  exit 0
fi
case "$1" in
  -*)
    echo "entrypoint: unknown option $1" >&2
    usage >&2
    exit 2
    ;;
  */*)
    exec "$@"  # a path, e.g. launch/run_tests.sh
    ;;
esac
if [[ "$1" == *.* ]]; then
  exec "$PYTHON" -m "$@"  # a dotted module name
fi
exec "$@"
