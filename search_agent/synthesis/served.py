"""Points a job's LLM roles at one served model (`served` config section).

With `served.enabled`, every LLM role without an endpoint of its own (its
`llm.<role>.kind` unset, or 'openai' with no base_url) talks to one
OpenAI-compatible server through the same `OpenAIClient` a vLLM or SGLang
endpoint gets: `served.base_url` when set, else a server this process
starts (`python -m search_agent.serving --config=<served.config>`, tied to
this process by serving/tied_child.py and stopped when the run ends; its
output goes to WORKDIR/served.log). A role given an endpoint of its own
(`--config.llm.<role>.openai.base_url=...`) keeps it.
"""

import contextlib
import copy
import dataclasses
import pathlib
from typing import Any, Iterator

from search_agent.serving import local
from search_agent.synthesis.settings import SynthesisConfigError
from search_agent.synthesis.settings import SynthesisJob

# Fields of one role's `openai` section the served model fills.
_CLIENT_FIELDS = (
    'timeout_s', 'max_retries', 'backoff_s', 'max_concurrency',
)  # fmt: skip


def _needs_endpoint(section: dict[str, Any]) -> bool:
  kind = section.get('kind') or ''
  openai = section.get('openai') or {}
  return not kind or (kind == 'openai' and not openai.get('base_url'))


def with_endpoint(job: SynthesisJob, base_url: str) -> SynthesisJob:
  """The job with every role lacking an endpoint pointed at `base_url`.

  `base_url` is the API root (…/v1); the model name is `served.model`.
  """
  served = job.served
  llm = copy.deepcopy(job.llm)
  for name, section in llm.items():
    if not _needs_endpoint(section):
      continue
    openai = dict(section.get('openai') or {})
    openai.update(
        base_url=base_url,
        model=served.get('model') or openai.get('model') or 'served',
        api_key_env=served.get('api_key_env', ''),
    )
    for key in _CLIENT_FIELDS:
      if key in served:
        openai[key] = served[key]
    section.update(kind='openai', openai=openai)
    if served.get('max_tokens') and not section.get('max_tokens'):
      section['max_tokens'] = served['max_tokens']
  return dataclasses.replace(job, llm=llm)


_REPO = pathlib.Path(__file__).resolve().parents[2]


def _resolve(config: str) -> str:
  """A serve config path as given, else relative to the repository root."""
  path, sep, arg = config.partition(':')
  if not pathlib.Path(path).exists() and (_REPO / path).exists():
    return f'{_REPO / path}{sep}{arg}'
  return config


@contextlib.contextmanager
def endpoint(job: SynthesisJob, workdir: pathlib.Path) -> Iterator[str]:
  """The served API root (…/v1): `served.base_url`, or a started server's."""
  served = job.served
  if served.get('base_url'):
    yield served['base_url'].rstrip('/')
    return
  config = served.get('config') or ''
  if not config:
    raise SynthesisConfigError(
        'served.enabled needs served.base_url (an OpenAI-compatible API root)'
        ' or served.config (a tpu_configs/serve.py variant to start)'
    )
  try:
    overrides = local.pairs(
        [x for x in served.get('overrides') or () if x],
        'served.overrides',
        'KEY=VALUE',
    )
  except ValueError as e:
    raise SynthesisConfigError(str(e)) from e
  spec = local.ServerSpec(
      config=_resolve(config),
      overrides=overrides,
      log=str(pathlib.Path(workdir) / 'served.log'),
  )
  env = local.env_pairs([x for x in served.get('env') or () if x], 'served.env')
  with local.started(
      [spec], env, float(served.get('start_timeout_s', 600)),
      'served.start_timeout_s',
  ) as (url,):  # fmt: skip
    yield f'{url}/v1'
