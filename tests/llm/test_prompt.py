"""Prompt files: loading, exact marker filling, hashes."""

import hashlib

import pytest

from search_agent.llm.prompts import prompt as prompt_lib


def test_agent_prompt_fills_tools_and_keeps_json_braces():
  p = prompt_lib.load('agent_system.md')
  assert p.fields == {'tools'}
  text = p.render(tools='{"name": "search"}')
  assert '<tools>\n{"name": "search"}\n</tools>' in text
  assert '{"name": "<tool name>", "arguments": {<arguments as JSON>}}' in text
  assert p.sha256 == hashlib.sha256(p.text.encode()).hexdigest()


def test_bundled_prompts_and_their_fields():
  fields = {
      'mas_verifier.md': {'tools'},
      'mas_attempts.md': {'question', 'attempts'},
      'context_summary.md': {'question', 'history'},
      'browsecomp_grader.txt': {'question', 'response', 'correct_answer'},
  }
  for name, want in fields.items():
    assert prompt_lib.load(name).fields == want, name


def test_errors_name_the_problem(tmp_path):
  with pytest.raises(prompt_lib.PromptError, match='missing fields'):
    prompt_lib.load('mas_attempts.md').render(question='q')
  with pytest.raises(prompt_lib.PromptError, match='unknown fields'):
    prompt_lib.load('mas_verifier.md').render(tools='t', extra='x')
  with pytest.raises(prompt_lib.PromptError, match='bundled prompts'):
    prompt_lib.load('nope.md')
  own = tmp_path / 'mine.txt'
  own.write_text('Hi {name}')
  assert prompt_lib.load(str(own)).render(name='A') == 'Hi A'
