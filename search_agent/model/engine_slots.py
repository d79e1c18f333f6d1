"""Host-side state of the engine: slots, runs, slot choice, statistics."""

import collections
import dataclasses
import time
from typing import Any, Sequence

import numpy as np

from search_agent.model import engine_types as T


def common_prefix(a: Sequence[int], b: Sequence[int]) -> int:
  """Length of the longest common prefix of two token lists."""
  n = min(len(a), len(b))
  if n == 0:
    return 0
  x = np.asarray(a[:n]) != np.asarray(b[:n])
  return int(np.argmax(x)) if x.any() else n


class Slot:
  """One decode row: the session whose KV it holds and the request on it.

  Attributes:
    index: Row in the cache.
    ctx: Tokens whose KV sits in the row's prefill region (0..len-1).
    session: The session those tokens belong to (None: anonymous).
    last_used: Monotonic time of the last request (LRU eviction).
    run: The request generating on this slot, or None.
  """

  def __init__(self, index: int):
    self.index = index
    self.ctx: list[int] = []
    self.session: str | None = None
    self.last_used = 0.0
    self.run: Run | None = None
    # Routing of ctx, when known; kept in step with ctx (a chunked prompt
    # too), since another session may copy any prefix of ctx.
    self.routes: np.ndarray | None = None

  def clear(self) -> None:
    self.ctx, self.session, self.routes = [], None, None


class Run:
  """A request in flight: its feed, its outputs, where its ring starts."""

  def __init__(self, req: T.GenerateRequest, rid: str, callback: T.Callback):
    self.req, self.rid, self.callback = req, rid, callback
    self.keep = self.cached = self.routed_from = 0
    self.prefill = self.release = False
    self.donor = None
    self.base_routes: np.ndarray | None = None  # routing of the kept ctx
    self.forced: list[int] = []  # prompt tokens to feed
    self.fed_forced = 0
    self.fed: list[int] = []  # every token fed (its KV is in the ring)
    self.tokens: list[int] = []
    self.logprobs: list[float] = []
    self.versions: list[int] = []
    self.top: list[tuple[tuple[int, float], ...]] = []
    self.step_routes: list[np.ndarray] = []
    self.prompt_routes: np.ndarray | None = None
    # Chunked prefill: prompt tokens still to append (None: decoding), and
    # the routing of the chunks appended so far.
    self.pending: list[int] | None = None
    self.chunk_routes: list = []
    self.last = 0
    self.pos = self.ring_start = 0

  def consume(self, out, b: int, k: int, version: int, engine) -> str | None:
    """Takes slot b's block outputs; returns a finish reason or None."""
    for s in range(k):
      if self.fed_forced < len(self.forced):
        tok_in = self.forced[self.fed_forced]
        self.fed_forced += 1
      else:
        tok_in = self.tokens[-1] if self.tokens else self.last
      self.fed.append(tok_in)
      self.pos += 1
      if out.routing_bkle is not None:
        self.step_routes.append(out.routing_bkle[b, s])
      if self.fed_forced < len(self.forced):
        continue  # still feeding the prompt: the sample is not used
      self.tokens.append(int(out.tokens_bk[b, s]))
      self.logprobs.append(float(out.logprobs_bk[b, s]))
      self.versions.append(version)
      if n := self.req.top_logprobs:
        self.top.append(tuple(zip(
            out.top_ids_bkn[b, s, :n].tolist(),
            out.top_logprobs_bkn[b, s, :n].tolist(),
        )))  # fmt: skip
      if engine.is_stop(self.tokens, self.req):
        return 'stop'
      if len(self.tokens) >= self.req.max_new_tokens:
        return 'length'
    self.last = self.tokens[-1] if self.tokens else self.last
    return None

  def routes(self) -> np.ndarray | None:
    if not self.step_routes and self.prompt_routes is None:
      return None
    parts = [] if self.prompt_routes is None else [self.prompt_routes]
    if self.step_routes:
      parts.append(np.stack(self.step_routes))
    return np.concatenate(parts)

  def result(self, reason, cached, routes, routed_from) -> T.GenerateResult:
    return T.GenerateResult(
        token_ids=tuple(self.tokens),
        logprobs=tuple(self.logprobs),
        versions=tuple(self.versions),
        finish_reason=reason,
        cached_tokens=cached,
        routed_experts=routes,
        routed_from=routed_from,
        request_id=self.rid,
        top_logprobs=tuple(self.top),
    )


def session_slot(slots: Sequence[Slot], session: str) -> Slot | None:
  return next((s for s in slots if s.session == session and s.ctx), None)


def head(routes: np.ndarray | None, n: int) -> np.ndarray | None:
  """The first n rows of a routing record, or None if it has fewer."""
  if routes is None or len(routes) < n:
    return None
  return routes[:n]


def append_routes(
    routes: np.ndarray | None, n: int, new: np.ndarray | None
) -> np.ndarray | None:
  """Routing of n known positions and `new` after them, or None if unknown.

  `routes` must cover the first n positions (n == 0 needs nothing).
  """
  if new is None:
    return None
  if n == 0:
    return new
  first = head(routes, n)
  return None if first is None else np.concatenate([first, new])


def best_donor(slots, target, ids) -> tuple[Slot | None, int]:
  """The other slot whose context shares the longest prefix with ids."""
  best, length = None, 0
  for s in slots:
    if s is not target and s.ctx:
      n = common_prefix(s.ctx, ids)
      if n > length:
        best, length = s, n
  return best, length


def choose_slot(slots: Sequence[Slot], req: T.GenerateRequest) -> Slot | None:
  """The slot a request runs on, or None (wait).

  A known session goes to its slot (waiting while the slot is busy); a new
  session to an empty slot, else the least recently used idle one; a
  request without a session to the idle slot sharing the longest prefix
  with it, else as a new session.
  """
  if req.session_id is not None:
    own = session_slot(slots, req.session_id)
    if own is not None:
      return own if own.run is None else None
  idle = [s for s in slots if s.run is None]
  if not idle:
    return None
  if req.session_id is None:
    best = max(idle, key=lambda s: common_prefix(s.ctx, req.input_ids))
    if common_prefix(best.ctx, req.input_ids) > 0:
      return best
  empty = [s for s in idle if not s.ctx]
  if empty:
    return empty[0]
  return min(idle, key=lambda s: s.last_used)


@dataclasses.dataclass
class Stats:
  """Counters for /metrics and the benchmark."""

  requests: int = 0
  generated_tokens: int = 0
  prefill_tokens: int = 0  # computed in prefill mode
  fed_prompt_tokens: int = 0  # prompt tokens fed through decode steps
  extended_tokens: int = 0  # appended to a kept context by extend forwards
  extends: int = 0  # extend forwards (each batches the requests of a round)
  extend_padded_tokens: int = 0  # tokens the extends computed, padding too
  extend_seconds: float = 0.0
  prefill_seconds: float = 0.0  # prefill-mode forwards and installs
  reused_tokens: int = 0  # prompt tokens whose cached KV was kept
  copied_tokens: int = 0  # of those, copied from another session's slot
  chunked_tokens: int = 0  # prompt tokens appended by chunked prefill
  chunks: int = 0  # chunked-prefill forwards
  chunk_seconds: float = 0.0
  recomputed_tokens: int = 0  # session KV recomputed after weight swaps
  recomputed_sessions: int = 0  # sessions those tokens belonged to
  last_push_recomputed_tokens: int = 0  # recomputed by the newest swap
  released_sessions: int = 0  # sessions their clients released
  blocks: int = 0
  block_seconds: float = 0.0
  weight_updates: int = 0
  started: float = dataclasses.field(default_factory=time.monotonic)
  recent: Any = dataclasses.field(
      default_factory=lambda: collections.deque(maxlen=256)
  )

  def record_block(self, seconds: float, generated: int) -> None:
    self.blocks += 1
    self.block_seconds += seconds
    self.generated_tokens += generated
    self.recent.append((time.monotonic(), generated))

  def snapshot(self, **extra) -> dict[str, Any]:
    now = time.monotonic()
    window = [(t, n) for t, n in list(self.recent) if now - t < 10.0]
    span = now - window[0][0] if window else 0.0
    rate = sum(n for _, n in window) / span if span > 0 else 0.0
    # Not dataclasses.asdict: its deep copy of `recent` races the engine
    # thread's appends (RuntimeError: deque mutated during iteration).
    out = {f.name: getattr(self, f.name) for f in dataclasses.fields(self)
           if f.name not in ('recent', 'started')}  # fmt: skip
    out.update(extra, tokens_per_s=round(rate, 2))
    return out
