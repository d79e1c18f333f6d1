"""Every numeric field of every route, fuzzed: a 4xx or a 200, never a 5xx."""

import json

import httpx
import pytest

pytestmark = [pytest.mark.maxtext, pytest.mark.slow]

# Raw JSON literals: Python's json parses NaN, Infinity and 1e400 (as inf).
NON_FINITE = ('NaN', 'Infinity', '-Infinity', '1e400', '-1e400')
VALUES = NON_FINITE + (
    '1e308', '-1e308', '1' + '0' * 400, '-1', '0', '-0.0', '1e-320',
    '18446744073709551616', '"x"', '[1]', '{}', 'true', 'null',
)  # fmt: skip
MESSAGES = [{'role': 'user', 'content': 'Who was Lothair II?'}]
_SAMPLING = {'max_new_tokens': 1, 'temperature': 0.0}

# (route, base body, paths of its numeric fields, float fields among them).
ROUTES = (
    ('/generate', {'input_ids': [5, 6, 7], 'sampling': _SAMPLING},
     ('sampling.temperature', 'sampling.top_p', 'sampling.max_new_tokens',
      'sampling.seed', 'sampling.stop_token_ids.0', 'input_ids.1'),
     ('temperature', 'top_p')),
    ('/v1/chat/completions',
     {'messages': MESSAGES, 'max_tokens': 1, 'temperature': 0.0},
     ('temperature', 'top_p', 'max_tokens', 'max_completion_tokens', 'n',
      'seed', 'top_logprobs', 'frequency_penalty', 'presence_penalty'),
     ('temperature', 'top_p', 'frequency_penalty', 'presence_penalty')),
    ('/v1/completions', {'prompt': 'Lothair', 'max_tokens': 1,
                         'temperature': 0.0},
     ('temperature', 'top_p', 'max_tokens', 'max_completion_tokens', 'n',
      'seed', 'logprobs', 'frequency_penalty', 'presence_penalty',
      'prompt.0'),
     ('temperature', 'top_p', 'frequency_penalty', 'presence_penalty')),
    ('/update_weights', {'path': '/nonexistent/ckpt', 'version': 1},
     ('version', 'step'), ()),
)  # fmt: skip
_MARK = '"__FUZZ__"'


def _body(base: dict, path: str, raw: str) -> bytes:
  """`base` with the field at `path` (dotted; ints index lists) set to raw."""
  obj = json.loads(json.dumps(base))
  if path == 'sampling.stop_token_ids.0':
    obj['sampling']['stop_token_ids'] = [0]
  if path == 'prompt.0':
    obj['prompt'] = [5, 6]
  *parents, leaf = path.split('.')
  node = obj
  for key in parents:
    node = node[int(key)] if isinstance(node, list) else node[key]
  if isinstance(node, list):
    node[int(leaf)] = '__FUZZ__'
  else:
    node[leaf] = '__FUZZ__'
  return json.dumps(obj).replace(_MARK, raw).encode()


@pytest.mark.parametrize(
    'route, base, fields, floats', ROUTES, ids=[r[0] for r in ROUTES]
)
def test_no_numeric_value_gives_a_5xx(server, route, base, fields, floats):
  url, _ = server
  failures = []
  with httpx.Client(timeout=120) as client:
    for field in fields:
      for raw in VALUES:
        r = client.post(url + route, content=_body(base, field, raw))
        where = f'{route} {field}={raw[:12]}'
        if r.status_code >= 500:
          failures.append(f'{where}: {r.status_code} {r.text[:120]}')
          continue
        leaf = field.split('.')[-1]
        if leaf in floats and raw in NON_FINITE:
          if r.status_code != 400 or leaf not in r.json()['error']['message']:
            failures.append(f'{where}: {r.status_code} {r.text[:120]}')
  assert not failures, '\n'.join(failures)


def test_tiny_temperature_is_refused_not_nan(server):
  url, _ = server
  r = httpx.post(
      url + '/generate',
      json={
          'input_ids': [5, 6],
          'sampling': {'temperature': 1e-40, 'max_new_tokens': 2},
      },
      timeout=60,
  )
  assert r.status_code == 400 and 'temperature' in r.text, r.text
