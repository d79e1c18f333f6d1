"""Rollout servers the RL run starts on its own host.

`rollout.policy='server'` with `rollout.local_servers.count` = N > 0 and no
`rollout.server_urls`: the rollout role (or `all`) starts N
`python -m search_agent.serving` processes with `rollout.local_servers.config`,
the run's tokenizer and model sizes, as many slots as the worker keeps
rollouts in flight (`rollout.max_groups` x `group_size`; an `engine.slots`
in `overrides` wins), on free ports of 127.0.0.1; waits until each answers
`/health`; samples through them; and stops them when it ends
(search_agent/serving/local.py). A server starts with random weights: the
worker pushes the store's newest version (the run's initial weights at
first) before its first request, as to any server. Each child is tied to
the run (PR_SET_PDEATHSIG), so a run killed by SIGKILL leaves no server
behind; its output goes to `<workdir>/servers/server-<i>.log`.

`rollout.policy='openai'` with `count` 1 does the same with one server and
samples through its OpenAI routes (`rollout.openai.base_url` = its `/v1`).

For CPU runs and hosts with accelerators to spare: on a TPU host the run
already holds the chips, so point `rollout.server_urls` at servers on other
hosts instead.
"""

import contextlib
import copy
import os
from typing import Iterator, Sequence

from search_agent.serving import local
from search_agent.train.rl import job as job_lib


def wanted(c) -> int:
  """How many local servers the config asks for (0 = none)."""
  r = c.rollout
  n = int(r.local_servers.count)
  if r.policy == 'openai':
    if n > 1:
      raise job_lib.RLSetupError(
          f"rollout.policy='openai' talks to one endpoint: set"
          f' rollout.local_servers.count to 0 or 1, not {n}'
      )
    return n
  if r.policy != 'server' or r.server_urls:
    return 0
  return n


def overrides(c, tokenizer_path: str) -> dict[str, str]:
  """The `--config.KEY=VALUE` overrides of a local server of RL config `c`."""
  s = c.rollout.local_servers
  dims = tuple(f'{k}={v}' for k, v in sorted(dict(c.model.dims).items()))
  out = {
      'tokenizer': tokenizer_path,
      'template': c.tokenizer.chat_template,
      'model.dims': repr(dims),
      'engine.slots': str(c.rollout.max_groups * c.group_size),
      'host': '127.0.0.1',
  }
  out.update(_pairs(s.overrides, 'overrides', 'key=value'))
  return out


def serve_argv(c, port: int, tokenizer_path: str) -> list[str]:
  """The command line of one local server of RL config `c` on `port`."""
  spec = local.ServerSpec(
      config=c.rollout.local_servers.config,
      overrides=overrides(c, tokenizer_path),
      log='',
  )
  return local.serve_argv(spec, port)


def _pairs(entries: Sequence[str], field: str, form: str) -> dict[str, str]:
  """('key=value', ...) of rollout.local_servers.`field` as a dict."""
  try:
    return local.pairs(entries, f'rollout.local_servers.{field}', form)
  except ValueError as e:
    raise job_lib.RLSetupError(str(e)) from e


def _env(entries: Sequence[str]) -> dict[str, str]:
  try:
    return local.env_pairs(entries, 'rollout.local_servers.env')
  except ValueError as e:
    raise job_lib.RLSetupError(str(e)) from e


@contextlib.contextmanager
def started(c, workdir: str) -> Iterator:
  """`c` with `rollout.server_urls` of the local servers it asks for (`c`
  itself when it asks for none); the servers stop when the block ends."""
  n = wanted(c)
  if not n:
    yield c
    return
  s = c.rollout.local_servers
  options = overrides(c, job_lib.tokenizer_path(c, workdir))
  env = _env(s.env)
  logs_dir = os.path.join(workdir, 'servers')
  specs = [
      local.ServerSpec(
          config=s.config,
          overrides=options,
          log=os.path.join(logs_dir, f'server-{i}.log'),
      )
      for i in range(n)
  ]
  with local.started(
      specs, env, float(s.start_timeout_s),
      'rollout.local_servers.start_timeout_s',
  ) as urls:  # fmt: skip
    out = copy.deepcopy(c)
    if c.rollout.policy == 'openai':
      out.rollout.openai.base_url = urls[0] + '/v1'
    else:
      out.rollout.server_urls = tuple(urls)
    yield out
