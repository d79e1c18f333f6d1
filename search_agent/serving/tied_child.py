"""Runs a module as `python -m` would, ending when its parent process ends.

  python -m search_agent.serving.tied_child PARENT_PID MODULE [ARGS...]

Asks the kernel for SIGTERM when the parent dies (PR_SET_PDEATHSIG), then
exits at once if PARENT_PID is already gone (it died before the request),
then runs MODULE with ARGS. The parent starts children this way instead of
through a `preexec_fn`, which forks a multithreaded JAX process into Python
code. Linux only (prctl).
"""

import ctypes
import os
import runpy
import signal
import sys

_PR_SET_PDEATHSIG = 1


def main(argv: list[str]) -> None:
  if len(argv) < 3 or not argv[1].isdigit():
    raise SystemExit(f'usage: {argv[0]} PARENT_PID MODULE [ARGS...]')
  parent, module = int(argv[1]), argv[2]
  libc = ctypes.CDLL(None, use_errno=True)
  if libc.prctl(_PR_SET_PDEATHSIG, signal.SIGTERM) != 0:
    raise OSError(ctypes.get_errno(), 'prctl(PR_SET_PDEATHSIG) failed')
  if os.getppid() != parent:
    raise SystemExit(f'tied_child: parent {parent} already gone')
  sys.argv = [module, *argv[3:]]
  runpy.run_module(module, run_name='__main__', alter_sys=True)


if __name__ == '__main__':
  main(sys.argv)
