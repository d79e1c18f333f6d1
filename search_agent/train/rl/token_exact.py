"""Token exactness of a rollout, and its routing record across calls.

The learner trains on the token ids, logprobs and versions the sampler
produced, never on a re-rendered chat. `RecordingLLM` keeps every completion
of one rollout; `check` verifies that each call's prompt is a token prefix
of the trajectory's token record and that its generated tokens and sampling
logprobs follow at that position; a rollout that fails is dropped (the
caller counts it). A rollout whose context slid has several segments
(`agent.token_record`): `split_calls` hands each segment the calls it holds
and `check_segments` checks every segment that way. `stitch_routing` joins
the per-call routing records into one [tokens - 1, layers, top_k] record:
each position keeps the experts of the first call that computed it (as a
sampler reusing its KV cache across turns would), so a generated token
keeps the routes it was sampled with.
"""

import base64
import dataclasses
from typing import Any, Sequence

import numpy as np

from search_agent.agent import trajectory as traj_lib
from search_agent.llm import protocol


class RecordingLLM:
  """Passes chats to `llm` and keeps every completion (one rollout)."""

  def __init__(self, llm: protocol.LLM):
    self.llm = llm
    self.name = llm.name
    self.calls: list[protocol.Completion] = []

  async def chat(self, messages, params) -> list[protocol.Completion]:
    out = await self.llm.chat(messages, params)
    self.calls.extend(out)
    return out


def check(
    record: traj_lib.TokenRecord | None,
    calls: Sequence[protocol.Completion],
    note: str = '',
) -> str:
  """'' when every call is a token-exact slice of `record`, else why not."""
  if record is None:
    return note or 'no token record'
  ids, lps = record.token_ids, record.logprobs
  for i, c in enumerate(calls, 1):
    p, g = c.prompt_token_ids, c.token_ids
    if p is None or g is None:
      return f'call {i} returned no token ids'
    if tuple(ids[: len(p)]) != tuple(p):
      return f'the prompt of call {i} is not a token prefix of the trajectory'
    if tuple(ids[len(p) : len(p) + len(g)]) != tuple(g):
      return f'the generated tokens of call {i} are not in the trajectory'
    got = np.asarray(lps[len(p) : len(p) + len(g)], np.float64)
    if not np.allclose(got, np.asarray(c.logprobs or (), np.float64)):
      return f'the sampling logprobs of call {i} were not kept'
  return ''


def split_calls(
    segments: Sequence[traj_lib.TokenRecord],
    calls: Sequence[protocol.Completion],
) -> list[list[protocol.Completion]] | str:
  """The calls of each segment, in order, or why they do not fit.

  A call belongs to the segment its prompt is a token prefix of; the calls
  of one segment are consecutive, and every segment holds at least one.
  """
  out: list[list[protocol.Completion]] = [[] for _ in segments]
  j = 0
  for i, c in enumerate(calls, 1):
    p = c.prompt_token_ids
    if p is None:
      return f'call {i} returned no token ids'
    starts = lambda k: tuple(segments[k].token_ids[: len(p)]) == tuple(p)
    if out[j] and not starts(j):
      j += 1  # the context slid: this call starts the next segment
    if j == len(segments) or not starts(j):
      return f'the prompt of call {i} is not a token prefix of its segment'
    out[j].append(c)
  if any(not part for part in out):
    return 'a segment of the trajectory holds no call'
  return out


def check_segments(
    segments: Sequence[traj_lib.TokenRecord],
    calls: Sequence[protocol.Completion],
    note: str = '',
) -> str:
  """'' when every segment is token exact for its calls, else why not."""
  if not segments:
    return note or 'no token record'
  parts = split_calls(segments, calls)
  if isinstance(parts, str):
    return parts
  for k, (segment, part) in enumerate(zip(segments, parts), 1):
    why = check(segment, part)
    if why:
      return f'segment {k}: {why}' if len(segments) > 1 else why
  return ''


def stitch_segments(
    segments: Sequence[traj_lib.TokenRecord],
    calls: Sequence[protocol.Completion],
) -> list[np.ndarray | None]:
  """`stitch_routing` of each segment over its own calls."""
  parts = split_calls(segments, calls)
  if isinstance(parts, str):
    raise ValueError(parts)
  return [
      stitch_routing(part, len(segment.token_ids))
      for segment, part in zip(segments, parts)
  ]


def routed(
    traj: traj_lib.Trajectory, calls: Sequence[protocol.Completion]
) -> traj_lib.Trajectory | str:
  """`traj` with each segment's routing record, or why it is not exact."""
  why = check_segments(traj.segments, calls, traj.meta.get('tokens_note', ''))
  if why:
    return why
  routes = stitch_segments(traj.segments, calls)
  return _with_segments(
      traj,
      tuple(
          dataclasses.replace(
              seg, routed_experts=None if r is None else encode_routing(r)
          )
          for seg, r in zip(traj.segments, routes)
      ),
  )


def unrouted(traj: traj_lib.Trajectory) -> traj_lib.Trajectory:
  """`traj` without routing records (for files people read)."""
  return _with_segments(
      traj,
      tuple(
          dataclasses.replace(seg, routed_experts=None) for seg in traj.segments
      ),
  )


def _with_segments(traj, segments):
  tokens = segments[0] if traj.tokens is not None else None
  return dataclasses.replace(traj, tokens=tokens, segments=segments)


def stitch_routing(
    calls: Sequence[protocol.Completion], n_tokens: int
) -> np.ndarray | None:
  """[n_tokens - 1, layers, top_k] int32 routing, or None if not recorded.

  Raises:
    ValueError: the calls' records do not cover the trajectory.
  """
  parts, covered = [], 0
  for i, c in enumerate(calls, 1):
    r = c.routed_experts
    if r is None:
      return None
    r = np.asarray(r, np.int32)
    if r.shape[0] > covered:
      parts.append(r[covered:])
      covered = r.shape[0]
    del i
  if covered != n_tokens - 1:
    raise ValueError(
        f'routing covers {covered} positions; the trajectory has {n_tokens}'
        ' tokens (expected one fewer)'
    )
  return np.concatenate(parts, axis=0)


def encode_routing(routes: np.ndarray) -> dict[str, Any]:
  """A routing record as compact JSON: {'shape', 'dtype', 'b64'}.

  uint8 while experts fit (< 256), else int16 / int32; a recipe rollout
  (32k tokens x 48 layers x top-8) is ~12 MB of uint8 instead of ~40 MB of
  JSON numbers.
  """
  r = np.asarray(routes)
  top = int(r.max()) if r.size else 0
  dtype = np.uint8 if top < 256 else np.int16 if top < 32768 else np.int32
  return {
      'shape': list(r.shape),
      'dtype': np.dtype(dtype).name,
      'b64': base64.b64encode(r.astype(dtype).tobytes()).decode('ascii'),
  }


def decode_routing(obj: Any) -> np.ndarray:
  """`encode_routing`'s dict (or nested lists) -> int32 array."""
  if isinstance(obj, dict):
    raw = base64.b64decode(obj['b64'])
    arr = np.frombuffer(raw, dtype=np.dtype(obj['dtype']))
    return arr.reshape(obj['shape']).astype(np.int32)
  return np.asarray(obj, np.int32)
