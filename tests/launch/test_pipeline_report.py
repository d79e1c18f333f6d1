"""The report leads with pass@1, its plot and whether the model learned."""

import json

from search_agent import stats
from search_agent.pipeline import plots
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


def test_the_report_counts_the_rl_trajectories_that_slid(tmp_path):
  _fake_eval(tmp_path / 'e0', [False] * 4)
  rl = tmp_path / 'rl'
  rl.mkdir()
  rows = [  # two updates: 4 trajectories (1 slid into 3 segments), then 2
      {'step': 1, 'reward_mean': 0.5, 'trajectories': 4,
       'trajectories_slid': 1, 'segments_per_trajectory': 1.5,
       'dropped_inexact': 0},
      {'step': 2, 'reward_mean': 0.25, 'trajectories': 2,
       'trajectories_slid': 0, 'segments_per_trajectory': 1.0,
       'dropped_inexact': 1},
  ]  # fmt: skip
  (rl / 'metrics.jsonl').write_text(''.join(json.dumps(r) + '\n' for r in rows))
  (tmp_path / 'stages.json').write_text(json.dumps({
      n: {'seconds': 1.0, 'hash': 'h', 'argv': [], 'figure': '',
          'reused': False, 'log': ''} for n in ('e0', 'rl')
  }))  # fmt: skip
  rep = report.build(str(tmp_path), [('before_sft', 'e0')], 'tiny')
  assert rep['rl_horizon']['rl'] == {
      'updates': 2,
      'trajectories': 6,
      'slid': 1,
      'segments_per_trajectory': (1.5 * 4 + 2) / 6,
      'dropped_inexact': 1,
  }
  text = report_md.render(rep, str(tmp_path))
  assert (
      '- rl horizon: 6 trajectories trained in 2 updates, 1 of them slid'
      in text
  )


def _fake_tasks(d, n):
  """n held-out tasks t0.. asked again as p0.. (meta `rephrases`)."""
  d.mkdir(parents=True, exist_ok=True)
  with open(d / 'tasks.heldout_phrasings.jsonl', 'w') as f:
    for i in range(n):
      f.write(json.dumps({'id': f'p{i}', 'meta': {'rephrases': f't{i}'}}))
      f.write('\n')


def test_report_carries_held_out_phrasings_beside_held_out_pages(tmp_path):
  _fake_eval(tmp_path / 'e0', [False] * 40)
  _fake_eval(tmp_path / 'e1', [True] * 16 + [False] * 24)
  _fake_eval(tmp_path / 'e2', [True] * 18 + [False] * 22)
  # Held-out phrasing tasks get their own ids (p0, ...).
  for name, correct in (('p1', [True] + [False] * 29),
                        ('p2', [True] * 2 + [False] * 28)):  # fmt: skip
    d = tmp_path / name
    d.mkdir()
    with open(d / 'results.jsonl', 'w') as f:
      for i, ok in enumerate(correct):
        f.write(json.dumps({'task_id': f'p{i}', 'correct': ok}) + '\n')
  _fake_tasks(tmp_path / 'tasks', 30)
  (tmp_path / 'tasks' / 'funnel.json').write_text(
      json.dumps({'tasks': {'heldout_phrasing_ids': ['director/3']}})
  )
  (tmp_path / 'stages.json').write_text('{}')
  rep = report.build(
      str(tmp_path),
      [('before_sft', 'e0'), ('after_sft', 'e1'), ('after_rl', 'e2')], 'tiny',
      phrasings=[('after_sft', 'p1'), ('after_rl', 'p2')],
  )  # fmt: skip
  rep = json.loads(json.dumps(rep))  # as report.json holds it
  assert rep['pass_at_1']['after_sft']['n'] == 40  # held-out pages
  phrased = rep['heldout_phrasings']
  assert phrased['phrasings'] == ['director/3']
  p = phrased['pass_at_1']['after_sft']
  assert (p['n'], p['k'], p['stage']) == (30, 1, 'p1')
  assert 0 < p['ci_low'] < p['value'] < p['ci_high']
  assert phrased['pass_at_1']['after_rl']['k'] == 2
  assert phrased['paired']['after_rl_vs_after_sft']['gained'] == 1
  # Paired with t0..t29 as first asked: 16 right there, 1 asked again.
  vs = phrased['vs_pages']['after_sft']
  assert (vs['tasks'], vs['lost'], vs['gained']) == (30, 15, 0)
  assert rep['verdict']['phrasings'] == 'below'
  line = rep['verdict']['line']
  assert (
      'on held-out phrasings 3.3% (1/30, Wilson [0.6%, 16.7%]) after SFT and'
      ' 6.7% (2/30' in line
  )
  assert 'lower than held-out pages on the same 30 tasks (15 right only' in line
  assert 'not to new phrasings' in line
  (tmp_path / 'report').mkdir()
  rep['plots'] = plots.write_all(rep, str(tmp_path / 'report'))
  assert (tmp_path / 'report' / 'pass_at_1.png').stat().st_size > 1000
  lines = report_md.render(rep, str(tmp_path)).splitlines()
  assert lines[4].startswith('| before_sft, held-out pages | 40 | 0 |')
  assert lines[7].startswith('| after_sft, held-out phrasings | 30 | 1 | 3.3%')
  assert lines[8].startswith('| after_rl, held-out phrasings | 30 | 2 | 6.7%')
  at = lines.index('## Held-out phrasings')
  assert '`director/3`' in lines[at + 2]
  assert lines[at + 4].startswith(
      '- after_sft: of 30 tasks asked both ways, 15 right only in the trained'
  )


def test_phrasings_without_pairs_are_compared_by_intervals():
  rep = {
      'pass_at_1': {'after_sft': stats.pass_at_1({'a': True, 'b': False})},
      'paired': {},
      'well_formed_first_call': {'after_sft': 1.0},
      'query_names_first_page': {'after_sft': 1.0},
      'heldout_phrasings': {
          'pass_at_1': {'after_sft': stats.pass_at_1({'c': True, 'd': False})}
      },
  }
  assert verdict.phrasing_comparison(rep) == 'indistinguishable'
  line = verdict.verdict(rep)['line']
  assert 'not distinguishable from held-out pages (Wilson intervals)' in line
  del rep['heldout_phrasings']
  assert verdict.verdict(rep)['phrasings'] is None
  assert 'phrasings' not in verdict.verdict(rep)['line']


def test_relation_named_reads_the_thought_before_the_answer(tmp_path):
  def traj(task_id, reply):
    return {
        'task_id': task_id,
        'messages': [
            {'role': 'user', 'content': 'q'},
            {'role': 'assistant', 'reasoning': '', 'content': reply},
        ],
    }

  rows = [
      traj('a', '<think>\nThe answer is the date of death.\n</think>\nx'),
      traj('b', '<think>\nThe answer is the nationality.\n</think>\nx'),
      traj('c', '<answer>x</answer>'),
      traj('zz', 'The answer is the director.'),  # not a known task
  ]
  tmp_path.joinpath('trajectories.jsonl').write_text(
      '\n'.join(json.dumps(r) for r in rows)
  )
  tasks = {
      k: {'meta': {'relations': ['director', 'date_of_death']}} for k in 'abc'
  }
  named = report.relation_named(str(tmp_path), tasks)
  assert named['n'] == 3
  assert named['asked'] == named['other'] == named['none'] == 1 / 3
  assert report.relation_named(str(tmp_path), {}) is None
