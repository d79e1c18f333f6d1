"""Runs pipeline stages in order, reusing finished ones, recording each.

DIR/stages.json holds, per stage: its hash, status ('done' or 'failed'),
seconds, command line, key figure and log path; it is rewritten atomically
after every stage. A stage runs as a subprocess with its output in
DIR/<stage>/log.txt; the console gets one line per stage (and, on a
terminal, a live line with the elapsed time and progress while it runs).
"""

import dataclasses
import json
import os
import resource
import shutil
import subprocess
import sys
import threading
import time
from typing import Callable, Sequence

from search_agent.pipeline import figures
from search_agent.pipeline import stages as stages_lib

STAGES_FILE = 'stages.json'
LOG_FILE = 'log.txt'
Console = Callable[[str], None]


@dataclasses.dataclass(frozen=True, kw_only=True)
class StageRecord:
  """What stages.json says about one stage."""

  name: str
  hash: str
  status: str
  seconds: float
  cpu_seconds: float
  reused: bool
  figure: str
  argv: tuple[str, ...]
  log: str
  fingerprint: dict = dataclasses.field(default_factory=dict)


def load_records(run_dir: str) -> dict[str, dict]:
  return figures.read_json(os.path.join(run_dir, STAGES_FILE)) or {}


def _save(run_dir: str, records: dict[str, dict]) -> None:
  path = os.path.join(run_dir, STAGES_FILE)
  tmp = path + '.tmp'
  with open(tmp, 'w', encoding='utf-8') as f:
    json.dump(records, f, indent=1)
    f.flush()
    os.fsync(f.fileno())
  os.replace(tmp, path)


def _progress(stage: stages_lib.Stage, workdir: str) -> str:
  """A short progress note read from the stage's outputs while it runs."""
  if stage.module in ('search_agent.train.sft', 'search_agent.train.rl.run'):
    rows = figures.read_jsonl(os.path.join(workdir, 'metrics.jsonl'))
    return f'update {rows[-1].get("step", "?")}' if rows else 'starting'
  for name in ('trajectories.jsonl',):
    path = os.path.join(workdir, name)
    if os.path.exists(path):
      with open(path, encoding='utf-8', errors='replace') as f:
        return f'{sum(1 for _ in f)} trajectories'
  return ''


def _live(stage, workdir, prefix, done: threading.Event) -> None:
  start = time.monotonic()
  while not done.wait(1.0):
    note = _progress(stage, workdir)
    line = f'{prefix}{time.monotonic() - start:7.1f} s  {note}'
    sys.stdout.write('\r' + line[:100].ljust(100))
    sys.stdout.flush()
  sys.stdout.write('\r' + ' ' * 100 + '\r')


def _children_cpu() -> float:
  usage = resource.getrusage(resource.RUSAGE_CHILDREN)
  return usage.ru_utime + usage.ru_stime


def stage_env(run_dir: str, compilation_cache: str) -> dict[str, str]:
  """The environment of the stage binaries.

  `compilation_cache` ('' = none) is JAX's persistent compilation cache,
  relative to the run directory: the stages that build the same model at the
  same shapes (the evaluations, RL's sampler) compile it once per run, and a
  rerun reuses it. One already set in the environment is kept.

  On a GPU a JAX process takes most of the memory at start unless told not
  to, and RL (learner and rollout server) and the served evaluations run two
  processes on one device: XLA_PYTHON_CLIENT_PREALLOCATE is 'false' unless
  set.
  """
  env = dict(os.environ, PYTHONUNBUFFERED='1')
  env.setdefault('XLA_PYTHON_CLIENT_PREALLOCATE', 'false')
  if compilation_cache and 'JAX_COMPILATION_CACHE_DIR' not in env:
    env['JAX_COMPILATION_CACHE_DIR'] = os.path.join(run_dir, compilation_cache)
  return env


def _execute(stage, argv, workdir, prefix, live: bool, env) -> int:
  os.makedirs(workdir, exist_ok=True)
  done = threading.Event()
  thread = None
  if live:
    thread = threading.Thread(
        target=_live, args=(stage, workdir, prefix, done), daemon=True
    )
    thread.start()
  try:
    with open(os.path.join(workdir, LOG_FILE), 'w', encoding='utf-8') as log:
      log.write(' '.join(argv) + '\n')
      log.flush()
      return subprocess.run(
          argv, stdout=log, stderr=subprocess.STDOUT, env=env, check=False
      ).returncode
  finally:
    done.set()
    if thread is not None:
      thread.join()


def _tail(path: str, lines: int = 25) -> str:
  try:
    with open(path, encoding='utf-8', errors='replace') as f:
      return ''.join(f.readlines()[-lines:])
  except OSError:
    return ''


def run(
    stages: Sequence[stages_lib.Stage],
    run_dir: str,
    *,
    python: str = sys.executable,
    console: Console = print,
    live: bool | None = None,
    compilation_cache: str = '',
) -> list[StageRecord]:
  """Runs (or reuses) every stage in order; raises StageError on failure.

  `compilation_cache`: see `stage_env`.
  """
  stages_lib.check_order(list(stages))
  for stage in stages:  # fail before spending time on the earlier ones
    stage.check_available()
  os.makedirs(run_dir, exist_ok=True)
  live = sys.stdout.isatty() if live is None else live
  env = stage_env(run_dir, compilation_cache)
  records = load_records(run_dir)
  hashes: dict[str, str] = {}
  out = []
  width = max(len(s.name) for s in stages)
  for i, stage in enumerate(stages, 1):
    h = stages_lib.stage_hash(stage, hashes)
    hashes[stage.name] = h
    workdir = os.path.join(run_dir, stage.name)
    argv = stage.argv(python, run_dir)
    prefix = f'[{i:2d}/{len(stages)}] {stage.name:<{width}} '
    old = records.get(stage.name, {})
    reused = (
        not stage.always
        and old.get('hash') == h
        and old.get('status') == 'done'
        and os.path.isdir(workdir)
    )
    seconds = old.get('seconds', 0.0) if reused else 0.0
    cpu = old.get('cpu_seconds', 0.0) if reused else 0.0
    if not reused:
      if old.get('hash') != h and os.path.isdir(workdir):
        shutil.rmtree(workdir)  # changed inputs: start the stage afresh
      start, cpu_start = time.monotonic(), _children_cpu()
      code = _execute(stage, argv, workdir, prefix, live, env)
      seconds = time.monotonic() - start
      cpu = _children_cpu() - cpu_start
      if code != 0:
        log = os.path.join(workdir, LOG_FILE)
        records[stage.name] = dict(
            name=stage.name, hash=h, status='failed', seconds=seconds,
            cpu_seconds=cpu, reused=False, figure='', argv=argv, log=log,
        )  # fmt: skip
        _save(run_dir, records)
        console(f'{prefix}{seconds:7.1f} s  FAILED (exit {code}); log {log}')
        raise stages_lib.StageError(
            f'stage {stage.name} exited with {code}; the end of {log}:\n'
            + _tail(log)
        )
    rec = StageRecord(
        name=stage.name,
        hash=h,
        status='done',
        seconds=seconds,
        cpu_seconds=cpu,
        reused=reused,
        figure=figures.key_figure(stage.module, workdir),
        argv=tuple(argv),
        log=os.path.join(workdir, LOG_FILE),
        fingerprint=stage.fingerprint(),
    )
    records[stage.name] = dataclasses.asdict(rec)
    _save(run_dir, records)
    note = '  (reused)' if reused else ''
    console(f'{prefix}{seconds:7.1f} s  {rec.figure}{note}')
    out.append(rec)
  return out
