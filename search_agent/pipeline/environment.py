"""The agent's environment, one record shared by every stage of the pipeline.

Teacher collection, evaluation and RL must show the model the same system
prompt, tool text and observations (top_k, snippet length), or SFT trains on
one format and eval scores another. `Environment` holds those settings once
(the pipeline config's `env` section); `collect_flags`, `eval_overrides` and
`rl_overrides` spell them for each stage binary, and `open_toolboxes` builds
the same Toolbox `eval.run` builds for them (evaluation/config.py).
"""

import contextlib
import dataclasses
from typing import Any, Callable, Iterator, Sequence

from search_agent.agent import react
from search_agent.llm.prompts import prompt as prompt_lib
from search_agent.search import engine as engine_lib
from search_agent.search import locations
from search_agent.search import tools as tools_lib


@dataclasses.dataclass(frozen=True, kw_only=True)
class Environment:
  """What the agent sees.

  Attributes:
    index_dir: The index: a tantivy directory, or a cluster build's
      directory or location (search/locations.py).
    tools: Tools offered, in schema order.
    top_k: Results per search query.
    snippet_words: Longest snippet excerpt in words; 0 = the seed's 48.
    system_prompt: Prompt file (llm/prompts name or a path) with `{tools}`.
    tool_text: 'json' (tool schemas) or 'signature' (one line a tool).
    keep_observations: 0 = each stage's own context policy (evaluation keeps
      every observation; SFT and RL slide a window of 5). N > 0: SFT's
      views, evaluation and RL all slide a window keeping the last N tool
      observations: the recipe's horizon, where long rollouts train as
      token segments (docs/horizon.md).
  """

  index_dir: str
  tools: tuple[str, ...] = ('search', 'visit')
  top_k: int = 10
  snippet_words: int = 0
  system_prompt: str = 'agent_system.md'
  tool_text: str = 'json'
  keep_observations: int = 0

  def __post_init__(self):
    if self.keep_observations < 0:
      raise ValueError(
          f'env.keep_observations={self.keep_observations}: use 0 (each'
          ' stage its own) or the observations the window keeps'
      )

  def engine_config(self) -> engine_lib.EngineConfig:
    return engine_lib.snippet_words_config(self.snippet_words)

  def system_text(self, schemas: Sequence[dict[str, Any]]) -> str:
    prompt = prompt_lib.load(self.system_prompt)
    return prompt.render(tools=react.tool_text(schemas, self.tool_text))

  def collect_flags(self) -> dict[str, Any]:
    """Flags of `search_agent.pipeline.collect` for this environment."""
    return {
        'index_dir': self.index_dir,
        'tools': ','.join(self.tools),
        'top_k': self.top_k,
        'snippet_words': self.snippet_words,
        'system_prompt': self.system_prompt,
        'tool_text': self.tool_text,
    }

  def rl_overrides(self) -> dict[str, Any]:
    """`--config.*` overrides of tpu_configs/rl.py for this environment."""
    return {
        'search.index_dir': self.index_dir,
        'search.tools': tuple(self.tools),
        'search.top_k': self.top_k,
        'search.snippet_words': self.snippet_words,
        'rollout.system_prompt': self.system_prompt,
        'rollout.tool_text': self.tool_text,
        **self._window('rollout.context_policy', 'rollout.keep_observations'),
    }

  def sft_overrides(self) -> dict[str, Any]:
    """`--config.*` overrides of tpu_configs/sft.py for this environment."""
    return self._window('context_policy', 'keep_last_n_observations')

  def _window(self, policy: str, keep: str) -> dict[str, Any]:
    """The sliding window's two overrides; none at keep_observations 0,
    so an earlier run's stages keep their hashes."""
    if not self.keep_observations:
      return {}
    return {policy: 'sliding_window', keep: self.keep_observations}

  def eval_overrides(self) -> dict[str, Any]:
    """`--config.*` overrides of tpu_configs/eval.py for this environment."""
    return {
        'search.index_dir': self.index_dir,
        'search.tools': tuple(self.tools),
        'search.top_k': self.top_k,
        'search.snippet_words': self.snippet_words,
        'system_prompt': self.system_prompt,
        'tool_text': self.tool_text,
        **self._window('context.policy', 'context.keep_observations'),
    }


@contextlib.contextmanager
def open_toolboxes(
    env: Environment,
) -> Iterator[Callable[[], tools_lib.Toolbox]]:
  """Opens the index; yields a factory of fresh Toolboxes; closes it."""
  engine = locations.open_engine(env.index_dir, env.engine_config())
  config = tools_lib.ToolboxConfig(tools=tuple(env.tools), top_k=env.top_k)
  try:
    yield lambda: tools_lib.Toolbox(engine, config=config)
  finally:
    engine.close()
