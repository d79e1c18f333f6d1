"""The layering WORKSPACE.md promises, checked on the import graph."""

import ast
import pathlib
import subprocess
import sys

import pytest

REPO = pathlib.Path(__file__).resolve().parents[1]
LIB = REPO / 'search_agent'


def _imports(path: pathlib.Path) -> set[str]:
  """Fully qualified module names a file imports (absolute imports only)."""
  names = set()
  for node in ast.walk(ast.parse(path.read_text(), str(path))):
    if isinstance(node, ast.Import):
      names.update(a.name for a in node.names)
    elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
      if node.module == 'search_agent':  # `from search_agent import stats`
        names.update(f'search_agent.{a.name}' for a in node.names)
      else:
        names.add(node.module)
  return names


def _files(*roots: str) -> list[pathlib.Path]:
  return [p for r in roots for p in sorted((REPO / r).rglob('*.py'))]


def _offenders(files, banned_prefixes) -> list[str]:
  out = []
  for f in files:
    for name in _imports(f):
      if any(name == b or name.startswith(b + '.') for b in banned_prefixes):
        out.append(f'{f.relative_to(REPO)} imports {name}')
  return out


def test_only_the_model_package_imports_maxtext():
  files = [
      f
      for f in _files('search_agent', 'index', 'eval', 'launch', 'tpu_configs')
      if LIB / 'model' not in f.parents
  ]
  assert not _offenders(files, ['maxtext'])


def test_the_model_knows_nothing_of_tools_or_chat():
  banned = [
      f'search_agent.{p}'
      for p in ('agent', 'chat', 'search', 'llm', 'evaluation')
  ]
  assert not _offenders(_files('search_agent/model'), banned)


def test_the_library_never_imports_the_binaries():
  """`search_agent` is the library; `eval`, `index` and `launch` hold the
  binaries over it (the viewer included: its binary is eval.view)."""
  assert not _offenders(_files('search_agent'), ['eval', 'index', 'launch'])


def test_eval_holds_only_binaries():
  """Every module of `eval/` is a binary or its command-line edge."""
  modules = {p.stem for p in (REPO / 'eval').glob('*.py')}
  assert modules == {'__init__', 'cli', 'compare', 'run', 'view'}


def test_chat_sits_below_the_agent_and_the_server():
  """Tokenizers, chat templates and the renderer know no agent or server;
  the rollout server reaches them through `chat`, never through `agent`."""
  below = [
      f'search_agent.{p}'
      for p in ('agent', 'serving', 'model', 'train', 'evaluation', 'search')
  ]
  assert not _offenders(_files('search_agent/chat'), below)
  assert not _offenders(_files('search_agent/serving'), ['search_agent.agent'])


# The lowest layers and what each may import from `search_agent`: corpus and
# llm nothing but themselves, chat the llm protocol, search all three (its
# tools take `chat.turns.ToolCall`, never an agent type). `stats`, `paths`
# and `digests` are leaf modules any layer may use.
LEAVES = ('stats', 'paths', 'digests')
LOWER_LAYERS = {
    'corpus': ('corpus', *LEAVES),
    'llm': ('llm', *LEAVES),
    'chat': ('llm', 'chat', *LEAVES),
    'search': ('corpus', 'llm', 'chat', 'search', *LEAVES),
}


@pytest.mark.parametrize('layer', sorted(LOWER_LAYERS))
def test_the_lowest_layers_import_only_layers_below_them(layer):
  allowed = LOWER_LAYERS[layer]
  out = []
  for f in _files(f'search_agent/{layer}'):
    for name in _imports(f):
      parts = name.split('.')
      if parts[0] == 'search_agent' and (
          len(parts) < 2 or parts[1] not in allowed
      ):
        out.append(f'{f.relative_to(REPO)} imports {name}')
  assert not out


def test_the_leaf_modules_import_nothing_of_the_library():
  for leaf in LEAVES:
    names = _imports(LIB / f'{leaf}.py')
    assert not [n for n in names if n.split('.')[0] == 'search_agent']


def test_lower_layers_never_import_the_trainer():
  files = _files(
      'search_agent/corpus',
      'search_agent/search',
      'search_agent/llm',
      'search_agent/agent',
  )
  assert not _offenders(files, ['search_agent.train'])


@pytest.mark.parametrize(
    'module', ['search_agent.search.service', 'search_agent.search.tools']
)
def test_the_search_service_runs_without_jax(module):
  code = (
      f'import sys, {module}; '
      "bad = sorted(m for m in ('jax', 'flax', 'optax', 'maxtext') "
      'if m in sys.modules); print(bad); sys.exit(1 if bad else 0)'
  )
  out = subprocess.run(
      [sys.executable, '-c', code],
      cwd=REPO,
      capture_output=True,
      text=True,
      timeout=120,
      check=False,
  )
  assert out.returncode == 0, out.stdout + out.stderr[-2000:]


def test_layers_below_train_reach_the_model_only_through_policy_wiring():
  """Text-level code (tokenizer, renderer, prompts) lives outside model/.

  Below `train`, only the in-process policy wiring (eval's sampler setup) may
  import `search_agent.model`; the agent, search, llm, rewards, filtering and
  synthesis layers never do.
  """
  files = _files(
      'search_agent/corpus',
      'search_agent/search',
      'search_agent/llm',
      'search_agent/agent',
      'search_agent/rewards',
      'search_agent/filtering',
      'search_agent/synthesis',
  )
  assert not _offenders(files, ['search_agent.model'])
