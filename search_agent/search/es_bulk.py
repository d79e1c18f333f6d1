"""Bulk indexing with retries, for Elasticsearch and OpenSearch.

Actions are serialized once (`Item`) and sent in requests bounded by bytes
(`chunk_bytes`, never over `max_request_bytes`: the cluster's
`http.max_content_length` answers a larger body with 413) and by count.
With `op_type: create` a row whose _id exists is refused with 409: for a
document row that is a duplicate doc_id (counted, the first copy kept,
the build fails past `max_duplicates`), for a row a resumed build wrote
before (`Item.resumable`) it is simply done. `es_load` runs several such
streams in parallel.

A transient failure (the node unreachable or overloaded, or an item refused
with 429/503, as when a disk passes its flood-stage watermark and the index
gets a read-only-allow-delete block) is retried with exponential backoff;
only the items that failed are sent again. Any other item error (a mapping
conflict, a malformed document) stops the build with its reason.
"""

import dataclasses
import json
import logging
import threading
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
    actions_per_request: Most index actions (documents + passages) in one
      `_bulk` request.
    chunk_bytes: A request closes once its body reaches this many bytes
      (Elastic's advice: 5-15 MB per request).
    max_request_bytes: No request body may be larger: the cluster's
      `http.max_content_length` (100 MB by default) refuses it with 413. A
      chunk over it is split; one action over it stops the build.
    streams: Bulk requests in flight at once, each sending its own slice of
      the corpus (document i goes to stream i % streams).
    max_duplicates: Documents whose doc_id was already indexed (refused with
      409 by `op_type: create`, logged) before the build fails.
    max_retries: Retries of a request, or of its failed items, on a
      transient failure; then the build fails.
    initial_backoff_s: Wait before the first retry; doubles each retry.
    max_backoff_s: Cap on one wait.
  """

  actions_per_request: int = 1000
  chunk_bytes: int = 8 << 20
  max_request_bytes: int = 95 << 20
  streams: int = 2
  max_duplicates: int = 0
  max_retries: int = 8
  initial_backoff_s: float = 0.5
  max_backoff_s: float = 30.0

  def __post_init__(self):
    if (
        self.actions_per_request < 1
        or self.max_retries < 0
        or self.streams < 1
        or self.max_duplicates < 0
    ):
      raise ValueError(
          'need actions_per_request >= 1, max_retries >= 0, streams >= 1 and'
          f' max_duplicates >= 0, got {self.actions_per_request},'
          f' {self.max_retries}, {self.streams}, {self.max_duplicates}'
      )
    if not 0 < self.chunk_bytes <= self.max_request_bytes:
      raise ValueError(
          'need 0 < chunk_bytes <= max_request_bytes, got'
          f' {self.chunk_bytes}, {self.max_request_bytes}'
      )


@dataclasses.dataclass(kw_only=True)
class BulkStats:
  """What a bulk load did.

  Attributes:
    indexed: Actions acknowledged.
    requests: `_bulk` requests sent, retries included.
    retried: Actions sent again after a transient failure.
    duplicates: Documents refused because their doc_id was indexed before
      (`op_type: create`); `duplicate_ids` holds the first few.
    resumed: Actions a resumed build found already written.
    skipped_docs: Documents a resumed build did not send again (before its
      streams' checkpoints).
    bytes: Request body bytes sent.
  """

  indexed: int = 0
  requests: int = 0
  retried: int = 0
  duplicates: int = 0
  duplicate_ids: list[str] = dataclasses.field(default_factory=list)
  resumed: int = 0
  skipped_docs: int = 0
  bytes: int = 0


@dataclasses.dataclass(frozen=True)
class Item:
  """One action, serialized.

  Attributes:
    ndjson: Its action and source lines, newline-terminated.
    what: The action line, for messages.
    doc_id: The document it belongs to.
    is_doc: A document row (not a passage row).
    resumable: A 409 means a resumed build wrote it before, not a duplicate.
  """

  ndjson: bytes
  what: str
  doc_id: str = ''
  is_doc: bool = False
  resumable: bool = False


def _line(obj: dict[str, Any]) -> bytes:
  return json.dumps(obj, ensure_ascii=False, separators=(',', ':')).encode(
      'utf-8', 'surrogatepass'
  )


def serialize(action: Action, **fields) -> Item:
  """An Item from an (action line, source) pair."""
  head, source = action
  return Item(
      ndjson=_line(head) + b'\n' + _line(source) + b'\n',
      what=str(head)[:200],
      **fields,
  )


def _item_error(item: dict[str, Any]) -> tuple[int, str]:
  (result,) = item.values()
  error = result.get('error') or {}
  reason = error.get('reason', '') if isinstance(error, dict) else str(error)
  kind = error.get('type', '') if isinstance(error, dict) else ''
  return result.get('status', 0), f'{kind}: {reason}'


def _requests(items: Sequence[Item], config: BulkConfig) -> list[list[Item]]:
  """`items` cut into request bodies of at most `chunk_bytes` (one action
  alone may pass that, never `max_request_bytes`) and
  `actions_per_request` actions."""
  out: list[list[Item]] = []
  size = 0
  for item in items:
    if len(item.ndjson) > config.max_request_bytes:
      raise BackendError(
          f'{item.what} is {len(item.ndjson)} bytes, over max_request_bytes'
          f" ({config.max_request_bytes}, under the cluster's"
          ' http.max_content_length); shorten the document or raise both'
      )
    if (
        not out
        or size + len(item.ndjson) > config.chunk_bytes
        or len(out[-1]) >= config.actions_per_request
    ):
      out.append([])
      size = 0
    out[-1].append(item)
    size += len(item.ndjson)
  return out


def send_items(
    client: SearchClient,
    items: Sequence[Item],
    config: BulkConfig,
    stats: BulkStats,
    sleep: Callable[[float], None] = time.sleep,
    lock: Any = None,
) -> None:
  """Sends `items` in requests of bounded size, retrying transient failures
  of a request or of its items; 409s are duplicates or resumed rows.

  Raises:
    BackendError: a non-transient item error, more duplicates than
      `config.max_duplicates`, or transient failures that outlast
      `config.max_retries` retries.
  """
  lock = lock or threading.Lock()
  for request in _requests(items, config):
    _send_request(client, request, config, stats, sleep, lock)


def _send_request(client, pending, config, stats, sleep, lock) -> None:
  last = ''
  for attempt in range(config.max_retries + 1):
    if attempt:
      with lock:
        stats.retried += len(pending)
      sleep(
          min(
              config.max_backoff_s,
              config.initial_backoff_s * 2 ** (attempt - 1),
          )
      )
    body = b''.join(item.ndjson for item in pending)
    with lock:
      stats.requests += 1
      stats.bytes += len(body)
    try:
      response = client.call('bulk', client.raw.bulk, body=body)
    except TransientError as e:
      last = str(e)
      logging.warning('bulk attempt %d failed, will retry: %s', attempt, e)
      continue
    failed = []
    for item, answer in zip(pending, response['items'], strict=True):
      status, reason = _item_error(answer)
      if status < 300:
        with lock:
          stats.indexed += 1
      elif status == 409 and item.resumable:
        with lock:
          stats.resumed += 1
      elif status == 409:
        _duplicate(item, config, stats, lock)
      elif status in TRANSIENT_STATUSES:
        failed.append(item)
        last = f'{item.what} answered {status} ({reason})'
      else:
        raise BackendError(
            f'bulk indexing {item.what} failed with status {status}'
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


def _duplicate(item: Item, config: BulkConfig, stats: BulkStats, lock) -> None:
  if not item.is_doc:
    return  # a passage of a duplicate document: counted with its document
  with lock:
    stats.duplicates += 1
    if len(stats.duplicate_ids) < 20:
      stats.duplicate_ids.append(item.doc_id)
    too_many = stats.duplicates > config.max_duplicates
  logging.warning('duplicate doc_id %r: its first copy is kept', item.doc_id)
  if too_many:
    raise BackendError(
        f'duplicate doc_id {item.doc_id!r} ({stats.duplicates} duplicate(s),'
        f' max_duplicates={config.max_duplicates}); doc_ids must be unique'
    )


def send_with_retries(
    client: SearchClient,
    actions: Sequence[Action],
    config: BulkConfig,
    stats: BulkStats,
    sleep: Callable[[float], None] = time.sleep,
) -> None:
  """Sends (action line, source) pairs (see `send_items`)."""
  send_items(client, [serialize(a) for a in actions], config, stats, sleep)


def bulk_load(
    client: SearchClient,
    actions: Iterable[Action],
    config: BulkConfig,
    progress: Callable[[BulkStats], None] | None = None,
    sleep: Callable[[float], None] = time.sleep,
) -> BulkStats:
  """Sends every action in one stream, in chunks of at most
  `config.actions_per_request` actions and about `config.chunk_bytes`.

  Args:
    client: The cluster.
    actions: (action line, source) pairs, e.g. from `es_bodies.bulk_actions`.
    config: Chunking and retries (`streams` is `es_load`'s).
    progress: Called with the running stats after each chunk.
    sleep: Waits between retries (tests may shorten it).

  Returns:
    The stats of the load.
  """
  stats = BulkStats()
  chunk: list[Item] = []
  size = 0
  for action in actions:
    item = serialize(action)
    chunk.append(item)
    size += len(item.ndjson)
    if len(chunk) >= config.actions_per_request or size >= config.chunk_bytes:
      send_items(client, chunk, config, stats, sleep)
      if progress:
        progress(stats)
      chunk, size = [], 0
  if chunk:
    send_items(client, chunk, config, stats, sleep)
    if progress:
      progress(stats)
  return stats
