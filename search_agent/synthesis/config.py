"""The synthesis config (tpu_configs/synthesis.py) as frozen dataclasses."""

import dataclasses
from typing import Any

import ml_collections

from search_agent.corpus.sources import CorpusSpec
from search_agent.synthesis import phrasings
from search_agent.synthesis import split
from search_agent.synthesis.controller import ControllerConfig
from search_agent.synthesis.graph import AnchorConfig
from search_agent.synthesis.iris import IrisConfig
from search_agent.synthesis.loop import LoopConfig

ROLE_CHOICES = {
    'extractor': ('pattern', 'llm'),
    'generator': ('template', 'llm'),
    'critic': ('none', 'llm'),
    'solver': ('none', 'agent'),
    'verifier': ('none', 'llm'),
    'claim_selection': ('path', 'judge'),
}


class SynthesisConfigError(ValueError):
  """The synthesis config names an unknown role kind or a bad value."""


@dataclasses.dataclass(frozen=True, kw_only=True)
class ServedConfig:
  """One served model for every LLM role without an endpoint of its own.

  Attributes:
    enabled: Point those roles at the served model (synthesis/served.py).
    base_url: An OpenAI-compatible API root (http://HOST:PORT/v1); '' =
      start `python -m search_agent.serving --config=<config>` here.
    model: The `model` sent with every request.
    api_key_env: Environment variable holding the API key ('' = none).
    config: The serve config to start (a tpu_configs/serve.py variant).
    overrides: 'KEY=VALUE' overrides of that config.
    env: 'NAME=value' environment of the started server.
    start_timeout_s: How long the started server may take to answer.
    timeout_s: Read timeout of one request of a served role.
    max_retries: Client retries of a served role's request.
    backoff_s: First backoff of those retries.
    max_concurrency: Requests in flight per served role.
    max_tokens: Cap on one call of a served role (0 = as the role asks).
  """

  enabled: bool = False
  base_url: str = ''
  model: str = ''
  api_key_env: str = ''
  config: str = ''
  overrides: tuple[str, ...] = ()
  env: tuple[str, ...] = ()
  start_timeout_s: float = 600.0
  timeout_s: float = 600.0
  max_retries: int = 4
  backoff_s: float = 1.0
  max_concurrency: int = 16
  max_tokens: int = 0

  def __post_init__(self):
    if self.enabled and not (self.base_url or self.config):
      raise SynthesisConfigError(
          'served.enabled needs served.base_url (an OpenAI-compatible API'
          ' root) or served.config (a tpu_configs/serve.py variant to start)'
      )
    if self.max_tokens < 0:
      raise SynthesisConfigError(
          f'served.max_tokens must be >= 0: {self.max_tokens}'
      )


@dataclasses.dataclass(frozen=True, kw_only=True)
class SynthesisJob:
  """One synthesis run.

  Attributes:
    mode: 'recipe' (open recipe loop) or 'iris' (abstraction + dual
      verification).
    corpus: Which corpus (and its index) to synthesise from.
    anchor: Anchor graph sampling.
    max_hops: Longest path.
    max_graphs: Use at most this many evidence graphs (0 = all).
    controller: Controller checks.
    loop: Loop budgets and thresholds.
    iris: Iris settings (mode 'iris').
    roles: Role → kind (see ROLE_CHOICES).
    llm: Role → LLM config section (llm.registry fields).
    chunk_size: Evidence graphs per journalled chunk.
    heldout_fraction: Share of tasks in the held-out split.
    rl_fraction: Share of tasks in the RL split (RL's question pool, pages
      disjoint from the train and held-out splits; 0 = none).
    heldout_phrasings: Question phrasings per relation no task is
      generated in (synthesis/phrasings.py); the held-out tasks asked again
      in them go to tasks.heldout_phrasings.jsonl, evaluated only; 0 = none.
    seed: Split seed.
    progress: Progress bars.
    cache_dir: Response cache directory ('' = WORKDIR/llm_cache).
    extractor_fallback: 'none' (a page whose LLM extraction failed has no
      claims) or 'pattern' (it gets the sentence-pattern claims); counted
      either way.
    role_check: Probe every LLM role once before the loop
      (synthesis/role_check.py; funnel.json `role_check`).
    role_check_fail_fast: Stop before the loop when a probe's call failed
      (not when its reply did not parse).
    served: The served model of every LLM role without an endpoint of its
      own (synthesis/served.py).
  """

  mode: str = 'recipe'
  corpus: CorpusSpec = CorpusSpec()
  anchor: AnchorConfig = AnchorConfig()
  max_hops: int = 3
  max_graphs: int = 0
  controller: ControllerConfig = ControllerConfig()
  loop: LoopConfig = LoopConfig()
  iris: IrisConfig = IrisConfig()
  roles: dict[str, str] = dataclasses.field(default_factory=dict)
  llm: dict[str, Any] = dataclasses.field(default_factory=dict)
  chunk_size: int = 256
  heldout_fraction: float = 0.2
  rl_fraction: float = 0.0
  heldout_phrasings: int = 0
  seed: int = 0
  progress: bool = True
  cache_dir: str = ''
  extractor_fallback: str = 'none'
  role_check: bool = False
  role_check_fail_fast: bool = True
  served: ServedConfig = ServedConfig()

  def __post_init__(self):
    if self.extractor_fallback not in ('none', 'pattern'):
      raise SynthesisConfigError(
          "extractor_fallback must be 'none' or 'pattern':"
          f' {self.extractor_fallback!r}'
      )
    if self.mode not in ('recipe', 'iris'):
      raise SynthesisConfigError(
          f"mode must be 'recipe' or 'iris': {self.mode!r}"
      )
    for role, kind in self.roles.items():
      if role not in ROLE_CHOICES:
        raise SynthesisConfigError(
            f'unknown role {role!r}; roles are {sorted(ROLE_CHOICES)}'
        )
      if kind not in ROLE_CHOICES[role]:
        raise SynthesisConfigError(
            f'role {role!r} kind {kind!r} is not one of {ROLE_CHOICES[role]}'
        )
    if not 1 <= self.max_hops <= 3:
      raise SynthesisConfigError(f'max_hops must be 1..3: {self.max_hops}')
    if not 0.0 <= self.rl_fraction < 1.0 - self.heldout_fraction:
      raise SynthesisConfigError(
          f'rl_fraction must be in [0, 1 - heldout_fraction): {self.rl_fraction}'
      )
    fewest = min(len(f) for f in phrasings.FRAMES.values())
    if not 0 <= self.heldout_phrasings < fewest:
      raise SynthesisConfigError(
          f'heldout_phrasings must be in [0, {fewest}) (a relation has'
          f' {fewest} phrasings and keeps one to train on):'
          f' {self.heldout_phrasings}'
      )
    if self.chunk_size < 1:
      raise SynthesisConfigError('chunk_size must be >= 1')

  def heldout_phrasing_ids(self) -> frozenset[str]:
    """The phrasing ids no training task may use (split.heldout_phrasings)."""
    return split.heldout_phrasings(
        phrasings.ids(), self.heldout_phrasings, self.seed
    )

  def role(self, name: str) -> str:
    return self.roles.get(name, ROLE_CHOICES[name][0])

  def programmatic_roles(self) -> dict[str, str]:
    """Role → 'programmatic: <kind>' or 'llm: <kind>' (for the manifest)."""
    out = {}
    for role in ROLE_CHOICES:
      kind = self.role(role)
      if kind == 'none':
        out[role] = 'not configured (stage skipped)'
      elif kind in ('pattern', 'template', 'path'):
        out[role] = f'programmatic ({kind})'
      else:
        out[role] = f'{kind} ({self.llm.get(role, {}).get("kind", "")})'
    return out


def job_from_config(c: ml_collections.ConfigDict) -> SynthesisJob:
  """The frozen job of a config."""
  d = c.to_dict()
  return SynthesisJob(
      mode=d['mode'],
      corpus=CorpusSpec(**d['corpus']),
      anchor=AnchorConfig(**d['anchor']),
      max_hops=d['max_hops'],
      max_graphs=d['max_graphs'],
      controller=ControllerConfig(**d['controller']),
      loop=LoopConfig(**d['loop']),
      iris=IrisConfig(**d['iris']),
      roles=dict(d['roles']),
      llm={k: dict(v) for k, v in d['llm'].items()},
      chunk_size=d['chunk_size'],
      heldout_fraction=d['heldout_fraction'],
      rl_fraction=d['rl_fraction'],
      heldout_phrasings=d['heldout_phrasings'],
      seed=d['seed'],
      progress=d['progress'],
      cache_dir=d['cache_dir'],
      extractor_fallback=d['extractor_fallback'],
      role_check=d['role_check'],
      role_check_fail_fast=d['role_check_fail_fast'],
      served=ServedConfig(
          **dict(
              d['served'],
              overrides=tuple(x for x in d['served']['overrides'] if x),
              env=tuple(x for x in d['served']['env'] if x),
          )
      ),
  )
