"""What `python -m search_agent.filtering.run` does, as testable functions.

Three modes:
  filter         read trajectories, run the pipeline, write filtered.jsonl,
                 decisions.jsonl (one line per input trajectory: kept, or
                 removed/error with stage and reason), undecided.jsonl (the
                 trajectories a judge failed on, as read, to run again),
                 report.json, report.md;
  calibrate      ratio distributions of real and looped trajectories and the
                 chosen threshold: calibration.json, calibration.md;
  induce_rubric  critiques of sampled trajectories and a consolidated rubric:
                 rubric.md, critiques.jsonl.
The last two also write line_errors.jsonl: the input lines they could not
read (the filter report lists them itself).
"""

import dataclasses
import json
import os
import pathlib
from typing import Any, Sequence

from search_agent.agent import task as task_lib
from search_agent.filtering import calibrate
from search_agent.filtering import inputs
from search_agent.filtering import judges
from search_agent.filtering import pipeline as pipeline_lib
from search_agent.filtering import report
from search_agent.filtering import rubric
from search_agent.filtering import turn_mask
from search_agent.llm import protocol

MODES = ('filter', 'calibrate', 'induce_rubric')


@dataclasses.dataclass(frozen=True, kw_only=True)
class FilterJob:
  """One run of the filtering binary.

  Attributes:
    mode: One of MODES.
    input_path: Trajectory JSONL (our format or chatml).
    input_format: 'auto', 'trajectory' or 'chatml'.
    tasks_path: Optional task JSONL holding the reference answers.
    known_tools: Tool names the agent had; others mark their turn invalid.
    judge: Answer judge kind: 'exact', 'contains' or 'llm'.
    pipeline: Stage config_lib.
    examples_per_reason: Examples quoted per removal reason in the report.
    loop_periods: Calibration: periods (characters) of the looped variants.
    loop_lengths: Calibration: looped-region lengths (characters).
    seed: Seed of calibration variants and rubric sampling.
    rubric_samples: Trajectories critiqued to induce a rubric.
    rubric_turn_mask: Rendering settings used for critique transcripts.
  """

  mode: str = 'filter'
  input_path: str
  input_format: str = 'auto'
  tasks_path: str = ''
  known_tools: tuple[str, ...] = ()
  judge: str = 'exact'
  pipeline: pipeline_lib.PipelineConfig = dataclasses.field(
      default_factory=pipeline_lib.PipelineConfig
  )
  examples_per_reason: int = 3
  loop_periods: tuple[int, ...] = (30, 120, 500, 1000)
  loop_lengths: tuple[int, ...] = (1024, 2048, 4096, 8192)
  seed: int = 0
  rubric_samples: int = 20
  rubric_turn_mask: turn_mask.TurnMaskConfig = dataclasses.field(
      default_factory=turn_mask.TurnMaskConfig
  )

  def __post_init__(self):
    if self.mode not in MODES:
      raise ValueError(f'mode {self.mode!r} is not one of {MODES}')
    if not self.input_path:
      raise ValueError('input_path is empty: set --config.input_path')


def load_tasks(path: str) -> dict[str, task_lib.Task] | None:
  if not path:
    return None
  return {t.id: t for t in task_lib.iter_tasks(path)}


def _write_jsonl(path: pathlib.Path, rows: Sequence[dict[str, Any]]) -> None:
  with open(path, 'w', encoding='utf-8') as f:
    for row in rows:
      f.write(json.dumps(row, ensure_ascii=False) + '\n')


def _write_line_errors(
    out: pathlib.Path, summary: inputs.InputSummary
) -> list[dict[str, Any]]:
  rows = [dataclasses.asdict(e) for e in summary.line_errors]
  _write_jsonl(out / 'line_errors.jsonl', rows)
  return rows


async def run_filter(
    job: FilterJob,
    workdir: str | os.PathLike[str],
    *,
    judge_llm: protocol.LLM | None = None,
    turn_llm: protocol.LLM | None = None,
) -> dict[str, Any]:
  """Filters `job.input_path` into `workdir`; returns the report."""
  out = pathlib.Path(workdir)
  out.mkdir(parents=True, exist_ok=True)
  trajs, summary = inputs.load_trajectories(
      job.input_path, job.input_format, job.known_tools
  )
  tasks = load_tasks(job.tasks_path)
  judge = judges.AnswerJudge(job.judge, judge_llm)
  results = await pipeline_lib.run_pipeline(
      trajs, job.pipeline, judge=judge, turn_llm=turn_llm, tasks=tasks
  )
  _write_jsonl(out / 'filtered.jsonl', [t.to_json() for t in results[-1].kept])
  _write_jsonl(out / 'decisions.jsonl', report.decisions(results))
  undecided = {e.traj_id for r in results for e in r.errors}
  _write_jsonl(
      out / 'undecided.jsonl',
      [t.to_json() for t in trajs if t.id in undecided],
  )
  settings = dataclasses.asdict(job) | {'judge_name': judge.name}
  rep = report.build_report(
      summary, trajs, results, settings, job.examples_per_reason
  )
  (out / 'report.json').write_text(
      json.dumps(rep, indent=1, ensure_ascii=False), encoding='utf-8'
  )
  (out / 'report.md').write_text(report.render_markdown(rep), encoding='utf-8')
  return rep


def run_calibration(
    job: FilterJob, workdir: str | os.PathLike[str]
) -> dict[str, Any]:
  """Writes calibration.json/.md for the degeneration window config_lib."""
  out = pathlib.Path(workdir)
  out.mkdir(parents=True, exist_ok=True)
  trajs, summary = inputs.load_trajectories(job.input_path, job.input_format)
  result = calibrate.calibrate(
      trajs,
      job.pipeline.degeneration,
      job.loop_periods,
      job.loop_lengths,
      job.seed,
  )
  result['unreadable_lines'] = len(_write_line_errors(out, summary))
  (out / 'calibration.json').write_text(
      json.dumps(result, indent=1), encoding='utf-8'
  )
  (out / 'calibration.md').write_text(
      calibration_markdown(result), encoding='utf-8'
  )
  return result


def calibration_markdown(result: dict[str, Any]) -> str:
  """The calibration as a table of ratio quantiles per variant."""
  cfg, choice = result['config'], result['choice']
  lines = [
      '# Compression-ratio calibration',
      '',
      f"window {cfg['window_bytes']} B, stride {cfg['stride_bytes']} B, zlib"
      f" level {cfg['zlib_level']}; {result['n_trajectories']} trajectories"
      f" ({result.get('unreadable_lines', 0)} unreadable input lines in"
      ' line_errors.jsonl)',
      '',
      '| text | min | p10 | p50 | p90 | p99 | max | flagged at threshold |',
      '|---|---:|---:|---:|---:|---:|---:|---:|',
  ]
  real = result['real']
  row = ' | '.join(f'{real[k]:.2f}' for k in ('min', 'p10', 'p50', 'p90'))
  row += f" | {real['p99']:.2f} | {real['max']:.2f}"
  flagged = result['real_flagged'] / result['n_trajectories']
  lines.append(f'| real | {row} | {flagged:.3f} |')
  for v in result['looped']:
    q = v['ratios']
    row = ' | '.join(f'{q[k]:.2f}' for k in ('min', 'p10', 'p50', 'p90'))
    row += f" | {q['p99']:.2f} | {q['max']:.2f}"
    lines.append(
        f"| loop period {v['period']}, {v['loop_chars']} chars | {row} |"
        f" {v['caught']:.3f} |"
    )
  lines += [
      '',
      f"Chosen threshold: **{choice['threshold']}** (best range"
      f" {choice['best_range']}; on loops >= one window: recall"
      f" {choice['recall']:.4f}, false-positive rate on real"
      f" {choice['false_positive_rate']:.4f}).",
  ]
  return '\n'.join(lines) + '\n'


async def run_rubric_induction(
    job: FilterJob, workdir: str | os.PathLike[str], llm: protocol.LLM
) -> rubric.RubricInduction:
  """Writes rubric.md and critiques.jsonl."""
  out = pathlib.Path(workdir)
  out.mkdir(parents=True, exist_ok=True)
  trajs, summary = inputs.load_trajectories(job.input_path, job.input_format)
  _write_line_errors(out, summary)
  result = await rubric.induce_rubric(
      trajs,
      llm,
      n=job.rubric_samples,
      seed=job.seed,
      tasks=load_tasks(job.tasks_path),
      config=job.rubric_turn_mask,
  )
  (out / 'rubric.md').write_text(result.rubric + '\n', encoding='utf-8')
  _write_jsonl(
      out / 'critiques.jsonl',
      [{'traj_id': i, 'critique': c} for i, c in result.critiques],
  )
  return result
