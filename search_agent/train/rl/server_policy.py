"""Rollout policies behind HTTP: the rollout server, or an OpenAI endpoint.

`rollout.policy` picks the worker's LLM:
  * 'in_process': the worker's own sampler (weight_sync.SyncedSampler).
  * 'server': N rollout servers (search_agent/serving) through the
    token-exact `ServerLLM` (a new session goes to the least-loaded server,
    later turns stay on it). Before each call the worker checks the weight
    store; a newer version is pushed to every server this worker has
    not yet given it with `POST /update_weights {path, version, step}` (the store's
    directory is a trainer-layout checkpoint root, `<v>/state`), letting
    in-flight requests finish first (`abort_in_flight` false), so every
    token is computed by the version the server stamps on it. Tokens keep
    the server's ids, logprobs, versions and routing records.
  * 'openai': any OpenAI-compatible chat endpoint (vLLM, SGLang, this
    repo's server's /v1), built through the role registry as role
    'policy' (llm/registry.py: timeouts, retries, concurrency and
    counters). Token ids come back only where the server returns them
    (vLLM `return_token_ids`, or `token_id:N` logprob tokens; this repo's
    server returns `token_ids`, `prompt_token_ids` and per-token
    `policy_versions`); without them every rollout fails the exactness
    check and is dropped. With `rollout.openai_push_weights` (this repo's
    server) the worker pushes each published version to the endpoint's
    root (`base_url` without `/v1`) as for 'server', and the tokens carry
    the versions the server stamps; without it (an endpoint whose operator
    loads the weights) tokens without a version get the store's newest at
    request time. What is lost against 'server': the endpoint renders each
    turn's prompt from text, so a reply whose text does not re-tokenize to
    the sampled ids breaks the prefix check (dropped, counted), and there
    is no routing record (set `parity.require_routing=False`; the learner
    routes those rows afresh and counts them as `unrouted_rows`).

A push that fails (server down, bad path) keeps that server on its old
version and is recorded in `load_errors`; it is retried at the next call.
"""

import asyncio
import collections
import dataclasses
import threading
import time
from typing import Any, Callable, Sequence

from absl import logging
import httpx
import numpy as np

from search_agent.llm import protocol
from search_agent.llm import role_client
from search_agent.llm import server_client
from search_agent.train.rl import weight_sync

POLICIES = ('in_process', 'server', 'openai')


def server_root(base_url: str) -> str:
  """The server root of an OpenAI `base_url` (its `/v1` suffix removed)."""
  url = base_url.rstrip('/')
  return url[: -len('/v1')] if url.endswith('/v1') else url


class ServerWeightSync:
  """Pushes the weight store's newest publish to every rollout server.

  A server is up to date when it took the store's newest version under
  that version's publish id: a resumed learner that publishes a version
  number again (weight_sync.WeightStore.rollback) is pushed again.

  Attributes:
    load_errors: (version, url, message) of every failed push.
    loads: Versions pushed to all servers, in order.
    recomputed_tokens: Version -> session tokens the servers recomputed
      when they took it (the push's re-prefill cost; live sessions only,
      since finished trajectories release theirs).
    served: url -> (version, publish id) the server was last moved to
      ((-1, '') before the first push).
  """

  def __init__(
      self,
      store: weight_sync.WeightStore,
      urls: Sequence[str],
      *,
      timeout_s: float = 3600.0,
      transport: httpx.BaseTransport | None = None,
  ):
    self.store, self.urls = store, tuple(u.rstrip('/') for u in urls)
    self.timeout_s = timeout_s
    self._transport = transport  # tests: an in-process fake of the servers
    self.load_errors: list[tuple[int, str, str]] = []
    self.loads: list[int] = []
    # url -> (version, publish id) it serves; (-1, '') before a push.
    self.served = {u: (-1, '') for u in self.urls}
    self.recomputed_tokens: dict[int, int] = {}
    self._lock = threading.Lock()

  @property
  def versions(self) -> dict[str, int]:
    return {u: v for u, (v, _) in self.served.items()}

  @property
  def policy_version(self) -> int:
    return min(v for v, _ in self.served.values())

  def refresh(self) -> int:
    """Pushes the newest publish where a server serves another; returns the
    oldest version served."""
    with self._lock:
      latest = self.store.latest()
      if latest is None or all(s == latest for s in self.served.values()):
        return self.policy_version
      version = latest[0]
      with httpx.Client(
          timeout=self.timeout_s, transport=self._transport
      ) as client:
        for url in self.urls:
          if self.served[url] == latest:
            continue
          try:  # always push: a fresh server's own version 0 is not ours
            self._push(client, url, version)
            self.served[url] = latest
          except (httpx.HTTPError, weight_sync.WeightSyncError) as e:
            self.load_errors.append((version, url, f'{type(e).__name__}: {e}'))
            logging.warning(
                'server %s keeps version %d: pushing %d failed: %s',
                url, self.versions[url], version, e,
            )  # fmt: skip
      if all(s == latest for s in self.served.values()):
        self.loads.append(version)
      return self.policy_version

  def _push(self, client: httpx.Client, url: str, version: int) -> None:
    resp = client.post(
        url + '/update_weights',
        json={
            'path': str(self.store.root),
            'version': version,
            'step': version,
            'abort_in_flight': False,
        },
    )
    if resp.status_code != 200:
      raise weight_sync.WeightSyncError(
          f'HTTP {resp.status_code}: {resp.text[:300]}'
      )
    self.recomputed_tokens[version] = self.recomputed_tokens.get(
        version, 0
    ) + int(resp.json().get('recomputed_tokens', 0))

  def wait_for_weights(
      self, timeout_s: float, sleep: Callable[[float], None] = time.sleep
  ) -> int:
    """Blocks until every server serves a published version."""
    waited = 0.0
    while self.refresh() < 0:
      if waited > timeout_s:
        raise weight_sync.WeightSyncError(
            f'no weights reached the servers {self.urls} after {timeout_s}s'
            f' (store {self.store.root}; errors {self.load_errors[-3:]})'
        )
      sleep(0.5)
      waited += 0.5
    return self.policy_version


def role_counters(llm: Any) -> dict[str, int]:
  """The HTTP counters of a `RoleLLM` policy ('openai'), else none."""
  if not isinstance(llm, role_client.RoleLLM):
    return {}
  r = llm.report()
  return {
      'policy_calls': r['calls'],
      'policy_failed_calls': r['failed_calls'],
      'policy_http_requests': r.get('http_requests', 0),
      'policy_http_retries': r.get('http_retries', 0),
  }


class SyncedServerLLM:
  """An `LLM` that syncs the servers' weights before each call.

  The wrapped LLM is a `RoutedServerLLM` ('server') or the 'openai'
  policy's `RoleLLM` (no sessions to release).
  """

  def __init__(self, llm: Any, sync: ServerWeightSync):
    self.llm, self.sync = llm, sync
    self.name = getattr(llm, 'name', 'rollout-server')

  async def chat(
      self,
      messages: Sequence[protocol.Message],
      params: protocol.SamplingParams,
  ) -> list[protocol.Completion]:
    await asyncio.to_thread(self.sync.refresh)
    return await self.llm.chat(messages, params)

  async def release(self, completions: Sequence[protocol.Completion]) -> int:
    """Releases a finished trajectory's sessions on the servers."""
    release = getattr(self.llm, 'release', None)
    return 0 if release is None else await release(completions)

  def session_counters(self) -> dict[str, int]:
    """Cumulative: session tokens recomputed by pushes, sessions released,
    and the 'openai' policy's calls and HTTP requests."""
    return {
        'push_recomputed_tokens': sum(self.sync.recomputed_tokens.values()),
        'released_sessions': getattr(self.llm, 'released_sessions', 0),
        **role_counters(self.llm),
    }


def abort_fn(urls: Sequence[str], timeout_s: float = 60.0):
  """`POST /abort {all: true}` on every server (Iris interruption)."""

  async def abort() -> None:
    async with httpx.AsyncClient(timeout=timeout_s) as client:
      for url in urls:
        try:
          await client.post(url.rstrip('/') + '/abort', json={'all': True})
        except httpx.HTTPError as e:  # the request then finishes normally
          logging.warning('abort on %s failed: %s', url, e)

  return abort


class RoutedServerLLM(server_client.ServerLLM):
  """`ServerLLM` that fills routing the server copied from a running slot.

  Workaround (search_agent/serving is read-only here): when a new session's
  prompt prefix is copied from a sibling rollout's slot that is still
  generating, the server has no routing for the copied positions yet and
  replies with `routed_from` > 0, so `ServerLLM` drops the record. The
  routing of those positions is the donor's (same tokens, same version), so
  this client keeps the full routing of every finished call and splices the
  covering one in, waiting up to `wait_s` for the donor to finish.
  """

  def __init__(self, *args, wait_s: float = 600.0, keep: int = 256, **kw):
    super().__init__(*args, **kw)
    self.wait_s, self.keep = wait_s, keep
    self._done: collections.OrderedDict[int, tuple] = collections.OrderedDict()
    self._n = 0
    self.spliced_routes = 0

  def _covering(self, prefix: tuple[int, ...]):
    for tokens, routes in reversed(self._done.values()):
      n = len(prefix)
      if len(routes) >= n and tokens[:n] == prefix:
        return routes[:n]
    return None

  async def _post(self, url: str, body: dict[str, Any]) -> dict[str, Any]:
    out = await super()._post(url, body)
    if 'routed_experts' not in out:
      return out
    prompt, start = tuple(body['input_ids']), int(out['routed_from'])
    new = np.asarray(out['routed_experts'], np.int32)
    if start > 0:
      t0 = time.monotonic()
      head = self._covering(prompt[:start])
      while head is None and time.monotonic() - t0 < self.wait_s:
        await asyncio.sleep(0.05)
        head = self._covering(prompt[:start])
      if head is None:
        return out  # ServerLLM keeps its own session's routing, or none
      new = np.concatenate([head, new])
      out = dict(out, routed_experts=new, routed_from=0)
      self.spliced_routes += 1
    self._n += 1
    self._done[self._n] = (prompt + tuple(out['token_ids']), new)
    while len(self._done) > self.keep:
      self._done.popitem(last=False)
    return out


class StampedLLM:
  """Stamps the store's newest version on completions that carry none."""

  def __init__(self, llm: Any, store: weight_sync.WeightStore):
    self.llm, self.store = llm, store
    self.name = getattr(llm, 'name', 'openai')

  async def chat(self, messages, params) -> list[protocol.Completion]:
    v = self.store.latest_version()
    out = await self.llm.chat(messages, params)
    return [
        c if c.policy_version is not None or v is None
        else dataclasses.replace(c, policy_version=v)
        for c in out
    ]  # fmt: skip

  def session_counters(self) -> dict[str, int]:
    """Cumulative: the policy's calls and HTTP requests."""
    return role_counters(self.llm)


class NoSync:
  """The 'openai' policy's sync without pushes (the endpoint's operator
  loads the weights)."""

  loads: list[int] = []
  load_errors: list[Any] = []
  policy_version = -1

  def wait_for_weights(self, timeout_s: float, sleep=None) -> int:
    del timeout_s, sleep
    return -1
