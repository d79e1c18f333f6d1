"""Each benchmark's own grading protocol: template, exact-match step, parser.

* `browsecomp`: openai/simple-evals' BrowseComp grader
  (`browsecomp_grader.txt`), verdict `correct: yes|no` (`grading.py`'s
  lenient line parser). Also the default for our own task files.
* `browsecomp_plus`: texttron/BrowseComp-Plus
  `scripts_evaluation/evaluate_run.py` (`browsecomp_plus_grader.txt`, its
  GRADER_TEMPLATE verbatim) with its parser: `**correct:** yes|no`, then
  `**correct**: yes|no`, then `correct: yes|no`, each the first match,
  case-insensitive.
* `xbench`: xbench-ai/xbench-evals `eval_grader.py`: exact string match of
  the final answer with the reference first (no judge call), else the
  Chinese LLM_JUDGE_PROMPT (`xbench_grader.txt`, verbatim) and the verdict
  `结论:*.(正确|错误)`. Their `parse_match_result` splits the match on an
  ASCII ':' and so misreads `结论：正确` (full-width colon) as no verdict; we
  take the regex's group instead (the judge's intent), the one deviation.
  The official score of a failed judge call is 0; ours is a judge error,
  which the strict headline counts wrong too.

`identity(protocol)` names the protocol in the manifest, so two runs
graded differently are never compared silently.
"""

import re

from search_agent.llm import protocol as protocol_lib

PROTOCOLS = ('browsecomp', 'browsecomp_plus', 'xbench')
_BY_FORMAT = {
    'browsecomp': 'browsecomp',
    'tasks': 'browsecomp',
    'browsecomp_plus': 'browsecomp_plus',
    'xbench': 'xbench',
}
TEMPLATES = {
    'browsecomp': 'browsecomp_grader.txt',
    'browsecomp_plus': 'browsecomp_plus_grader.txt',
    'xbench': 'xbench_grader.txt',
}
_IDENTITY = {
    'browsecomp': 'openai/simple-evals browsecomp_eval.py GRADER_TEMPLATE',
    'browsecomp_plus': (
        'texttron/BrowseComp-Plus scripts_evaluation/evaluate_run.py'
        ' GRADER_TEMPLATE + parse_judge_response'
    ),
    'xbench': (
        'xbench-ai/xbench-evals eval_grader.py: exact match, then'
        ' LLM_JUDGE_PROMPT (结论: 正确|错误)'
    ),
}
_XB_FINAL = re.compile(r'最终答案:*(.*)')
_XB_VERDICT = re.compile(r'结论:*.(正确|错误)')
_BCP_VERDICTS = tuple(
    re.compile(p, re.IGNORECASE)
    for p in (
        r'\*\*correct:\*\*\s*(yes|no)',
        r'\*\*correct\*\*:\s*(yes|no)',
        r'correct:\s*(yes|no)',
    )
)


class VerdictError(protocol_lib.LLMError):
  """The judge's reply holds no verdict in the protocol's format."""


def for_format(dataset_format: str) -> str:
  """The grading protocol of a dataset format."""
  return _BY_FORMAT.get(dataset_format, 'browsecomp')


def identity(protocol: str) -> str:
  return _IDENTITY[protocol]


def xbench_final_answer(text: str) -> str | None:
  """The `最终答案:` field of a reply (the answer line), stripped."""
  match = _XB_FINAL.search(text)
  if match is None:
    return None
  return match.group(1).lstrip('：:').strip()


def xbench_exact(response: str, prediction: str, reference: str) -> bool:
  """xbench's first step: the final answer equals the reference exactly.

  The final answer is the reply's `最终答案:` line when it has one (the
  official prompt's format), else the agent's `<answer>`.
  """
  final = xbench_final_answer(response)
  return (final if final is not None else prediction.strip()) == reference


def parse_xbench(text: str) -> tuple[bool, str | None]:
  """(correct, extracted answer) of an xbench judge reply."""
  match = _XB_VERDICT.search(text)
  if match is None:
    raise VerdictError(f'judge reply has no "结论: 正确|错误": {text[-300:]!r}')
  return match.group(1) == '正确', xbench_final_answer(text)


def parse_browsecomp_plus(text: str) -> bool:
  """BrowseComp-Plus's verdict: the first of its three patterns that hits."""
  for pattern in _BCP_VERDICTS:
    match = pattern.search(text)
    if match:
      return match.group(1).lower() == 'yes'
  raise VerdictError(f'judge reply has no "correct: yes|no": {text[-300:]!r}')
