"""The project's tiny model served by a real `python -m search_agent.serving`.

`serve()` starts the tiny serve config (random-init tiny MoE on CPU, the
tiny test tokenizer) as its own OS process on a free port, tied to this
process (serving/local.py), yields the OpenAI API root (…/v1) and stops it.
`role()` builds one role's client over HTTP, as a real endpoint gets it.
"""

import contextlib
import os
import pathlib
import tempfile
from typing import Iterator

from search_agent.llm import openai_client
from search_agent.llm import registry
from search_agent.llm import role_client
from search_agent.serving import local

REPO = pathlib.Path(__file__).resolve().parents[2]
MODEL = 'tiny'
OVERRIDES = {
    'engine.slots': '4',
    'engine.max_context': '4096',
    'engine.max_new_tokens': '64',
    'engine.max_chunk': '512',
    'engine.max_queue': '256',
}


@contextlib.contextmanager
def serve() -> Iterator[str]:
  """The API root of a tiny model served in its own process."""
  with tempfile.TemporaryDirectory() as tmp:
    spec = local.ServerSpec(
        config=f'{REPO / "tpu_configs" / "serve.py"}:tiny',
        overrides=OVERRIDES,
        log=os.path.join(tmp, 'served.log'),
    )
    env = local.env_pairs((), 'env')
    with local.started([spec], env, 600.0) as (url,):
      yield f'{url}/v1'


def role(
    base_url: str,
    name: str,
    *,
    max_tokens: int = 16,
    parse_retries: int = 1,
    stop: tuple[str, ...] = (),
) -> role_client.RoleLLM:
  """One role on the served model, through the OpenAI client."""
  config = registry.LLMConfig(
      kind='openai',
      openai=openai_client.OpenAIConfig(
          base_url=base_url,
          model=MODEL,
          timeout_s=120.0,
          max_retries=1,
          backoff_s=0.2,
          max_concurrency=4,
      ),
      max_tokens=max_tokens,
      stop=stop,
      parse_retries=parse_retries,
  )
  return registry.build_role(config, name)
