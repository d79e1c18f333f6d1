"""Builds an `LLM` for any role (policy, judge, summarizer) from a config.

Kinds:
  * `openai`: an OpenAI-compatible endpoint (vLLM, SGLang, ...); fields of
    `OpenAIConfig`.
  * `scripted`: replies chosen by turn: the k-th assistant turn of every
    conversation gets `script[k]` (the last entry repeats). For pulse tests
    and demos of the harness only, never for measuring a model.
  * `sampler`: the in-process JAX sampler; the caller builds it (it needs a
    model and a tokenizer) and passes it to `build` as `sampler_llm`
    (eval.run: from its `sampler` section, eval/in_process.py; weights from
    HF-converted params, a training run's checkpoint, or random init).

`from_dict` turns a ConfigDict / dict section into the frozen `LLMConfig`.
"""

import dataclasses
from typing import Any, Mapping, Sequence

from search_agent.llm import openai_client
from search_agent.llm import protocol
from search_agent.llm import scripted

KINDS = ('openai', 'scripted', 'sampler')


class LLMConfigError(ValueError):
  """An LLM config names an unknown kind or lacks what its kind needs."""


@dataclasses.dataclass(frozen=True, kw_only=True)
class LLMConfig:
  """Which LLM to build.

  Attributes:
    kind: One of KINDS.
    openai: Endpoint settings (kind 'openai').
    script: Replies by assistant-turn index (kind 'scripted').
    name: Name recorded in manifests (default: the model or the kind).
  """

  kind: str
  openai: openai_client.OpenAIConfig | None = None
  script: tuple[str, ...] = ()
  name: str = ''

  def __post_init__(self):
    if self.kind not in KINDS:
      raise LLMConfigError(f'LLM kind {self.kind!r} is not one of {KINDS}')
    if self.kind == 'openai' and self.openai is None:
      raise LLMConfigError("kind 'openai' needs openai.base_url and .model")
    if self.kind == 'scripted' and not self.script:
      raise LLMConfigError("kind 'scripted' needs a non-empty script")

  def manifest(self) -> dict[str, Any]:
    """What results record about this LLM (never an API key)."""
    out: dict[str, Any] = {'kind': self.kind, 'name': self.name}
    if self.openai is not None:
      out['openai'] = dataclasses.asdict(self.openai)
    if self.script:
      out['script_len'] = len(self.script)
    return out


def from_dict(d: Mapping[str, Any]) -> LLMConfig:
  """An LLMConfig from a config section: {kind, name, openai{...}, script}."""
  d = dict(d)
  unknown = set(d) - {'kind', 'name', 'openai', 'script'}
  if unknown:
    raise LLMConfigError(f'unknown LLM config fields {sorted(unknown)}')
  openai = d.get('openai')
  if openai and d.get('kind') == 'openai':
    try:
      openai = openai_client.OpenAIConfig(**dict(openai))
    except TypeError as e:
      raise LLMConfigError(f'bad openai section: {e}') from e
  else:
    openai = None
  return LLMConfig(
      kind=d.get('kind', ''),
      openai=openai,
      script=tuple(d.get('script') or ()),
      name=d.get('name', ''),
  )


def turn_script(script: Sequence[str]) -> scripted.Responder:
  """Reply k to the conversation's k-th assistant turn (last one repeats)."""

  def respond(messages: Sequence[protocol.Message]) -> str:
    k = sum(m['role'] == 'assistant' for m in messages)
    return script[min(k, len(script) - 1)]

  return respond


def build(
    config: LLMConfig, *, sampler_llm: protocol.LLM | None = None
) -> protocol.LLM:
  """Builds the LLM a config names."""
  if config.kind == 'openai':
    client = openai_client.OpenAIClient(config.openai)
    if config.name:
      client.name = config.name
    return client
  if config.kind == 'scripted':
    return scripted.ScriptedLLM(
        turn_script(config.script), name=config.name or 'scripted'
    )
  if sampler_llm is None:
    raise LLMConfigError(
        "kind 'sampler' needs the in-process sampler: build it from the model"
        ' (search_agent/model) and pass it as sampler_llm, or use an'
        " 'openai' endpoint"
    )
  return sampler_llm
