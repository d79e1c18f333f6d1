"""quiet_logs: orbax's per-checkpoint INFO lines dropped, ours kept."""

import logging
import os
import subprocess
import sys
import textwrap

from search_agent.model import quiet_logs

_PROBE = textwrap.dedent("""
    import sys, tempfile
    from absl import app, logging
    import jax.numpy as jnp
    import orbax.checkpoint as ocp
    from search_agent.model import quiet_logs

    def main(_):
      quiet = quiet_logs.install() if sys.argv[-1] == 'quiet' else None
      m = ocp.CheckpointManager(tempfile.mkdtemp(), options=(
          ocp.CheckpointManagerOptions(enable_async_checkpointing=False)))
      for step in range(2):
        m.save(step, args=ocp.args.Composite(
            state=ocp.args.StandardSave({'w': jnp.ones(3)})), force=True)
        m.wait_until_finished()
        logging.info('PROGRESS step %d', step)
      logging.warning('WARNED')
      if quiet:
        logging.info('DROPPED %d', quiet.dropped)

    app.run(main)
""")


def _record(pathname, level=logging.INFO, name='absl'):
  return logging.LogRecord(name, level, pathname, 1, 'msg', None, None)


def test_filter_drops_info_from_orbax_only():
  f = quiet_logs.DropInfoFrom(['orbax'])
  site = f'{os.sep}site-packages{os.sep}'
  orbax_file = f'{site}orbax{os.sep}checkpoint{os.sep}checkpoint_manager.py'
  assert not f.filter(_record(orbax_file))
  assert not f.filter(_record('x.py', name='orbax.checkpoint'))
  assert f.filter(_record(orbax_file, logging.WARNING))
  assert f.filter(_record(f'{site}orbaxish{os.sep}a.py'))
  assert f.filter(_record('/repo/search_agent/train/sft/trainer.py'))
  assert f.dropped == 2


def test_install_is_idempotent():
  absl_handler = quiet_logs.absl_logging.get_absl_handler()
  handlers = [absl_handler, *logging.getLogger().handlers]
  before = {id(h): list(h.filters) for h in handlers}
  try:
    first = quiet_logs.install()
    quiet_logs.install()
    for h in handlers:
      added = [f for f in h.filters if f not in before[id(h)]]
      had = any(isinstance(f, quiet_logs.DropInfoFrom) for f in before[id(h)])
      assert added == ([] if had else [first])
  finally:
    for h in handlers:
      for f in [f for f in h.filters if f not in before[id(h)]]:
        h.removeFilter(f)


def _run(repo_root, *args):
  env = dict(os.environ, JAX_PLATFORMS='cpu')
  out = subprocess.run(
      [sys.executable, '-c', _PROBE, '--logtostderr', *args],
      cwd=repo_root,
      env=env,
      capture_output=True,
      text=True,
      timeout=300,
  )
  assert out.returncode == 0, out.stderr[-2000:]
  return out.stderr.splitlines()


def test_orbax_saves_stay_quiet_in_a_binary(repo_root):
  loud = _run(repo_root)
  quiet = _run(repo_root, 'quiet')
  ours = ('PROGRESS', 'WARNED', 'DROPPED')
  orbax_loud = [l for l in loud if not any(w in l for w in ours)]
  orbax_quiet = [l for l in quiet if not any(w in l for w in ours)]
  print(
      f'\nlog lines for 2 orbax saves: {len(orbax_loud)} -> {len(orbax_quiet)}'
  )
  assert len(orbax_loud) >= 20  # ~40 a save in orbax 0.12.8
  assert orbax_quiet == []
  assert sum('PROGRESS step' in l for l in quiet) == 2
  assert any('WARNED' in l for l in quiet)
  dropped = int(next(l for l in quiet if 'DROPPED' in l).split()[-1])
  assert dropped == len(orbax_loud)
