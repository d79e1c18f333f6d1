"""BrowseComp-Plus's own tool set, as a toolbox for the agent.

The benchmark's agents (texttron/BrowseComp-Plus, searcher/tools.py) get
  * `search(query: str)`: the top k (5) hits as a JSON list of `{docid,
    score, snippet}`, the snippet being the document's first
    `snippet_max_tokens` (512) tokens (Qwen3 tokenizer) or the whole text;
  * `get_document(docid: str)`: `{docid, text}` of one document, or `null`.
Our engine ranks (fused BM25 views); the snippets and output format are
theirs. Every result carries the doc ids in `data` (`docids`) as well, so
trajectories record what the agent retrieved. The leakage guard filters
hits and refuses blocked documents as in `search.tools.Toolbox`.
"""

import json
from typing import Any, Callable

from search_agent.chat.turns import ToolCall
from search_agent.search import client as client_lib
from search_agent.search import schemas as schemas_lib
from search_agent.search.guard import LeakageGuard
from search_agent.search.tools import ToolResult

TOOLS = ('search', 'get_document')
Truncate = Callable[[str, int], str]


def _schema(name: str, description: str, arg: str, arg_description: str):
  return {
      'type': 'function',
      'function': {
          'name': name,
          'description': description,
          'parameters': {
              'type': 'object',
              'properties': {
                  arg: {'type': 'string', 'description': arg_description}
              },
              'required': [arg],
              'additionalProperties': False,
          },
      },
  }


def tool_schemas(k: int, include_get_document: bool = True) -> list[dict]:
  """The two tools' schemas with BrowseComp-Plus's descriptions."""
  out = [
      _schema(
          'search',
          f'Perform a search on a knowledge source. Returns top-{k} hits with'
          " docid, score, and snippet. The snippet contains the document's"
          ' contents (may be truncated based on token limits).',
          'query',
          'Search query string',
      )
  ]
  if include_get_document:
    out.append(
        _schema(
            'get_document',
            'Retrieve a full document by its docid.',
            'docid',
            'Document ID to retrieve',
        )
    )
  return out


def word_truncate(text: str, n: int) -> str:
  """The first n whitespace words (when no tokenizer is given)."""
  words = text.split()
  return text if len(words) <= n else ' '.join(words[:n])


def token_truncate(tokenizer: Any) -> Truncate:
  """First n tokens of a text, decoded (the benchmark's snippet rule)."""

  def truncate(text: str, n: int) -> str:
    ids = tokenizer.encode(text)
    return text if len(ids) <= n else tokenizer.decode(ids[:n], True)

  return truncate


class BrowseCompPlusToolbox:
  """`search` + `get_document` over one search service (one trajectory)."""

  def __init__(
      self,
      search: Any,
      *,
      k: int = 5,
      snippet_max_tokens: int = 512,
      truncate: Truncate = word_truncate,
      include_get_document: bool = True,
      guard: LeakageGuard | None = None,
      max_query_chars: int = 1024,
  ):
    if k < 1:
      raise ValueError(f'k must be >= 1, got {k}')
    self.service = client_lib.as_service(search)
    self.k, self.snippet_max_tokens = k, snippet_max_tokens
    self.truncate, self.guard = truncate, guard or LeakageGuard()
    self.include_get_document = include_get_document
    self.max_query_chars = max_query_chars

  def schemas(self) -> list[dict[str, Any]]:
    return tool_schemas(self.k, self.include_get_document)

  async def execute(self, call: ToolCall) -> ToolResult:
    """Runs one call; the agent's mistakes become error observations."""
    names = TOOLS if self.include_get_document else TOOLS[:1]
    if call.name not in names:
      msg = f'unknown tool {call.name!r}; available tools: {", ".join(names)}'
      return ToolResult(text=f'Error: {msg}', error=msg)
    key = 'query' if call.name == 'search' else 'docid'
    args = call.arguments if isinstance(call.arguments, dict) else {}
    value = args.get(key)
    if isinstance(value, list) and len(value) == 1:
      value = value[0]  # a lone-item list, as models often write
    if set(args) != {key} or not isinstance(value, (str, int)):
      msg = f'{call.name} takes one argument {key!r} (a string)'
      return ToolResult(text=f'Error: {msg}', error=msg)
    value = str(value).strip()
    if not value or len(value) > self.max_query_chars:
      msg = f'{key!r} must be 1 to {self.max_query_chars} characters'
      return ToolResult(text=f'Error: {msg}', error=msg)
    try:
      schemas_lib.validate_arguments('open', {'ref_id': value})  # text check
    except schemas_lib.ToolArgumentError as e:
      return ToolResult(text=f'Error: {e}', error=str(e))
    if call.name == 'search':
      return await self._search(value)
    return await self._get_document(value)

  async def _search(self, query: str) -> ToolResult:
    [res] = await self.service.search([query], self.k)
    if res.error:
      return ToolResult(text=f'Error: {res.error}', error=res.error)
    hits, blocked = self.guard.filter(list(res.hits))
    hits = hits[: self.k]
    docs = await self.service.get_documents([h.doc_id for h in hits])
    rows = []
    for h, doc in zip(hits, docs):
      text = doc.text if doc is not None else h.snippet
      if self.snippet_max_tokens > 0:
        text = self.truncate(text, self.snippet_max_tokens)
      rows.append({'docid': h.doc_id, 'score': h.score, 'snippet': text})
    return ToolResult(
        text=json.dumps(rows, ensure_ascii=False, indent=2),
        data={
            'query': query,
            'docids': [r['docid'] for r in rows],
            'blocked': len(blocked),
        },
        urls=tuple(h.url for h in hits),
    )

  async def _get_document(self, docid: str) -> ToolResult:
    [doc] = await self.service.get_documents([docid])
    if doc is not None and self.guard.is_blocked(doc.url):
      msg = f'access to {doc.url} is blocked (leakage guard)'
      return ToolResult(text=f'Error: {msg}', error=msg)
    if doc is None:
      return ToolResult(text='null', data={'docid': docid, 'docids': []})
    body = {'docid': docid, 'text': doc.text}
    return ToolResult(
        text=json.dumps(body, ensure_ascii=False, indent=2),
        data={'docid': docid, 'docids': [docid]},
        urls=(doc.url,),
    )
