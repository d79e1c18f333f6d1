r"""The trajectory and run viewer over any workdir the toolkit writes.

  python -m eval.view --workdir=DIR --out=DIR/view.html   # one static file
  python -m eval.view --workdir=DIR --port=8080 [--canary=...]  # a server

Eval runs (trajectories, results, report, manifest), filtering runs
(decisions, filtered trajectories), synthesis runs (tasks, funnel,
decisions, evidence graphs) and RL runs (metrics, scored groups) are found
by content under DIR and its subdirectories. Encrypted benchmarks stay
encrypted: with --canary the server decrypts in memory; --out never writes
decrypted text (with --canary it seals each encrypted item again and the
page asks the reader for the canary). Runs without JAX
(search_agent/viewer/).
"""

import pathlib
import sys

from absl import app
from absl import flags

from search_agent.viewer import page
from search_agent.viewer import run_files
from search_agent.viewer import server

_WORKDIR = flags.DEFINE_string('workdir', None, 'Workdir (or a run) to view.')
_OUT = flags.DEFINE_string('out', None, 'Write one self-contained HTML file.')
_PORT = flags.DEFINE_integer('port', None, 'Serve the viewer on this port.')
_HOST = flags.DEFINE_string('host', '127.0.0.1', 'Address to serve on.')
_CANARY = flags.DEFINE_string('canary', None, 'Canary to decrypt in memory.')
flags.mark_flag_as_required('workdir')


def main(argv):
  if len(argv) > 1:
    raise app.UsageError(f'unexpected arguments: {argv[1:]}')
  if (_OUT.value is None) == (_PORT.value is None):
    raise app.UsageError('give exactly one of --out=FILE.html or --port=P')
  workdir = pathlib.Path(_WORKDIR.value).resolve()
  try:
    if _OUT.value:
      out = pathlib.Path(_OUT.value)
      size = page.write_static(workdir, out, _CANARY.value)
      print(f'wrote {out} ({size} bytes)')
      return
    viewer = server.ViewerApp(workdir, _CANARY.value, _PORT.value, _HOST.value)
  except run_files.ViewerError as e:
    sys.exit(f'eval.view: {e}')
  print(f'serving {workdir} at {viewer.url}', flush=True)
  try:
    viewer.serve_forever()
  except KeyboardInterrupt:
    viewer.close()


if __name__ == '__main__':
  app.run(main)
