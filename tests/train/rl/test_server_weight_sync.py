"""ServerWeightSync moves rollout servers to the newest publish, compared by
version and publish id (a resumed learner reuses version numbers)."""

import json
import shutil

import httpx

from search_agent.train.rl import server_policy
from search_agent.train.rl import weight_sync

URLS = ('http://a:1', 'http://b:2')


def _publish(store: weight_sync.WeightStore, version: int, stamp: str):
  """A version directory as WeightStore.publish leaves it (no params: the
  fake servers never read them)."""
  d = store.root / str(version)
  shutil.rmtree(d, ignore_errors=True)
  d.mkdir()
  (d / weight_sync.STAMP_FILE).write_text(stamp, 'utf-8')


def _sync(tmp_path, fail=()):
  store = weight_sync.WeightStore(tmp_path / 'weights')
  pushes = []

  def handle(request: httpx.Request) -> httpx.Response:
    url = f'{request.url.scheme}://{request.url.host}:{request.url.port}'
    if url in fail:
      return httpx.Response(500, text='boom')
    pushes.append((url, json.loads(request.content)['version']))
    return httpx.Response(200, json={'recomputed_tokens': 3})

  sync = server_policy.ServerWeightSync(
      store, URLS, transport=httpx.MockTransport(handle)
  )
  return store, sync, pushes


def test_a_version_published_again_is_pushed_again(tmp_path):
  store, sync, pushes = _sync(tmp_path)
  _publish(store, 0, 'p0')
  _publish(store, 1, 'p1')
  assert sync.refresh() == 1
  assert pushes == [(URLS[0], 1), (URLS[1], 1)]
  assert sync.refresh() == 1 and len(pushes) == 2  # nothing new
  # The learner resumed from checkpoint 0: version 1 is removed (rollback)
  # and the lost update's number published again with new weights.
  store.rollback(0)
  _publish(store, 1, 'p1-resumed')
  assert sync.refresh() == 1
  assert pushes[2:] == [(URLS[0], 1), (URLS[1], 1)]
  assert sync.served == {u: (1, 'p1-resumed') for u in URLS}
  assert sync.loads == [1, 1]
  assert sync.recomputed_tokens == {1: 12}


def test_servers_move_back_while_a_version_is_replaced(tmp_path):
  store, sync, pushes = _sync(tmp_path)
  _publish(store, 0, 'p0')
  _publish(store, 1, 'p1')
  sync.refresh()
  store.rollback(0)  # version 1 holds a lost update: serve 0 meanwhile
  assert sync.refresh() == 0
  assert pushes[-2:] == [(URLS[0], 0), (URLS[1], 0)]


def test_a_failed_push_is_retried_and_reported(tmp_path):
  store, sync, pushes = _sync(tmp_path, fail=(URLS[1],))
  _publish(store, 0, 'p0')
  assert sync.refresh() == -1  # server b still serves none of ours
  assert pushes == [(URLS[0], 0)]
  assert [(v, u) for v, u, _ in sync.load_errors] == [(0, URLS[1])]
  assert sync.loads == []
  sync.refresh()  # a is not pushed again; b is tried again
  assert pushes == [(URLS[0], 0)] and len(sync.load_errors) == 2
