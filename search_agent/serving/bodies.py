"""Request bodies of the rollout server: parsed and checked, or BadRequest.

Every field is checked for type and range here, so nothing a client sends
reaches the engine malformed; messages echo at most 40 characters of a
value.
"""

import json
import math
from typing import Any

from search_agent.model import engine_types as T

_ECHO = 40
SAMPLING_FIELDS = (
    'temperature', 'top_p', 'max_new_tokens', 'stop_token_ids',
    'stop_strings', 'seed',
)  # fmt: skip


class BadRequest(Exception):
  """A 4xx reply: status and message."""

  def __init__(self, status: int, message: str):
    super().__init__(message)
    self.status, self.message = status, message


def clip(value: Any) -> str:
  text = repr(value)
  return text if len(text) <= _ECHO else text[: _ECHO - 3] + '...'


def parse_json(body: bytes, max_bytes: int) -> dict[str, Any]:
  if len(body) > max_bytes:
    raise BadRequest(413, f'body of {len(body)} bytes; limit {max_bytes}')
  try:
    obj = json.loads(body)
  except (ValueError, RecursionError) as e:
    raise BadRequest(400, f'body is not valid JSON: {e}') from e
  if not isinstance(obj, dict):
    raise BadRequest(400, f'body must be a JSON object, got {clip(obj)}')
  return obj


def check_fields(obj: dict, allowed: tuple[str, ...], where: str = 'body'):
  unknown = sorted(set(obj) - set(allowed))
  if unknown:
    raise BadRequest(
        400, f'unknown {where} fields {unknown[:5]}; allowed: {list(allowed)}'
    )


def get(obj: dict, key: str, kind, default=None, *, required=False):
  """obj[key] checked against `kind` (int, float, str, bool, 'ints', 'strs').

  A float must be finite: JSON's NaN, Infinity and 1e400 (which Python
  parses as inf) are refused here, naming the field.
  """
  if key not in obj or obj[key] is None:
    if required:
      raise BadRequest(400, f'missing field {key!r}')
    return default
  v = obj[key]
  ok = {
      int: lambda x: isinstance(x, int) and not isinstance(x, bool),
      float: lambda x: isinstance(x, (int, float)) and not isinstance(x, bool),
      str: lambda x: isinstance(x, str),
      bool: lambda x: isinstance(x, bool),
      'ints': lambda x: isinstance(x, list)
      and all(isinstance(i, int) and not isinstance(i, bool) for i in x),
      'strs': lambda x: isinstance(x, list)
      and all(isinstance(i, str) for i in x),
  }[kind](v)
  if not ok:
    name = {'ints': 'a list of ints', 'strs': 'a list of strings'}.get(
        kind, getattr(kind, '__name__', str(kind))
    )
    raise BadRequest(400, f'field {key!r} must be {name}, got {clip(v)}')
  if kind is float:
    return finite(key, v)
  return v


def finite(key: str, value: int | float) -> float:
  """`value` as a finite float, or BadRequest naming `key`."""
  try:
    out = float(value)
  except OverflowError:  # an int past the float range
    out = math.inf
  if not math.isfinite(out):
    raise BadRequest(
        400, f'field {key!r} must be a finite number, got {clip(value)}'
    )
  return out


def generate_request(obj: dict) -> T.GenerateRequest:
  """The body of POST /generate."""
  check_fields(
      obj,
      ('input_ids', 'sampling', 'session_id', 'request_id',
       'return_routed_experts'),
  )  # fmt: skip
  ids = get(obj, 'input_ids', 'ints', required=True)
  s = obj.get('sampling') or {}
  if not isinstance(s, dict):
    raise BadRequest(400, f'field sampling must be an object, got {clip(s)}')
  check_fields(s, SAMPLING_FIELDS, 'sampling')
  return T.GenerateRequest(
      input_ids=tuple(ids),
      temperature=get(s, 'temperature', float, 1.0),
      top_p=get(s, 'top_p', float, 1.0),
      max_new_tokens=get(s, 'max_new_tokens', int, 128),
      stop_token_ids=tuple(get(s, 'stop_token_ids', 'ints', [])),
      stop_strings=tuple(get(s, 'stop_strings', 'strs', [])),
      seed=get(s, 'seed', int, 0),
      session_id=get(obj, 'session_id', str),
      request_id=get(obj, 'request_id', str),
  )


def generate_response(r: T.GenerateResult, routed: bool) -> dict[str, Any]:
  out = {
      'request_id': r.request_id,
      'token_ids': list(r.token_ids),
      'logprobs': list(r.logprobs),
      'versions': list(r.versions),
      'finish_reason': r.finish_reason,
      'cached_tokens': r.cached_tokens,
  }
  if routed and r.routed_experts is not None:
    out['routed_experts'] = r.routed_experts.tolist()
    out['routed_from'] = r.routed_from
  return out
