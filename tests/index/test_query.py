"""Pulse test: index.build (tiny) then index.query answers and reports errors."""

import subprocess
import sys


def _run(args, cwd):
  return subprocess.run(
      [sys.executable, '-m', *args],
      cwd=cwd,
      capture_output=True,
      text=True,
      timeout=300,
      check=False,
  )


def test_build_then_query(tmp_path, repo_root):
  built = _run(
      [
          'index.build',
          '--config=tpu_configs/search/build.py:tiny',
          f'--workdir={tmp_path}',
      ],
      repo_root,
  )
  assert built.returncode == 0, built.stderr[-2000:]
  out = _run(
      [
          'index.query',
          f'--index_dir={tmp_path}/index',
          '--k=2',
          '--query=film director',
          '--query=two site:a.com site:b.com',
      ],
      repo_root,
  )
  assert out.returncode == 0, out.stderr[-2000:]
  blocks = out.stdout.split('=== ')[1:]
  assert len(blocks) == 2
  assert blocks[0].count('<https://en.wikipedia.org/wiki/') == 2
  assert 'error:' in blocks[1] and 'site:' in blocks[1]


def test_query_through_a_serve_config_matches_index_dir(tmp_path, repo_root):
  built = _run(
      [
          'index.build',
          '--config=tpu_configs/search/build.py:tiny',
          f'--workdir={tmp_path}',
      ],
      repo_root,
  )
  assert built.returncode == 0, built.stderr[-2000:]
  query = ['--k=3', '--query=film director born']
  direct = _run(
      ['index.query', f'--index_dir={tmp_path}/index', *query], repo_root
  )
  served = _run(
      [
          'index.query',
          '--config=tpu_configs/search/serve.py',
          f'--config.index_dir={tmp_path}/index',
          *query,
      ],
      repo_root,
  )
  assert direct.returncode == served.returncode == 0, served.stderr[-2000:]
  assert served.stdout == direct.stdout
  assert direct.stdout.count('<https://') == 3
  both = _run(
      [
          'index.query',
          '--config=tpu_configs/search/serve.py',
          f'--index_dir={tmp_path}/index',
          *query,
      ],
      repo_root,
  )
  assert both.returncode != 0
  assert 'exactly one of --index_dir and --config' in both.stderr
