"""`LLM` over the rollout server's token API (search_agent/serving).

Token-exact: the chat is rendered to prompt ids here (a `PromptRenderer`,
as for the in-process sampler), `POST /generate` returns generated ids,
their sampling logprobs and policy versions, so trajectories keep exactly
the tokens sampled (never re-tokenized text).

Sessions: each call is sent with a session id so the server keeps its KV
for the next turn. A call whose prompt extends an earlier call's prompt +
generated tokens (the next turn of the same trajectory) reuses that call's
session; otherwise a new session starts. With several servers, a new
session goes to the server with the fewest requests in flight from this
client, and stays there (sticky). Routing records (when asked for) are kept
per session, so a completion's routing covers its whole prompt.

Release: when a trajectory ends its caller passes its completions to
`release`, which drops the sessions they ran in (here and with `POST
/release_session`), so the server stops keeping their KV and a weight push
recomputes only sessions still in use. A session dropped from this client's
memory (max_sessions) is released the same way.

Retries: transport errors, timeouts, 429 (after its Retry-After) and 5xx
are retried with backoff; a prompt over the server's context is
ContextLengthError; other 4xx raise LLMError.
"""

import asyncio
import collections
import dataclasses
import random
from typing import Any, Sequence
import uuid
import weakref

import httpx
import numpy as np

from search_agent.llm import protocol
from search_agent.llm import sampler_client


@dataclasses.dataclass(frozen=True, kw_only=True)
class ServerConfig:
  """Where the rollout servers are and how to call them.

  Attributes:
    base_urls: Server roots, e.g. ('http://10.0.0.5:8000',).
    timeout_s: Read timeout of one request.
    max_retries: Retries after the first attempt.
    backoff_s: First backoff (doubles, +-25% jitter, at most 30 s).
    routed_experts: Ask for routing records (routing replay).
    max_sessions: Sessions remembered for reuse (least recent dropped).
  """

  base_urls: tuple[str, ...]
  timeout_s: float = 1800.0
  max_retries: int = 4
  backoff_s: float = 0.5
  routed_experts: bool = False
  max_sessions: int = 4096

  def __post_init__(self):
    if not self.base_urls:
      raise ValueError('ServerConfig.base_urls is empty')


@dataclasses.dataclass
class _Session:
  sid: str
  url: str
  tokens: tuple[int, ...]  # prompt + generated of its last call
  routes: Any = None  # routing of every token fed on the server


class ServerLLM:
  """The rollout server behind the `LLM` protocol."""

  def __init__(
      self,
      config: ServerConfig,
      prompts: sampler_client.PromptRenderer,
      *,
      name: str = 'rollout-server',
      transport: httpx.AsyncBaseTransport | None = None,
  ):
    self.config, self.prompts, self.name = config, prompts, name
    self.stop_ids = tuple(prompts.stop_token_ids)
    self.in_flight = collections.Counter({u: 0 for u in config.base_urls})
    self._sessions: collections.OrderedDict[str, _Session] = (
        collections.OrderedDict()
    )
    self._transport = transport
    self._clients = weakref.WeakKeyDictionary()
    self._dropped: list[_Session] = []  # forgotten, not yet released
    self.released_sessions = 0

  def _client(self) -> httpx.AsyncClient:
    loop = asyncio.get_running_loop()
    if loop not in self._clients:
      self._clients[loop] = httpx.AsyncClient(
          timeout=httpx.Timeout(self.config.timeout_s, connect=10.0),
          transport=self._transport,
      )
    return self._clients[loop]

  async def aclose(self) -> None:
    client = self._clients.pop(asyncio.get_running_loop(), None)
    if client:
      await client.aclose()

  async def chat(
      self,
      messages: Sequence[protocol.Message],
      params: protocol.SamplingParams,
  ) -> list[protocol.Completion]:
    prompt = sampler_client.render_prompt(self.prompts, messages, self.name)
    return list(
        await asyncio.gather(*(
            self._one(prompt, params, i) for i in range(params.n)
        ))
    )  # fmt: skip

  def _session_for(self, prompt: tuple[int, ...]) -> _Session:
    best = None
    for s in self._sessions.values():
      if len(s.tokens) <= len(prompt) and prompt[: len(s.tokens)] == s.tokens:
        if best is None or len(s.tokens) > len(best.tokens):
          best = s
    if best is not None:
      del self._sessions[best.sid]  # re-added after the call
      return best
    url = min(self.config.base_urls, key=lambda u: self.in_flight[u])
    return _Session(sid=uuid.uuid4().hex, url=url, tokens=())

  async def _one(self, prompt, params, i) -> protocol.Completion:
    session = self._session_for(prompt) if i == 0 else _Session(
        sid=uuid.uuid4().hex,
        url=min(self.config.base_urls, key=lambda u: self.in_flight[u]),
        tokens=(),
    )  # fmt: skip
    body = {
        'input_ids': list(prompt),
        'sampling': {
            'temperature': params.temperature,
            'top_p': params.top_p,
            'max_new_tokens': params.max_tokens,
            'stop_token_ids': list(self.stop_ids),
            'stop_strings': list(params.stop),
            'seed': (params.seed or 0) + i,
        },
        'session_id': session.sid,
        'return_routed_experts': self.config.routed_experts,
    }
    self.in_flight[session.url] += 1
    try:
      out = await self._post(session.url, body)
    finally:
      self.in_flight[session.url] -= 1
    ids = tuple(int(t) for t in out['token_ids'])
    routes = self._routes(session, out, prompt, ids)
    session.tokens = prompt + ids
    self._sessions[session.sid] = session
    while len(self._sessions) > self.config.max_sessions:
      self._dropped.append(self._sessions.popitem(last=False)[1])
    if self._dropped:
      await self._release(self._dropped)
    versions = out['versions']
    body_ids = ids[:-1] if ids and ids[-1] in self.stop_ids else ids
    return protocol.Completion(
        text=self.prompts.decode(body_ids),
        finish_reason=out['finish_reason'],
        token_ids=ids,
        logprobs=tuple(float(x) for x in out['logprobs']),
        policy_version=versions[0] if versions else None,
        routed_experts=routes,
        prompt_token_ids=prompt,
        prompt_tokens=len(prompt),
    )

  async def release(self, completions: Sequence[protocol.Completion]) -> int:
    """Releases the sessions whose last call is one of `completions`.

    Call it with every completion of a finished trajectory (a window that
    slid leaves one session per window). Returns the sessions released.
    """
    ends = {
        tuple(c.prompt_token_ids) + tuple(c.token_ids)
        for c in completions
        if c.prompt_token_ids is not None and c.token_ids is not None
    }
    done = [s for s in self._sessions.values() if s.tokens in ends]
    for s in done:
      del self._sessions[s.sid]
    return await self._release(done)

  async def _release(self, sessions: list[_Session]) -> int:
    """`POST /release_session` for each; 404 (evicted already) is fine."""
    gone = {id(s) for s in sessions}
    self._dropped = [s for s in self._dropped if id(s) not in gone]
    n = 0
    for s in sessions:
      try:
        resp = await self._client().post(
            s.url.rstrip('/') + '/release_session', json={'session_id': s.sid}
        )
      except httpx.HTTPError:
        self._dropped.append(s)  # retried with the next release
        continue
      n += resp.status_code in (200, 404)
    self.released_sessions += n
    return n

  def _routes(self, session, out, prompt, ids):
    if 'routed_experts' not in out:
      return None
    new = np.asarray(out['routed_experts'], np.int32)
    start = out['routed_from']
    old = session.routes
    if start == 0:
      full = new
    elif old is not None and len(old) >= start:
      full = np.concatenate([old[:start], new])
    else:
      session.routes = None
      return None
    session.routes = full
    return full[: len(prompt) + len(ids) - 1]

  async def _post(self, url: str, body: dict[str, Any]) -> dict[str, Any]:
    last = ''
    for attempt in range(self.config.max_retries + 1):
      wait = None
      try:
        resp = await self._client().post(
            url.rstrip('/') + '/generate', json=body
        )
      except httpx.HTTPError as e:
        last = f'{type(e).__name__}: {e}'
      else:
        if resp.status_code == 200:
          try:
            return resp.json()
          except ValueError:
            last = f'malformed reply {resp.text[:200]!r}'
        elif resp.status_code == 429 or resp.status_code >= 500:
          last = f'HTTP {resp.status_code}: {resp.text[:300]}'
          wait = _retry_after(resp.headers.get('retry-after'))
        else:
          text = resp.text[:500]
          kind = protocol.LLMError
          if resp.status_code == 400 and 'too long' in text:
            kind = protocol.ContextLengthError
          raise kind(f'{url} returned HTTP {resp.status_code}: {text}')
      if attempt < self.config.max_retries:
        delay = self.config.backoff_s * 2**attempt * random.uniform(0.75, 1.25)
        await asyncio.sleep(max(min(delay, 30.0), wait or 0.0))
    raise protocol.LLMError(
        f'{url}: gave up after {self.config.max_retries + 1} attempts; last'
        f' error: {last}'
    )


def _retry_after(value: str | None) -> float | None:
  try:
    return max(0.0, float(value)) if value else None
  except ValueError:
    return None
