"""The Proposer's prompts and the strict parser of its final reply.

A proposal is an evidence chain e1 -> e2 -> ..., a question and its
reference answer, written in the final assistant turn as

  <chain>
  <evidence doc="title">entity or fact</evidence>
  ...
  </chain>
  <question>...</question>
  <answer>...</answer>

`parse_proposal` accepts exactly that: anything else (a missing or repeated
block, a chain line that is not an <evidence> element, an empty field)
raises `ProposalFormatError`, which the format filter turns into a failed
candidate (never a crash of the run).
"""

import dataclasses
import pathlib
import re

from search_agent.agent import trajectory as traj_lib
from search_agent.llm.prompts import prompt as prompt_lib

PROMPT_DIR = pathlib.Path(__file__).resolve().parent / 'prompts'
_BLOCK = {
    tag: re.compile(rf'<{tag}>(.*?)</{tag}>', re.S)
    for tag in ('chain', 'question', 'answer')
}
_EVIDENCE = re.compile(r'<evidence doc="([^"<>]*)">([^<>]*)</evidence>')


class ProposalFormatError(ValueError):
  """The Proposer's reply is not a well-formed proposal (says what is off)."""


@dataclasses.dataclass(frozen=True, kw_only=True)
class Evidence:
  """One chain item: an entity or fact and the document that states it."""

  doc: str
  fact: str


@dataclasses.dataclass(frozen=True, kw_only=True)
class Proposal:
  """A candidate task (c, q, y*)."""

  chain: tuple[Evidence, ...]
  question: str
  answer: str


def load(name: str) -> prompt_lib.Prompt:
  """A self-play prompt by file name (search_agent/selfplay/prompts/)."""
  return prompt_lib.load(str(PROMPT_DIR / name))


def proposer_system(ecg: bool, tools: str) -> str:
  """The Proposer's system prompt: ECG, or the naive ablation's."""
  name = 'proposer_ecg.md' if ecg else 'proposer_naive.md'
  return load(name).render(tools=tools)


def seed_message(title: str, text: str, max_chars: int) -> str:
  """The Proposer's user turn: the seed document (cut at `max_chars`)."""
  return load('proposer_seed.md').render(title=title, text=text[:max_chars])


def seed_turn(seed, max_chars: int) -> str:
  """`seed_message` of a seed Task (selfplay/seeds.py: title in its meta)."""
  return seed_message(seed.meta.get('title', ''), seed.question, max_chars)


def _one(tag: str, text: str) -> str:
  found = _BLOCK[tag].findall(text)
  if len(found) != 1:
    raise ProposalFormatError(
        f'want exactly one <{tag}>...</{tag}> block, found {len(found)}'
    )
  value = found[0].strip()
  if not value:
    raise ProposalFormatError(f'<{tag}> is empty')
  return value


def parse_proposal(text: str) -> Proposal:
  """Parses a final reply strictly (see the module docstring).

  Raises:
    ProposalFormatError: the reply is not exactly one chain, question and
      answer, or a chain line is not an <evidence doc="...">...</evidence>.
  """
  chain_text = _one('chain', text)
  items = []
  for line in chain_text.splitlines():
    line = line.strip()
    if not line:
      continue
    m = _EVIDENCE.fullmatch(line)
    if m is None:
      raise ProposalFormatError(f'chain line is not an <evidence>: {line:.80}')
    doc, fact = m.group(1).strip(), m.group(2).strip()
    if not doc or not fact:
      raise ProposalFormatError(f'evidence with an empty doc or fact: {line}')
    items.append(Evidence(doc=doc, fact=fact))
  return Proposal(
      chain=tuple(items),
      question=_one('question', text),
      answer=_one('answer', text),
  )


def final_text(traj: traj_lib.Trajectory) -> str:
  """The content of the trajectory's last assistant turn ('' if none)."""
  for turn in reversed(traj.messages):
    if turn.role == 'assistant':
      return turn.content
  return ''


def observations(traj: traj_lib.Trajectory) -> list[str]:
  """The tool observations the trajectory saw, in order."""
  return [t.content for t in traj.messages if t.role == 'tool']
