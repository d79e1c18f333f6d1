"""Parallel, resumable loading of a corpus into the doc and passage indices.

The corpus is read once, in order; document i goes to stream i % streams,
and each stream sends its documents' actions (`op_type: create`, so no
doc_id set is kept in memory: the cluster refuses an _id it already holds)
in byte-bounded chunks, one request in flight per stream (`es_bulk`).

A stream's documents are sent in order, so its progress is one number:
the build-state index `<prefix>-build-state` holds, per stream, `done`
(every document before it is acknowledged) and `sent` (the end of the chunk
in flight), written before each chunk is sent. A build killed mid-load and
run again skips each stream's first `done` documents, treats a 409 on a
document in [done, sent) as a row it wrote before (not a duplicate), and
sends the rest: the index ends the same, with no document missing or
written twice.
"""

import dataclasses
import logging
import queue
import threading
import time
from typing import Any, Callable, Iterable, Sequence

from search_agent.corpus.passages import split_passages
from search_agent.corpus.record import Document
from search_agent.search import es_bodies
from search_agent.search import es_bulk
from search_agent.search.backend import IndexBuildConfig
from search_agent.search.es_client import SearchClient


@dataclasses.dataclass(frozen=True)
class Checkpoint:
  """A stream's progress, in its own documents: [0, done) acknowledged,
  [done, sent) in flight when it was written."""

  done: int = 0
  sent: int = 0


class BuildState:
  """The `<prefix>-build-state` index: the build in progress and each
  stream's checkpoint. Deleted once the build is swapped in."""

  def __init__(self, client: SearchClient, prefix: str):
    self._client = client
    self.index = f'{prefix}-build-state'

  def read(self) -> dict[str, Any] | None:
    """The unfinished build's {build_id, fingerprint, streams}, or None."""
    raw = self._client.raw
    if not self._client.call('exists', raw.indices.exists, index=self.index):
      return None
    docs = self._client.call(
        'mget', raw.mget, index=self.index, body={'ids': ['build']}
    )['docs']
    return docs[0]['_source'] if docs[0].get('found') else None

  def checkpoints(self, streams: int) -> list[Checkpoint]:
    ids = [f'stream-{s}' for s in range(streams)]
    docs = self._client.call(
        'mget', self._client.raw.mget, index=self.index, body={'ids': ids}
    )['docs']
    return [
        Checkpoint(d['_source']['done'], d['_source']['sent'])
        if d.get('found')
        else Checkpoint()
        for d in docs
    ]

  def start(self, build_id: str, fingerprint: str, streams: int) -> None:
    self.delete()
    self._client.call(
        'create index',
        self._client.raw.indices.create,
        index=self.index,
        body={
            'settings': {
                'number_of_shards': 1,
                'auto_expand_replicas': '0-1',
            },
            'mappings': {'dynamic': False},
        },
    )
    self._put(
        'build',
        {'build_id': build_id, 'fingerprint': fingerprint, 'streams': streams},
    )

  def mark(self, stream: int, done: int, sent: int) -> None:
    self._put(f'stream-{stream}', {'done': done, 'sent': sent})

  def _put(self, doc_id: str, body: dict[str, Any]) -> None:
    self._client.call(
        'build state',
        self._client.raw.index,
        index=self.index,
        id=doc_id,
        body=body,
    )

  def delete(self) -> None:
    raw = self._client.raw
    if self._client.call('exists', raw.indices.exists, index=self.index):
      self._client.call('delete index', raw.indices.delete, index=self.index)


@dataclasses.dataclass
class _Chunk:
  first: int  # the stream's index of its first document
  docs: int = 0
  items: list[es_bulk.Item] = dataclasses.field(default_factory=list)
  size: int = 0


def load(
    client: SearchClient,
    docs: Iterable[Document],
    build: IndexBuildConfig,
    names: dict[str, str],
    config: es_bulk.BulkConfig,
    *,
    state: BuildState | None = None,
    resume: Sequence[Checkpoint] | None = None,
    progress: Callable[[es_bulk.BulkStats], None] | None = None,
) -> es_bulk.BulkStats:
  """Loads `docs` into the indices `names` ({'doc': ..., 'passage': ...}).

  Args:
    client: The cluster.
    docs: The corpus, in the same order as any earlier run being resumed.
    build: Passage window/stride.
    names: The (physical) index per kind.
    config: Streams, chunk sizes, retries, duplicates allowed.
    state: Where each stream's checkpoint is written (None: nowhere).
    resume: Each stream's checkpoint from the run being resumed.
    progress: Called with the running stats after each chunk (from the
      stream threads).

  Returns:
    The stats of the load.

  Raises:
    BackendError: a stream failed (the others stop after their chunk).
  """
  streams = config.streams
  if resume is not None and len(resume) != streams:
    raise ValueError(f'{len(resume)} checkpoints for {streams} streams')
  stats = es_bulk.BulkStats()
  lock = threading.Lock()
  queues = [queue.Queue(maxsize=2) for _ in range(streams)]
  errors: list[BaseException] = []
  failed = threading.Event()

  def stream(s: int) -> None:
    while (chunk := queues[s].get()) is not None:
      if failed.is_set():
        continue  # drain, so that the reader never blocks
      try:
        if state:
          state.mark(s, chunk.first, chunk.first + chunk.docs)
        es_bulk.send_items(client, chunk.items, config, stats, lock=lock)
        if progress:
          progress(stats)
      except BaseException as e:  # pylint: disable=broad-exception-caught
        errors.append(e)
        failed.set()

  threads = [
      threading.Thread(target=stream, args=(s,), name=f'bulk-{s}', daemon=True)
      for s in range(streams)
  ]
  for t in threads:
    t.start()
  chunks = [None] * streams
  sent = [0] * streams  # documents per stream, skipped ones included
  queued = 0
  t0 = time.monotonic()
  try:
    for ordinal, doc in enumerate(docs):
      if failed.is_set():
        break
      s, j = ordinal % streams, ordinal // streams
      sent[s] = j + 1
      if resume and j < resume[s].done:
        stats.skipped_docs += 1
        continue
      resumable = bool(resume) and j < resume[s].sent
      passages = split_passages(
          doc, build.passage_window_words, build.passage_stride_words
      )
      actions = es_bodies.bulk_actions(
          doc, passages, names, ordinal=ordinal, op_type='create'
      )
      chunk = chunks[s] = chunks[s] or _Chunk(first=j)
      for i, action in enumerate(actions):
        item = es_bulk.serialize(
            action, doc_id=doc.doc_id, is_doc=i == 0, resumable=resumable
        )
        chunk.items.append(item)
        chunk.size += len(item.ndjson)
      chunk.docs += 1
      if (
          chunk.size >= config.chunk_bytes
          or len(chunk.items) >= config.actions_per_request
      ):
        queues[s].put(chunk)
        chunks[s] = None
        queued += 1
        if queued % 100 == 0:
          logging.info(
              'bulk: %d documents read, %d actions indexed (%.0f/s)',
              ordinal + 1,
              stats.indexed,
              stats.indexed / max(time.monotonic() - t0, 1e-9),
          )
    for s, chunk in enumerate(chunks):
      if chunk and not failed.is_set():
        queues[s].put(chunk)
  finally:
    for q in queues:
      q.put(None)
    for t in threads:
      t.join()
  if errors:
    raise errors[0]
  if state:
    for s in range(streams):
      state.mark(s, sent[s], sent[s])
  return stats
