"""Builds an `LLM` for any role (policy, judge, summarizer) from a config.

Kinds:
  * `openai`: an OpenAI-compatible endpoint (vLLM, SGLang, ...); fields of
    `OpenAIConfig`.
  * `scripted`: replies chosen by turn: the k-th assistant turn of every
    conversation gets `script[k]` (the last entry repeats). For pulse tests
    and demos of the harness only, never for measuring a model.
  * `sampler`: the in-process JAX sampler; the caller builds it (it needs a
    model and a tokenizer) and passes it to `build` as `sampler_llm`
    (eval.run: from its `sampler` section, evaluation/in_process.py;
    weights from HF-converted params, a training run's checkpoint, or
    random init).

Every kind takes the role settings `max_tokens` (a cap on one call's
budget; 0 = as the role asks), `stop` (stop strings added to every call)
and `parse_retries` (re-asks of a reply that does not parse); `build_role`
wraps the LLM in `role_client.RoleLLM` with them, which counts the role's
calls, retries and parse failures.

`from_dict` turns a ConfigDict / dict section into the frozen `LLMConfig`.
"""

import dataclasses
from typing import Any, Mapping, Sequence

from search_agent.llm import openai_client
from search_agent.llm import protocol
from search_agent.llm import role_client
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
    max_tokens: Most tokens one call of the role may ask for (0 = as the
      role asks; a served model's own limit must not be exceeded).
    stop: Stop strings added to every call of the role.
    parse_retries: Re-asks of a reply the role cannot parse.
  """

  kind: str
  openai: openai_client.OpenAIConfig | None = None
  script: tuple[str, ...] = ()
  name: str = ''
  max_tokens: int = 0
  stop: tuple[str, ...] = ()
  parse_retries: int = role_client.DEFAULT_PARSE_RETRIES

  def __post_init__(self):
    if self.kind not in KINDS:
      raise LLMConfigError(f'LLM kind {self.kind!r} is not one of {KINDS}')
    if self.kind == 'openai' and self.openai is None:
      raise LLMConfigError("kind 'openai' needs openai.base_url and .model")
    if self.kind == 'scripted' and not self.script:
      raise LLMConfigError("kind 'scripted' needs a non-empty script")
    if self.max_tokens < 0 or self.parse_retries < 0:
      raise LLMConfigError(
          f'max_tokens ({self.max_tokens}) and parse_retries'
          f' ({self.parse_retries}) must be >= 0'
      )

  def manifest(self) -> dict[str, Any]:
    """What results record about this LLM (never an API key)."""
    out: dict[str, Any] = {
        'kind': self.kind,
        'name': self.name,
        'max_tokens': self.max_tokens,
        'stop': list(self.stop),
        'parse_retries': self.parse_retries,
    }
    if self.openai is not None:
      out['openai'] = dataclasses.asdict(self.openai)
    if self.script:
      out['script_len'] = len(self.script)
    return out


def from_dict(d: Mapping[str, Any]) -> LLMConfig:
  """An LLMConfig from a config section: {kind, name, openai{...}, script,
  max_tokens, stop, parse_retries}."""
  d = dict(d)
  unknown = set(d) - {
      'kind', 'name', 'openai', 'script', 'max_tokens', 'stop',
      'parse_retries',
  }  # fmt: skip
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
      max_tokens=int(d.get('max_tokens') or 0),
      stop=tuple(x for x in d.get('stop') or () if x),
      parse_retries=int(
          role_client.DEFAULT_PARSE_RETRIES
          if d.get('parse_retries') is None
          else d['parse_retries']
      ),
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
  """Builds the LLM a config names.

  With role settings (max_tokens, stop, parse_retries other than the
  defaults) the LLM comes as a `RoleLLM` named after the config, so those
  settings are never ignored; `build_role` always wraps.
  """
  llm = _build(config, sampler_llm)
  if (
      config.max_tokens
      or config.stop
      or config.parse_retries != role_client.DEFAULT_PARSE_RETRIES
  ):
    return _role(llm, config, config.name or config.kind)
  return llm


def _role(llm, config: LLMConfig, role: str) -> role_client.RoleLLM:
  return role_client.RoleLLM(
      llm,
      role,
      max_tokens=config.max_tokens,
      stop=config.stop,
      parse_retries=config.parse_retries,
  )


def _build(config: LLMConfig, sampler_llm: protocol.LLM | None) -> protocol.LLM:
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


def build_role(
    config: LLMConfig,
    role: str,
    *,
    sampler_llm: protocol.LLM | None = None,
    wrap=None,
) -> role_client.RoleLLM:
  """The LLM a config names, as `role` (budget, stops, parse retries).

  Args:
    config: The role's LLM config.
    role: The role's name (reports and errors name it).
    sampler_llm: The in-process sampler, for kind 'sampler'.
    wrap: Optional LLM -> LLM applied inside the role (e.g. a cache).
  """
  llm = _build(config, sampler_llm)
  if wrap is not None:
    llm = wrap(llm)
  return _role(llm, config, role)
