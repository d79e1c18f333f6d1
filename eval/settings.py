"""The config edge of `eval.run`: ConfigDict sections to frozen dataclasses,
LLMs and the toolbox factory (tpu_configs/eval.py documents every field)."""

import contextlib
import dataclasses
from typing import Any, Iterator, Mapping

from eval import datasets
from eval import grading
from eval import harness
from search_agent.agent import budgets
from search_agent.agent import managed_context
from search_agent.agent import mas
from search_agent.agent import react
from search_agent.agent import task as task_lib
from search_agent.llm import protocol
from search_agent.llm import registry
from search_agent.llm.prompts import prompt as prompt_lib
from search_agent.search import client as client_lib
from search_agent.search import engine as engine_lib
from search_agent.search import reranker as reranker_lib
from search_agent.search import snippets
from search_agent.search import tools as tools_lib
from search_agent.search.tantivy_backend import tantivy_engine


class EvalSetupError(ValueError):
  """The eval config is incomplete or inconsistent."""


def _dict(section: Any) -> dict[str, Any]:
  return section.to_dict() if hasattr(section, 'to_dict') else dict(section)


def eval_config(c: Any) -> harness.EvalConfig:
  """The EvalConfig of a tpu_configs/eval.py ConfigDict."""
  a = _dict(c.agent)
  agent = react.AgentConfig(
      budgets=budgets.Budgets(
          max_steps=a['max_steps'],
          max_output_tokens=a['max_output_tokens'],
          context_limit=a['context_limit'],
          min_output_tokens=a['min_output_tokens'],
          compress_at=a['compress_at'],
      ),
      context=managed_context.ContextConfig(**_dict(c.context)),
      temperature=a['temperature'],
      top_p=a['top_p'],
      seed=a['seed'],
  )
  if _dict(c.policy).get('kind') == 'sampler':
    _check_sampler_limits(agent.budgets, _dict(c.sampler))
  return harness.EvalConfig(
      dataset=datasets.DatasetConfig(**_dict(c.dataset)),
      mode=c.mode,
      agent=agent,
      mas=mas.MASConfig(**_dict(c.mas)),
      grader=grading.GraderConfig(**_dict(c.grader)),
      system_prompt=c.system_prompt,
      concurrency=c.concurrency,
      tokenizer=c.tokenizer,
      regrade=c.regrade,
      tool_text=c.tool_text,
  )


def _check_sampler_limits(b: budgets.Budgets, sampler: Mapping[str, Any]):
  """The agent's limits must be the in-process sampler's real ones.

  Otherwise the sampler's own caps end calls first: the manifest would
  report limits that never applied, and context management, triggered by
  `agent.context_limit`, would never fire before the sampler's prompt cap.
  """
  window = sampler['max_prompt_len'] + sampler['max_new_tokens']
  if (
      b.context_limit > window
      or b.max_output_tokens > sampler['max_new_tokens']
  ):
    raise EvalSetupError(
        f'policy.kind=sampler: agent.context_limit ({b.context_limit}) must'
        f' be <= sampler.max_prompt_len + sampler.max_new_tokens ({window})'
        f' and agent.max_output_tokens ({b.max_output_tokens}) <='
        f' sampler.max_new_tokens ({sampler["max_new_tokens"]}); lower the'
        ' agent limits or raise the sampler ones'
    )


def llm(
    section: Any, sampler: Any = None
) -> tuple[protocol.LLM | None, dict[str, Any] | None]:
  """The LLM of a section and its manifest; (None, None) for kind 'none'.

  Kind 'sampler' builds the in-process model from the `sampler` section.
  """
  d = _dict(section)
  if d.get('kind') == 'none':
    return None, None
  if d.get('kind') == 'sampler':
    if sampler is None:
      raise EvalSetupError("kind 'sampler' is for the policy only")
    # Imported here: it loads JAX and MaxText, which other kinds never need.
    from eval import in_process  # pylint: disable=g-import-not-at-top

    return in_process.build(_dict(sampler), d.get('name', ''))
  config = registry.from_dict(d)
  return registry.build(config), config.manifest()


def engine_config(search: Mapping[str, Any]) -> engine_lib.EngineConfig:
  """The embedded engine's settings: snippet_words > 0 shortens excerpts
  (optional in plain-dict sections; tpu_configs/eval.py always sets it)."""
  words = search.get('snippet_words', 0)
  if not words:
    return engine_lib.EngineConfig()
  window = max(words, snippets.SnippetConfig().window_words)
  return engine_lib.EngineConfig(
      snippet=snippets.SnippetConfig(window_words=window, max_words=words)
  )


@contextlib.contextmanager
def toolbox_factory(
    search: Mapping[str, Any], aux: protocol.LLM | None
) -> Iterator[harness.ToolboxFactory]:
  """Opens the search backend; yields task -> fresh Toolbox; closes it."""
  search = _dict(search)
  if bool(search['index_dir']) == bool(search['url']):
    raise EvalSetupError(
        'set exactly one of search.index_dir (a tantivy index from'
        ' `python -m index.build`) or search.url (an `index.serve` service)'
    )
  if search['rerank'] and aux is None:
    raise EvalSetupError(
        'search.rerank needs an auxiliary LLM: set aux.kind (openai) or turn'
        ' rerank off'
    )
  config = tools_lib.ToolboxConfig(
      tools=tuple(search['tools']),
      top_k=search['top_k'],
      rerank=reranker_lib.RerankConfig(enabled=bool(search['rerank'])),
  )
  engine = None
  if search['index_dir']:
    engine = tantivy_engine(search['index_dir'], engine_config(search))
    backend = engine
  else:
    backend = client_lib.HttpSearch(search['url'])

  def make(task: task_lib.Task) -> tools_lib.Toolbox:
    return tools_lib.Toolbox(
        backend,
        config=config,
        summarizer=aux,
        reranker_llm=aux if search['rerank'] else None,
        context=task.question,
    )

  prompts = []  # the prompts the toolbox sends to the auxiliary LLM
  if aux is not None and 'visit' in config.tools:
    prompts.append(config.visit.prompt)
  if search['rerank']:
    prompts.append(config.rerank.prompt)
  make.manifest = {
      **dataclasses.asdict(config),
      'prompt_sha256': {p: prompt_lib.load(p).sha256 for p in prompts},
      'backend': 'tantivy' if engine else 'http',
      'index_dir': search['index_dir'],
      'url': search['url'],
      'aux_llm': getattr(aux, 'name', None),
  }
  try:
    yield make
  finally:
    if engine is not None:
      engine.close()
