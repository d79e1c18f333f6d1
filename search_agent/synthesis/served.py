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
from search_agent.synthesis.config import SynthesisConfigError
from search_agent.synthesis.config import SynthesisJob


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
  for section in llm.values():
    if not _needs_endpoint(section):
      continue
    openai = dict(section.get('openai') or {})
    openai.update(
        base_url=base_url,
        model=served.model or openai.get('model') or 'served',
        api_key_env=served.api_key_env,
        timeout_s=served.timeout_s,
        max_retries=served.max_retries,
        backoff_s=served.backoff_s,
        max_concurrency=served.max_concurrency,
    )
    section.update(kind='openai', openai=openai)
    if served.max_tokens and not section.get('max_tokens'):
      section['max_tokens'] = served.max_tokens
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
  if served.base_url:
    yield served.base_url.rstrip('/')
    return
  try:
    overrides = local.pairs(served.overrides, 'served.overrides', 'KEY=VALUE')
  except ValueError as e:
    raise SynthesisConfigError(str(e)) from e
  spec = local.ServerSpec(
      config=_resolve(served.config),
      overrides=overrides,
      log=str(pathlib.Path(workdir) / 'served.log'),
  )
  env = local.env_pairs(served.env, 'served.env')
  with local.started(
      [spec], env, served.start_timeout_s, 'served.start_timeout_s'
  ) as (url,):
    yield f'{url}/v1'
