"""The agent's tool schemas (OpenAI function-calling style) and validation.

Tools (open-recipe.md, "High-Fidelity Local Search Environment", tool table;
searchmaster.md, "Problem Setup": search, open, find):

  * `search(query: list[str])` — ranked results per query.
  * `visit(ref_id: list[str], goal: str)` — goal-directed evidence and a page
    summary per document.
  * `open(ref_id: str, cursor: int = 0)` — one page of a document's text.
  * `find(ref_id: str, pattern: str)` — exact (case-insensitive) matches of
    a pattern in an opened document, with line numbers and pages.

Validation is lenient in one way models commonly need: a lone string where a
list of strings is expected is read as a one-element list. Everything else
that does not match the schema (missing or unknown arguments, wrong types,
empty values, values over the limits) raises `ToolArgumentError` with a
message the agent can act on.
"""

import copy
import dataclasses
from typing import Any

TOOL_NAMES = ('search', 'visit', 'open', 'find')


class ToolArgumentError(ValueError):
  """A tool call's arguments do not match the tool's schema."""


@dataclasses.dataclass(frozen=True, kw_only=True)
class ToolLimits:
  """Size limits on tool arguments.

  Attributes:
    max_queries: Most queries in one search call.
    max_query_chars: Longest query string.
    max_refs: Most ref_ids in one visit call.
    max_goal_chars: Longest visit goal.
    max_pattern_chars: Longest find pattern.
  """

  max_queries: int = 10
  max_query_chars: int = 1024
  max_refs: int = 10
  max_goal_chars: int = 2000
  max_pattern_chars: int = 200


def _function(name: str, description: str, properties, required):
  return {
      'type': 'function',
      'function': {
          'name': name,
          'description': description,
          'parameters': {
              'type': 'object',
              'properties': properties,
              'required': list(required),
              'additionalProperties': False,
          },
      },
  }


_REF = {'type': 'string', 'description': 'A ref_id returned by search.'}
_SCHEMAS = {
    'search': _function(
        'search',
        'Search the web. Supports keywords, "exact phrases" in double'
        ' quotes and one site:domain filter per query. Returns, per query,'
        ' ranked results with a ref_id, title, URL and snippet.',
        {
            'query': {
                'type': 'array',
                'items': {'type': 'string'},
                'minItems': 1,
                'description': 'One or more search queries.',
            }
        },
        ['query'],
    ),
    'visit': _function(
        'visit',
        'Read documents returned by search. Returns, per document, the'
        ' evidence relevant to the goal and a summary of the page.',
        {
            'ref_id': {
                'type': 'array',
                'items': {'type': 'string'},
                'minItems': 1,
                'description': 'One or more ref_ids returned by search.',
            },
            'goal': {
                'type': 'string',
                'description': 'The information to look for.',
            },
        },
        ['ref_id', 'goal'],
    ),
    'open': _function(
        'open',
        'Open a document returned by search and show one page of its text'
        ' with line numbers. Use cursor to move to another page.',
        {
            'ref_id': _REF,
            'cursor': {
                'type': 'integer',
                'minimum': 0,
                'description': 'Page number, starting at 0 (default 0).',
            },
        },
        ['ref_id'],
    ),
    'find': _function(
        'find',
        'Find exact (case-insensitive) matches of a pattern in an opened'
        ' document. Returns matching lines with their line and page.',
        {'ref_id': _REF, 'pattern': {'type': 'string'}},
        ['ref_id', 'pattern'],
    ),
}


def tool_schemas(names=TOOL_NAMES) -> list[dict[str, Any]]:
  """The JSON schemas of the named tools, in the order given.

  Args:
    names: Tool names, a subset of TOOL_NAMES.

  Returns:
    OpenAI function-calling tool definitions.

  Raises:
    ValueError: for a name that is not a tool.
  """
  unknown = [n for n in names if n not in _SCHEMAS]
  if unknown:
    raise ValueError(f'unknown tools {unknown}; known tools: {TOOL_NAMES}')
  return [copy.deepcopy(_SCHEMAS[n]) for n in names]


def _check_text(key: str, value: str) -> None:
  """Refuses strings that are not Unicode text (JSON can carry "\\ud800")."""
  try:
    value.encode('utf-8')
  except UnicodeEncodeError as e:
    raise ToolArgumentError(
        f'{key!r} holds an unpaired UTF-16 surrogate'
        f' ({value[e.start : e.end]!r}); write plain text'
    ) from e


def _string_list(args, key, max_items, max_chars) -> tuple[str, ...]:
  value = args[key]
  if isinstance(value, str):
    value = [value]
  if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
    raise ToolArgumentError(
        f'{key!r} must be a list of strings, got {value!r:.100}'
    )
  value = [v.strip() for v in value]
  if not value or not all(value):
    raise ToolArgumentError(f'{key!r} must hold at least one non-empty string')
  if len(value) > max_items:
    raise ToolArgumentError(
        f'{key!r} has {len(value)} items; at most {max_items} are allowed per'
        ' call, split them over several calls'
    )
  for v in value:
    if len(v) > max_chars:
      raise ToolArgumentError(
          f'an item of {key!r} is {len(v)} characters long, over the limit'
          f' of {max_chars}'
      )
    _check_text(key, v)
  return tuple(value)


def _string(args, key, max_chars) -> str:
  value = args[key]
  if not isinstance(value, str) or not value.strip():
    raise ToolArgumentError(
        f'{key!r} must be a non-empty string, got {value!r:.100}'
    )
  if len(value) > max_chars:
    raise ToolArgumentError(
        f'{key!r} is {len(value)} characters long, over the limit of'
        f' {max_chars}'
    )
  _check_text(key, value)
  return value.strip()


def _cursor(args) -> int:
  value = args.get('cursor', 0)
  if isinstance(value, str) and value.strip().isdigit():
    value = int(value)
  if isinstance(value, bool) or not isinstance(value, int) or value < 0:
    raise ToolArgumentError(
        f"'cursor' must be a page number >= 0, got {value!r:.40}"
    )
  return value


_REQUIRED = {
    'search': ('query',),
    'visit': ('ref_id', 'goal'),
    'open': ('ref_id',),
    'find': ('ref_id', 'pattern'),
}
_OPTIONAL = {'open': ('cursor',)}


def validate_arguments(
    name: str, arguments: Any, limits: ToolLimits = ToolLimits()
) -> dict[str, Any]:
  """Checks and normalizes one tool call's arguments.

  Args:
    name: Tool name.
    arguments: The arguments as the model wrote them (a JSON object).
    limits: Size limits.

  Returns:
    Normalized arguments: search {'query': tuple}, visit {'ref_id': tuple,
    'goal': str}, open {'ref_id': str, 'cursor': int}, find {'ref_id': str,
    'pattern': str}.

  Raises:
    ToolArgumentError: naming what is wrong.
  """
  if name not in _REQUIRED:
    raise ToolArgumentError(
        f'unknown tool {name!r}; available tools: {", ".join(TOOL_NAMES)}'
    )
  if not isinstance(arguments, dict):
    raise ToolArgumentError(
        f'arguments of {name} must be a JSON object, got {arguments!r:.100}'
    )
  allowed = _REQUIRED[name] + _OPTIONAL.get(name, ())
  missing = [k for k in _REQUIRED[name] if k not in arguments]
  extra = sorted(k for k in arguments if k not in allowed)
  if missing or extra:
    raise ToolArgumentError(
        f'{name} takes arguments {list(allowed)}'
        + (f'; missing {missing}' if missing else '')
        + (f'; unknown {extra}' if extra else '')
    )
  if name == 'search':
    return {
        'query': _string_list(
            arguments, 'query', limits.max_queries, limits.max_query_chars
        )
    }
  if name == 'visit':
    return {
        'ref_id': _string_list(arguments, 'ref_id', limits.max_refs, 64),
        'goal': _string(arguments, 'goal', limits.max_goal_chars),
    }
  ref_id = _string(arguments, 'ref_id', 64)
  if name == 'open':
    return {'ref_id': ref_id, 'cursor': _cursor(arguments)}
  return {
      'ref_id': ref_id,
      'pattern': _string(arguments, 'pattern', limits.max_pattern_chars),
  }
