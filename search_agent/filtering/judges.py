"""The answer judge behind the correctness filter.

Three kinds, chosen by config:
  'exact'    normalized exact match with the reference or an alias
             (search_agent.rewards.answer_match, shared with RL and eval);
  'contains' the normalized reference (or an alias) occurs as whole words in
             the normalized answer: an offline stand-in for a judge when
             answers are sentences and references are short spans;
  'llm'      exact match first, then an LLM judge through the LLM protocol
             (search_agent.rewards.outcome.judge_answer and its prompt file).
A judge failure raises `LLMError`; callers record it, never read it as "no".
"""

import dataclasses
import re

from search_agent.agent import task as task_lib
from search_agent.agent import trajectory
from search_agent.llm import protocol
from search_agent.rewards import answer_match
from search_agent.rewards import outcome

JUDGE_KINDS = ('exact', 'contains', 'llm')


class NoReferenceError(LookupError):
  """A trajectory's task has no reference answer to judge against."""


@dataclasses.dataclass(frozen=True, kw_only=True)
class Reference:
  """The reference answer of a task.

  Attributes:
    question: The question (for LLM judges).
    answer: The reference answer.
    aliases: Other accepted surface forms.
  """

  question: str
  answer: str
  aliases: tuple[str, ...] = ()


def contains_match(
    prediction: str | None, answer: str, aliases: tuple[str, ...] = ()
) -> bool:
  """Whether a normalized reference occurs as whole words in the prediction."""
  if prediction is None:
    return False
  pred = f' {answer_match.normalize_answer(prediction)} '
  refs = [answer_match.normalize_answer(a) for a in (answer, *aliases)]
  return any(ref and f' {ref} ' in pred for ref in refs)


class AnswerJudge:
  """Decides whether a final answer is correct against a Reference.

  Attributes:
    kind: One of JUDGE_KINDS.
    name: What the report records as the judge ('exact', or the LLM name).
  """

  def __init__(self, kind: str, llm: protocol.LLM | None = None):
    if kind not in JUDGE_KINDS:
      raise ValueError(f'judge kind {kind!r} is not one of {JUDGE_KINDS}')
    if (kind == 'llm') != (llm is not None):
      raise ValueError(
          "an LLM is needed exactly when the judge kind is 'llm'; got kind"
          f' {kind!r} with llm={llm!r}'
      )
    self.kind = kind
    self.name = llm.name if llm is not None else kind
    self._llm = llm

  async def __call__(self, ref: Reference, prediction: str | None) -> bool:
    """True when `prediction` is correct; raises LLMError if the judge fails."""
    if self.kind == 'exact':
      return answer_match.exact_match(prediction, ref.answer, ref.aliases)
    if self.kind == 'contains':
      return contains_match(prediction, ref.answer, ref.aliases)
    task = task_lib.Task(
        id='', question=ref.question, answer=ref.answer, aliases=ref.aliases
    )
    return await outcome.judge_answer(self._llm, task, prediction)


def reference_for(
    traj: trajectory.Trajectory, tasks: dict[str, task_lib.Task] | None
) -> Reference:
  """The reference of a trajectory: its task if given, else `meta['answer']`.

  Raises:
    NoReferenceError: neither the tasks nor the trajectory hold an answer.
  """
  if tasks and traj.task_id in tasks:
    t = tasks[traj.task_id]
    return Reference(question=t.question, answer=t.answer, aliases=t.aliases)
  answer = traj.meta.get('answer')
  if not isinstance(answer, str) or not answer.strip():
    raise NoReferenceError(
        f'trajectory {traj.id} (task {traj.task_id}) has no reference answer:'
        ' give a tasks file holding its task_id or set meta.answer'
    )
  aliases = tuple(str(a) for a in traj.meta.get('aliases', ()))
  return Reference(question=traj.question, answer=answer, aliases=aliases)


_WS = re.compile(r'\s+')


def short(text: str | None, n: int = 160) -> str:
  """One-line excerpt for reports."""
  if text is None:
    return '(none)'
  text = _WS.sub(' ', text).strip()
  return text if len(text) <= n else text[: n - 3] + '...'
