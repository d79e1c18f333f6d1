"""Every command of launch/README.md (the pod guide), dry-run.

The commands are taken from the guide's ```bash blocks (continuations
joined, `a && b` split) and checked by kind:
  * `python -m launch.xpk|launch.local ...`: run with --dry_run; the binary
    the launch config names then has its argv parsed as below.
  * `python -m MODULE ...` (our absl binaries): the module is imported and
    its flags (config file and every --config.* override included) are
    parsed exactly as at launch; main() does not run.
  * `bash launch/X.sh`: build_image.sh runs with --dry_run; the node scripts
    must define the verb used.
  * `xpk ...`: subcommand and flags as xpk defines them (AI-Hypercomputer/xpk
    src/xpk/parser/{cluster,storage,workload,common}.py), clusters named as
    in the launch configs.
  * `hf download`: the pinned huggingface_hub CLI parses its options.
  * gcloud, venv/pip, tensorboard: not run here (no cloud, no network);
    pip installs must be pinned.
A command of any other kind fails the test: add a check for it.
"""

from concurrent import futures
import json
import os
import pathlib
import re
import shlex
import subprocess
import sys

import pytest

XPK_FLAGS = {
    ('cluster', 'create'): {
        'cluster', 'tpu-type', 'device-type', 'num-slices', 'on-demand',
        'reservation', 'spot', 'enable-gcsfuse-csi-driver',
        'enable-gcpfilestore-csi-driver', 'project', 'zone',
    },
    ('storage', 'attach'): {
        'type', 'bucket', 'cluster', 'mount-point', 'readonly', 'auto-mount',
        'size', 'manifest', 'instance', 'vol', 'access-mode', 'project',
        'zone',
    },
    ('storage', 'create'): {
        'type', 'size', 'tier', 'access-mode', 'vol', 'cluster',
        'mount-point', 'readonly', 'auto-mount', 'project', 'zone',
    },
    ('workload', 'list'): {'cluster', 'project', 'zone'},
}  # fmt: skip
_PARSE_ONLY = """
import importlib, importlib.util, sys
from absl import flags
name = sys.argv[1]
if importlib.util.find_spec(name).submodule_search_locations is not None:
  name += '.__main__'  # a package runs its __main__ module
importlib.import_module(name)
flags.FLAGS(['prog', *sys.argv[2:]])
print('PARSED', sys.argv[1])
"""


def guide_commands(text: str) -> list[str]:
  """Shell commands of the ```bash blocks, one string each."""
  blocks = re.findall(r'^```bash\n(.*?)^```', text, re.S | re.M)
  out = []
  for block in blocks:
    joined = re.sub(r'\s*\\\n\s*', ' ', block)
    for line in joined.splitlines():
      line = line.strip()
      if line and not line.startswith('#'):
        out.extend(part.strip() for part in line.split(' && '))
  return out


@pytest.fixture(scope='module')
def commands(repo_root):
  return guide_commands((repo_root / 'launch' / 'README.md').read_text())


def _split(cmd: str) -> tuple[dict[str, str], list[str]]:
  """(VAR=value prefixes, argv) of a command."""
  words = shlex.split(cmd)
  env = {}
  while words and re.fullmatch(r'[A-Z_]+=\S*', words[0]):
    k, _, v = words.pop(0).partition('=')
    env[k] = v
  return env, words


def _python_module(argv: list[str]) -> tuple[str, list[str]] | None:
  if (
      len(argv) >= 3
      and argv[1] == '-m'
      and re.fullmatch(r'(\.venv/bin/)?python3?', argv[0])
  ):
    return argv[2], argv[3:]
  return None


def _run(argv, repo_root, env=None, timeout=300):
  full_env = {**os.environ, 'JAX_PLATFORMS': 'cpu', **(env or {})}
  return subprocess.run(
      argv,
      cwd=repo_root,
      env=full_env,
      capture_output=True,
      text=True,
      timeout=timeout,
  )


def _parse_only(module, args, repo_root, env=None):
  proc = _run(
      [sys.executable, '-c', _PARSE_ONLY, module, *args], repo_root, env
  )
  assert proc.returncode == 0, f'{module} {args}: {proc.stderr[-2000:]}'
  assert proc.stdout.strip().endswith(f'PARSED {module}')


def _launch_config_names(repo_root) -> set[str]:
  text = ''.join(
      p.read_text() for p in (repo_root / 'tpu_configs' / 'launch').glob('*.py')
  )
  return set(re.findall(r"xpk\.cluster = '([\w-]+)'", text))


def check_launch(module, args, repo_root):
  """launch.xpk/local --dry_run, then the launched binary's flags parsed."""
  proc = _run([sys.executable, '-m', module, *args, '--dry_run'], repo_root)
  assert proc.returncode == 0, f'{module} {args}: {proc.stderr[-2000:]}'
  printed = proc.stdout.strip()
  if module == 'launch.xpk':
    xpk = shlex.split(printed)
    assert xpk[:3] == ['xpk', 'workload', 'create'], printed
    assert '--restart-on-user-code-failure' in xpk
    inner = next(w for w in xpk if w.startswith('--command='))
    env, argv = _split(inner.split('=', 1)[1])
    clusters = [w.split('=', 1)[1] for w in xpk if w.startswith('--cluster=')]
    assert set(clusters) <= _guide_clusters(repo_root), clusters
  else:
    env, argv = _split(printed)
  binary, binary_args = argv[2], argv[3:]
  if binary == 'search_agent.train.rl.run':
    # Its replay queue needs a POSIX mount shared by learner and workers.
    workdir = next(a for a in binary_args if a.startswith('--workdir='))
    assert workdir.split('=', 1)[1].startswith('/rl/'), workdir
  _parse_only(binary, binary_args, repo_root, env)
  return 'dry-run + parsed'


def _guide_clusters(repo_root) -> set[str]:
  text = (repo_root / 'launch' / 'README.md').read_text()
  return set(re.findall(r'xpk cluster create --cluster=([\w-]+)', text))


def check_xpk(argv, repo_root):
  sub = tuple(argv[1:3])
  assert sub in XPK_FLAGS, f'xpk {sub}: no check for this subcommand'
  used = {w[2:].split('=')[0] for w in argv[3:] if w.startswith('--')}
  assert used <= XPK_FLAGS[sub], used - XPK_FLAGS[sub]
  cluster = next(w for w in argv if w.startswith('--cluster=')).split('=')[1]
  if sub != ('cluster', 'create'):
    assert cluster in _guide_clusters(repo_root), cluster
  if sub in (('storage', 'attach'), ('storage', 'create')):
    mount = next(w for w in argv if w.startswith('--mount-point='))
    assert mount.split('=')[1] in ('/models', '/data', '/rl')
  if sub == ('storage', 'create') or '--type=gcpfilestore' in argv:
    assert '--type=gcpfilestore' in argv, argv  # xpk creates Filestore only
  return 'xpk flags'


def check_script(argv, repo_root):
  script = repo_root / argv[1]
  assert script.is_file(), argv[1]
  if script.name == 'build_image.sh':
    proc = _run(['bash', str(script), *argv[2:], '--dry_run'], repo_root)
    assert proc.returncode == 0, proc.stderr
    assert 'gcr.io/search-agent/search-agent:latest' in proc.stdout
    return 'dry-run'
  if len(argv) > 2:
    verbs = (
        script.read_text() + (repo_root / 'launch' / 'jvm_node.sh').read_text()
    )
    assert re.search(rf'^\s*{argv[2]}\)', verbs, re.M), argv
  return 'script checked'


def check_external(argv, repo_root):
  tool = os.path.basename(argv[0])
  if tool == 'hf':
    assert argv[1] == 'download'
    proc = _run([str(repo_root / argv[0]), 'download', '--help'], repo_root)
    assert proc.returncode == 0, proc.stderr
    for w in argv[2:]:
      if w.startswith('--'):
        assert w.split('=')[0] in proc.stdout, w
    return 'hf parsed'
  if tool == 'pip':
    assert argv[1] == 'install'
    assert all(re.fullmatch(r'[\w.-]+==[\w.]+', w) for w in argv[2:]), argv
    return 'external (pinned)'
  assert tool in ('gcloud', 'tensorboard', 'export'), argv
  return 'external'


def check(cmd, repo_root):
  env, argv = _split(cmd)
  found = _python_module(argv)
  if found and found[0] in ('launch.xpk', 'launch.local'):
    return check_launch(*found, repo_root)
  if found and found[0] == 'venv':
    return 'external'
  if found and found[0] != 'pip':
    module, args = found
    _parse_only(module, args, repo_root, env)
    return 'parsed'
  if argv[0] == 'xpk':
    return check_xpk(argv, repo_root)
  if argv[0] == 'bash' and argv[1].startswith('launch/'):
    return check_script(argv, repo_root)
  return check_external(argv, repo_root)


def test_guide_extraction():
  text = (
      '```bash\nA=1 python -m x \\\n  --f=2\n# c\na && b\n```\n```\nno\n```\n'
  )
  assert guide_commands(text) == ['A=1 python -m x --f=2', 'a', 'b']


def test_guide_covers_every_stage(commands):
  text = '\n'.join(commands)
  for needle in (
      'launch/build_image.sh',
      'xpk cluster create',
      'xpk storage attach',
      'index.build',
      'flavor=elasticsearch',
      'launch/elasticsearch.sh start',
      'search_agent.model.tools.import_hf',
      'tpu_configs/launch/sft.py',
      'rl.py:learner',
      'rl.py:rollout',
      'tpu_configs/launch/serve.py',
      'search_agent.model.tools.export_hf',
      'eval.run',
      'tensorboard',
  ):
    assert needle in text, needle


@pytest.mark.slow
def test_every_guide_command_dry_runs(commands, repo_root):
  # Each check is a subprocess that mostly imports; four at a time.
  with futures.ThreadPoolExecutor(max_workers=4) as pool:
    kinds_of = list(pool.map(lambda cmd: check(cmd, repo_root), commands))
  results = list(zip(kinds_of, commands))
  kinds = {}
  for kind, _ in results:
    kinds[kind] = kinds.get(kind, 0) + 1
  print(f'\n{len(results)} guide commands: {json.dumps(kinds)}')
  assert len(results) >= 30
  assert kinds.get('dry-run + parsed', 0) >= 4
