"""Tools in the system prompt: the recipe's JSON schemas or one-line signatures."""

import json

import pytest

from search_agent.agent import react
from search_agent.chat import tokenizer as tokenizer_lib
from search_agent.search import schemas


def test_signature_style_is_one_line_per_tool():
  text = react.tool_text(schemas.tool_schemas(), 'signature')
  assert text.splitlines() == [
      'search(query: list[str])',
      'visit(ref_id: list[str], goal: str)',
      'open(ref_id: str, cursor: int = ...)',
      'find(ref_id: str, pattern: str)',
  ]


def test_json_style_is_the_schemas_one_a_line():
  tools = schemas.tool_schemas(('search',))
  assert json.loads(react.tool_text(tools)) == tools[0]


def test_signature_is_a_small_fraction_of_the_schema_tokens():
  tok = tokenizer_lib.load_tokenizer(tokenizer_lib.maxtext_tokenizer_dir())
  tools = schemas.tool_schemas(('search',))
  full = len(tok.encode(react.tool_text(tools, 'json')))
  compact = len(tok.encode(react.tool_text(tools, 'signature')))
  assert compact * 10 < full


def test_unknown_style_is_refused():
  with pytest.raises(ValueError, match='signature'):
    react.tool_text(schemas.tool_schemas(), 'yaml')
