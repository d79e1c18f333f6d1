"""A content-addressed response cache in front of any `LLM`.

The key is the SHA-256 of the model name, the messages and the sampling
parameters; a reply is stored as one JSON file `<dir>/<key[:2]>/<key>.json`
(temp file + rename, so a killed run leaves no torn entry). A rerun with
the same prompts is free and returns the same text. Unseeded sampling at
temperature > 0 asked the same thing k times (k votes) gets k entries: the
i-th identical request of a process reads entry i, so repeated samples stay
independent and a rerun replays them in the same order.
"""

import asyncio
import dataclasses
import hashlib
import json
import os
import pathlib
from typing import Any, Sequence

from search_agent.llm import protocol


def request_key(
    model: str,
    messages: Sequence[protocol.Message],
    params: protocol.SamplingParams,
) -> str:
  body = json.dumps(
      {
          'model': model,
          'messages': list(messages),
          'params': dataclasses.asdict(params),
      },
      sort_keys=True,
      ensure_ascii=False,
      default=str,
  )
  return hashlib.sha256(body.encode('utf-8')).hexdigest()


class CachedLLM:
  """Wraps an LLM; replies come from the cache when present.

  Attributes:
    name: The wrapped model's name.
    wrapped: The wrapped model.
    hits: Calls answered from the cache.
    misses: Calls sent to the model.
  """

  def __init__(self, llm: protocol.LLM, cache_dir: str | os.PathLike[str]):
    self._llm = llm
    self.wrapped = llm
    self.name = llm.name
    self._dir = pathlib.Path(cache_dir)
    self._dir.mkdir(parents=True, exist_ok=True)
    self._seen: dict[str, int] = {}
    self._locks: dict[str, asyncio.Lock] = {}
    self.hits = 0
    self.misses = 0

  def _path(self, key: str) -> pathlib.Path:
    return self._dir / key[:2] / f'{key}.json'

  async def chat(
      self,
      messages: Sequence[protocol.Message],
      params: protocol.SamplingParams,
  ) -> list[protocol.Completion]:
    key = request_key(self.name, messages, params)
    if params.temperature > 0 and params.seed is None:
      i = self._seen.get(key, 0)
      self._seen[key] = i + 1
      key = f'{key}-{i}'
    lock = self._locks.setdefault(key, asyncio.Lock())
    async with lock:
      path = self._path(key)
      if path.exists():
        self.hits += 1
        return [_completion(c) for c in json.loads(path.read_text())]
      completions = await self._llm.chat(messages, params)
      self.misses += 1
      path.parent.mkdir(exist_ok=True)
      tmp = path.with_name(path.name + f'.{os.getpid()}.tmp')
      tmp.write_text(
          json.dumps([_stored(c) for c in completions], ensure_ascii=False)
      )
      os.replace(tmp, path)
      return completions


def _stored(c: protocol.Completion) -> dict[str, Any]:
  return {
      'text': c.text,
      'finish_reason': c.finish_reason,
      'token_ids': list(c.token_ids) if c.token_ids is not None else None,
      'logprobs': list(c.logprobs) if c.logprobs is not None else None,
      'prompt_tokens': c.prompt_tokens,
  }


def _completion(d: dict[str, Any]) -> protocol.Completion:
  return protocol.Completion(
      text=d['text'],
      finish_reason=d.get('finish_reason', 'stop'),
      token_ids=tuple(d['token_ids']) if d.get('token_ids') else None,
      logprobs=tuple(d['logprobs']) if d.get('logprobs') else None,
      prompt_tokens=d.get('prompt_tokens'),
  )
