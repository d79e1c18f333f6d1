#!/usr/bin/env bash
# The main job on the embedded defaults: set up (once), build the embedded
# tantivy index over the bundled 2Wiki corpus (once), answer a few searches.
set -euo pipefail
cd "$(dirname "$0")/.."
bash launch/setup.sh
workdir=${WORKDIR:-runs/main}
if [ ! -f "$workdir/index/manifest.json" ]; then
  .venv/bin/python -m index.build --config=tpu_configs/search/build.py \
    --workdir="$workdir"
else
  echo "main: reusing the index in $workdir/index (delete it to rebuild)"
fi
.venv/bin/python -m index.query --index_dir="$workdir/index" --k=3 \
  --query='film director born in 1930 Italian' \
  --query='"Carlo Ludovico Bragaglia" comedy' \
  --query='special effects artist site:en.wikipedia.org' \
  --query='unbalanced "quote'
