"""The agent's environment, one record shared by every stage of the pipeline.

Teacher collection, evaluation and RL must show the model the same system
prompt, tool text and observations (top_k, snippet length), or SFT trains on
one format and eval scores another. `Environment` holds those settings once
(the pipeline config's `env` section); `SPELLINGS` says, once for every stage
binary, where it takes each setting, `Environment.settings(module)` is the
one dict the plan hands that binary, and `open_toolboxes` builds the same
Toolbox `eval.run` builds for them (evaluation/config.py).
"""

import contextlib
import dataclasses
from typing import Any, Callable, Iterator, Mapping, Sequence

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

  def settings(self, module: str) -> dict[str, Any]:
    """The environment as binary `module` takes it (SPELLINGS)."""
    spelling = SPELLINGS[module]
    out = {}
    for field, key in spelling.keys.items():
      value = getattr(self, field)
      if field == 'tools':
        value = ','.join(value) if spelling.tools_as_text else tuple(value)
      out[key] = value
    if self.keep_observations and spelling.window:
      policy, keep = spelling.window
      out.update({policy: 'sliding_window', keep: self.keep_observations})
    return out


@dataclasses.dataclass(frozen=True, kw_only=True)
class Spelling:
  """Where one stage binary takes the environment.

  Attributes:
    keys: Environment field -> the binary's flag or `--config.` key.
    window: Its (context policy, observations kept) keys, set only when
      `keep_observations` > 0 (so earlier runs' stages keep their hashes);
      () = it takes no window.
    tools_as_text: Tools as one comma-separated flag value, not a tuple.
  """

  keys: Mapping[str, str] = dataclasses.field(default_factory=dict)
  window: tuple[str, ...] = ()
  tools_as_text: bool = False


_SEARCH = {
    'index_dir': 'search.index_dir',
    'tools': 'search.tools',
    'top_k': 'search.top_k',
    'snippet_words': 'search.snippet_words',
}
# Every stage binary that takes the environment, by module.
SPELLINGS: Mapping[str, Spelling] = {
    'search_agent.pipeline.collect': Spelling(
        keys={
            f: f
            for f in (
                'index_dir',
                'tools',
                'top_k',
                'snippet_words',
                'system_prompt',
                'tool_text',
            )
        },
        tools_as_text=True,
    ),
    'eval.run': Spelling(
        keys={
            **_SEARCH,
            'system_prompt': 'system_prompt',
            'tool_text': 'tool_text',
        },
        window=('context.policy', 'context.keep_observations'),
    ),
    'search_agent.train.rl.run': Spelling(
        keys={
            **_SEARCH,
            'system_prompt': 'rollout.system_prompt',
            'tool_text': 'rollout.tool_text',
        },
        window=('rollout.context_policy', 'rollout.keep_observations'),
    ),
    'search_agent.train.sft': Spelling(
        window=('context_policy', 'keep_last_n_observations')
    ),
    'search_agent.filtering.run': Spelling(keys={'tools': 'known_tools'}),
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
