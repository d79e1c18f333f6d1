"""Bulk indexing with retries and progress, for Elasticsearch and OpenSearch.

A transient failure (the node unreachable or overloaded, or an item refused
with 429/503, as when a disk passes its flood-stage watermark and the index
gets a read-only-allow-delete block) is retried with exponential backoff;
only the items that failed are sent again. Any other item error (a mapping
conflict, a malformed document) stops the build with its reason.
"""

import dataclasses
import logging
import time
from typing import Any, Callable, Iterable, Sequence

from search_agent.search.backend import BackendError
from search_agent.search.es_client import SearchClient
from search_agent.search.es_client import TRANSIENT_STATUSES
from search_agent.search.es_client import TransientError

Action = tuple[dict[str, Any], dict[str, Any]]


@dataclasses.dataclass(frozen=True, kw_only=True)
class BulkConfig:
  """How documents are sent.

  Attributes:
    actions_per_request: Index actions (documents + passages) per `_bulk`.
    max_retries: Retries of a request, or of its failed items, on a
      transient failure; then the build fails.
    initial_backoff_s: Wait before the first retry; doubles each retry.
    max_backoff_s: Cap on one wait.
  """

  actions_per_request: int = 1000
  max_retries: int = 8
  initial_backoff_s: float = 0.5
  max_backoff_s: float = 30.0

  def __post_init__(self):
    if self.actions_per_request < 1 or self.max_retries < 0:
      raise ValueError(
          'need actions_per_request >= 1 and max_retries >= 0, got'
          f' {self.actions_per_request}, {self.max_retries}'
      )


@dataclasses.dataclass(kw_only=True)
class BulkStats:
  """What a bulk load did.

  Attributes:
    indexed: Actions acknowledged.
    requests: `_bulk` requests sent, retries included.
    retried: Actions sent again after a transient failure.
  """

  indexed: int = 0
  requests: int = 0
  retried: int = 0


def _item_error(item: dict[str, Any]) -> tuple[int, str]:
  (result,) = item.values()
  error = result.get('error') or {}
  reason = error.get('reason', '') if isinstance(error, dict) else str(error)
  kind = error.get('type', '') if isinstance(error, dict) else ''
  return result.get('status', 0), f'{kind}: {reason}'


def send_with_retries(
    client: SearchClient,
    actions: Sequence[Action],
    config: BulkConfig,
    stats: BulkStats,
    sleep: Callable[[float], None] = time.sleep,
) -> None:
  """Sends one chunk, retrying transient failures of the request or items.

  Raises:
    BackendError: a non-transient item error, or transient failures that
      outlast `config.max_retries` retries.
  """
  pending = list(actions)
  last = ''
  for attempt in range(config.max_retries + 1):
    if attempt:
      stats.retried += len(pending)
      sleep(
          min(
              config.max_backoff_s,
              config.initial_backoff_s * 2 ** (attempt - 1),
          )
      )
    stats.requests += 1
    body = [line for pair in pending for line in pair]
    try:
      response = client.call('bulk', client.raw.bulk, body=body)
    except TransientError as e:
      last = str(e)
      logging.warning('bulk attempt %d failed, will retry: %s', attempt, e)
      continue
    failed = []
    for pair, item in zip(pending, response['items'], strict=True):
      status, reason = _item_error(item)
      if status < 300:
        stats.indexed += 1
      elif status in TRANSIENT_STATUSES:
        failed.append(pair)
        last = f'{pair[0]} answered {status} ({reason})'
      else:
        raise BackendError(
            f'bulk indexing {pair[0]} failed with status {status}'
            f' ({reason}); fix the document or the index mapping'
        )
    if not failed:
      return
    logging.warning(
        'bulk attempt %d: %d of %d actions failed transiently (%s)',
        attempt,
        len(failed),
        len(pending),
        last,
    )
    pending = failed
  raise BackendError(
      f'bulk indexing still failed after {config.max_retries} retries:'
      f' {last}; check the cluster health, disk watermarks and index blocks'
  )


def bulk_load(
    client: SearchClient,
    actions: Iterable[Action],
    config: BulkConfig,
    progress: Callable[[BulkStats], None] | None = None,
    sleep: Callable[[float], None] = time.sleep,
) -> BulkStats:
  """Sends every action in chunks of `config.actions_per_request`.

  Args:
    client: The cluster.
    actions: (action line, source) pairs, e.g. from `es_bodies.bulk_actions`.
    config: Chunking and retries.
    progress: Called with the running stats after each chunk.
    sleep: Waits between retries (tests may shorten it).

  Returns:
    The stats of the load.
  """
  stats = BulkStats()
  chunk: list[Action] = []
  t0 = time.monotonic()

  def send():
    send_with_retries(client, chunk, config, stats, sleep)
    if stats.requests % 20 == 1:
      logging.info(
          'bulk: %d actions indexed (%.0f/s), %d retried',
          stats.indexed,
          stats.indexed / max(time.monotonic() - t0, 1e-9),
          stats.retried,
      )
    if progress:
      progress(stats)

  for action in actions:
    chunk.append(action)
    if len(chunk) >= config.actions_per_request:
      send()
      chunk = []
  if chunk:
    send()
  return stats
