"""Writes an eval's report: report.json, manifest.json and report.md."""

import json
import pathlib
from typing import Any, Mapping

REPORT = 'report.json'
MANIFEST = 'manifest.json'
MARKDOWN = 'report.md'


def _pct(x: float | None) -> str:
  return '—' if x is None else f'{100 * x:.1f}%'


def _num(x: float | None) -> str:
  return '—' if x is None else f'{x:.0f}'


def _grading(judge: Mapping[str, Any]) -> str:
  if judge['method'] != 'judge':
    return 'exact match (rewards/answer_match.py)'
  llm = judge.get('llm') or {}
  name = llm.get('name') or llm.get('openai', {}).get('model') or 'judge'
  out = f'{name} with {judge["template"]} ({judge["template_sha256"][:12]})'
  if judge.get('benchmark_grader'):
    out += f'; protocol: {judge["benchmark_grader"]}'
  return out


def markdown(summary: Mapping[str, Any], manifest: Mapping[str, Any]) -> str:
  """A human-readable report (no question or answer text)."""
  ci = summary['ci']
  cis = summary.get('ci_strict', ci)
  tools = summary['tools']
  cal = summary['calibration']
  rms = summary.get('calibration_rms') or {'error': None, 'n': 0}
  reps = summary.get('repeats') or {'n': 1}
  rollouts = summary.get('rollouts', summary['questions'])
  ctx = manifest['context_policy']
  ev = summary.get('evidence') or {
      'questions_with_evidence': 0,
      'recall': None,
      'citation': {'coverage': None, 'precision': None, 'recall': None},
  }
  lines = [
      f'# Eval: {manifest["dataset"]["name"]} ({manifest["mode"]})',
      '',
      '| metric | value |',
      '|---|---|',
      f'| pass@1 (headline: a judge failure counts wrong) |'
      f' {_pct(summary["pass_at_1_strict"])}'
      f' ({summary["correct"]}/{rollouts}) |',
      f'| 95% CI (Wilson) | {_pct(cis["low"])} – {_pct(cis["high"])} |',
      f'| pass@1, judge errors excluded | {_pct(summary["pass_at_1"])} '
      f'({summary["correct"]}/{summary["graded"]}), CI {_pct(ci["low"])} –'
      f' {_pct(ci["high"])} |',
  ]
  if reps['n'] > 1:
    lines.append(
        f'| avg@{reps["n"]} / pass@{reps["n"]} | {_pct(reps["avg_at_n"])} /'
        f' {_pct(reps["pass_at_n"])} |'
    )
  lines += [
      f'| questions / rollouts / graded / judge errors |'
      f' {summary["questions"]} / {rollouts} / '
      f'{summary["graded"]} / {summary["judge_errors"]} |',
      f'| tool calls per question (mean / median / max) | '
      f'{tools["calls_mean"]:.2f} / {tools["calls_median"]} / '
      f'{tools["calls_max"]} |',
      f'| calls by tool | {tools["calls_by_tool"]} |',
      f'| invalid turns | {tools["invalid_turns"]} |',
      f'| questions with blocked URLs in tool traffic |'
      f' {summary["leakage_flagged"]} |',
      f'| statuses | {summary["statuses"]} |',
      f'| budgets hit | {summary["budgets_hit"]} |',
      f'| calibration error, 10-bin L1 ECE ({cal["n"]} answers) | '
      f'{_pct(cal["ece"])} |',
      f'| calibration error, RMS over bins of 100 as HLE/BrowseComp-Plus'
      f' ({rms["n"]} answers; needs 100) | {_pct(rms["error"])} |',
      f'| context policy | {ctx["policy"]} |',
      f'| peak prompt tokens (mean / max), resets | '
      f'{_num(summary["context"]["peak_prompt_tokens_mean"])} / '
      f'{summary["context"]["peak_prompt_tokens_max"]}, '
      f'{summary["context"]["resets"]} |',
      f'| limits | steps {manifest["limits"]["max_steps"]}, output '
      f'{manifest["limits"]["max_output_tokens"]}, context '
      f'{manifest["limits"]["context_limit"]} |',
      f'| evidence recall of searched docs ({ev["questions_with_evidence"]}'
      f' rollouts with evidence) | {_pct(ev["recall"])} |',
      f'| [docid] citations: replies citing / precision / recall |'
      f' {_pct(ev["citation"]["coverage"])} /'
      f' {_pct(ev["citation"]["precision"])} /'
      f' {_pct(ev["citation"]["recall"])} |',
      f'| grading | {_grading(manifest["judge"])} |',
      f'| tools | {", ".join(manifest["tools"]["names"])} |',
      '',
      '## Calibration bins',
      '',
      '| confidence bin | n | mean confidence | accuracy |',
      '|---|---|---|---|',
  ]
  for b in cal['bins']:
    lo, hi = b['bin']
    lines.append(
        f'| {lo:.1f}–{hi:.1f} | {b["n"]} | {_pct(b["confidence"])} |'
        f' {_pct(b["accuracy"])} |'
    )
  return '\n'.join(lines) + '\n'


def write(out: pathlib.Path, report: Mapping[str, Any]) -> None:
  """Writes the three report files into `out`."""
  (out / REPORT).write_text(json.dumps(report, indent=2, ensure_ascii=False))
  (out / MANIFEST).write_text(
      json.dumps(report['manifest'], indent=2, ensure_ascii=False)
  )
  (out / MARKDOWN).write_text(markdown(report['summary'], report['manifest']))


def load(workdir: str | pathlib.Path) -> dict[str, Any]:
  path = pathlib.Path(workdir) / REPORT
  if not path.is_file():
    raise FileNotFoundError(
        f'{path} does not exist: run `python -m eval.run --workdir={workdir}`'
        ' first'
    )
  return json.loads(path.read_text())
