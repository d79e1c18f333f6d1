"""Prompt files of the synthesis roles and one JSON-reply call helper."""

import pathlib
from typing import Any, Callable, Sequence

from search_agent.llm import protocol
from search_agent.llm import role_client
from search_agent.llm.prompts import prompt as prompt_lib
from search_agent.rewards import judging
from search_agent.synthesis.schema import EvidenceGraph
from search_agent.synthesis.schema import Path

PROMPT_DIR = pathlib.Path(__file__).resolve().parent / 'prompts'


def render(name: str, **fields: Any) -> str:
  """Fills `prompts/<name>.md`; every marker must be given."""
  prompt = prompt_lib.load(str(PROMPT_DIR / f'{name}.md'))
  return prompt.render(**{k: str(v) for k, v in fields.items()})


def prompt_hashes() -> dict[str, str]:
  """File name → SHA-256 of every synthesis prompt (for manifests)."""
  return {
      p.name: prompt_lib.load(str(p)).sha256
      for p in sorted(PROMPT_DIR.glob('*.md'))
  }


async def ask_json(
    llm: protocol.LLM,
    name: str,
    fields: dict[str, Any],
    *,
    temperature: float = 0.0,
    seed: int | None = 0,
    max_tokens: int = 4096,
    check: Callable[[dict[str, Any]], None] | None = None,
) -> dict[str, Any]:
  """One call with prompt `name`; its reply parsed as a JSON object.

  A reply without a JSON object, or one `check` rejects (raising
  `JudgeReplyError`: a field the role needs is missing or malformed), is
  asked again (`role_client.chat_parsed`: the role's parse retries, counted).

  Raises:
    JudgeReplyError: no reply held a usable JSON object.
    LLMError: a call failed.
  """
  messages = [{'role': 'user', 'content': render(name, **fields)}]
  params = protocol.SamplingParams(
      temperature=temperature, max_tokens=max_tokens, seed=seed
  )

  def parse(text: str) -> dict[str, Any]:
    obj = judging.parse_json_reply(text, llm.name)
    if check is not None:
      check(obj)
    return obj

  return await role_client.chat_parsed(llm, messages, params, parse)


async def ask_text(
    llm: protocol.LLM, name: str, fields: dict[str, Any], **kw: Any
) -> str:
  messages = [{'role': 'user', 'content': render(name, **fields)}]
  params = protocol.SamplingParams(
      temperature=kw.get('temperature', 0.0),
      max_tokens=kw.get('max_tokens', 2048),
      seed=kw.get('seed', 0),
  )
  (completion,) = await llm.chat(messages, params)
  return completion.text


def format_path(i: int, path: Path, titles: dict[str, str]) -> str:
  lines = [f'Path {i}:']
  for c in path.claims:
    lines.append(
        f'  {titles[c.subject]} | {c.relation} | {c.object}'
        f'  (source: "{c.passage}")'
    )
  return '\n'.join(lines)


def format_graph(graph: EvidenceGraph, titles: dict[str, str]) -> str:
  return '\n'.join(
      format_path(i, p, titles) for i, p in enumerate(graph.paths, 1)
  )


def format_feedback(feedback: Sequence[dict[str, Any]]) -> str:
  if not feedback:
    return '(none: this is the first version)'
  return '\n'.join(
      f'- {f["decision"]}: {f.get("reason", "")}'
      + (
          f' (solver answered {f["answer"]!r} after {f["calls"]} calls; last'
          f' actions: {"; ".join(f["recent_actions"])})'
          if 'calls' in f
          else ''
      )
      for f in feedback
  )
