#!/usr/bin/env bash
# Builds (once) the jar of the embedded Lucene backend (index/lucene_views/:
# the three views as Lucene indexes, searched in-process through JPype by
# search_agent/search/lucene_backend.py). No node runs: Python starts the JVM.
#
#   bash launch/lucene_views.sh build    # Maven build unless the jar is up to date
#   bash launch/lucene_views.sh status   # exit 0 and print the jar if it is built
#
# Environment (optional): JAVA_HOME, used if it is Java 21+ (Lucene 10 needs
# it); else temurin-25, else the newest /usr/lib/jvm/* that is 21+.
set -euo pipefail
cd "$(dirname "$0")/.."
repo=$(pwd)

src=$repo/index/lucene_views
jar=$src/target/lucene-views.jar
name=lucene-views
needs_java='Lucene 10'
download='~5'
# shellcheck source=launch/jvm_node.sh
. "$repo/launch/jvm_node.sh"

case "${1:-}" in
  build)
    find_java
    build
    say "jar ready: $jar"
    ;;
  status)
    if [ -f "$jar" ] && [ -d "$src/target/lib" ]; then
      say "built: $jar"
    else
      say "not built ($jar missing)"
      exit 1
    fi
    ;;
  *)
    echo "usage: $0 {build|status}" >&2
    exit 2
    ;;
esac
