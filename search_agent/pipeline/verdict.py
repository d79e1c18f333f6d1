"""One line on whether the model learned, and when it did not, why.

Read from report.json's figures: pass@1 before and after SFT and after RL
(paired, exact McNemar), the share of first calls that are well formed, the
share of first queries that name the question's page, and the pretraining's
copy probe (copy_nll). SFT "taught" when after SFT more held-out tasks were
gained than lost at McNemar p < ALPHA (without an evaluation before SFT:
when the Wilson interval after SFT lies above 0). When the report holds
held-out phrasings (held-out tasks asked again in words no training task
used), the line says how pass@1 on them after SFT compares with the same
tasks as first asked: lower or higher at McNemar p < ALPHA, else not
distinguishable.
"""

ALPHA = 0.05
# Below this share of well-formed first calls SFT did not teach the format.
FORMAT_MIN = 0.5
# Below this share of first queries naming the page, the model does not copy
# the question's entity into its query.
COPY_MIN = 0.1
# A copy probe (nats per copied token) above this: copying has not formed
# (learning-signal.md: 5-6 before it forms, 0.6-2 after).
COPY_NLL_FORMED = 3.0


def _pct(x: float) -> str:
  return f'{100 * x:.1f}%'


def _score(r: dict) -> str:
  return (
      f'{_pct(r["value"])} ({r["k"]}/{r["n"]}, Wilson'
      f' [{_pct(r["ci_low"])}, {_pct(r["ci_high"])}])'
  )


def _significant_gain(paired: dict | None) -> bool:
  return bool(
      paired and paired['gained'] > paired['lost'] and paired['p_value'] < ALPHA
  )


def _rl_clause(rep: dict) -> str:
  rl = rep['pass_at_1'].get('after_rl')
  paired = rep['paired'].get('after_rl_vs_after_sft')
  if not rl or not paired:
    return ''
  delta = 100 * paired['delta']
  p = paired['p_value']
  if p < ALPHA:
    verb = 'raised' if delta > 0 else 'lowered'
    return f'; RL {verb} it to {_score(rl)}, {delta:+.1f} points, p = {p:.2g}'
  return (
      f'; after RL {_score(rl)}, {delta:+.1f} points ({paired["gained"]}'
      f' gained / {paired["lost"]} lost, p = {p:.2g}: not distinguishable'
      ' from SFT)'
  )


def phrasing_comparison(rep: dict) -> str | None:
  """'below', 'above' or 'indistinguishable': pass@1 after SFT on held-out
  phrasings against held-out pages. Paired on the same tasks when the
  report has them (exact McNemar at ALPHA), else by disjoint Wilson
  intervals; None without both sets."""
  phrased = rep.get('heldout_phrasings', {})
  ph = phrased.get('pass_at_1', {}).get('after_sft')
  sft = rep['pass_at_1'].get('after_sft')
  if not (ph and ph['n'] and sft and sft['n']):
    return None
  paired = phrased.get('vs_pages', {}).get('after_sft')
  if paired and paired['tasks']:
    if paired['p_value'] >= ALPHA:
      return 'indistinguishable'
    return 'above' if paired['gained'] > paired['lost'] else 'below'
  if ph['ci_high'] < sft['ci_low']:
    return 'below'
  if ph['ci_low'] > sft['ci_high']:
    return 'above'
  return 'indistinguishable'


_PHRASING_READING = {
    'below': (
        'lower than held-out pages{test}, so what SFT taught carries to new'
        ' pages in the trained phrasings, not to new phrasings'
    ),
    'above': 'higher than held-out pages{test}',
    'indistinguishable': 'not distinguishable from held-out pages{test}',
}


def _phrasing_clause(rep: dict) -> str:
  comparison = phrasing_comparison(rep)
  if comparison is None:
    return ''
  phrased = rep['heldout_phrasings']
  scores = phrased['pass_at_1']
  text = f'; on held-out phrasings {_score(scores["after_sft"])} after SFT'
  if scores.get('after_rl'):
    text += f' and {_score(scores["after_rl"])} after RL'
  paired = phrased.get('vs_pages', {}).get('after_sft')
  if paired and paired['tasks']:
    test = (
        f' on the same {paired["tasks"]} tasks ({paired["lost"]} right only'
        f' as trained / {paired["gained"]} only as held out, p ='
        f' {paired["p_value"]:.2g})'
    )
  else:
    test = ' (Wilson intervals)'
  return f'{text}: {_PHRASING_READING[comparison].format(test=test)}'


def _why_not(rep: dict, copy_nll: float | None) -> str:
  wf = rep['well_formed_first_call'].get('after_sft')
  qn = rep['query_names_first_page'].get('after_sft')
  if wf is None or wf < FORMAT_MIN:
    shown = 'no' if wf is None else _pct(wf)
    return (
        f'SFT did not teach the tool format: first calls well formed in {shown}'
    )
  probe = ''
  if copy_nll is not None:
    formed = 'formed' if copy_nll < COPY_NLL_FORMED else 'not formed'
    probe = f'; pretraining copy probe {copy_nll:.2f} nats ({formed})'
  if qn is not None and qn < COPY_MIN:
    return (
        'SFT taught the tool format but not copying: first calls well formed'
        f' in {_pct(wf)}, first query names the page in {_pct(qn)}{probe}'
    )
  shown = '-' if qn is None else _pct(qn)
  return (
      f'the model copies (first query names the page in {shown}, first calls'
      f' well formed in {_pct(wf)}) but its answers are wrong{probe}'
  )


def verdict(rep: dict, copy_nll: float | None = None) -> dict:
  """{'learned': bool | None, 'phrasings': str | None, 'line': str} from
  report.json's figures ('phrasings': `phrasing_comparison`).

  Args:
    rep: The report dict (pass_at_1, paired, well_formed_first_call,
      query_names_first_page, and heldout_phrasings when evaluated).
    copy_nll: The pretraining's last copy probe, if it has one.
  """
  scores = rep['pass_at_1']
  sft = scores.get('after_sft')
  if not sft or not sft['n']:
    return {
        'learned': None,
        'phrasings': None,
        'line': 'No held-out evaluation after SFT: nothing shows learning.',
    }
  before = scores.get('before_sft')
  if before:
    learned = _significant_gain(rep['paired'].get('after_sft_vs_before_sft'))
    start = f'{_pct(before["value"])} before SFT -> '
  else:
    learned = sft['ci_low'] > 0
    start = ''
  if learned:
    gain = rep['paired'].get('after_sft_vs_before_sft')
    test = f', McNemar p = {gain["p_value"]:.2g}' if gain else ''
    return {
        'learned': True,
        'phrasings': phrasing_comparison(rep),
        'line': (
            f'The model learned: held-out pass@1 {start}{_score(sft)} after'
            f' SFT{test}{_rl_clause(rep)}{_phrasing_clause(rep)}.'
        ),
    }
  return {
      'learned': False,
      'phrasings': phrasing_comparison(rep),
      'line': (
          f'The model did not learn: held-out pass@1 {start}{_score(sft)}'
          f' after SFT; {_why_not(rep, copy_nll)}{_rl_clause(rep)}'
          f'{_phrasing_clause(rep)}.'
      ),
  }
