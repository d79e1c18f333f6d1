"""Turn-level masking by an LLM judge (Iris, fine filtering).

For each assistant turn an LLM judge sees the question, the reference answer
and a fixed local window of surrounding messages, plus a rubric kept as a
file (`prompts/turn_rubric.md`, or one induced by `rubric.py`), and replies
keep or mask. At most floor(max_masked_fraction x assistant turns) turns of
a trajectory are masked; when the judge asks for more, the earliest ones
are masked and the rest kept (the `capped` count). Masked turns stay in the
conversation with loss=False. Turns already without loss (failed tool
calls) and, unless configured, the final answer turn are not judged. A
masked trajectory's token record (if any) no longer matches its loss flags
and is dropped, with `meta['tokens_dropped']` saying why; the SFT pipeline
renders messages anyway.
"""

import asyncio
import dataclasses
import math
import pathlib

from search_agent.agent import trajectory
from search_agent.filtering import degeneration
from search_agent.filtering import judges
from search_agent.filtering import stage_result
from search_agent.llm import protocol
from search_agent.llm import role_client
from search_agent.llm.prompts import prompt as prompt_lib
from search_agent.rewards import judging

PROMPT_DIR = pathlib.Path(__file__).parent / 'prompts'
LABELS = ('keep', 'mask')
TARGET_MARK = '>>> JUDGE THIS TURN <<<'
TOKENS_DROPPED = (
    'turn-level masking changed loss flags; re-render the messages to get'
    ' token ids and the loss mask'
)


@dataclasses.dataclass(frozen=True, kw_only=True)
class TurnMaskConfig:
  """How turns are judged and masked.

  Attributes:
    window_messages: Messages shown on each side of the judged turn.
    max_masked_fraction: Most assistant turns of a trajectory to mask.
    judge_final_turn: Whether the final answer turn may be masked.
    max_observation_chars: Tool observations are cut to this length.
    max_turn_chars: Other messages are cut to this length.
    rubric_path: Rubric file; '' uses the bundled prompts/turn_rubric.md.
    temperature: Judge sampling temperature.
    max_tokens: Judge output budget.
    concurrency: Judge calls in flight at once.
  """

  window_messages: int = 4
  max_masked_fraction: float = 0.2
  judge_final_turn: bool = False
  max_observation_chars: int = 1500
  max_turn_chars: int = 4000
  rubric_path: str = ''
  temperature: float = 0.0
  max_tokens: int = 1024
  concurrency: int = 16

  def __post_init__(self):
    if not 0.0 <= self.max_masked_fraction <= 1.0:
      raise ValueError(
          'max_masked_fraction must lie in [0, 1], got'
          f' {self.max_masked_fraction}'
      )


def load_rubric(config: TurnMaskConfig) -> str:
  path = pathlib.Path(config.rubric_path or PROMPT_DIR / 'turn_rubric.md')
  if not path.is_file():
    raise FileNotFoundError(f'rubric file {path} does not exist')
  return path.read_text(encoding='utf-8').strip()


def render_message(
    index: int, m: trajectory.Turn, config: TurnMaskConfig
) -> str:
  """One message as '[index] role: text', cut to the configured length."""
  if m.role == 'assistant':
    text = degeneration.turn_text(m)
    limit = config.max_turn_chars
  elif m.role == 'tool':
    text, limit = m.content, config.max_observation_chars
  else:
    text, limit = m.content, config.max_turn_chars
  if len(text) > limit:
    text = text[:limit] + f' [... {len(text) - limit} more characters]'
  head = f'[{index}] {m.role}' + (f' ({m.name})' if m.name else '')
  return f'{head}:\n{text}'


def render_window(
    traj: trajectory.Trajectory, target: int, config: TurnMaskConfig
) -> str:
  """The judged turn with `window_messages` messages on each side."""
  lo = max(0, target - config.window_messages)
  hi = min(len(traj.messages), target + config.window_messages + 1)
  parts = []
  for i in range(lo, hi):
    text = render_message(i, traj.messages[i], config)
    parts.append(f'{TARGET_MARK}\n{text}' if i == target else text)
  return '\n\n'.join(parts)


def candidate_turns(
    traj: trajectory.Trajectory, config: TurnMaskConfig
) -> list[int]:
  """Indices of the assistant turns the judge labels."""
  assistant = [i for i, m in enumerate(traj.messages) if m.role == 'assistant']
  final = assistant[-1] if assistant and traj.final_answer else None
  return [
      i
      for i in assistant
      if traj.messages[i].trainable and (config.judge_final_turn or i != final)
  ]


async def judge_turns(
    traj: trajectory.Trajectory,
    llm: protocol.LLM,
    ref: judges.Reference,
    config: TurnMaskConfig,
    rubric: str,
) -> dict[int, str]:
  """Labels each candidate turn; returns {message index: 'keep'|'mask'}.

  Raises:
    LLMError: a judge call failed or replied without a valid label.
  """
  template = prompt_lib.load(str(PROMPT_DIR / 'turn_judge.txt'))
  params = protocol.SamplingParams(
      temperature=config.temperature, max_tokens=config.max_tokens
  )

  async def one(i: int) -> str:
    text = template.render(
        rubric=rubric,
        question=traj.question,
        reference=ref.answer,
        window=render_window(traj, i, config),
    )

    def parse(reply: str) -> str:
      label = judging.parse_json_reply(reply, llm.name).get('label')
      if label not in LABELS:
        raise judging.JudgeReplyError(
            f'turn judge {llm.name!r} must reply "label": "keep"|"mask", got'
            f' {label!r} for turn {i} of {traj.id}'
        )
      return label

    # An unusable reply is asked again (the judge's parse retries), then an
    # error; a count other than one completion is an error, not a crash.
    return await role_client.chat_parsed(
        llm, [{'role': 'user', 'content': text}], params, parse
    )

  indices = candidate_turns(traj, config)
  labels = await asyncio.gather(*(one(i) for i in indices))
  return dict(zip(indices, labels))


def apply_labels(
    traj: trajectory.Trajectory, labels: dict[int, str], config: TurnMaskConfig
) -> tuple[trajectory.Trajectory, int, int]:
  """Masks the labelled turns up to the cap.

  Returns:
    (trajectory with loss=False on masked turns, masked, capped) where
    capped counts 'mask' labels left unmasked by the cap.
  """
  n_assistant = sum(m.role == 'assistant' for m in traj.messages)
  cap = math.floor(config.max_masked_fraction * n_assistant + 1e-9)
  wanted = sorted(i for i, label in labels.items() if label == 'mask')
  chosen = set(wanted[:cap])
  turns = tuple(
      dataclasses.replace(m, loss=False) if i in chosen else m
      for i, m in enumerate(traj.messages)
  )
  out = dataclasses.replace(traj, messages=turns)
  if chosen and traj.tokens is not None:
    # The token loss mask no longer matches the turns: drop it, say so.
    meta = traj.meta | {'tokens_dropped': TOKENS_DROPPED}
    out = dataclasses.replace(out, tokens=None, meta=meta)
  return out, len(chosen), len(wanted) - len(chosen)


async def label_all(
    trajs: list[trajectory.Trajectory],
    llm: protocol.LLM,
    tasks: dict | None,
    config: TurnMaskConfig,
) -> dict[str, dict[int, str] | str]:
  """Labels every trajectory; a failure becomes an error string for it."""
  rubric = load_rubric(config)
  gate = asyncio.Semaphore(config.concurrency)

  async def one(traj: trajectory.Trajectory) -> dict[int, str] | str:
    try:
      ref = judges.reference_for(traj, tasks)
      async with gate:
        return await judge_turns(traj, llm, ref, config, rubric)
    except (protocol.LLMError, judges.NoReferenceError) as e:
      return f'{type(e).__name__}: {e}'

  results = await asyncio.gather(*(one(t) for t in trajs))
  return {t.id: r for t, r in zip(trajs, results)}


def turn_mask_filter(
    trajs: list[trajectory.Trajectory],
    labels: dict[str, dict[int, str] | str],
    config: TurnMaskConfig,
) -> stage_result.StageResult:
  """Applies the labels; a trajectory whose judging failed is an error."""
  kept, errors = [], []
  judged = masked = capped = touched = 0
  for traj in trajs:
    result = labels.get(traj.id, 'no turn labels for this trajectory')
    if isinstance(result, str):
      errors.append(stage_result.removal(traj, 'turn_judge_error', result))
      continue
    new, n_masked, n_capped = apply_labels(traj, result, config)
    judged += len(result)
    masked += n_masked
    capped += n_capped
    touched += n_masked > 0
    kept.append(new)
  stats = {
      'turns_judged': judged,
      'turns_masked': masked,
      'mask_labels_over_cap': capped,
      'trajectories_with_masked_turns': touched,
      'max_masked_fraction': config.max_masked_fraction,
  }
  return stage_result.StageResult(
      name='turn_mask', kept=tuple(kept), errors=tuple(errors), stats=stats
  )
