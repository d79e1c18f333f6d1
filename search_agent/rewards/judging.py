"""Judge calls through the LLM protocol: prompt files, sampling, replies.

Every judge prompt is a file under `prompts/` with `{name}` placeholders. A
judge reply must hold one JSON object (optionally inside a ```json fence); a
reply that does not parse is a `JudgeReplyError`, which is an `LLMError`: the
caller records or propagates it and never reads it as a "no".
"""

import asyncio
import dataclasses
import json
import pathlib
import re
import string
from typing import Any, Callable

from search_agent.llm import protocol
from search_agent.llm import role_client

PROMPT_DIR = pathlib.Path(__file__).parent / 'prompts'
_FENCE = re.compile(r'```(?:json)?\s*(\{.*?\})\s*```', re.DOTALL)


class JudgeReplyError(protocol.ReplyFormatError):
  """A judge replied, but not with the JSON object its prompt asks for."""


@dataclasses.dataclass(frozen=True, kw_only=True)
class JudgeSampling:
  """How a judge is sampled.

  Attributes:
    temperature: Sampling temperature of each independent call.
    max_tokens: Output budget of one call.
    seed: Base seed; call i of a vote uses seed + i.
  """

  temperature: float = 1.0
  max_tokens: int = 4096
  seed: int = 0


def render_prompt(name: str, **fields: str) -> str:
  """Fills the prompt file `prompts/<name>.txt` with `fields`.

  Raises:
    KeyError: a placeholder of the template is missing from `fields`.
    FileNotFoundError: there is no such prompt file.
  """
  template = (PROMPT_DIR / f'{name}.txt').read_text(encoding='utf-8')
  wanted = {f for _, f, _, _ in string.Formatter().parse(template) if f}
  missing = wanted - fields.keys()
  if missing:
    raise KeyError(f'prompt {name!r} needs fields {sorted(missing)}')
  return template.format(**fields)


def parse_json_reply(text: str, judge: str) -> dict[str, Any]:
  """Extracts the JSON object of a judge reply.

  Raises:
    JudgeReplyError: the reply holds no parsable JSON object.
  """
  match = _FENCE.search(text)
  body = match.group(1) if match else text[text.find('{') : text.rfind('}') + 1]
  try:
    obj = json.loads(body)
  except json.JSONDecodeError as e:
    raise JudgeReplyError(
        f'judge {judge!r} reply is not a JSON object ({e}): {text!r:.200}'
    ) from e
  if not isinstance(obj, dict):
    raise JudgeReplyError(f'judge {judge!r} reply is not an object: {obj!r}')
  return obj


async def sample_json(
    llm: protocol.LLM,
    prompt: str,
    k: int,
    sampling: JudgeSampling,
    check: Callable[[dict[str, Any]], None] | None = None,
) -> list[dict[str, Any]]:
  """Runs `k` independently sampled judge calls and parses each reply.

  A reply that does not parse, or that `check` rejects (raising
  `JudgeReplyError`), is asked again (`role_client.chat_parsed`:
  the judge's parse retries, counted when it is a `RoleLLM`).

  Raises:
    LLMError: any call failed or any vote's reply never parsed (no partial
      votes).
  """
  messages = [{'role': 'user', 'content': prompt}]

  async def one(i: int) -> dict[str, Any]:
    params = protocol.SamplingParams(
        temperature=sampling.temperature,
        max_tokens=sampling.max_tokens,
        seed=sampling.seed + i,
    )

    def parse(text: str) -> dict[str, Any]:
      obj = parse_json_reply(text, llm.name)
      if check is not None:
        check(obj)
      return obj

    return await role_client.chat_parsed(llm, messages, params, parse)

  return list(await asyncio.gather(*(one(i) for i in range(k))))


def index_list(obj: dict[str, Any], key: str, n: int, judge: str) -> set[int]:
  """Reads `obj[key]` as a list of 1-based indices into n items, as a set.

  Raises:
    JudgeReplyError: the key is missing or holds anything but valid indices.
  """
  value = obj.get(key)
  if not isinstance(value, list) or not all(
      isinstance(i, int) and not isinstance(i, bool) for i in value
  ):
    raise JudgeReplyError(
        f'judge {judge!r} reply needs {key!r}: a list of integers, got'
        f' {value!r:.120}'
    )
  bad = [i for i in value if not 1 <= i <= n]
  if bad:
    raise JudgeReplyError(
        f'judge {judge!r} reply lists indices {bad} outside 1..{n}'
    )
  return set(value)
