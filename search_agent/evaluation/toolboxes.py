"""The search side of `eval.run`: backend, toolbox per task, its manifest.

`search.toolset` picks the tools: 'default' is our Toolbox (`search.tools`,
e.g. search+visit or search+open+find); 'browsecomp_plus' is the
benchmark's own `search` (k = `search.top_k`, snippets = the first
`search.snippet_max_tokens` tokens of the document, Qwen3 tokenizer) and
`get_document` (browsecomp_plus_tools.py).
"""

import contextlib
import dataclasses
import os
import pathlib
from typing import Any, Iterator, Mapping

from absl import logging

from search_agent.agent import task as task_lib
from search_agent.chat import tokenizer as tokenizer_lib
from search_agent.corpus import sources
from search_agent.evaluation import browsecomp_plus_tools as bcp_tools
from search_agent.llm import protocol
from search_agent.llm.prompts import prompt as prompt_lib
from search_agent.search import client as client_lib
from search_agent.search import engine as engine_lib
from search_agent.search import locations
from search_agent.search import reranker as reranker_lib
from search_agent.search import tantivy_build
from search_agent.search import tantivy_index
from search_agent.search import tools as tools_lib

TOOLSETS = ('default', 'browsecomp_plus')


class EvalSetupError(ValueError):
  """The eval config is incomplete or inconsistent."""


def _dict(section: Any) -> dict[str, Any]:
  return section.to_dict() if hasattr(section, 'to_dict') else dict(section)


def _tiny_index(index_dir: pathlib.Path, max_docs: int) -> str:
  if not (index_dir / tantivy_index.CONFIG_FILE).is_file():
    logging.info(
        'indexing %d bundled 2Wiki documents into %s', max_docs, index_dir
    )
    tantivy_build.build_tantivy_index(
        sources.CorpusSpec(max_docs=max_docs), index_dir
    )
  return str(index_dir)


def engine_config(search: Mapping[str, Any]) -> engine_lib.EngineConfig:
  """The embedded engine's settings: snippet_words > 0 shortens excerpts
  (optional in plain-dict sections; tpu_configs/eval.py always sets it)."""
  return engine_lib.snippet_words_config(search.get('snippet_words', 0))


@contextlib.contextmanager
def toolbox_factory(
    search: Mapping[str, Any],
    aux: protocol.LLM | None,
    workdir: str | os.PathLike[str] | None = None,
) -> Iterator[Any]:
  """Opens the search backend; yields task -> fresh Toolbox; closes it.

  With `search.build_if_missing` = N > 0 and neither index_dir nor url,
  the index is `<workdir>/index`, built from the first N bundled 2Wiki
  documents when it is not there yet.
  """
  search = _dict(search)
  if search.get('build_if_missing') and not search['index_dir']:
    if search['url'] or workdir is None:
      raise EvalSetupError('search.build_if_missing needs no search.url')
    search['index_dir'] = _tiny_index(
        pathlib.Path(workdir) / 'index', search['build_if_missing']
    )
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
  toolset = search.get('toolset', 'default')
  if toolset not in TOOLSETS:
    raise EvalSetupError(f'search.toolset {toolset!r} is not one of {TOOLSETS}')
  engine = None
  if search['index_dir']:
    engine = locations.open_engine(search['index_dir'], engine_config(search))
    backend = engine
  else:
    backend = client_lib.HttpSearch(search['url'])
  if toolset == 'browsecomp_plus':
    make = _browsecomp_plus(search, backend)
  else:
    make = _default(search, backend, aux)
  make.manifest.update(
      toolset=toolset,
      backend=(
          ('cluster' if locations.resolve(search['index_dir']) else 'tantivy')
          if engine
          else 'http'
      ),
      index_dir=search['index_dir'],
      url=search['url'],
      aux_llm=getattr(aux, 'name', None),
  )
  try:
    yield make
  finally:
    if engine is not None:
      engine.close()


def _default(search: Mapping[str, Any], backend: Any, aux: Any):
  """task -> our Toolbox (search.tools), with its manifest."""
  config = tools_lib.ToolboxConfig(
      tools=tuple(search['tools']),
      top_k=search['top_k'],
      rerank=reranker_lib.RerankConfig(enabled=bool(search['rerank'])),
  )

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
  }
  return make


def _browsecomp_plus(search: Mapping[str, Any], backend: Any):
  """task -> BrowseComp-Plus's search + get_document, with its manifest."""
  if search['rerank']:
    raise EvalSetupError('search.toolset=browsecomp_plus has no reranker')
  name = search.get('snippet_tokenizer', 'qwen3')
  truncate = bcp_tools.word_truncate
  if name:
    path = tokenizer_lib.maxtext_tokenizer_dir() if name == 'qwen3' else name
    truncate = bcp_tools.token_truncate(tokenizer_lib.load_tokenizer(path))
  settings = dict(
      k=search['top_k'],
      snippet_max_tokens=search.get('snippet_max_tokens', 512),
      include_get_document=search.get('include_get_document', True),
  )

  def make(task: task_lib.Task) -> bcp_tools.BrowseCompPlusToolbox:
    del task
    return bcp_tools.BrowseCompPlusToolbox(
        backend, truncate=truncate, **settings
    )

  make.manifest = {
      **settings,
      'tools': list(bcp_tools.TOOLS[: 1 + settings['include_get_document']]),
      'snippet_tokenizer': name or 'words',
  }
  return make
