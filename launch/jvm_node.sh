# Shared by launch/opensearch.sh, launch/elasticsearch.sh and
# launch/lucene_views.sh: messages, finding a Java 21+, the jar's Maven
# build, finding our node's pid, waiting for its health, stopping and
# reporting it. The caller sets name, marker (a string in the node JVM's
# command line), download (the first build's size, for the message), src,
# jar, pidfile, log, url and timeout before it sources this file (and
# needs_java, for find_java; a jar without a node needs only name, download,
# src and jar).

say() { echo "$name: $*"; }
die() { echo "$name: error: $*" >&2; exit 1; }

java_major() {
  # Prints the feature version of the `java` binary $1 (e.g. 25), or fails.
  [ -x "$1" ] || return 1
  "$1" -XshowSettings:properties -version 2>&1 |
    awk -F'= ' '/java.specification.version/ {print $2; exit}' | grep -E '^[0-9]+$'
}

find_java() {
  # Sets JAVA_HOME to a Java 21+ (for $needs_java): the caller's, then
  # temurin-25, then any.
  local v cand
  if [ -n "${JAVA_HOME:-}" ] && v=$(java_major "$JAVA_HOME/bin/java") && [ "$v" -ge 21 ]; then
    return 0
  fi
  for cand in /usr/lib/jvm/temurin-25-jdk-amd64 $(ls -d /usr/lib/jvm/*/ 2>/dev/null | sort -rV); do
    cand=${cand%/}
    if v=$(java_major "$cand/bin/java") && [ "$v" -ge 21 ]; then
      export JAVA_HOME=$cand
      return 0
    fi
  done
  die "$needs_java needs Java 21+: JAVA_HOME (${JAVA_HOME:-unset}) is not, and none" \
    "was found under /usr/lib/jvm; install one (e.g. temurin-25-jdk) or set JAVA_HOME"
}

need() {
  command -v "$1" >/dev/null 2>&1 || die "'$1' not found; $2"
}

running_pid() {
  # Prints the pid of our node if the pid file names a live launcher JVM.
  [ -f "$pidfile" ] || return 1
  local pid
  pid=$(cat "$pidfile")
  [ -n "$pid" ] && [ -r "/proc/$pid/cmdline" ] || return 1
  tr '\0' ' ' <"/proc/$pid/cmdline" | grep -q "$marker" || return 1
  echo "$pid"
}

healthy() {
  curl -fsS --max-time 5 \
    "$url/_cluster/health?wait_for_status=yellow&timeout=2s" 2>/dev/null |
    grep -Eq '"status":"(yellow|green)"'
}

build() {
  if [ -f "$jar" ] && [ -d "$src/target/lib" ] &&
     [ -z "$(find "$src/pom.xml" "$src/src" -newer "$jar" -print -quit)" ]; then
    return 0
  fi
  need mvn "install Maven 3.8+ (Debian: apt-get install maven)"
  local mlog=$src/target/mvn-build.log t0=$SECONDS
  mkdir -p "$src/target"
  say "building the launcher jar with Maven (a first build downloads $download MB)"
  # Offline first (everything cached in ~/.m2), then Maven Central.
  if ! mvn -o -B -q -f "$src/pom.xml" package >"$mlog" 2>&1; then
    if ! mvn -B -ntp -f "$src/pom.xml" package >"$mlog" 2>&1; then
      tail -n 30 "$mlog" >&2
      die "Maven build failed (full log: $mlog); it needs Maven Central or a filled ~/.m2"
    fi
  fi
  say "built $jar in $((SECONDS - t0)) s"
}

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

