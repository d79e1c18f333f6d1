"""The report leads with pass@1, its plot and whether the model learned."""

import json

from search_agent import stats
from search_agent.pipeline import report
from search_agent.pipeline import report_md
from search_agent.pipeline import verdict


def _rep(before, after_sft, after_rl=None, well_formed=1.0, names=0.5):
  """A report dict from per-task outcomes (lists of bools)."""
  runs = {'before_sft': before, 'after_sft': after_sft}
  if after_rl is not None:
    runs['after_rl'] = after_rl
  outcomes = {
      k: {f't{i}': ok for i, ok in enumerate(v)} for k, v in runs.items()
  }
  labels = list(outcomes)
  return {
      'pass_at_1': {k: stats.pass_at_1(v) for k, v in outcomes.items()},
      'paired': {
          f'{b}_vs_{a}': {
              **stats.mcnemar(outcomes[a], outcomes[b]),
              'bootstrap_95': stats.paired_bootstrap(outcomes[a], outcomes[b]),
          }
          for a, b in zip(labels, labels[1:])
      },
      'well_formed_first_call': {k: well_formed for k in labels},
      'query_names_first_page': {k: names for k in labels},
  }


def test_a_significant_gain_after_sft_reads_learned():
  rep = _rep([False] * 100, [True] * 20 + [False] * 80)
  v = verdict.verdict(rep)
  assert v['learned'] is True
  assert v['line'].startswith(
      'The model learned: held-out pass@1 0.0% before SFT -> 20.0% (20/100'
  )


def test_rl_is_called_within_noise_unless_its_test_says_otherwise():
  sft = [True] * 20 + [False] * 80
  rl = [True] * 21 + [False] * 79
  line = verdict.verdict(_rep([False] * 100, sft, rl))['line']
  assert '+1.0 points (1 gained / 0 lost' in line
  assert 'not distinguishable from SFT' in line
  rl = [True] * 40 + [False] * 60
  line = verdict.verdict(_rep([False] * 100, sft, rl))['line']
  assert 'RL raised it to 40.0%' in line


def test_no_learning_names_the_format_or_the_copy_as_the_cause():
  zero = [False] * 100
  v = verdict.verdict(_rep(zero, zero, well_formed=0.2))
  assert v['learned'] is False
  assert 'SFT did not teach the tool format: first calls well formed in 20.0%' in v['line']  # fmt: skip
  line = verdict.verdict(_rep(zero, zero, names=0.0), copy_nll=5.6)['line']
  assert (
      'SFT taught the tool format but not copying: first calls well formed in'
      ' 100.0%, first query names the page in 0.0%; pretraining copy probe'
      ' 5.60 nats (not formed)' in line
  )
  line = verdict.verdict(_rep(zero, [True] + [False] * 99, names=0.6))['line']
  assert 'the model copies (first query names the page in 60.0%' in line
  assert 'but its answers are wrong' in line


def test_without_an_evaluation_after_sft_nothing_is_claimed():
  rep = _rep([False] * 10, [False] * 10)
  del rep['pass_at_1']['after_sft']
  assert verdict.verdict(rep)['learned'] is None


def _fake_eval(d, correct):
  d.mkdir(parents=True)
  with open(d / 'results.jsonl', 'w') as f:
    for i, ok in enumerate(correct):
      f.write(json.dumps({'task_id': f't{i}', 'correct': ok}) + '\n')


def test_report_md_leads_with_the_table_the_plot_and_the_verdict(tmp_path):
  _fake_eval(tmp_path / 'e0', [False] * 20)
  _fake_eval(tmp_path / 'e1', [True] * 8 + [False] * 12)
  (tmp_path / 'stages.json').write_text(json.dumps({
      n: {'seconds': 1.0, 'hash': 'h', 'argv': [], 'figure': '',
          'reused': False, 'log': ''} for n in ('e0', 'e1')
  }))  # fmt: skip
  rep = report.build(
      str(tmp_path), [('before_sft', 'e0'), ('after_sft', 'e1')], 'tiny',
      device_kind='cpu', variant_reason='named on the command line (:tiny)',
  )  # fmt: skip
  assert (rep['device_kind'], rep['variant']) == ('cpu', 'tiny')
  assert rep['verdict']['learned'] is True
  rep['plots'] = {'pass_at_1': str(tmp_path / 'report' / 'pass_at_1.png')}
  lines = report_md.render(rep, str(tmp_path)).splitlines()
  assert lines[0] == '# Pipeline report (tiny)'
  assert lines[2].startswith('| held-out evaluation | n | correct | pass@1')
  assert lines[5].startswith('| after_sft | 20 | 8 | 40.0% |')
  assert lines[7] == '![pass@1](report/pass_at_1.png)'
  assert lines[9].startswith('**The model learned: held-out pass@1')
  assert lines[11].startswith('Variant `tiny` on cpu (named on the command')
