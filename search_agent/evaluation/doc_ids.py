"""Which documents an agent retrieved, recorded per tool call.

`RecordingToolbox` wraps any toolbox (ours or BrowseComp-Plus's) and keeps,
for every call, the doc ids its result returned: search hits, and the
documents visit/open/find/get_document read. The eval writes them into the
trajectory's `meta['doc_ids']` as structured records (`[{tool, doc_ids}]`,
one per call, in call order), so evidence recall needs no parsing of
observation text. `retrieved` is the order-preserving union.
"""

from typing import Any, Iterable, Sequence

from search_agent.chat.turns import ToolCall


def result_doc_ids(name: str, data: dict[str, Any]) -> list[str]:
  """The doc ids in one tool result's structured `data`."""
  if 'docids' in data:  # BrowseComp-Plus tools
    return [str(d) for d in data['docids']]
  if name == 'search':
    return [
        str(r['doc_id'])
        for q in data.get('queries', ())
        for r in q.get('results', ())
        if 'doc_id' in r
    ]
  if name == 'visit':
    return [
        str(d['doc_id']) for d in data.get('documents', ()) if 'doc_id' in d
    ]
  if 'doc_id' in data:  # open, find
    return [str(data['doc_id'])]
  return []


class RecordingToolbox:
  """A toolbox that records the doc ids of every result it returns."""

  def __init__(self, inner: Any):
    self.inner = inner
    self.calls: list[dict[str, Any]] = []

  def schemas(self) -> list[dict[str, Any]]:
    return self.inner.schemas()

  def __getattr__(self, name: str) -> Any:
    return getattr(self.inner, name)

  async def execute(self, call: ToolCall) -> Any:
    result = await self.inner.execute(call)
    self.calls.append(
        {
            'tool': call.name,
            'doc_ids': result_doc_ids(call.name, result.data or {}),
        }
    )
    return result


def retrieved(
    calls: Iterable[dict[str, Any]], tools: Sequence[str] = ()
) -> list[str]:
  """Doc ids of the calls (of `tools`, or all), first appearance first."""
  seen: dict[str, None] = {}
  for c in calls:
    if not tools or c['tool'] in tools:
      seen.update(dict.fromkeys(c['doc_ids']))
  return list(seen)
