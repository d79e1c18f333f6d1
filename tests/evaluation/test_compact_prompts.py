"""Compact prompts in eval: one-line tool signatures and short snippets."""

import asyncio

from search_agent.agent import budgets
from search_agent.agent import react
from search_agent.evaluation import config as config_lib
from search_agent.evaluation import datasets
from search_agent.evaluation import harness
from search_agent.llm import scripted

CALL = '<tool_call>{"name": "search", "arguments": {"query": ["Teutberga"]}}</tool_call>'


def _search(index, **extra):
  return {'index_dir': str(index), 'url': '', 'tools': ('search',),
          'top_k': 3, 'rerank': False, **extra}  # fmt: skip


def test_snippet_words_shortens_every_excerpt(tiny_index, repo_root):
  words = {}
  for n in (0, 12):
    with config_lib.toolbox_factory(
        _search(tiny_index, snippet_words=n), None
    ) as f:
      box = f(datasets.load(_dataset(repo_root))[0])
      data = asyncio.run(box._search(['Teutberga queen'])).data  # pylint: disable=protected-access
    words[n] = [
        len(r['snippet'].split()) for r in data['queries'][0]['results']
    ]
  assert max(words[12]) <= 12 < max(words[0])


def _dataset(repo_root):
  path = repo_root / 'eval/data/2wiki_demo_tasks.jsonl'
  return datasets.DatasetConfig(
      name='demo', format='tasks', path=str(path), limit=1
  )


def test_signature_tool_text_reaches_the_system_prompt(
    tiny_index, tmp_path, repo_root
):
  policy = scripted.ScriptedLLM([CALL, '<answer>Lothair II</answer>'])
  config = harness.EvalConfig(
      dataset=_dataset(repo_root),
      agent=react.AgentConfig(budgets=budgets.Budgets(max_steps=3)),
      system_prompt='agent_system_compact.md',
      tool_text='signature',
      concurrency=1,
  )
  with config_lib.toolbox_factory(_search(tiny_index), None) as factory:
    report = asyncio.run(
        harness.evaluate(
            config, policy=policy, judge=None, toolbox_factory=factory,
            workdir=tmp_path, describe={},
        )
    )  # fmt: skip
  system = policy.calls[0][0]['content']
  assert 'search(query: list[str])' in system
  assert '"parameters"' not in system
  assert report['manifest']['tool_text'] == 'signature'
