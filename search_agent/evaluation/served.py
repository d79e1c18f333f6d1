"""`policy.kind='served'`: the eval's model behind a rollout server this run
starts on its own host.

The `sampler` section names the model as for the in-process sampler
(preset, dims, checkpoint or params, tokenizer, template, limits); the
server (`python -m search_agent.serving`, the `served` section's config and
overrides) loads it, keeps one slot per question in flight, and the policy
is the OpenAI client on its `/v1` endpoint. The same greedy trajectories as
the in-process sampler, faster where the server's KV handling pays (tiny on
CPU: WORKSPACE.md, "Benchmarks"). The server's log is <workdir>/server.log;
it stops when the eval ends, and with the eval if that is killed.
"""

import contextlib
import copy
import os
from typing import Any, Iterator

from search_agent.evaluation.toolboxes import EvalSetupError
from search_agent.serving import local

SERVED = 'served'


def _dict(section: Any) -> dict[str, Any]:
  return section.to_dict() if hasattr(section, 'to_dict') else dict(section)


def server_overrides(c) -> dict[str, str]:
  """The serve config overrides of eval config `c`'s sampler section."""
  s = _dict(c.sampler)
  slots = max(1, int(c.concurrency)) * (
      1 + int(_dict(c.mas)['searchers']) if c.mode == 'mas' else 1
  )
  out = {
      'model.preset': s['preset'],
      'model.layout': s['layout'],
      'model.dims': repr(tuple(s['dims'])),
      'model.checkpoint_dir': s['checkpoint_dir'],
      'model.checkpoint_step': str(s['checkpoint_step']),
      'model.params_path': s['params_path'],
      'model.policy_version': str(s['policy_version']),
      'tokenizer': s['tokenizer'],
      'template': s['template'],
      'model_name': SERVED,
      'engine.slots': str(slots),
      'engine.max_context': str(s['max_prompt_len'] + s['max_new_tokens']),
      'engine.max_new_tokens': str(s['max_new_tokens']),
      'host': '127.0.0.1',
  }
  try:
    out.update(local.pairs(c.served.overrides, 'served.overrides', 'key=value'))
  except ValueError as e:
    raise EvalSetupError(str(e)) from e
  return out


@contextlib.contextmanager
def policy(c, workdir: str) -> Iterator[tuple[Any, dict | None]]:
  """(`c`, None) unless `policy.kind` is 'served'; then the server is
  started and (a copy of `c` whose policy is the OpenAI client on it, the
  server's description for the manifest); the server stops when the block
  ends."""
  if c.policy.kind != SERVED:
    yield c, None
    return
  spec = local.ServerSpec(
      config=c.served.config,
      overrides=server_overrides(c),
      log=os.path.join(workdir, 'server.log'),
  )
  try:
    env = local.env_pairs(c.served.env, 'served.env')
  except ValueError as e:
    raise EvalSetupError(str(e)) from e
  with local.started(
      [spec], env, float(c.served.start_timeout_s), 'served.start_timeout_s'
  ) as (url,):
    out = copy.deepcopy(c)
    out.policy.kind = 'openai'
    out.policy.openai.base_url = url + '/v1'
    out.policy.openai.model = SERVED
    yield out, {'server': spec.config, **dict(spec.overrides), 'url': url}
