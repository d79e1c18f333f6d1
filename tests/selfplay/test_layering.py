"""search_agent/selfplay is trainer-free and model-free (import graph)."""

import ast
import pathlib

PKG = pathlib.Path(__file__).resolve().parents[2] / 'search_agent' / 'selfplay'


def test_selfplay_never_imports_the_trainer_or_the_model():
  bad = []
  for f in sorted(PKG.rglob('*.py')):
    for node in ast.walk(ast.parse(f.read_text())):
      names = []
      if isinstance(node, ast.Import):
        names = [a.name for a in node.names]
      elif isinstance(node, ast.ImportFrom) and node.module:
        names = [node.module]
      bad += [
          f'{f.name}: {n}' for n in names
          if n.split('.')[0] in ('maxtext', 'jax')
          or n.startswith(('search_agent.train', 'search_agent.model'))
      ]  # fmt: skip
  assert not bad
