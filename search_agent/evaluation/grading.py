"""Grading: each benchmark's official grader, or exact match.

The benchmarks' protocols are in grading_protocols.py.

The protocol comes from the dataset format (`GraderConfig.resolve`):
BrowseComp's below; BrowseComp-Plus's template and parser; xbench's exact
match first, then its Chinese judge prompt (see grading_protocols.py).

The judge gets `browsecomp_grader.txt` (openai/simple-evals, verbatim) with the
question, the agent's final reply and the reference answer, and answers in
the fields `extracted_final_answer`, `reasoning`, `correct`, `confidence`.
The verdict is group 1 of `correct: (yes|no)`; the public reference parser
returns group 0 (`'correct: yes'`) and compares it with `'yes'`, so it scores
every answer 0. A verdict line (`correct: yes`, also the variants judges
write: `**correct:** yes`, `Correct: Yes`, `correct: 'yes'`, `"correct":
"no"`) is preferred; otherwise the official pattern anywhere, but not inside
a word (`incorrect: yes` is no verdict); last, a JSON field `"correct":
"yes"` anywhere.

A judge call that fails (transport error, no verdict in the reply, a reply
cut inside its `<think>` reasoning) is retried up to `max_attempts`; if every
attempt fails the grade is an error (`correct=None`), never a "no". A run
without a final answer scores 0 without a judge call. With no judge
configured, the RL reward's exact-match normaliser decides
(search_agent/rewards/answer_match.py).
"""

import asyncio
import dataclasses
import re

from search_agent.agent import task as task_lib
from search_agent.evaluation import grading_protocols
from search_agent.llm import protocol
from search_agent.llm.prompts import prompt as prompt_lib
from search_agent.rewards import answer_match

OFFICIAL_VERDICT = re.compile(r'(?<![A-Za-z_])correct: (yes|no)')
_MARKUP = r'[\s*_`"\'()\[\]]*'  # markdown, quotes, brackets around a field
_VERDICT = re.compile(
    rf'^[\s>*_#`"\'-]*correct{_MARKUP}:{_MARKUP}(yes|no)\b',
    re.IGNORECASE | re.MULTILINE,
)
_JSON_VERDICT = re.compile(r'"correct"\s*:\s*"(yes|no)"', re.IGNORECASE)
_CONFIDENCE = re.compile(
    rf'confidence{_MARKUP}:{_MARKUP}(\d+(?:\.\d+)?)\s*%?', re.IGNORECASE
)
_CONFIDENCE_LINE = re.compile(
    rf'^[\s>*_#`"\'-]*confidence{_MARKUP}:{_MARKUP}(\d+(?:\.\d+)?)',
    re.IGNORECASE | re.MULTILINE,
)
_EXTRACTED = re.compile(
    r'extracted_final_answer[\s*_]*:[\s*_]*(.*)', re.IGNORECASE
)


class JudgeParseError(protocol.LLMError):
  """The judge's reply has no `correct: yes|no` verdict."""


@dataclasses.dataclass(frozen=True, kw_only=True)
class GraderConfig:
  """How answers are graded.

  Attributes:
    protocol: The benchmark's grading protocol (grading_protocols.PROTOCOLS); ''
      = the dataset format's own (`resolve`).
    template: Grader prompt file; '' = the protocol's official template.
    max_attempts: Judge attempts per question (failures retried).
    backoff_s: Wait before retry i is backoff_s * 2**(i-1).
    max_tokens: Generation budget of one judge call.
    temperature: Judge sampling temperature.
    top_p: Judge nucleus sampling.
  """

  protocol: str = ''
  template: str = ''
  max_attempts: int = 3
  backoff_s: float = 1.0
  max_tokens: int = 4_096
  temperature: float = 0.0
  top_p: float = 1.0

  def __post_init__(self):
    if self.protocol and self.protocol not in grading_protocols.PROTOCOLS:
      raise ValueError(
          f'grader protocol {self.protocol!r} is not one of'
          f' {grading_protocols.PROTOCOLS}'
      )

  def resolve(self, dataset_format: str) -> 'GraderConfig':
    """This config with the protocol and template filled in."""
    protocol_name = self.protocol or grading_protocols.for_format(
        dataset_format
    )
    return dataclasses.replace(
        self,
        protocol=protocol_name,
        template=self.template or grading_protocols.TEMPLATES[protocol_name],
    )


@dataclasses.dataclass(frozen=True, kw_only=True)
class Grade:
  """The grade of one answer.

  Attributes:
    correct: True/False; None when the judge failed (an error, not a no).
    method: 'judge', 'exact_match', 'no_answer' or 'run_failed'.
    extracted_answer: The judge's extracted_final_answer (judge only).
    confidence: Stated confidence in percent, if any.
    judge_response: The judge's last reply.
    attempts: Judge calls made (retries included).
    error: Why grading failed, when it did.
  """

  correct: bool | None
  method: str
  extracted_answer: str | None = None
  confidence: float | None = None
  judge_response: str | None = None
  attempts: int = 0
  error: str | None = None


def _after_reasoning(text: str) -> str:
  """The judge's reply after its reasoning; '' if the reasoning never ends.

  A reply cut inside `<think>` holds no verdict, only the judge's musings
  (which may well contain a `correct: yes` line): it is a failed attempt.
  """
  if '</think>' in text:
    return text.split('</think>')[-1]
  return '' if text.lstrip().startswith('<think>') else text


def parse_verdict(text: str) -> bool:
  """Group 1 of the verdict: True for yes, False for no."""
  match = (
      _VERDICT.search(text)
      or OFFICIAL_VERDICT.search(text)
      or _JSON_VERDICT.search(text)
  )
  if match is None:
    raise JudgeParseError(
        f'judge reply has no "correct: yes|no" line: {text[-300:]!r}'
    )
  return match.group(1).lower() == 'yes'


def _parse(protocol_name: str, reply: str) -> tuple[bool, str | None]:
  """(verdict, extracted answer) of a judge reply under a protocol."""
  if protocol_name == 'xbench':
    return grading_protocols.parse_xbench(reply)
  if protocol_name == 'browsecomp_plus':
    return grading_protocols.parse_browsecomp_plus(reply), parse_extracted(
        reply
    )
  return parse_verdict(reply), parse_extracted(reply)


def parse_confidence(text: str) -> float | None:
  """The judge's final `confidence:` line (percent, capped at 100).

  The last line that starts with the field wins (a judge may quote the
  response's own "Confidence: 90%" in its reasoning first); failing that,
  the last `confidence: N` anywhere.
  """
  matches = _CONFIDENCE_LINE.findall(text) or _CONFIDENCE.findall(text)
  return min(100.0, float(matches[-1])) if matches else None


def parse_extracted(text: str) -> str | None:
  match = _EXTRACTED.search(text)
  return match.group(1).strip().strip('*').strip() if match else None


async def grade(
    task: task_lib.Task,
    response: str,
    prediction: str | None,
    judge: protocol.LLM | None,
    config: GraderConfig,
    *,
    no_answer_method: str = 'no_answer',
) -> Grade:
  """Grades one final reply (`response`) whose `<answer>` is `prediction`.

  A run without an answer scores 0 without a judge call; its method is
  `no_answer_method` ('run_failed' for a crashed run).
  """
  if prediction is None or not prediction.strip():
    return Grade(correct=False, method=no_answer_method)
  config = config.resolve('')
  if judge is not None and config.protocol == 'xbench':
    if grading_protocols.xbench_exact(response, prediction, task.answer):
      return Grade(correct=True, method='exact_match_first')
  if judge is None:
    return Grade(
        correct=answer_match.exact_match(prediction, task.answer, task.aliases),
        method='exact_match',
        confidence=parse_confidence(response),
    )
  text = prompt_lib.load(config.template).render(
      question=task.question, response=response, correct_answer=task.answer
  )
  params = protocol.SamplingParams(
      temperature=config.temperature,
      top_p=config.top_p,
      max_tokens=config.max_tokens,
  )
  errors = []
  reply = None
  for attempt in range(1, config.max_attempts + 1):
    if attempt > 1:
      await asyncio.sleep(config.backoff_s * 2 ** (attempt - 2))
    try:
      [completion] = await judge.chat(
          [{'role': 'user', 'content': text}], params
      )
      reply = _after_reasoning(completion.text)
      correct, extracted = _parse(config.protocol, reply)
      return Grade(
          correct=correct,
          method='judge',
          extracted_answer=extracted,
          confidence=parse_confidence(reply),
          judge_response=reply,
          attempts=attempt,
      )
    except protocol.LLMError as e:
      errors.append(f'attempt {attempt}: {type(e).__name__}: {e}')
  return Grade(
      correct=None,
      method='judge',
      judge_response=reply,
      attempts=config.max_attempts,
      error='; '.join(errors)[-2000:],
  )
