"""An LLM client for OpenAI-compatible chat servers (vLLM, SGLang, ...).

Speaks `POST {base_url}/chat/completions` over httpx with a per-request
timeout, bounded concurrency, and retries with exponential backoff on
transport errors, timeouts, undecodable bodies, HTTP 408/409/429/5xx and
malformed replies. Every
other failure raises `LLMError` with the status and the start of the body.

When the server returns them, completions carry token ids (vLLM's
`return_token_ids`, or `token_id:N` logprob tokens), per-token logprobs and
the prompt token ids, so trajectories can be token-exact, and the weight
version of the tokens (search_agent.serving's `policy_versions`: one list
per choice, one version per generated token; the oldest is the
completion's `policy_version`).
"""

import asyncio
import dataclasses
import json
import os
import random
from typing import Any, Sequence
import weakref

import httpx

from search_agent.llm import protocol

_RETRY_STATUS = frozenset({408, 409, 429, 500, 502, 503, 504})
_CONTEXT_HINTS = (
    'context length',
    'maximum context',
    'context_length',
    'too long',
)


@dataclasses.dataclass(frozen=True, kw_only=True)
class OpenAIConfig:
  """Where and how to reach an OpenAI-compatible server.

  Attributes:
    base_url: API root, e.g. 'http://127.0.0.1:8000/v1'.
    model: Model name sent with every request (and recorded in manifests).
    api_key_env: Name of the environment variable holding the API key; empty
      for servers without auth. The key itself never appears in configs.
    timeout_s: Read timeout of one request (long generations need minutes).
    connect_timeout_s: Connect timeout of one request.
    max_retries: Retries after the first attempt (so attempts = 1 + retries).
    backoff_s: First backoff; doubles each retry, with +-25% jitter.
    max_backoff_s: Upper bound of one backoff.
    max_concurrency: Requests in flight at once from this client.
    logprobs: Ask for per-token logprobs of the sampled tokens.
    return_token_ids: Ask for token ids (vLLM extension `return_token_ids`).
    tool_role: How tool observations are sent: 'tool' (role tool) or 'user'
      (wrapped in `<tool_response>` tags, for templates without a tool role).
    extra_body: Extra JSON fields merged into every request body.
  """

  base_url: str
  model: str
  api_key_env: str = ''
  timeout_s: float = 600.0
  connect_timeout_s: float = 10.0
  max_retries: int = 4
  backoff_s: float = 1.0
  max_backoff_s: float = 30.0
  max_concurrency: int = 64
  logprobs: bool = False
  return_token_ids: bool = False
  tool_role: str = 'tool'
  extra_body: dict[str, Any] = dataclasses.field(default_factory=dict)

  def __post_init__(self):
    if self.tool_role not in ('tool', 'user'):
      raise ValueError(
          f"tool_role must be 'tool' or 'user', got {self.tool_role!r}"
      )
    if self.max_concurrency < 1 or self.max_retries < 0:
      raise ValueError('max_concurrency must be >= 1 and max_retries >= 0')


class _Retryable(Exception):
  """An attempt failed in a way worth retrying (after `wait_s`, if set)."""

  def __init__(self, message: str, wait_s: float | None = None):
    super().__init__(message)
    self.wait_s = wait_s


def _retry_after(value: str | None) -> float | None:
  """Seconds from a numeric Retry-After header (dates are ignored)."""
  try:
    return max(0.0, float(value)) if value else None
  except ValueError:
    return None


class OpenAIClient:
  """`LLM` over an OpenAI-compatible HTTP endpoint.

  Attributes:
    name: The model name.
    requests: Chat calls sent (each one or more attempts).
    attempts: Total HTTP attempts made (retries included), for manifests.
    failures: Chat calls that raised `LLMError` (retries spent or not
      retryable).
  """

  def __init__(
      self,
      config: OpenAIConfig,
      *,
      transport: httpx.AsyncBaseTransport | None = None,
  ):
    self.config = config
    self.name = config.model
    self.requests = 0
    self.attempts = 0
    self.failures = 0
    self._transport = transport
    self._per_loop = weakref.WeakKeyDictionary()

  def _client(self) -> tuple[httpx.AsyncClient, asyncio.Semaphore]:
    # httpx clients and semaphores are bound to one event loop each.
    key = asyncio.get_running_loop()
    if key not in self._per_loop:
      headers = {}
      if self.config.api_key_env:
        key_value = os.environ.get(self.config.api_key_env)
        if not key_value:
          raise protocol.LLMError(
              f'environment variable {self.config.api_key_env} (api_key_env)'
              ' is empty: export the API key or clear api_key_env'
          )
        headers['Authorization'] = f'Bearer {key_value}'
      timeout = httpx.Timeout(
          self.config.timeout_s, connect=self.config.connect_timeout_s
      )
      client = httpx.AsyncClient(
          base_url=self.config.base_url.rstrip('/'),
          headers=headers,
          timeout=timeout,
          transport=self._transport,
      )
      semaphore = asyncio.Semaphore(self.config.max_concurrency)
      self._per_loop[key] = (client, semaphore)
    return self._per_loop[key]

  async def aclose(self) -> None:
    """Closes the connections opened from the running event loop."""
    entry = self._per_loop.pop(asyncio.get_running_loop(), None)
    if entry:
      await entry[0].aclose()

  def request_body(
      self,
      messages: Sequence[protocol.Message],
      params: protocol.SamplingParams,
  ) -> dict[str, Any]:
    """The JSON body sent for one chat call."""
    body: dict[str, Any] = {
        'model': self.config.model,
        'messages': [self._wire_message(m) for m in messages],
        'temperature': params.temperature,
        'top_p': params.top_p,
        'max_tokens': params.max_tokens,
        'n': params.n,
    }
    if params.stop:
      body['stop'] = list(params.stop)
    if params.seed is not None:
      body['seed'] = params.seed
    if self.config.logprobs:
      body['logprobs'] = True
    if self.config.return_token_ids:
      body['return_token_ids'] = True
    body.update(self.config.extra_body)
    return body

  def _wire_message(self, m: protocol.Message) -> dict[str, Any]:
    role, content = m['role'], m['content']
    if role == 'tool' and self.config.tool_role == 'user':
      return {
          'role': 'user',
          'content': f'<tool_response>\n{content}\n</tool_response>',
      }
    if role == 'assistant' and m.get('reasoning'):
      content = f'<think>\n{m["reasoning"]}\n</think>\n\n{content}'
    return {'role': role, 'content': content}

  async def chat(
      self,
      messages: Sequence[protocol.Message],
      params: protocol.SamplingParams,
  ) -> list[protocol.Completion]:
    body = self.request_body(messages, params)
    last, wait = '', None
    client, semaphore = self._client()
    self.requests += 1
    async with semaphore:
      for attempt in range(self.config.max_retries + 1):
        if attempt:
          await asyncio.sleep(self._backoff(attempt, wait))
        self.attempts += 1
        try:
          return await self._attempt(client, body, params.n)
        except _Retryable as e:
          last, wait = str(e), e.wait_s
        except protocol.LLMError:
          self.failures += 1
          raise
    self.failures += 1
    raise protocol.LLMError(
        f'{self.config.base_url} model {self.config.model!r}: gave up after'
        f' {self.config.max_retries + 1} attempts; last error: {last}'
    )

  def _backoff(self, attempt: int, retry_after: float | None) -> float:
    """Exponential backoff with jitter; a longer Retry-After wins."""
    delay = min(
        self.config.max_backoff_s, self.config.backoff_s * 2 ** (attempt - 1)
    )
    delay *= random.uniform(0.75, 1.25)
    if retry_after is not None:
      delay = max(delay, min(retry_after, self.config.max_backoff_s))
    return delay

  async def _attempt(
      self, client: httpx.AsyncClient, body: dict[str, Any], n: int
  ) -> list[protocol.Completion]:
    try:
      resp = await client.post('/chat/completions', json=body)
    except httpx.TimeoutException as e:
      raise _Retryable(f'timeout ({type(e).__name__})') from e
    except httpx.RequestError as e:  # transport, decoding, redirects
      raise _Retryable(f'request error {type(e).__name__}: {e}') from e
    if resp.status_code in _RETRY_STATUS:
      raise _Retryable(
          f'HTTP {resp.status_code}: {resp.text[:300]}',
          _retry_after(resp.headers.get('retry-after')),
      )
    if resp.status_code != 200:
      text = resp.text[:500]
      err = protocol.LLMError
      if resp.status_code == 400 and any(
          h in text.lower() for h in _CONTEXT_HINTS
      ):
        err = protocol.ContextLengthError
      raise err(
          f'{self.config.base_url} returned HTTP {resp.status_code} for model'
          f' {self.config.model!r} (not retried): {text}'
      )
    try:
      return parse_response(resp.json(), n)
    except (ValueError, KeyError, TypeError, IndexError) as e:
      raise _Retryable(f'malformed reply ({e}): {resp.text[:200]!r}') from e


def parse_response(obj: dict[str, Any], n: int) -> list[protocol.Completion]:
  """Turns a chat.completion JSON object into completions.

  Raises:
    ValueError: the object lacks the fields of a chat completion.
  """
  choices = obj['choices']
  if not isinstance(choices, list) or len(choices) < n:
    raise ValueError(f'expected {n} choices, got {choices!r:.100}')
  usage = obj.get('usage') or {}
  prompt_ids = obj.get('prompt_token_ids')
  versions = obj.get('policy_versions')
  if versions is not None and (
      not isinstance(versions, list) or len(versions) != len(choices)
  ):
    raise ValueError(
        f'policy_versions must hold one list per choice: {versions!r:.100}'
    )
  out = []
  for i, choice in enumerate(sorted(choices, key=lambda c: c.get('index', 0))):
    msg = choice['message']
    content = msg.get('content') or ''
    if not isinstance(content, str):
      raise ValueError(f'message.content is not a string: {content!r:.100}')
    content += _tool_call_text(msg.get('tool_calls'))
    reasoning = msg.get('reasoning_content') or msg.get('reasoning')
    text = (
        f'<think>\n{reasoning}\n</think>\n\n{content}' if reasoning else content
    )
    token_ids, logprobs = _tokens(choice)
    out.append(
        protocol.Completion(
            text=text,
            finish_reason=choice.get('finish_reason') or 'stop',
            token_ids=token_ids,
            logprobs=logprobs,
            prompt_token_ids=tuple(prompt_ids) if prompt_ids else None,
            prompt_tokens=usage.get('prompt_tokens'),
            policy_version=(
                min(int(v) for v in versions[i])
                if versions and versions[i]
                else None
            ),
        )
    )
  return out


def _tool_call_text(calls: Any) -> str:
  """Structured `message.tool_calls` (a server whose tool parser took them
  out of the content) as the `<tool_call>` blocks the agent parses.

  Arguments that are not a JSON object stay a string, so the agent's
  parser reports them (bad_arguments) instead of this client guessing.
  """
  if not calls:
    return ''
  if not isinstance(calls, list):
    raise ValueError(f'message.tool_calls is not a list: {calls!r:.100}')
  blocks = []
  for call in calls:
    fn = call.get('function') if isinstance(call, dict) else None
    if not isinstance(fn, dict) or not isinstance(fn.get('name'), str):
      raise ValueError(f'tool call without a function name: {call!r:.100}')
    args = fn.get('arguments', {})
    if isinstance(args, str):
      try:
        args = json.loads(args) if args.strip() else {}
      except json.JSONDecodeError:
        pass
    body = json.dumps({'name': fn['name'], 'arguments': args})
    blocks.append(f'<tool_call>\n{body}\n</tool_call>')
  return ('\n' if blocks else '') + '\n'.join(blocks)


def _tokens(choice: dict[str, Any]):
  """Token ids and logprobs of one choice, where the server gave them."""
  content = (choice.get('logprobs') or {}).get('content') or []
  logprobs = tuple(float(t['logprob']) for t in content) or None
  token_ids = choice.get('token_ids')
  if token_ids is None and content:
    toks = [t.get('token', '') for t in content]
    if all(t.startswith('token_id:') for t in toks):
      token_ids = [int(t.split(':', 1)[1]) for t in toks]
  token_ids = tuple(int(t) for t in token_ids) if token_ids else None
  if token_ids and logprobs and len(token_ids) != len(logprobs):
    raise ValueError(
        f'{len(token_ids)} token ids but {len(logprobs)} logprobs in one choice'
    )
  return token_ids, logprobs
