"""Tests for the tool schemas and argument validation."""

import json

import pytest

from search_agent.search import schemas


def test_schemas_are_openai_function_definitions():
  defs = schemas.tool_schemas()
  assert [d['function']['name'] for d in defs] == list(schemas.TOOL_NAMES)
  for d in defs:
    assert d['type'] == 'function'
    params = d['function']['parameters']
    assert params['type'] == 'object'
    assert set(params['required']) <= set(params['properties'])
  json.dumps(defs)  # serializable
  search = defs[0]['function']['parameters']['properties']['query']
  assert search['type'] == 'array' and search['items'] == {'type': 'string'}
  assert [d['function']['name'] for d in schemas.tool_schemas(['visit'])] == [
      'visit'
  ]
  with pytest.raises(ValueError, match='unknown tools'):
    schemas.tool_schemas(['browse'])


def test_valid_arguments_are_normalized():
  v = schemas.validate_arguments
  assert v('search', {'query': ['a b', ' c ']}) == {'query': ('a b', 'c')}
  assert v('search', {'query': 'lone string'}) == {'query': ('lone string',)}
  assert v('visit', {'ref_id': ['r1', 'r2'], 'goal': 'who'}) == {
      'ref_id': ('r1', 'r2'),
      'goal': 'who',
  }
  assert v('open', {'ref_id': 'r1'}) == {'ref_id': 'r1', 'cursor': 0}
  assert v('open', {'ref_id': 'r1', 'cursor': '2'})['cursor'] == 2
  assert v('find', {'ref_id': 'r1', 'pattern': '1888'}) == {
      'ref_id': 'r1',
      'pattern': '1888',
  }


@pytest.mark.parametrize(
    'name,args,message',
    [
        ('browse', {}, 'unknown tool'),
        ('search', ['q'], 'JSON object'),
        ('search', {}, 'missing'),
        ('search', {'query': ['q'], 'k': 3}, 'unknown'),
        ('search', {'query': []}, 'at least one'),
        ('search', {'query': ['ok', '  ']}, 'at least one'),
        ('search', {'query': [1, 2]}, 'list of strings'),
        ('search', {'query': ['q'] * 11}, 'at most 10'),
        ('search', {'query': ['x' * 1025]}, 'over the limit'),
        ('visit', {'ref_id': ['r1']}, 'missing'),
        ('visit', {'ref_id': ['r1'], 'goal': ''}, 'non-empty'),
        ('open', {'ref_id': 'r1', 'cursor': -1}, 'page number'),
        ('open', {'ref_id': 'r1', 'cursor': True}, 'page number'),
        ('open', {'ref_id': 3}, 'non-empty string'),
        ('find', {'ref_id': 'r1', 'pattern': 'p' * 201}, 'over the limit'),
        ('search', {'query': ['ok', 'a \ud800']}, 'unpaired UTF-16'),
        ('visit', {'ref_id': ['r1'], 'goal': 'x\udfff'}, 'unpaired UTF-16'),
        ('find', {'ref_id': 'r1', 'pattern': '\ud83d'}, 'unpaired UTF-16'),
    ],
)
def test_bad_arguments_raise_a_clear_error(name, args, message):
  with pytest.raises(schemas.ToolArgumentError, match=message):
    schemas.validate_arguments(name, args)


def test_limits_are_configurable():
  limits = schemas.ToolLimits(max_queries=2)
  with pytest.raises(schemas.ToolArgumentError, match='at most 2'):
    schemas.validate_arguments('search', {'query': ['a', 'b', 'c']}, limits)
