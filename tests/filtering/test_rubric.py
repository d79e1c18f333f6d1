"""Tests for rubric induction (harness logic: scripted judge)."""

import asyncio

import pytest

from search_agent.filtering import rubric
from search_agent.llm import protocol
from search_agent.llm import scripted


def test_sample_is_seeded(webdancer):
  a = rubric.sample(webdancer, 5, seed=3)
  assert [t.id for t in a] == [t.id for t in rubric.sample(webdancer, 5, 3)]
  assert len({t.id for t in a}) == 5
  assert rubric.sample(webdancer[:3], 5, 0) == webdancer[:3]


def test_induce_rubric_critiques_then_consolidates(webdancer):
  def respond(messages):
    prompt = messages[-1]['content']
    if prompt.startswith('Below are free-form critiques'):
      assert prompt.count('## Critique') == 3
      return '```markdown\n# Rubric\n1. Mask redundant searches.\n```'
    assert 'Reference answer:' in prompt and '[2] assistant' in prompt
    return 'Turn 2 repeats a search.'

  llm = scripted.ScriptedLLM(respond)
  result = asyncio.run(rubric.induce_rubric(webdancer, llm, n=3, seed=0))
  assert result.rubric == '# Rubric\n1. Mask redundant searches.'
  assert len(result.critiques) == 3
  assert len(llm.calls) == 4
  # The transcript leaves out the system prompt.
  assert 'Web Information Seeking Master' not in llm.calls[0][0]['content']


def test_empty_reply_is_an_error(webdancer):
  llm = scripted.ScriptedLLM(lambda _: '   ')
  with pytest.raises(protocol.LLMError, match='empty reply'):
    asyncio.run(rubric.induce_rubric(webdancer, llm, n=2))
