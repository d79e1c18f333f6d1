#!/usr/bin/env bash
# Builds (once) and starts or stops a single-node Elasticsearch 9 for the
# `elasticsearch` flavor (index/elasticsearch_node/), beside the OpenSearch one.
#
#   bash launch/elasticsearch.sh start    # build if needed, start, wait for health
#   bash launch/elasticsearch.sh stop     # SIGTERM, wait, then SIGKILL if it hangs
#   bash launch/elasticsearch.sh status   # exit 0 and print the URL if running
#
# Environment (all optional):
#   ELASTICSEARCH_PORT           HTTP port on 127.0.0.1 (default 9201, so it
#                                never clashes with OpenSearch on 9200)
#   ELASTICSEARCH_HOME           data, logs, pid file (default build/elasticsearch)
#   ELASTICSEARCH_JAVA_OPTS      heap options (default "-Xms512m -Xmx1g")
#   ELASTICSEARCH_START_TIMEOUT  seconds to wait for yellow/green (default 120)
#   ELASTICSEARCH_STOP_WITH_PID  the node stops by itself when this process ends
#                                (default under CI=true: the caller)
#   JAVA_HOME                    used if it is Java 21+ (Elasticsearch 9 needs
#                                it); else temurin-25, else the newest
#                                /usr/lib/jvm/* that is 21+
set -euo pipefail
cd "$(dirname "$0")/.."
repo=$(pwd)

port=${ELASTICSEARCH_PORT:-9201}
home=${ELASTICSEARCH_HOME:-$repo/build/elasticsearch}
java_opts=${ELASTICSEARCH_JAVA_OPTS:--Xms512m -Xmx1g}
timeout=${ELASTICSEARCH_START_TIMEOUT:-120}
stop_with=${ELASTICSEARCH_STOP_WITH_PID:-}
if [ -z "$stop_with" ] && [ "${CI:-}" = true ]; then stop_with=$PPID; fi
src=$repo/index/elasticsearch_node
jar=$src/target/elasticsearch-node.jar
main=searchagent.elasticsearch.SingleNode
pidfile=$home/node.pid
log=$home/node.log
url=http://127.0.0.1:$port
# Module flags the server needs; Netty without Unsafe; no log4j JMX/hook.
es_flags="--add-modules=jdk.incubator.vector --enable-native-access=ALL-UNNAMED
  -Dio.netty.noUnsafe=true -Dio.netty.noKeySetOptimization=true
  -Dlog4j.shutdownHookEnabled=false -Dlog4j2.disable.jmx=true
  -Djava.locale.providers=CLDR"

name=elasticsearch
needs_java='Elasticsearch 9'
marker=$main
download='~40'
# shellcheck source=launch/jvm_node.sh
. "$repo/launch/jvm_node.sh"

start() {
  need curl "install curl (Debian: apt-get install curl)"
  find_java
  java=$JAVA_HOME/bin/java
  if pid=$(running_pid) && healthy; then
    say "already running (pid $pid): $url"
    return 0
  fi
  if healthy; then
    say "a cluster not started from this checkout already answers on $url;" \
      "using it ('stop' leaves it alone; set ELASTICSEARCH_PORT for a new node)"
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
  # elasticsearch-native loads libzstd.so from es.nativelibs.path (the
  # distribution ships it, Maven does not): use the system one. Without it
  # native access is off and index.codec=best_compression fails on refresh.
  # libvec.so (SIMD int8 vectors) has no stand-in, so it is switched off.
  local flags=$es_flags zstd
  zstd=$(PATH=$PATH:/sbin:/usr/sbin ldconfig -p 2>/dev/null |
    awk '/libzstd\.so\.1 .*x86-64/ {print $NF; exit}' || true)
  if [ -n "$zstd" ]; then
    mkdir -p "$home/native"
    ln -sf "$zstd" "$home/native/libzstd.so"
    flags="$flags -Des.nativelibs.path=$home/native"
    flags="$flags -Dorg.elasticsearch.nativeaccess.enableVectorLibrary=false"
  fi
  # shellcheck disable=SC2086  # the option lists are lists; stop_with may be empty.
  nohup "$java" $java_opts $flags -cp "$jar:$src/target/lib/*" "$main" \
    "$home" "$port" $stop_with >"$log" 2>&1 &
  echo $! >"$pidfile"
  wait_until_healthy "$t0"
  say "up in $((SECONDS - t0)) s (pid $(cat "$pidfile")): $url"
}

case "${1:-}" in
  start) start ;;
  stop) stop ;;
  status) status ;;
  *) die "usage: bash launch/elasticsearch.sh start|stop|status" ;;
esac
