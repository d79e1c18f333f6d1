#!/usr/bin/env bash
# Builds (once) and starts or stops the single-node OpenSearch that the
# `opensearch` tests and small deployments use (index/opensearch_node/).
#
#   bash launch/opensearch.sh start    # build if needed, start, wait for health
#   bash launch/opensearch.sh stop     # SIGTERM, wait, then SIGKILL if it hangs
#   bash launch/opensearch.sh status   # exit 0 and print the URL if running
#
# Environment (all optional):
#   OPENSEARCH_PORT           HTTP port on 127.0.0.1 (default 9200; the tests
#                             use OPENSEARCH_URL, else this port)
#   OPENSEARCH_HOME           data, logs, pid file (default build/opensearch)
#   OPENSEARCH_JAVA_OPTS      JVM options (default "-Xms512m -Xmx1g")
#   OPENSEARCH_START_TIMEOUT  seconds to wait for yellow/green (default 120)
#   OPENSEARCH_STOP_WITH_PID  the node stops by itself when this process ends
#                             (default under CI=true: the caller, i.e.
#                             launch/run_tests.sh, which execs pytest)
#   JAVA_HOME                 Java 17+ to build and run with
set -euo pipefail
cd "$(dirname "$0")/.."
repo=$(pwd)

port=${OPENSEARCH_PORT:-9200}
home=${OPENSEARCH_HOME:-$repo/build/opensearch}
java_opts=${OPENSEARCH_JAVA_OPTS:--Xms512m -Xmx1g}
timeout=${OPENSEARCH_START_TIMEOUT:-120}
stop_with=${OPENSEARCH_STOP_WITH_PID:-}
if [ -z "$stop_with" ] && [ "${CI:-}" = true ]; then stop_with=$PPID; fi
src=$repo/index/opensearch_node
jar=$src/target/opensearch-node.jar
pidfile=$home/node.pid
log=$home/node.log
url=http://127.0.0.1:$port
java=java
if [ -n "${JAVA_HOME:-}" ]; then java=$JAVA_HOME/bin/java; fi

name=opensearch
marker=opensearch-node.jar
download='~85'
# shellcheck source=launch/jvm_node.sh
. "$repo/launch/jvm_node.sh"

start() {
  need curl "install curl (Debian: apt-get install curl)"
  need "$java" "install Java 17+ or set JAVA_HOME"
  if pid=$(running_pid) && healthy; then
    say "already running (pid $pid): $url"
    return 0
  fi
  if healthy; then
    say "a cluster not started from this checkout already answers on $url;" \
      "using it ('stop' leaves it alone; set OPENSEARCH_PORT for a new node)"
    return 0
  fi
  if pid=$(running_pid); then
    say "pid $pid is up but unhealthy; restarting it"
    stop
  fi
  build
  mkdir -p "$home"
  say "starting node on $url (home $home, JVM $java_opts${stop_with:+, stops with pid $stop_with})"
  local t0=$SECONDS
  # shellcheck disable=SC2086  # java_opts is a list; stop_with may be empty.
  nohup "$java" $java_opts -jar "$jar" "$home" "$port" $stop_with >"$log" 2>&1 &
  echo $! >"$pidfile"
  wait_until_healthy "$t0"
  say "up in $((SECONDS - t0)) s (pid $(cat "$pidfile")): $url"
}

case "${1:-}" in
  start) start ;;
  stop) stop ;;
  status) status ;;
  *) die "usage: bash launch/opensearch.sh start|stop|status" ;;
esac
