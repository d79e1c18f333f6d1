# Shared by launch/opensearch.sh and launch/elasticsearch.sh: waiting for a
# node's health, stopping and reporting it. The caller defines pidfile, log,
# url, timeout and the functions say, die, running_pid and healthy before it
# sources this file.

wait_until_healthy() {
  # Waits for yellow/green health of the node just started at SECONDS=$1.
  local t0=$1
  while ! healthy; do
    if ! running_pid >/dev/null; then
      tail -n 30 "$log" >&2
      rm -f "$pidfile"
      die "the node exited during start-up (log: $log)"
    fi
    if [ $((SECONDS - t0)) -ge "$timeout" ]; then
      tail -n 30 "$log" >&2
      stop
      die "no yellow/green health within ${timeout} s (log: $log)"
    fi
    sleep 1
  done
}

stop() {
  local pid
  if ! pid=$(running_pid); then
    rm -f "$pidfile"
    say "not running"
    return 0
  fi
  kill -TERM "$pid"
  for _ in $(seq 1 30); do
    [ -d "/proc/$pid" ] || break
    sleep 1
  done
  if [ -d "/proc/$pid" ]; then
    say "pid $pid ignored SIGTERM for 30 s; killing it"
    kill -KILL "$pid"
  fi
  rm -f "$pidfile"
  say "stopped (pid $pid)"
}

status() {
  if pid=$(running_pid) && healthy; then
    say "running (pid $pid): $url"
  else
    say "not running on $url"
    return 1
  fi
}

