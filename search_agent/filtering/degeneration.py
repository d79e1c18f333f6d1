"""Degeneration detectors (Iris, trajectory-level filtering).

The primary detector is a sliding-window compression ratio over the decoded
text the model wrote:

  ratio(w) = len(w) / len(zlib.compress(w, level))

for every window w of `window_bytes` UTF-8 bytes taken every `stride_bytes`
(one window over the whole text when it is shorter). Repetitive text
compresses far more than fluent text, so a window whose ratio reaches
`max_ratio` signals a loop, whatever its period and wherever it begins.
Auxiliary detectors catch what compression can miss: periodically repeating
lines, long single-character runs, consecutive tool calls with byte-identical
arguments, unterminated blocks, and runaway tool calling.

The decoded text is each assistant turn rendered as
`<think>\\n{reasoning}\\n</think>\\n{content}`, turns joined by newlines;
prompts and tool observations are not the model's output and are left out.
"""

import collections
import dataclasses
import json
import re
import zlib

from search_agent.agent import trajectory
from search_agent.chat import toolcall
from search_agent.filtering import stage_result


@dataclasses.dataclass(frozen=True, kw_only=True)
class DegenerationConfig:
  """Thresholds of the degeneration detectors.

  Attributes:
    window_bytes: Width of a compression window.
    stride_bytes: Step between window starts.
    zlib_level: zlib compression level (0-9).
    max_ratio: A window with ratio >= max_ratio is a loop; 0 disables.
    line_min_repeats: A block of up to `line_max_period` non-empty lines
      repeated this many times in a row is a loop; 0 disables.
    line_max_period: Longest repeating block, in lines.
    max_char_run: A run of one character this long is degenerate; 0
      disables.
    max_identical_calls: Most consecutive tool calls allowed with the same
      name and byte-identical arguments; 0 disables.
    max_tool_calls: Most tool calls in one trajectory; 0 disables.
    check_unterminated: Reject unterminated <think>/<tool_call>/<answer>
      blocks and made-up <tool_response> blocks in assistant turns.
  """

  window_bytes: int = 2048
  stride_bytes: int = 512
  zlib_level: int = 9
  max_ratio: float = 3.34
  line_min_repeats: int = 3
  line_max_period: int = 8
  max_char_run: int = 64
  max_identical_calls: int = 1
  max_tool_calls: int = 0
  check_unterminated: bool = True

  def __post_init__(self):
    if self.window_bytes < 1 or self.stride_bytes < 1:
      raise ValueError(
          'window_bytes and stride_bytes must be >= 1, got'
          f' {self.window_bytes} and {self.stride_bytes}'
      )
    if not 0 <= self.zlib_level <= 9:
      raise ValueError(f'zlib_level must be in 0..9, got {self.zlib_level}')


def turn_text(turn: trajectory.Turn) -> str:
  """An assistant turn as the model wrote it."""
  if not turn.reasoning:
    return turn.content
  return (
      f'{toolcall.THINK_OPEN}\n{turn.reasoning}\n{toolcall.THINK_CLOSE}\n'
      + (turn.content)
  )


def decoded_text(traj: trajectory.Trajectory) -> str:
  """The model-written text of a trajectory (all assistant turns)."""
  return '\n'.join(turn_text(m) for m in traj.messages if m.role == 'assistant')


def compression_ratio(data: bytes, level: int = 9) -> float:
  """len(data) / len(zlib.compress(data)); 0.0 for empty data."""
  if not data:
    return 0.0
  return len(data) / len(zlib.compress(data, level))


def max_window_ratio(
    text: str, window: int, stride: int, level: int = 9
) -> tuple[float, int]:
  """The highest window ratio and the byte offset where that window starts."""
  data = text.encode('utf-8')
  if len(data) <= window:
    return compression_ratio(data, level), 0
  starts = list(range(0, len(data) - window + 1, stride))
  if starts[-1] != len(data) - window:
    starts.append(len(data) - window)  # Cover the tail too.
  best, at = 0.0, 0
  for start in starts:
    ratio = compression_ratio(data[start : start + window], level)
    if ratio > best:
      best, at = ratio, start
  return best, at


def repeating_lines(text: str, max_period: int) -> tuple[int, int, str]:
  """The longest run of a repeated block of non-empty lines.

  Returns:
    (repeats, period, first line of the block); repeats is 1 when no block
    of up to `max_period` lines repeats back to back.
  """
  lines = [l.strip() for l in text.splitlines() if l.strip()]
  best = (1, 0, '')
  for period in range(1, max_period + 1):
    run = 0
    for j in range(len(lines) - period):
      run = run + 1 if lines[j] == lines[j + period] else 0
      repeats = 1 + run // period
      if repeats > best[0]:
        best = (repeats, period, lines[j - run + 1])
  return best


def longest_char_run(text: str) -> tuple[str, int]:
  """The character with the longest run of itself, and the run length."""
  best, length, prev = ('', 0), 0, None
  for ch in text:
    length = length + 1 if ch == prev else 1
    prev = ch
    if length > best[1]:
      best = (ch, length)
  return best


def identical_call_run(traj: trajectory.Trajectory) -> tuple[int, str]:
  """Longest run of consecutive tool calls with identical name and arguments.

  Returns:
    (run length, the call as JSON); (0, '') without tool calls.
  """
  best, run, prev = (0, ''), 0, None
  for call in traj.tool_calls:
    key = json.dumps(
        {'name': call.name, 'arguments': call.arguments},
        sort_keys=True,
        ensure_ascii=False,
    )
    run = run + 1 if key == prev else 1
    prev = key
    if run > best[0]:
      best = (run, key)
  return best


BLOCK_PROBLEMS = (
    'unterminated_think',
    'unterminated_tool_call',
    'unterminated_answer',
    'hallucinated_observation',
)


def unterminated_blocks(traj: trajectory.Trajectory) -> list[str]:
  """'turn <i>: <kind>' for every unterminated block in assistant turns.

  A `<tool_response>` the assistant wrote itself (an observation it made up
  instead of waiting for the tool) is reported here too.
  """
  out = []
  for i, turn in enumerate(traj.messages):
    if turn.role != 'assistant':
      continue
    for error in toolcall.parse_assistant(turn_text(turn)).errors:
      if error.kind in BLOCK_PROBLEMS:
        out.append(f'turn {i}: {error.kind}')
  return out


_PRINTABLE = re.compile(r'\s+')


def _excerpt(text: str, at: int = 0, n: int = 160) -> str:
  chunk = text.encode('utf-8')[at : at + n].decode('utf-8', errors='replace')
  return _PRINTABLE.sub(' ', chunk).strip()


def detect(
    traj: trajectory.Trajectory, config: DegenerationConfig
) -> tuple[float, list[tuple[str, str]]]:
  """Runs every enabled detector on one trajectory.

  Returns:
    (max window ratio, [(reason, detail), ...] for each detector that fired).
  """
  text = decoded_text(traj)
  ratio, at = max_window_ratio(
      text, config.window_bytes, config.stride_bytes, config.zlib_level
  )
  hits = []
  if config.max_ratio and ratio >= config.max_ratio:
    hits.append(
        (
            'compression_ratio',
            f'window at byte {at} compresses {ratio:.2f}x'
            f' (>= {config.max_ratio}): "{_excerpt(text, at)}"',
        )
    )
  if config.line_min_repeats:
    repeats, period, line = repeating_lines(text, config.line_max_period)
    if repeats >= config.line_min_repeats:
      hits.append(
          (
              'repeating_lines',
              f'a {period}-line block repeats {repeats}x: "{line[:120]}"',
          )
      )
  if config.max_char_run:
    ch, length = longest_char_run(text)
    if length >= config.max_char_run:
      hits.append(('char_run', f'{ch!r} repeated {length}x'))
  if config.max_identical_calls:
    run, call = identical_call_run(traj)
    if run > config.max_identical_calls:
      hits.append(('identical_tool_calls', f'{run}x in a row: {call[:160]}'))
  if config.max_tool_calls and len(traj.tool_calls) > config.max_tool_calls:
    hits.append(
        (
            'runaway_tool_calls',
            f'{len(traj.tool_calls)} tool calls (> {config.max_tool_calls})',
        )
    )
  if config.check_unterminated:
    blocks = unterminated_blocks(traj)
    if blocks:
      hits.append(('unterminated_block', '; '.join(blocks[:5])))
  return ratio, hits


def degeneration_filter(
    trajs: list[trajectory.Trajectory], config: DegenerationConfig
) -> stage_result.StageResult:
  """Removes trajectories on which any degeneration detector fires.

  The removal reason is the first detector that fired (in the order of
  `detect`); stats count every detector that fired and give the ratio
  distribution of the input.
  """
  verdicts, ratios, fired = [], [], collections.Counter()
  for traj in trajs:
    ratio, hits = detect(traj, config)
    ratios.append(ratio)
    fired.update(reason for reason, _ in hits)
    if hits:
      reason, detail = hits[0]
      others = ', '.join(r for r, _ in hits[1:])
      detail += f' (also: {others})' if others else ''
      verdicts.append(stage_result.removal(traj, reason, detail))
    else:
      verdicts.append(None)
  stats = {
      'max_window_ratio': stage_result.quantiles(ratios),
      'detectors_fired': dict(fired.most_common()),
      'config': dataclasses.asdict(config),
  }
  return stage_result.split('degeneration', trajs, verdicts, stats)
