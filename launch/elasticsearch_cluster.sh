# The ELASTICSEARCH_NODES=N mode of launch/elasticsearch.sh: N embedded
# Elasticsearch 9 nodes (index/elasticsearch_node/, ClusterNode) on loopback
# forming one cluster. Sourced by launch/elasticsearch.sh after
# launch/jvm_node.sh, with nodes, port, transport_port, cluster_home,
# java_opts, timeout, stop_with, src, jar and es_flags set.

cluster_main=searchagent.elasticsearch.ClusterNode

check_nodes() {
  case "$nodes" in
    '' | *[!0-9]*) die "ELASTICSEARCH_NODES must be a number >= 1, got '$nodes'" ;;
  esac
  [ "$nodes" -ge 1 ] || die "ELASTICSEARCH_NODES must be >= 1, got $nodes"
}

use_node() {
  # Points jvm_node.sh's globals (pidfile, log, url, marker) at node $1.
  node_home=$cluster_home/node-$1
  pidfile=$node_home/node.pid
  log=$node_home/node.log
  url=http://127.0.0.1:$((port + $1))
  marker="$cluster_main $node_home "
}

cluster_health() {
  # The first answering node's /_cluster/health (with wait_for_nodes=N),
  # or fails.
  local i
  for i in $(seq 0 $((nodes - 1))); do
    curl -fsS --max-time 5 "http://127.0.0.1:$((port + i))/_cluster/health?wait_for_nodes=$nodes&wait_for_status=yellow&timeout=2s" 2>/dev/null &&
      return 0
  done
  return 1
}

cluster_formed() {
  cluster_health | grep -q "\"number_of_nodes\":$nodes," &&
    cluster_health | grep -Eq '"status":"(yellow|green)"'
}

cluster_start() {
  check_nodes
  need curl "install curl (Debian: apt-get install curl)"
  if [ -f "$cluster_home/nodes" ] && [ "$(cat "$cluster_home/nodes")" != "$nodes" ]; then
    die "$cluster_home holds a cluster of $(cat "$cluster_home/nodes") nodes, not" \
      "$nodes; stop it (ELASTICSEARCH_PORT=$port bash launch/elasticsearch.sh stop)," \
      "or set ELASTICSEARCH_HOME"
  fi
  find_java
  local java=$JAVA_HOME/bin/java i seeds='' masters='' started=() flags t0=$SECONDS
  for i in $(seq 0 $((nodes - 1))); do
    seeds="$seeds${seeds:+,}127.0.0.1:$((transport_port + i))"
    masters="$masters${masters:+,}es-$i"
  done
  build
  mkdir -p "$cluster_home"
  echo "$nodes" >"$cluster_home/nodes"
  flags="$es_flags $(native_flags "$cluster_home")"
  for i in $(seq 0 $((nodes - 1))); do
    use_node "$i"
    if pid=$(running_pid); then
      say "node es-$i already running (pid $pid): $url"
      continue
    fi
    if curl -fsS --max-time 3 "$url/" >/dev/null 2>&1; then
      die "something not started from $cluster_home already answers on $url;" \
        "pick another ELASTICSEARCH_PORT"
    fi
    mkdir -p "$node_home"
    # shellcheck disable=SC2086  # the option lists are lists; stop_with may be empty.
    nohup "$java" $java_opts $flags -cp "$jar:$src/target/lib/*" "$cluster_main" \
      "$node_home" "search-agent-$port" "es-$i" "$((port + i))" \
      "$((transport_port + i))" "$seeds" "$masters" $stop_with >"$log" 2>&1 &
    echo $! >"$pidfile"
    started+=("$i")
  done
  if [ "${#started[@]}" -gt 0 ]; then
    say "starting nodes ${started[*]} of $nodes (HTTP from port $port, transport" \
      "from $transport_port, home $cluster_home, JVM $java_opts${stop_with:+, stop" \
      "with pid $stop_with})"
  fi
  while ! cluster_formed; do
    for i in "${started[@]}"; do
      use_node "$i"
      if ! running_pid >/dev/null; then
        tail -n 30 "$log" >&2
        rm -f "$pidfile"
        cluster_stop >&2
        die "node es-$i exited during start-up (log: $log)"
      fi
    done
    if [ $((SECONDS - t0)) -ge "$timeout" ]; then
      cluster_health >&2 || true
      use_node 0
      tail -n 30 "$log" >&2
      cluster_stop >&2
      die "no cluster of $nodes nodes with yellow/green health within ${timeout} s" \
        "(logs: $cluster_home/node-*/node.log)"
    fi
    sleep 1
  done
  say "cluster of $nodes nodes up in $((SECONDS - t0)) s:" \
    "$(seq -s ' ' -f "http://127.0.0.1:%g" "$port" $((port + nodes - 1)))"
}

cluster_stop() {
  # SIGTERM to every node, then SIGKILL to those still up after 30 s.
  local i pids=() pid
  for i in $(seq 0 $((nodes - 1))); do
    use_node "$i"
    if pid=$(running_pid); then
      kill -TERM "$pid"
      pids+=("$pid")
    fi
  done
  local waited=0 alive
  while [ "$waited" -lt 30 ]; do
    alive=0
    for pid in "${pids[@]}"; do
      if [ -d "/proc/$pid" ]; then alive=1; fi
    done
    [ "$alive" -eq 1 ] || break
    sleep 1
    waited=$((waited + 1))
  done
  for pid in "${pids[@]}"; do
    if [ -d "/proc/$pid" ]; then
      say "pid $pid ignored SIGTERM; killing it"
      kill -KILL "$pid" 2>/dev/null || true
    fi
  done
  for i in $(seq 0 $((nodes - 1))); do
    rm -f "$cluster_home/node-$i/node.pid"
  done
  rm -f "$cluster_home/nodes"
  if [ "${#pids[@]}" -eq 0 ]; then
    say "no node of the cluster on port $port is running"
  else
    say "stopped ${#pids[@]} nodes (pids ${pids[*]})"
  fi
}

cluster_status() {
  local i up=0 pid
  for i in $(seq 0 $((nodes - 1))); do
    use_node "$i"
    if pid=$(running_pid); then
      say "node es-$i running (pid $pid): $url"
      up=$((up + 1))
    else
      say "node es-$i not running ($url)"
    fi
  done
  if [ "$up" -eq "$nodes" ] && cluster_formed; then
    say "cluster of $nodes nodes: $(cluster_health | grep -Eo '"status":"[a-z]+"')"
  else
    say "cluster on port $port: $up of $nodes nodes running"
    return 1
  fi
}
