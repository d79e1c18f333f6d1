"""rollout.policy='openai': its client, weight pushes and local server."""

import asyncio
import contextlib
import http.server
import json
import os
import pathlib
import sys
import threading
import types

import httpx
import jax.numpy as jnp
import pytest

from search_agent.chat import tokenizer as tokenizer_lib
from search_agent.llm import protocol
from search_agent.llm import role_client
from search_agent.serving import local
from search_agent.train.rl import job as job_lib
from search_agent.train.rl import local_servers
from search_agent.train.rl import roles
from search_agent.train.rl import rollout_worker
from search_agent.train.rl import server_policy
from search_agent.train.rl import weight_sync
from tpu_configs import rl as rl_config

sys.path.insert(0, str(pathlib.Path(__file__).parent))
import rl_run  # pylint: disable=g-import-not-at-top,wrong-import-position

TOKENIZER = rl_run.REPO / 'tests' / 'chat' / 'golden' / 'tiny_tokenizer'


class _Pushes(http.server.BaseHTTPRequestHandler):
  """Answers POST /update_weights as the rollout server does, and keeps
  every body."""

  bodies: list[dict] = []

  def do_POST(self):  # pylint: disable=invalid-name
    body = json.loads(self.rfile.read(int(self.headers['Content-Length'])))
    self.bodies.append(body)
    out = json.dumps({'version': body['version'], 'recomputed_tokens': 3})
    self.send_response(200)
    self.send_header('Content-Type', 'application/json')
    self.end_headers()
    self.wfile.write(out.encode())

  def log_message(self, *args):
    del args


@pytest.fixture
def push_server():
  _Pushes.bodies = []
  srv = http.server.ThreadingHTTPServer(('127.0.0.1', 0), _Pushes)
  thread = threading.Thread(target=srv.serve_forever, daemon=True)
  thread.start()
  yield f'http://127.0.0.1:{srv.server_address[1]}', _Pushes.bodies
  srv.shutdown()
  thread.join(timeout=10)


def test_the_server_root_drops_v1():
  assert server_policy.server_root('http://h:8000/v1/') == 'http://h:8000'
  assert server_policy.server_root('http://h:8000') == 'http://h:8000'


def test_a_version_published_again_is_pushed_again(tmp_path, push_server):
  url, bodies = push_server
  store = weight_sync.WeightStore(tmp_path / 'weights')
  sync = server_policy.ServerWeightSync(store, (url,))
  assert sync.refresh() == -1 and not bodies  # nothing published
  store.publish({'w': jnp.zeros(2)}, 0)
  store.publish({'w': jnp.ones(2)}, 1)
  assert sync.refresh() == 1
  assert sync.refresh() == 1  # the same publish: no second push
  assert [b['version'] for b in bodies] == [1]
  assert bodies[0]['path'] == str(store.root)
  assert bodies[0]['abort_in_flight'] is False
  # A learner resumed from checkpoint 0 publishes its own version 1.
  store.rollback(0)
  store.publish({'w': jnp.full(2, 2.0)}, 1)
  assert sync.refresh() == 1
  assert [b['version'] for b in bodies] == [1, 1]
  assert sync.loads == [1, 1]
  assert sync.served[url] == store.latest()
  assert sync.recomputed_tokens == {1: 6}


def test_a_failed_push_keeps_the_old_version(tmp_path):
  store = weight_sync.WeightStore(tmp_path / 'weights')
  store.publish({'w': jnp.zeros(2)}, 0)
  sync = server_policy.ServerWeightSync(
      store, ('http://127.0.0.1:9',), timeout_s=2
  )
  assert sync.refresh() == -1
  assert sync.load_errors[0][:2] == (0, 'http://127.0.0.1:9')
  assert not sync.loads


def _openai(**over):
  c = rl_config.get_config('tiny')
  c.rollout.policy = 'openai'
  c.parity.require_routing = False
  c.rollout.openai.update(
      dict(base_url='http://127.0.0.1:1/v1', model='tiny', max_retries=1)
  )
  c.update(over)
  return c


def _policy(c, workdir):
  tok = tokenizer_lib.load_tokenizer(TOKENIZER)
  return roles.policy_for(c, str(workdir), [], tok)


def test_the_openai_policy_is_a_registry_role_with_pushes(tmp_path):
  llm, sync = _policy(_openai(), tmp_path)
  assert isinstance(llm, server_policy.SyncedServerLLM)
  role = llm.llm
  assert isinstance(role, role_client.RoleLLM) and role.role == 'policy'
  client = role.llm
  assert client.config.logprobs and client.config.return_token_ids
  assert client.config.max_retries == 1 and client.config.model == 'tiny'
  assert sync.urls == ('http://127.0.0.1:1',)
  assert llm.session_counters() == {
      'push_recomputed_tokens': 0, 'released_sessions': 0,
      'policy_calls': 0, 'policy_failed_calls': 0,
      'policy_http_requests': 0, 'policy_http_retries': 0,
  }  # fmt: skip


def test_without_pushes_the_store_stamps_the_versions(tmp_path):
  c = _openai()
  c.rollout.openai_push_weights = False
  llm, sync = _policy(c, tmp_path)
  assert isinstance(llm, server_policy.StampedLLM)
  assert isinstance(sync, server_policy.NoSync)
  assert llm.session_counters()['policy_calls'] == 0


def test_the_openai_policy_refuses_to_require_routing(tmp_path):
  c = _openai()
  c.parity.require_routing = True
  with pytest.raises(job_lib.RLSetupError, match='require_routing=False'):
    _policy(c, tmp_path)


def test_a_local_server_for_the_openai_policy():
  c = _openai()
  assert local_servers.wanted(c) == 0
  c.rollout.local_servers.count = 1
  assert local_servers.wanted(c) == 1
  c.rollout.local_servers.count = 2
  with pytest.raises(job_lib.RLSetupError, match='one endpoint'):
    local_servers.wanted(c)


def test_the_local_server_becomes_the_openai_endpoint(tmp_path, monkeypatch):
  started = []

  @contextlib.contextmanager
  def fake_started(specs, env, timeout_s, field):
    del env, timeout_s, field
    started.extend(specs)
    yield ['http://127.0.0.1:5']

  monkeypatch.setattr(local_servers.local, 'started', fake_started)
  c = _openai()
  c.rollout.local_servers.count = 1
  c.tokenizer.path = str(TOKENIZER)
  with local_servers.started(c, str(tmp_path)) as out:
    assert out.rollout.openai.base_url == 'http://127.0.0.1:5/v1'
    assert out.rollout.server_urls == ()
  assert len(started) == 1
  assert started[0].overrides['tokenizer'] == str(TOKENIZER)


@pytest.fixture(scope='module')
def served(tmp_path_factory):
  """The root URL of a tiny `python -m search_agent.serving` process."""
  log = tmp_path_factory.mktemp('served') / 'server.log'
  spec = local.ServerSpec(
      config=f'{rl_run.REPO}/tpu_configs/serve.py:tiny',
      overrides={'host': '127.0.0.1', 'tokenizer': str(TOKENIZER)},
      log=str(log),
  )
  env = dict(os.environ, XLA_FLAGS='--xla_force_host_platform_device_count=1')
  with local.started([spec], env, timeout_s=600.0) as (url,):
    yield url


@pytest.mark.maxtext
@pytest.mark.slow
def test_an_rl_pulse_through_the_openai_routes(served, tmp_path):
  """Rollouts over HTTP /v1/chat/completions: token ids, logprobs and
  versions from the server, the versions the worker pushed to it; the
  learner trains on them, routing afresh."""
  url = served
  workdir, log = tmp_path / 'run', tmp_path / 'log.txt'
  proc = rl_run.start(
      workdir,
      '--config.max_updates=2',
      '--config.rollout.policy=openai',
      f'--config.rollout.openai.base_url={url}/v1',
      '--config.rollout.openai.model=tiny',
      '--config.parity.require_routing=False',
      f'--config.tokenizer.path={TOKENIZER}',
      log=log,
  )
  assert proc.wait(timeout=900) == 0, rl_run.log_tail(log)
  recs = rl_run.metrics(workdir)
  assert [r['policy_version'] for r in recs] == [1, 2]
  # The learner trained on what came over HTTP: every row unrouted.
  for r in recs:
    assert r['trajectories'] > 0 and r['eligible_tokens'] > 0
    assert r['unrouted_rows'] == r['trajectories']
  assert sum(r['policy_http_requests'] for r in recs) >= sum(
      r['trajectories'] for r in recs
  )
  assert sum(r['policy_failed_calls'] for r in recs) == 0
  # Step 0: the server's logprobs (version 0, pushed) match the learner's.
  parity = json.loads((workdir / 'parity.json').read_text())
  assert parity['ok'] and not parity['routing_recorded'], parity
  assert parity['max_abs_logprob_diff'] < 0.01, parity
  seen = set()
  for line in (workdir / 'rollouts-w0.jsonl').read_text().splitlines():
    tok = json.loads(line)['tokens']
    gen = [v for v, m in zip(tok['versions'], tok['loss_mask']) if m]
    assert gen and all(v >= 0 for v in gen)
    seen.update(gen)
  assert seen and seen <= {0, 1}  # versions the learner published
  # The server took the learner's weights: pushed, not its own version 0.
  stats = httpx.get(url + '/metrics').json()
  assert stats['weight_updates'] >= 2 and stats['requests'] > 0
  served_version = httpx.get(url + '/health').json()['version']
  assert max(seen) <= served_version <= recs[-1]['policy_version']


def test_the_llm_judges_are_a_counted_role():
  c = rl_config.get_config('tiny')
  c.judge.kind = 'llm'
  c.judge.llm = {'kind': 'scripted', 'name': 'j', 'script': ('<answer>',)}
  scorer = job_lib.scorer(c)
  assert isinstance(scorer.answer_judge, role_client.RoleLLM)
  assert scorer.answer_judge.role == 'judge'
  params = protocol.SamplingParams(max_tokens=4)
  asyncio.run(scorer.claim_judge.chat([{'role': 'user', 'content': 'q'}],
                                      params))  # fmt: skip
  counts = scorer.counters()
  assert counts['judge_calls'] == 1 and counts['judge_parse_failures'] == 0


def test_the_worker_reports_policy_and_judge_counts_once():
  class Counting:

    def __init__(self, name, key):
      self.n, self.key = 0, key
      setattr(self, name, lambda: {self.key: self.n})

  worker = types.SimpleNamespace(
      policy=Counting('session_counters', 'policy_calls'),
      scorer=Counting('counters', 'judge_calls'),
      _counted={},
  )
  take = lambda: rollout_worker.RolloutWorker._new_session_counts(worker)  # pylint: disable=protected-access
  worker.policy.n, worker.scorer.n = 3, 7
  assert take() == {'policy_calls': 3, 'judge_calls': 7}
  worker.policy.n = 5
  assert take() == {'policy_calls': 2, 'judge_calls': 0}
