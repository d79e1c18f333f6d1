"""Failed rollouts: their error kinds and the loud end of a broken eval.

A rollout fails when its coroutine raises (the policy endpoint down or
returning 5xx after the client's retries, the search service down, a crash).
`error_kind` reduces the error text to what is never a secret: the exception
class and the transport cause (an HTTP status, `ConnectError`, a timeout), so
that results of encrypted benchmarks still say why a run failed.

When more than `max_failed_share` of an eval's rollouts fail, `eval.run`
stops (the outcome is already decided; the remaining rollouts are not
started) and exits non-zero with `FailureSummary.message`: one line with the
count, the kinds, the endpoint and what to check. The same holds for judge
calls that fail after their retries (a judge endpoint down): rerunning the
command re-grades only those.
"""

import collections
import dataclasses
import re
from typing import Any, Iterable, Mapping

_CLASS = re.compile(r'\A(\w+(?:\.\w+)*):')
_HTTP = re.compile(r'HTTP (\d{3})\b')
_TRANSPORT = re.compile(r'request error (\w+)')
_TIMEOUT = re.compile(r'timeout \((\w+)\)')


class EvalFailedError(RuntimeError):
  """Too many rollouts failed: the eval's figures would be meaningless."""


def error_kind(text: str | None) -> str | None:
  """'LLMError: HTTP 500', 'LLMError: ConnectError', 'RuntimeError', ...

  Only the class name and a transport cause: no message text, which may
  quote the question or a server's reply.
  """
  if not text:
    return None
  text = text.split('\nTraceback (most recent call last)')[0]
  match = _CLASS.match(text)
  name = match.group(1).rsplit('.', 1)[-1] if match else 'error'
  causes = (
      [f'HTTP {s}' for s in _HTTP.findall(text)[-1:]]
      or _TRANSPORT.findall(text)[-1:]
      or [f'timeout {t}' for t in _TIMEOUT.findall(text)[-1:]]
  )
  return f'{name}: {causes[0]}' if causes else name


def _hint(kind: str) -> str:
  """What to check for one error kind."""
  if 'ConnectError' in kind or 'ConnectTimeout' in kind:
    return 'nothing answers there: start the server or fix the base_url'
  if 'timeout' in kind.lower():
    return 'the server is too slow: check its load or raise timeout_s'
  status = _HTTP.search(kind)
  if status and status.group(1) in ('401', '403'):
    return 'the server refused the key: check api_key_env'
  if status and status.group(1) == '404':
    return 'wrong path or model name: check base_url (…/v1) and model'
  if status and status.group(1).startswith('5'):
    return "the server fails: read the server's log"
  if 'VerdictError' in kind or 'JudgeParseError' in kind:
    return 'the judge replies without a verdict: check the judge model'
  return 'read run_error in results.jsonl (or trajectories.jsonl)'


@dataclasses.dataclass(frozen=True, kw_only=True)
class FailureSummary:
  """The failed rollouts of one eval.

  Attributes:
    failed: Rollouts with status 'failed'.
    total: Rollouts of the eval (questions x repeats).
    kinds: error_kind -> count.
    endpoint: 'http://host:port/v1 (model m)' of the LLM, if remote.
    subject: What failed ('rollouts', 'judge calls').
    role: Whose endpoint ('policy', 'judge').
  """

  failed: int
  total: int
  kinds: Mapping[str, int]
  endpoint: str = ''
  subject: str = 'rollouts'
  role: str = 'policy'

  @property
  def share(self) -> float:
    return self.failed / self.total if self.total else 0.0

  def message(self) -> str:
    """One line: how many failed, why, where, and what to check."""
    kinds = ', '.join(f'{k} x{n}' for k, n in self.kinds.items()) or 'unknown'
    top = next(iter(self.kinds), '')
    where = f' ({self.role} {self.endpoint})' if self.endpoint else ''
    return (
        f'{self.failed} of {self.total} {self.subject} failed'
        f' [{kinds}]{where}: {_hint(top)}'
    )


def summarize(
    kinds: Iterable[str | None],
    total: int,
    llm: Mapping[str, Any],
    *,
    subject: str = 'rollouts',
    role: str = 'policy',
) -> FailureSummary:
  """The summary of the error kinds (`error_kind`) of failures."""
  kinds = collections.Counter(k or 'error' for k in kinds)
  return FailureSummary(
      failed=sum(kinds.values()),
      total=total,
      kinds=dict(kinds.most_common()),
      endpoint=endpoint(llm),
      subject=subject,
      role=role,
  )


def endpoint(policy: Mapping[str, Any]) -> str:
  """'base_url (model m)' of an OpenAI-compatible policy manifest, else ''."""
  if policy.get('kind') != 'openai':
    return ''
  o = policy.get('openai', {})
  return f'{o.get("base_url", "?")} model {o.get("model", "")!r}'


def too_many(failed: int, total: int, max_share: float) -> bool:
  """More than `max_share` of `total` failed (decided once it is true)."""
  return failed > 0 and failed > max_share * total
