"""Live-API calibration: the local search against a log of live results.

The open recipe checks its local search against a live search API: the
share of the live evidence targets found in the local top ten, and a blind
pairwise judge of snippets (48.5% local preference over 500 pairs).

Log format (JSONL, one live search per line; see `read_log`):

  {"id": "q17",                          optional (default: "line<N>")
   "query": "who directed Blade Runner", the query sent to the live API
   "results": [                          the API's results, best first
     {"url": "https://en.wikipedia.org/wiki/Blade_Runner",
      "title": "Blade Runner - Wikipedia",    optional
      "snippet": "Blade Runner is a 1982 ..."},  optional ('' = none)
     ...],
   "evidence": ["https://..."],          optional evidence targets
   "source": "serper"}                   optional: which API

The evidence targets of a query are its `evidence` URLs, or, without them,
its first `k` result URLs. URLs are compared after `normalize_url` (scheme,
`www.`/`m.` host prefixes, fragment, trailing slash and case of the host
dropped).

The judge (`SnippetJudge`) sees the query, the page's title and URL and the
two snippets as "A" and "B", never which engine cut which. Each pair is
judged twice with the positions swapped; the two verdicts are summed
(+1 local, -1 live, 0 tie), so a judge that always answers "A" yields ties.
The local preference rate counts a tie as half a win, with a Wilson 95%
interval.
"""

import asyncio
import dataclasses
import json
import pathlib
import re
from typing import Sequence
import urllib.parse

from search_agent import stats
from search_agent.llm import protocol
from search_agent.llm.prompts import prompt as prompt_lib

JUDGE_PROMPT = pathlib.Path(__file__).parent / 'prompts' / 'snippet_judge.txt'
_VERDICT_RE = re.compile(r'\b(TIE|A|B)\b')


class LiveLogError(ValueError):
  """A live-results log line is malformed; the message names line and field."""


@dataclasses.dataclass(frozen=True, kw_only=True)
class LiveResult:
  url: str
  title: str = ''
  snippet: str = ''


@dataclasses.dataclass(frozen=True, kw_only=True)
class LiveQuery:
  """One logged live search (the JSONL line, parsed)."""

  id: str
  query: str
  results: tuple[LiveResult, ...]
  evidence: tuple[str, ...] = ()
  source: str = ''

  def targets(self, k: int) -> list[str]:
    """Normalized evidence URLs (default: the first k results')."""
    urls = self.evidence or tuple(r.url for r in self.results[:k])
    return list(dict.fromkeys(normalize_url(u) for u in urls))


def normalize_url(url: str) -> str:
  """A URL's comparable form: host (no www./m.) + path, lowercase host."""
  parts = urllib.parse.urlsplit(url.strip())
  if not parts.netloc:  # no scheme: "en.wikipedia.org/wiki/X"
    parts = urllib.parse.urlsplit('https://' + url.strip())
  host = parts.netloc.lower().rsplit('@', 1)[-1].removesuffix(':443')
  host = host.removesuffix(':80')
  for prefix in ('www.', 'm.'):
    host = host.removeprefix(prefix)
  host = host.replace('.m.wikipedia.org', '.wikipedia.org')
  path = urllib.parse.unquote(parts.path).rstrip('/')
  query = f'?{parts.query}' if parts.query else ''
  return f'{host}{path}{query}'


def _parse_line(obj, lineno: int) -> LiveQuery:
  where = f'line {lineno}'
  if not isinstance(obj, dict):
    raise LiveLogError(f'{where}: expected a JSON object')
  query = obj.get('query')
  if not isinstance(query, str) or not query.strip():
    raise LiveLogError(f'{where}: "query" must be a non-empty string')
  results = obj.get('results')
  if not isinstance(results, list):
    raise LiveLogError(f'{where}: "results" must be a list')
  parsed = []
  for i, r in enumerate(results):
    if not isinstance(r, dict) or not isinstance(r.get('url'), str):
      raise LiveLogError(f'{where}: results[{i}] needs a string "url"')
    parsed.append(
        LiveResult(
            url=r['url'],
            title=str(r.get('title') or ''),
            snippet=str(r.get('snippet') or ''),
        )
    )
  evidence = obj.get('evidence', [])
  if not isinstance(evidence, list) or not all(
      isinstance(e, str) for e in evidence
  ):
    raise LiveLogError(f'{where}: "evidence" must be a list of URLs')
  return LiveQuery(
      id=str(obj.get('id') or f'line{lineno}'),
      query=query,
      results=tuple(parsed),
      evidence=tuple(evidence),
      source=str(obj.get('source') or ''),
  )


def read_log(path: str | pathlib.Path) -> list[LiveQuery]:
  """Parses a live-results log (module docstring); blank lines skipped.

  Raises:
    LiveLogError: on a malformed line or a repeated id.
  """
  out, seen = [], set()
  text = pathlib.Path(path).read_text(encoding='utf-8')
  for lineno, line in enumerate(text.splitlines(), start=1):
    if not line.strip():
      continue
    try:
      obj = json.loads(line)
    except json.JSONDecodeError as e:
      raise LiveLogError(f'line {lineno}: not JSON ({e})') from e
    q = _parse_line(obj, lineno)
    if q.id in seen:
      raise LiveLogError(f'line {lineno}: id {q.id!r} repeats')
    seen.add(q.id)
    out.append(q)
  return out


def wilson(successes: float, n: int, z: float = 1.96) -> tuple[float, float]:
  """`stats.wilson`, rounded to 4 places for the report."""
  lo, hi = stats.wilson(successes, n, z)
  return round(lo, 4), round(hi, 4)


@dataclasses.dataclass(frozen=True, kw_only=True)
class Pair:
  """A query and a URL both engines returned, with both snippets."""

  query_id: str
  query: str
  url: str
  title: str
  local_snippet: str
  live_snippet: str


def parse_verdict(reply: str) -> str:
  """'A', 'B' or 'TIE' from the judge's reply (the last one it names).

  Raises:
    ValueError: if the reply names none.
  """
  found = _VERDICT_RE.findall(reply.upper())
  if not found:
    raise ValueError(f'judge reply names no verdict (A, B, TIE): {reply!r:.80}')
  return found[-1]


class SnippetJudge:
  """Blind, position-swapped pairwise judge of local vs live snippets."""

  def __init__(
      self, llm: protocol.LLM, *, temperature=0.0, max_tokens=16,
      concurrency=8,
  ):  # fmt: skip
    self.llm = llm
    self.prompt = prompt_lib.load(str(JUDGE_PROMPT))
    self.params = protocol.SamplingParams(
        temperature=temperature, max_tokens=max_tokens
    )
    self.concurrency = concurrency

  async def _ask(self, pair: Pair, a: str, b: str) -> str:
    message = self.prompt.render(
        query=pair.query, title=pair.title, url=pair.url, snippet_a=a,
        snippet_b=b,
    )  # fmt: skip
    (completion,) = (
        await self.llm.chat([{'role': 'user', 'content': message}], self.params)
    )[:1]
    return parse_verdict(completion.text)

  async def judge(self, pair: Pair) -> dict:
    """Both orders; verdict 'local', 'live' or 'tie'."""
    first = await self._ask(pair, pair.local_snippet, pair.live_snippet)
    second = await self._ask(pair, pair.live_snippet, pair.local_snippet)
    vote = {'A': 1, 'B': -1, 'TIE': 0}
    total = vote[first] - vote[second]  # local is A first, B second
    verdict = 'local' if total > 0 else 'live' if total < 0 else 'tie'
    return {
        'query_id': pair.query_id, 'url': pair.url,
        'local_first': first, 'live_first': second, 'verdict': verdict,
    }  # fmt: skip

  async def judge_all(self, pairs: Sequence[Pair]) -> list[dict]:
    gate = asyncio.Semaphore(max(1, self.concurrency))

    async def one(p):
      async with gate:
        return await self.judge(p)

    return list(await asyncio.gather(*(one(p) for p in pairs)))


def preference(verdicts: Sequence[dict]) -> dict:
  """Counts, local preference (ties half) and its Wilson interval."""
  n = len(verdicts)
  count = {
      v: sum(x['verdict'] == v for x in verdicts)
      for v in ('local', 'live', 'tie')
  }
  wins = count['local'] + 0.5 * count['tie']
  decided = count['local'] + count['live']
  return {
      'pairs': n, **count,
      'position_inconsistent': sum(
          x['local_first'] == x['live_first'] != 'TIE' for x in verdicts
      ),
      'local_preference': round(wins / n, 4) if n else None,
      'interval_95': wilson(wins, n),
      'local_preference_decided': (
          round(count['local'] / decided, 4) if decided else None
      ),
      'interval_95_decided': wilson(count['local'], decided),
  }  # fmt: skip


def compare(
    engine, log: Sequence[LiveQuery], k: int = 10, *, batch: int = 32,
    corpus_urls: set[str] | None = None,
) -> tuple[dict, list[Pair], list[dict]]:  # fmt: skip
  """Local top-k vs the live log: recall report, matched pairs, per query.

  `corpus_urls` (normalized) adds the recall over the targets the local
  corpus holds at all (a live target outside it cannot be found).
  """
  pairs, rows, rejected = [], [], {}
  for start in range(0, len(log), batch):
    chunk = log[start : start + batch]
    answers = engine.search_or_errors([q.query for q in chunk], k)
    for q, hits in zip(chunk, answers):
      if isinstance(hits, Exception):
        rejected[q.id], hits = str(hits), []
      local = {}
      for h in hits:
        local.setdefault(normalize_url(h.url), h)
      targets = q.targets(k)
      found = [t for t in targets if t in local]
      rows.append({'id': q.id, 'targets': targets, 'found': found})
      for r in q.results[:k]:
        u = normalize_url(r.url)
        if u in local and r.snippet.strip() and local[u].snippet.strip():
          pairs.append(
              Pair(
                  query_id=q.id, query=q.query, url=r.url,
                  title=local[u].title or r.title,
                  local_snippet=local[u].snippet, live_snippet=r.snippet,
              )
          )  # fmt: skip
          local.pop(u)  # one pair per URL and query
  scored = [r for r in rows if r['targets']]
  n_t = sum(len(r['targets']) for r in scored)
  n_f = sum(len(r['found']) for r in scored)
  report = {
      'k': k, 'queries': len(rows), 'queries_with_targets': len(scored),
      'targets': n_t, 'found': n_f,
      'macro': round(
          sum(len(r['found']) / len(r['targets']) for r in scored)
          / max(1, len(scored)), 4,
      ),
      'micro': round(n_f / max(1, n_t), 4),
      'rejected_queries': rejected, 'matched_pairs': len(pairs),
  }  # fmt: skip
  if corpus_urls is not None:
    held = sum(t in corpus_urls for r in scored for t in r['targets'])
    report['targets_in_corpus'] = held
    report['micro_in_corpus'] = round(n_f / max(1, held), 4)
  return report, pairs, rows
