"""Tool observations as structured blocks (the text the tools write).

Parses what `search/tools.py` and `search/visit.py` write back into the
pieces a reader wants to scan: per search, the query and its ranked hits
(`[r1] Title` / `URL: ...` / snippet); per visited page, its ref_id, title,
URL, evidence and summary. Text in any other shape (open/find pages, errors,
observations of other harnesses) comes back as one plain block.
"""

import re
from typing import Any

_SEARCH_HEAD = re.compile(r'^Search "(?P<query>.*)": (?P<rest>.*)$')
_REF_HEAD = re.compile(r'^\[(?P<ref>[A-Za-z]*\d+)\] (?P<title>.*)$')
_OMITTED = re.compile(
    r'^\[observation omitted: (?P<tool>[^,]*), (?P<n>\d+) chars\]'
)


_FIELDS = {
    key.lower(): re.compile(
        rf'(?:^|\n){key}:\n?(.*?)(?=\n(?:Evidence|Summary|Note):|\Z)', re.DOTALL
    )
    for key in ('Evidence', 'Summary', 'Note')
}


def _hit(block: str) -> dict[str, Any] | None:
  lines = block.split('\n')
  head = _REF_HEAD.match(lines[0])
  if not head:
    return None
  hit = {'ref_id': head['ref'], 'title': head['title'], 'url': '', 'text': ''}
  rest = lines[1:]
  if rest and rest[0].startswith('URL: '):
    hit['url'] = rest.pop(0)[len('URL: ') :]
  body = '\n'.join(rest)
  if 'Evidence:' in body or 'Summary:' in body or 'Note:' in body:
    for key, pattern in _FIELDS.items():
      m = pattern.search(body)
      if m:
        hit[key] = m.group(1).strip()
  if not any(k in hit for k in ('evidence', 'summary', 'note')):
    hit['text'] = body.strip()
  return hit


def parse(content: str) -> list[dict[str, Any]]:
  """Blocks of one observation.

  Returns:
    A list of blocks, each {'kind': 'search', 'query', 'status', 'hits'},
    {'kind': 'pages', 'hits'} (visit readings), {'kind': 'omitted', 'tool',
    'chars'} (a sliding-window marker) or {'kind': 'text', 'text'}.
  """
  omitted = _OMITTED.match(content)
  if omitted:
    return [
        {'kind': 'omitted', 'tool': omitted['tool'], 'chars': int(omitted['n'])}
    ]
  blocks: list[dict[str, Any]] = []
  for chunk in content.split('\n\n'):
    head = _SEARCH_HEAD.match(chunk.split('\n', 1)[0])
    if head:
      blocks.append(
          {
              'kind': 'search',
              'query': head['query'],
              'status': head['rest'],
              'hits': [],
          }
      )
      continue
    hit = _hit(chunk)
    if hit is not None and blocks and blocks[-1]['kind'] in ('search', 'pages'):
      blocks[-1]['hits'].append(hit)
    elif hit is not None and (hit['url'] or len(hit) > 4):
      blocks.append({'kind': 'pages', 'hits': [hit]})
    elif blocks and blocks[-1]['kind'] == 'text':
      blocks[-1]['text'] += '\n\n' + chunk
    elif (
        blocks
        and blocks[-1]['kind'] in ('search', 'pages')
        and blocks[-1]['hits']
    ):
      last = blocks[-1]['hits'][-1]  # a paragraph inside a page's evidence
      key = next((k for k in ('summary', 'evidence') if k in last), 'text')
      last[key] = (last.get(key, '') + '\n\n' + chunk).strip()
    else:
      blocks.append({'kind': 'text', 'text': chunk})
  return blocks


def ref_ids(blocks: list[dict[str, Any]]) -> list[str]:
  return [h['ref_id'] for b in blocks for h in b.get('hits', ())]
