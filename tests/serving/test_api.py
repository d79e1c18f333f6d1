"""The rollout server's token API over real HTTP (tiny MoE on CPU)."""

import concurrent.futures
import time

import httpx
import jax
import pytest

pytestmark = [pytest.mark.maxtext, pytest.mark.slow]


def _gen(url, ids, **kw):
  sampling = dict(temperature=0.0, max_new_tokens=8)
  sampling.update(kw.pop('sampling', {}))
  return httpx.post(
      url + '/generate', json=dict(input_ids=ids, sampling=sampling, **kw),
      timeout=300,
  )  # fmt: skip


def test_generate_shape_sessions_and_metrics(server):
  url, _ = server
  r = _gen(url, [5, 6, 7], session_id='a', return_routed_experts=True)
  assert r.status_code == 200, r.text
  out = r.json()
  assert len(out['token_ids']) == len(out['logprobs']) == 8
  assert out['finish_reason'] == 'length' and set(out['versions']) == {0}
  assert len(out['routed_experts']) == 3 + 8 - 1 and out['routed_from'] == 0
  nxt = [5, 6, 7] + out['token_ids'] + [9]
  out2 = _gen(url, nxt, session_id='a').json()
  assert out2['cached_tokens'] == 3 + 8 - 1
  stop = out2['token_ids'][2]
  s = _gen(url, nxt, session_id='b', sampling=dict(stop_token_ids=[stop]))
  assert s.json()['finish_reason'] == 'stop'
  assert s.json()['token_ids'] == out2['token_ids'][:3]
  m = httpx.get(url + '/metrics').json()
  for key in ('slots_busy', 'queue_depth', 'tokens_per_s', 'version',
              'prefill_tokens', 'reused_tokens'):  # fmt: skip
    assert key in m
  assert httpx.get(url + '/health').json()['status'] == 'ok'
  assert httpx.post(
      url + '/release_session', json={'session_id': 'a'}
  ).is_success


@pytest.mark.parametrize(
    'body, status, text',
    [
        (b'{not json', 400, 'not valid JSON'),
        (b'[1, 2]', 400, 'JSON object'),
        (b'{"input_ids": "abc"}', 400, 'list of ints'),
        (b'{"input_ids": [1, true]}', 400, 'list of ints'),
        (b'{"input_ids": []}', 400, 'empty'),
        (b'{"input_ids": [1], "sampling": {"temperature": "hot"}}', 400, 'float'),
        (b'{"input_ids": [1], "sampling": {"max_new_tokens": 999}}', 400,
         'max_new_tokens'),
        (b'{"input_ids": [1], "sampling": {"top_k": 5}}', 400, 'unknown'),
        (b'{"input_ids": [99999]}', 400, 'vocabulary'),
        (b'{"input_ids": [1], "sampling": {"stop_strings": [3]}}', 400,
         'list of strings'),
        (b'[' * 100000, 400, 'JSON'),
    ],
)  # fmt: skip
def test_bad_generate_bodies_are_4xx(server, body, status, text):
  url, _ = server
  r = httpx.post(url + '/generate', content=body, timeout=60)
  assert r.status_code == status, r.text
  assert text in r.json()['error']['message']


def test_prompt_over_the_limit_says_the_numbers(server):
  url, _ = server
  r = _gen(url, [1] * 1793)
  assert r.status_code == 400
  assert '1793 tokens' in r.text and '1792' in r.text


def test_control_endpoints(server):
  url, _ = server
  assert (
      httpx.post(url + '/abort', json={'request_ids': ['x']}).status_code == 404
  )
  assert httpx.post(url + '/abort', json={'oops': 1}).status_code == 400
  assert (
      httpx.post(
          url + '/release_session', json={'session_id': 'zz'}
      ).status_code
      == 404
  )
  assert httpx.post(url + '/pause').json() == {'paused': True}
  with concurrent.futures.ThreadPoolExecutor(12) as pool:
    futs = [
        pool.submit(_gen, url, [1, 2, i], request_id=f'r{i}') for i in range(12)
    ]
    # Paused: the first max_queue wait, the others get 429.
    time.sleep(1.0)
    dup = _gen(url, [1], request_id='r0')
    assert httpx.post(url + '/abort', json={'all': True}).status_code == 200
    replies = [f.result() for f in futs]
  codes = sorted(r.status_code for r in replies)
  assert codes.count(429) == 6 and codes.count(200) == 6
  assert dup.status_code in (409, 429)
  for r in replies:
    if r.status_code == 429:
      assert r.headers['retry-after'] == '1'
    else:
      assert r.json()['finish_reason'] == 'abort'
  assert httpx.post(url + '/resume').json() == {'paused': False}
  assert _gen(url, [1, 2]).status_code == 200


def test_update_weights(server, tmp_path):
  url, served = server
  engine = served.engine
  bad = httpx.post(
      url + '/update_weights', json={'path': str(tmp_path / 'no'), 'version': 3}
  )
  assert bad.status_code == 400 and 'does not exist' in bad.text
  assert (
      httpx.post(url + '/update_weights', json={'path': 1}).status_code == 400
  )
  # A checkpoint of another model shape: 409, and version 0 keeps serving.
  from search_agent.train import checkpoint as ckpt_lib

  other = ckpt_lib.Checkpointer(
      tmp_path / 'other/checkpoints', ckpt_lib.CheckpointConfig(every=1)
  )
  other.save(1, {'params': {'w': jax.numpy.ones(3)}, 'opt_state': {}}, {})
  other.close()
  r = httpx.post(
      url + '/update_weights',
      json={'path': str(tmp_path / 'other'), 'version': 3},
  )
  assert r.status_code == 409, r.text
  assert _gen(url, [4, 5]).json()['versions'][0] == 0
  # The same model's params, scaled: version 5 from the next token on.
  params = jax.tree.map(lambda x: x * 1.25, engine.params)
  good = ckpt_lib.Checkpointer(
      tmp_path / 'good/checkpoints', ckpt_lib.CheckpointConfig(every=1)
  )
  good.save(7, {'params': params, 'opt_state': {}}, {})
  good.close()
  first = _gen(url, [4, 5, 6], session_id='w').json()
  r = httpx.post(
      url + '/update_weights',
      json={'path': str(tmp_path / 'good'), 'version': 5},
      timeout=300,
  )
  assert r.status_code == 200, r.text
  assert r.json()['version'] == 5 and r.json()['step'] == 7
  assert r.json()['recomputed_tokens'] > 0
  turn = [4, 5, 6] + first['token_ids'] + [3]
  cached = _gen(url, turn, session_id='w').json()
  fresh = _gen(url, turn, session_id='w-fresh').json()
  assert cached['versions'] == [5] * 8 and cached['cached_tokens'] > 0
  assert cached['token_ids'] == fresh['token_ids']
