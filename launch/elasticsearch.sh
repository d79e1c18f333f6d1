#!/usr/bin/env bash
# Builds (once) and starts or stops a single-node Elasticsearch 9 for the
# `elasticsearch` flavor (index/elasticsearch_node/), beside the OpenSearch one,
# or, with ELASTICSEARCH_NODES=N, a cluster of N nodes on loopback.
#
#   bash launch/elasticsearch.sh start    # build if needed, start, wait for health
#   bash launch/elasticsearch.sh stop     # SIGTERM, wait, then SIGKILL if it hangs
#   bash launch/elasticsearch.sh status   # exit 0 and print the URL if running
#
#   ELASTICSEARCH_PORT=9301 ELASTICSEARCH_NODES=3 bash launch/elasticsearch.sh start
#   ELASTICSEARCH_PORT=9301 bash launch/elasticsearch.sh stop   # every node
#
# A cluster's nodes are es-0..es-(N-1), HTTP on PORT..PORT+N-1 and transport
# on ELASTICSEARCH_TRANSPORT_PORT.. (default PORT+200..), every one
# master-eligible and a data node, each with its own home (data, node.pid,
# node.log) under ELASTICSEARCH_HOME/node-<i>. `start` on a cluster already
# running starts only the nodes that are down (a killed node rejoins); `stop`
# and `status` with that port (and home) find every node without
# ELASTICSEARCH_NODES, from the home's `nodes` file.
#
# Environment (all optional):
#   ELASTICSEARCH_PORT           HTTP port on 127.0.0.1 (default 9201, so it
#                                never clashes with OpenSearch on 9200); a
#                                cluster's first node
#   ELASTICSEARCH_NODES          N >= 1: a cluster of N nodes (unset: the
#                                single-node discovery node)
#   ELASTICSEARCH_TRANSPORT_PORT a cluster's first transport port (PORT+200)
#   ELASTICSEARCH_HOME           data, logs, pid file (default build/elasticsearch;
#                                a cluster: build/elasticsearch-cluster-PORT)
#   ELASTICSEARCH_JAVA_OPTS      heap options (default "-Xms512m -Xmx1g"; each
#                                node of a cluster "-Xms256m -Xmx512m")
#   ELASTICSEARCH_START_TIMEOUT  seconds to wait for yellow/green (default 120;
#                                a cluster: 300, for all its nodes to join)
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
cluster_home=${ELASTICSEARCH_HOME:-$repo/build/elasticsearch-cluster-$port}
nodes=${ELASTICSEARCH_NODES:-}
if [ -z "$nodes" ] && [ -f "$cluster_home/nodes" ]; then
  nodes=$(cat "$cluster_home/nodes")
fi
if [ -n "$nodes" ]; then
  java_opts=${ELASTICSEARCH_JAVA_OPTS:--Xms256m -Xmx512m}
  timeout=${ELASTICSEARCH_START_TIMEOUT:-300}
else
  java_opts=${ELASTICSEARCH_JAVA_OPTS:--Xms512m -Xmx1g}
  timeout=${ELASTICSEARCH_START_TIMEOUT:-120}
fi
transport_port=${ELASTICSEARCH_TRANSPORT_PORT:-$((port + 200))}
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

native_flags() {
  # elasticsearch-native loads libzstd.so from es.nativelibs.path (the
  # distribution ships it, Maven does not): use the system one. Without it
  # native access is off and index.codec=best_compression fails on refresh.
  # libvec.so (SIMD int8 vectors) has no stand-in, so it is switched off.
  local zstd
  zstd=$(PATH=$PATH:/sbin:/usr/sbin ldconfig -p 2>/dev/null |
    awk '/libzstd\.so\.1 .*x86-64/ {print $NF; exit}' || true)
  if [ -n "$zstd" ]; then
    mkdir -p "$1/native"
    ln -sf "$zstd" "$1/native/libzstd.so"
    echo "-Des.nativelibs.path=$1/native" \
      "-Dorg.elasticsearch.nativeaccess.enableVectorLibrary=false"
  fi
}

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
  local flags
  flags="$es_flags $(native_flags "$home")"
  # shellcheck disable=SC2086  # the option lists are lists; stop_with may be empty.
  nohup "$java" $java_opts $flags -cp "$jar:$src/target/lib/*" "$main" \
    "$home" "$port" $stop_with >"$log" 2>&1 &
  echo $! >"$pidfile"
  wait_until_healthy "$t0"
  say "up in $((SECONDS - t0)) s (pid $(cat "$pidfile")): $url"
}

# shellcheck source=launch/elasticsearch_cluster.sh
. "$repo/launch/elasticsearch_cluster.sh"

if [ -n "$nodes" ]; then
  case "${1:-}" in
    start) cluster_start ;;
    stop) cluster_stop ;;
    status) cluster_status ;;
    *) die "usage: bash launch/elasticsearch.sh start|stop|status" ;;
  esac
  exit 0
fi
case "${1:-}" in
  start) start ;;
  stop) stop ;;
  status) status ;;
  *) die "usage: bash launch/elasticsearch.sh start|stop|status" ;;
esac
