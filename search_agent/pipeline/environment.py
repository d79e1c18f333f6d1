"""The agent's environment, one record shared by every stage of the pipeline.

Teacher collection, evaluation and RL must show the model the same system
prompt, tool text and observations (top_k, snippet length), or SFT trains on
one format and eval scores another. `Environment` holds those settings once;
`open_toolboxes` builds the same Toolbox `eval.run` builds for them
(eval/config_lib.py), and `eval_overrides` is the eval config that matches.
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
  """

  index_dir: str
  tools: tuple[str, ...] = ('search', 'visit')
  top_k: int = 10
  snippet_words: int = 0
  system_prompt: str = 'agent_system.md'
  tool_text: str = 'json'

  def engine_config(self) -> engine_lib.EngineConfig:
    return engine_lib.snippet_words_config(self.snippet_words)

  def system_text(self, schemas: Sequence[dict[str, Any]]) -> str:
    prompt = prompt_lib.load(self.system_prompt)
    return prompt.render(tools=react.tool_text(schemas, self.tool_text))

  def eval_overrides(self) -> dict[str, Any]:
    """`--config.*` overrides of tpu_configs/eval.py for this environment."""
    return {
        'search.index_dir': self.index_dir,
        'search.tools': tuple(self.tools),
        'search.top_k': self.top_k,
        'search.snippet_words': self.snippet_words,
        'system_prompt': self.system_prompt,
        'tool_text': self.tool_text,
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
