"""The JVM the Lucene backend runs in: found, started once per process.

The Java side (`index/lucene_views/`, built by `bash launch/lucene_views.sh
build`) is a jar plus its Lucene jars in `target/lib/`. JPype starts the JVM
inside this process (Lucene 10 needs Java 21+: `$JAVA_HOME` when it is one,
else temurin-25, else the newest 21+ under /usr/lib/jvm) and releases the
GIL while Java runs, so concurrent Python threads search in parallel. A JVM
can start only once per process: every Lucene backend shares it.
"""

import os
import pathlib
import re
import threading

import jpype

from search_agent.search.backend import BackendError

REPO = pathlib.Path(__file__).resolve().parents[2]
JAR = REPO / 'index' / 'lucene_views' / 'target' / 'lucene-views.jar'
MIN_JAVA = 21
# Heap for the reader objects and per-query work; the index is mmap'd. Fixed
# at 1 GB from the start: G1 sizes its young generation from the committed
# heap, and a growing heap costs QPS (docs/experiments/search-speed.md).
DEFAULT_JVM_OPTIONS = ('-Xms1g', '-Xmx1g')
_BUILD_HINT = 'build it with `bash launch/lucene_views.sh build`'
_lock = threading.Lock()


class LuceneUnavailable(BackendError):
  """The Lucene backend cannot run here (no JPype, jar or Java 21+)."""


def java_major(java_home: pathlib.Path) -> int | None:
  """The Java feature version of a JDK home (its `release` file), or None."""
  try:
    text = (java_home / 'release').read_text()
  except OSError:
    return None
  m = re.search(r'^JAVA_VERSION="(\d+)', text, re.M)
  return int(m.group(1)) if m else None


def find_java_home() -> pathlib.Path:
  """A Java 21+ home: $JAVA_HOME, then temurin-25, then the newest one."""
  candidates = []
  if os.environ.get('JAVA_HOME'):
    candidates.append(pathlib.Path(os.environ['JAVA_HOME']))
  candidates.append(pathlib.Path('/usr/lib/jvm/temurin-25-jdk-amd64'))
  jvm = pathlib.Path('/usr/lib/jvm')
  if jvm.is_dir():
    candidates += sorted(jvm.iterdir(), key=lambda p: java_major(p) or 0)[::-1]
  for home in candidates:
    if (java_major(home) or 0) >= MIN_JAVA:
      return home
  raise LuceneUnavailable(
      f'the Lucene backend needs Java {MIN_JAVA}+: JAVA_HOME'
      f' ({os.environ.get("JAVA_HOME", "unset")}) is not, and none was found'
      ' under /usr/lib/jvm; install one (e.g. temurin-25-jdk)'
  )


def classpath(jar: pathlib.Path = JAR) -> list[str]:
  """The jar and its dependencies; raises LuceneUnavailable if not built."""
  lib = jar.parent / 'lib'
  if not jar.is_file() or not lib.is_dir():
    raise LuceneUnavailable(f'{jar} (and {lib}/) not found: {_BUILD_HINT}')
  return [str(jar)] + sorted(str(p) for p in lib.glob('*.jar'))


def java_class(name: str, jar: pathlib.Path = JAR):
  """A class of the Lucene views jar, `name` under `searchagent.lucene.`,
  the JVM started first if this process has none.

  Raises:
    LuceneUnavailable: if the jar or a Java 21+ is missing, or the
      process's JVM was started without the jar.
  """
  with _lock:
    if not jpype.isJVMStarted():
      home = find_java_home()
      jvm = home / 'lib' / 'server' / 'libjvm.so'
      jpype.startJVM(
          str(jvm),
          *DEFAULT_JVM_OPTIONS,
          '--add-modules=jdk.incubator.vector',
          '--enable-native-access=ALL-UNNAMED',
          classpath=classpath(jar),
          convertStrings=False,
      )
  try:
    return jpype.JClass(f'searchagent.lucene.{name}')
  except TypeError as e:  # the JVM's classpath lacks the jar
    raise LuceneUnavailable(
        f'the running JVM cannot load searchagent.lucene.{name} ({e}); it was'
        ' started before the Lucene backend, without its jar'
    ) from e
