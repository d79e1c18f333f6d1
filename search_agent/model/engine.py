"""The rollout engine: continuous batching with per-session KV reuse.

One thread owns the device (`engine_core.EngineCore`) and loops: apply
control commands (abort, pause, weight swaps), place waiting requests into
free slots, run one decode block (`steps_per_call` tokens for every busy
slot; the busy rows are gathered into the next power-of-two batch), hand
finished results to their callbacks. Requests join and leave slots
between blocks (continuous batching). A slot keeps the KV of the session it
served; the next request of that session (or, without a session id, the
idle slot sharing the longest prefix) computes only the tokens after the
common prefix: all but the last in one extend forward (batched with the
other requests placed in the same round), the last one in its first decode
step. A fresh prompt of at least prefill_min_tokens is prefilled in one
prefill-mode forward instead, or, with `prefill_chunk` set (chunked
prefill), appended by extend forwards of at most prefill_chunk tokens, one
round between two decode blocks: the slot decodes once its prompt is in,
and the slots already decoding wait for one chunk per block instead of for
the whole prompt. Sessions are evicted least recently used when a request
needs a slot and none is free.

Weights change only between blocks, so every token is computed by one
version; `update_weights` either aborts the requests in flight (they return
what they generated, finish_reason 'abort') or lets them finish first, then
swaps and recomputes the KV of every live session (cached, not released)
under the new weights; anonymous cached prefixes are dropped instead.
Clients release a session when its trajectory ends (`release`), so a push
recomputes only the contexts that will be continued.
"""

import collections
import threading
import time
from typing import Any, Callable, Iterable

import numpy as np

from search_agent.model import engine_core
from search_agent.model import engine_slots
from search_agent.model import engine_types as T


class Engine:
  """Serves GenerateRequests on an EngineCore from a background thread."""

  def __init__(
      self,
      core: engine_core.EngineCore,
      config: T.EngineConfig,
      *,
      vocab_size: int,
      decode_fn: Callable[[list[int]], str] | None = None,
  ):
    self.core, self.config = core, config
    self.vocab_size, self.decode_fn = vocab_size, decode_fn
    self.params, self.version = None, -1
    self.slots = [engine_slots.Slot(i) for i in range(config.slots)]
    self.stats = engine_slots.Stats()
    self._lock = threading.Condition()
    self._waiting: collections.deque = collections.deque()
    self._commands: list[tuple[str, Any, threading.Event, list]] = []
    self._ids: set[str] = set()
    self._aborts: set[str] = set()
    self._paused = self._stopped = False
    self._drain: tuple | None = None  # pending weights waiting for a drain
    self._counter = 0
    self._extends: list = []  # (slot, run, offset, tokens) to extend
    self._thread = threading.Thread(target=self._loop, daemon=True)

  def start(self, params: Any, version: int, *, thread: bool = True) -> None:
    """Places the weights and starts serving (thread=False: `step` serves)."""
    self.params, self.version = self.core.place_params(params), version
    if thread:
      self._thread.start()

  def close(self) -> None:
    with self._lock:
      self._stopped = True
      self._lock.notify_all()
    self._thread.join(timeout=60)

  # Client-facing (any thread).

  def submit(self, req: T.GenerateRequest, callback: T.Callback) -> str:
    """Queues a request; `callback` gets its result (engine thread)."""
    self._validate(req)
    with self._lock:
      rid = req.request_id or f'req-{self._counter}'
      self._counter += 1
      if rid in self._ids:
        raise T.DuplicateIdError(f'request_id {rid!r} is already in flight')
      if len(self._waiting) >= self.config.max_queue:
        raise T.QueueFullError(
            f'{len(self._waiting)} requests wait for {self.config.slots}'
            ' busy slots (max_queue); retry later',
            self.config.retry_after_s,
        )
      self._ids.add(rid)
      self._waiting.append(engine_slots.Run(req, rid, callback))
      self._lock.notify_all()
    return rid

  def generate(self, req: T.GenerateRequest, timeout_s: float = 600):
    """Blocking submit (tests, benchmarks)."""
    done, box = threading.Event(), []
    self.submit(req, lambda r: (box.append(r), done.set()))
    if not done.wait(timeout_s):
      raise TimeoutError(f'no result within {timeout_s} s')
    if isinstance(box[0], BaseException):
      raise box[0]
    return box[0]

  def abort(self, request_ids: Iterable[str] | None) -> list[str]:
    """Aborts the given requests (None = all); returns the ids aborted."""
    with self._lock:
      ids = set(self._ids) if request_ids is None else set(request_ids)
      unknown = sorted(ids - self._ids)
      if unknown:
        raise T.UnknownIdError(
            f'no request in flight with id {unknown[:5]}; in flight:'
            f' {len(self._ids)}'
        )
      self._aborts |= ids
      self._lock.notify_all()
    return sorted(ids)

  def pause(self) -> None:
    """Stops decoding after the current block (requests stay in slots)."""
    self._command('pause', None)

  def resume(self) -> None:
    self._command('resume', None)

  def release(self, session_id: str) -> None:
    """Drops a session's cached KV (its trajectory ended)."""
    self._command('release', session_id)

  def update_weights(self, params: Any, version: int, abort: bool) -> dict:
    """Swaps weights between blocks; see the module docstring."""
    placed = self.core.place_params(params)  # fails here on a mismatch
    return self._command('weights', (placed, version, abort), timeout_s=3600)

  def metrics(self) -> dict[str, Any]:
    with self._lock:
      waiting = len(self._waiting)
    busy = sum(s.run is not None for s in self.slots)
    cached = sum(bool(s.ctx) and s.run is None for s in self.slots)
    return self.stats.snapshot(
        slots=self.config.slots,
        slots_busy=busy,
        sessions_cached=cached,
        queue_depth=waiting,
        version=self.version,
        paused=self._paused,
    )

  def _command(self, name, arg, timeout_s: float = 600):
    done, box = threading.Event(), []
    with self._lock:
      self._commands.append((name, arg, done, box))
      self._lock.notify_all()
    if not done.wait(timeout_s):
      raise TimeoutError(f'engine did not run {name!r} within {timeout_s} s')
    if box and isinstance(box[0], BaseException):
      raise box[0]
    return box[0] if box else None

  def _validate(self, r: T.GenerateRequest) -> None:
    c = self.config
    if not r.input_ids:
      raise T.RequestError('input_ids is empty')
    if len(r.input_ids) > c.max_context:
      raise T.ContextTooLongError(
          f'prompt of {len(r.input_ids)} tokens is too long: the maximum'
          f' context length (max_context) is {c.max_context} tokens'
      )
    bad = [t for t in r.input_ids if not 0 <= t < self.vocab_size]
    if bad:
      raise T.RequestError(
          f'token ids {bad[:5]} outside the vocabulary [0, {self.vocab_size})'
      )
    if not 1 <= r.max_new_tokens <= c.max_new_tokens:
      raise T.RequestError(
          f'max_new_tokens {r.max_new_tokens} not in [1, {c.max_new_tokens}]'
      )
    t = r.temperature
    if not (t == 0 or T.MIN_TEMPERATURE <= t <= T.MAX_TEMPERATURE):
      raise T.RequestError(  # NaN fails the test too
          f'temperature {t} must be 0 (greedy) or in'
          f' [{T.MIN_TEMPERATURE}, {T.MAX_TEMPERATURE}]'
      )
    if not 0 < r.top_p <= 1:
      raise T.RequestError(f'top_p {r.top_p} must be in (0, 1]')
    if not 0 <= r.top_logprobs <= self.core.top_logprobs:
      raise T.RequestError(
          f'top_logprobs {r.top_logprobs} not in [0,'
          f" {self.core.top_logprobs}] (the engine's top_logprobs)"
      )
    if r.stop_strings and self.decode_fn is None:
      raise T.RequestError('stop_strings need a tokenizer on the server')

  # Engine thread.

  def _loop(self) -> None:
    while True:
      with self._lock:
        while not self._stopped and not self._has_work():
          self._lock.wait(0.5)
        if self._stopped:
          break
      self.step()
    self._abort(None)

  def step(self) -> None:
    """One round: commands, placement, a prompt chunk, a decode block.

    The engine thread's loop body; tests that start the engine without its
    thread call it to put requests in an exact order.
    """
    with self._lock:
      commands, self._commands = self._commands, []
      aborts, self._aborts = self._aborts, set()
    for name, arg, done, box in commands:
      try:
        if self._run_command(name, arg, done, box):
          continue  # replied later (a weight swap)
      except Exception as e:  # pylint: disable=broad-exception-caught
        box.append(e)
      done.set()
    self._abort(aborts)
    self._maybe_swap()
    if self._paused:
      return
    if self._drain is None:
      self._place_waiting()
    self._advance_chunks()
    if any(s.run and s.run.pending is None for s in self.slots):
      self._block()

  def _has_work(self) -> bool:
    if self._commands or self._aborts:
      return True
    if self._drain is not None and not any(s.run for s in self.slots):
      return True
    if self._paused:
      return False
    return any(s.run for s in self.slots) or bool(
        self._waiting and self._drain is None
    )

  def _run_command(self, name, arg, done, box) -> bool:
    """Runs a command; True when its reply comes later."""
    if name == 'pause':
      self._paused = True
    elif name == 'resume':
      self._paused = False
    elif name == 'release':
      slot = engine_slots.session_slot(self.slots, arg)
      if slot is None:
        raise T.UnknownIdError(f'no cached session {arg!r}')
      self.stats.released_sessions += 1
      if slot.run is None:
        slot.clear()
      else:
        slot.run.release = True
    elif name == 'weights':
      params, version, abort = arg
      if abort:
        self._abort(None, only_running=True)
      self._drain = (params, version, done, box)
      return True
    return False

  def _maybe_swap(self) -> None:
    if self._drain is None or any(s.run for s in self.slots):
      return
    params, version, done, box = self._drain
    self._drain = None
    self.params, self.version = params, version
    recomputed = sessions = 0
    for s in self.slots:
      if s.ctx and s.session is None:
        s.clear()  # an anonymous prefix: recomputed only if asked for again
      elif s.ctx:
        s.routes = self.core.prefill(self.params, s.ctx)
        self.core.install(s.index, len(s.ctx))
        recomputed += len(s.ctx)
        sessions += 1
    self.stats.recomputed_tokens += recomputed
    self.stats.recomputed_sessions += sessions
    self.stats.last_push_recomputed_tokens = recomputed
    self.stats.weight_updates += 1
    box.append(
        {
            'version': version,
            'recomputed_tokens': recomputed,
            'recomputed_sessions': sessions,
        }
    )
    done.set()

  def _abort(self, ids, only_running: bool = False) -> None:
    """Ends aborted requests (None = all) with finish_reason 'abort'."""
    for s in self.slots:
      if s.run and (ids is None or s.run.rid in ids):
        self._finish(s, 'abort')
    if only_running:
      return
    with self._lock:
      keep = collections.deque()
      for run in self._waiting:
        if ids is None or run.rid in ids:
          self._deliver(run, run.result('abort', 0, None, 0))
        else:
          keep.append(run)
      self._waiting = keep

  def _place_waiting(self) -> None:
    """Starts waiting requests, in order, on the slots they can take."""
    with self._lock:
      pending = list(self._waiting)
    prefills = 0
    self._extends = []
    for run in pending:
      if all(s.run for s in self.slots):
        break
      slot = engine_slots.choose_slot(self.slots, run.req)
      if slot is None:
        continue  # its session's slot is busy: a later request may fit
      if self._plan(slot, run) and not self.config.prefill_chunk:
        if prefills >= self.config.prefills_per_step:
          break
        prefills += 1
      with self._lock:
        self._waiting.remove(run)
      if run.prefill and self.config.prefill_chunk:
        self._start_chunked(slot, run)
      else:
        self._start(slot, run, run.prefill)
    self._flush_extends()

  def _flush_extends(self) -> None:
    """Runs the extends of the requests just started, in one forward."""
    rows, self._extends = self._extends, []
    if not rows:
      return
    t0 = time.monotonic()
    out = self.core.extend(
        self.params, [(s.index, off, chunk) for s, _, off, chunk in rows]
    )
    self.stats.extends += 1
    self.stats.extend_padded_tokens += out.padded_tokens
    self.stats.extend_seconds += time.monotonic() - t0
    for (slot, run, off, _), routes in zip(rows, out.routing):
      if routes is None:
        continue
      run.prompt_routes = routes
      if off == 0:
        slot.routes = routes
      elif run.base_routes is not None:
        slot.routes = np.concatenate([run.base_routes, routes])

  def _plan(self, slot, run) -> bool:
    """Sets run.keep (reused context); True if it needs a prefill forward.

    The context kept is the longest prefix shared with the slot's own
    session or with any other slot's context (copied over: a group of
    rollouts of one prompt prefills it once).
    """
    ids = run.req.input_ids
    own = engine_slots.common_prefix(slot.ctx, ids)
    if slot.session != run.req.session_id and run.req.session_id is not None:
      own = 0  # a new session evicts the slot's previous one
    donor, shared = engine_slots.best_donor(self.slots, slot, ids)
    keep = min(max(own, shared), len(ids) - 1)
    run.donor = donor if shared > own and keep > 0 else None
    fresh = keep == 0 and len(ids) - 1 >= self.config.prefill_min_tokens
    run.keep = keep
    chunk = len(ids) - keep - 1  # the extend's tokens (the last is decoded)
    run.prefill = (
        fresh or chunk >= self.config.max_chunk or chunk > self.core.max_extend
    )
    return run.prefill

  def _start(self, slot, run, prefill: bool) -> None:
    ids = list(run.req.input_ids)
    if prefill:
      t0 = time.monotonic()
      run.prompt_routes = self.core.prefill(self.params, ids[:-1])
      self.core.install(slot.index, len(ids) - 1)
      self.stats.prefill_seconds += time.monotonic() - t0
      self.stats.prefill_tokens += len(ids) - 1
      run.keep, run.routed_from = 0, 0
      run.base_routes = engine_slots.head(run.prompt_routes, 0)
      slot.routes = run.prompt_routes  # a donor for the rest of a group
      slot.ctx = ids[:-1]
      run.forced = ids[-1:]
    else:
      self._keep_context(slot, run)
      chunk = ids[run.keep : -1]
      if chunk:  # appended in one forward by _flush_extends
        self._extends.append((slot, run, run.keep, chunk))
        self.stats.extended_tokens += len(chunk)
      slot.ctx = ids[:-1]
      run.forced = ids[-1:]
    run.cached = run.keep if not prefill else 0
    self.stats.fed_prompt_tokens += len(run.forced)
    run.pos, run.ring_start = len(slot.ctx), self.core.ring
    slot.run, slot.session = run, run.req.session_id
    slot.last_used = time.monotonic()

  def _keep_context(self, slot, run) -> None:
    """Slot's context becomes run.keep entries: its own, or the donor's."""
    source = slot if run.donor is None else run.donor
    if any(run.donor is s for s, *_ in self._extends):
      self._flush_extends()  # the donor's context is not complete yet
    if run.donor is not None:
      self.core.copy_context(run.donor.index, slot.index, run.keep)
    else:
      self.core.admit(slot.index, run.keep)
    run.base_routes = engine_slots.head(source.routes, run.keep)
    slot.routes = run.base_routes
    self.stats.reused_tokens += run.keep
    self.stats.copied_tokens += run.keep if run.donor is not None else 0
    run.routed_from = run.cached = run.keep

  def _start_chunked(self, slot, run) -> None:
    """Takes the slot; the prompt goes in by `_advance_chunks`."""
    ids = list(run.req.input_ids)
    self._keep_context(slot, run)
    slot.ctx = ids[: run.keep]  # grows as chunks land
    run.pending, run.chunk_routes = ids[run.keep : -1], []
    slot.run, slot.session = run, run.req.session_id
    slot.last_used = time.monotonic()
    if not run.pending:
      self._decode_from_here(slot, run)

  def _advance_chunks(self) -> None:
    """Appends one round of prompt chunks (prefill_chunk tokens at most)."""
    budget, rows = self.config.prefill_chunk, []
    for s in self.slots:
      if s.run is not None and s.run.pending and budget > 0:
        rows.append((s, s.run, s.run.pending[:budget]))
        budget -= len(rows[-1][2])
    if not rows:
      return
    t0 = time.monotonic()
    out = self.core.extend(
        self.params, [(s.index, len(s.ctx), chunk) for s, _, chunk in rows]
    )
    self.stats.chunks += 1
    self.stats.chunked_tokens += sum(len(c) for *_, c in rows)
    self.stats.extend_padded_tokens += out.padded_tokens
    self.stats.chunk_seconds += time.monotonic() - t0
    for (slot, run, chunk), routes in zip(rows, out.routing):
      # A sibling may copy this prefix before the prompt is all in.
      slot.routes = engine_slots.append_routes(
          slot.routes, len(slot.ctx), routes
      )
      slot.ctx = slot.ctx + chunk
      run.pending = run.pending[len(chunk) :]
      run.chunk_routes.append(routes)
      if not run.pending:
        self._decode_from_here(slot, run)

  def _decode_from_here(self, slot, run) -> None:
    """The prompt is in: the run decodes from the next block."""
    parts = run.chunk_routes
    if parts and all(r is not None for r in parts):
      run.prompt_routes = np.concatenate(parts)
    run.pending, run.chunk_routes = None, []
    # Blocks ran while the prompt went in, with this slot as a padding row:
    # clear its ring before it decodes into it.
    self.core.admit(slot.index, len(slot.ctx))
    run.forced = list(run.req.input_ids[-1:])
    self.stats.fed_prompt_tokens += 1
    run.pos, run.ring_start = len(slot.ctx), self.core.ring

  def _block(self) -> None:
    k, n = self.config.steps_per_call, self.config.slots
    forced = np.zeros((n, k), np.int32)
    n_forced, last, pos = (np.zeros(n, np.int32) for _ in range(3))
    seeds = np.zeros(n, np.uint32)
    temps, tops = np.zeros(n, np.float32), np.ones(n, np.float32)
    decoding = [s for s in self.slots if s.run and s.run.pending is None]
    for s in decoding:
      if r := s.run:
        rem = r.forced[r.fed_forced :][:k]
        forced[s.index, : len(rem)] = rem
        n_forced[s.index], last[s.index] = len(rem), r.last
        pos[s.index] = r.pos
        seeds[s.index] = r.req.seed % 2**32
        temps[s.index], tops[s.index] = r.req.temperature, r.req.top_p
    t0 = time.monotonic()
    active = [s.index for s in decoding]
    out = self.core.decode_block(
        self.params, forced, n_forced, last, pos, seeds, temps, tops, active
    )
    generated = 0
    for s in decoding:
      if r := s.run:
        before = len(r.tokens)
        reason = r.consume(out, s.index, k, self.version, self)
        generated += len(r.tokens) - before
        if reason:
          self._finish(s, reason)
    self.stats.record_block(time.monotonic() - t0, generated)

  def is_stop(self, tokens: list[int], req: T.GenerateRequest) -> bool:
    if tokens[-1] in req.stop_token_ids:
      return True
    if not req.stop_strings:
      return False
    # The newest token may decode to several characters past the stop.
    tail = self.decode_fn(tokens[-64:])
    return any(s in tail[-(len(s) + 16) :] for s in req.stop_strings)

  def _finish(self, slot, reason: str) -> None:
    run, slot.run = slot.run, None
    fed = run.fed
    routes, routed_from = run.routes(), run.routed_from
    if run.base_routes is not None and routes is not None:
      # The whole sequence's routing: the kept context's, then this run's.
      routes, routed_from = np.concatenate([run.base_routes, routes]), 0
    if run.release or len(slot.ctx) + len(fed) > self.config.max_context:
      slot.clear()
    else:
      if fed:
        self.core.commit(slot.index, run.ring_start, len(fed), len(slot.ctx))
      slot.ctx = slot.ctx + fed
      if routes is not None and routed_from == 0:
        slot.routes = routes
      else:  # still known if nothing was fed (aborted in its prompt)
        slot.routes = engine_slots.head(slot.routes, len(slot.ctx))
    slot.last_used = time.monotonic()
    self.stats.requests += 1
    self._deliver(run, run.result(reason, run.cached, routes, routed_from))

  def _deliver(self, run, result) -> None:
    with self._lock:
      self._ids.discard(run.rid)
    try:
      run.callback(result)
    except Exception:  # pylint: disable=broad-exception-caught
      pass  # a caller gone away must not stop the engine
