"""The image: Dockerfile, .dockerignore, entrypoint and launch/build_image.sh.

No docker here: the Dockerfile is parsed (instructions, stages, build args),
what it installs is checked against requirements.txt and jax's own TPU extra,
and the entrypoint and build script run as the image would run them.
"""

import dataclasses
import importlib.metadata
import importlib.util
import json
import os
import pathlib
import re
import subprocess
import sys
import tomllib

from packaging import requirements
import pytest

from tests.launch import test_xpk

INSTRUCTIONS = {
    'FROM', 'RUN', 'CMD', 'LABEL', 'EXPOSE', 'ENV', 'ADD', 'COPY',
    'ENTRYPOINT', 'VOLUME', 'USER', 'WORKDIR', 'ARG', 'ONBUILD',
    'STOPSIGNAL', 'HEALTHCHECK', 'SHELL',
}  # fmt: skip
# Modules the entrypoint's help lists that other work has not landed yet.
PENDING = {'search_agent.train.rl.run'}


@dataclasses.dataclass(frozen=True)
class Instruction:
  line: int
  name: str
  args: str


def parse_dockerfile(text: str) -> list[Instruction]:
  """Instructions of a Dockerfile (comments dropped, continuations joined)."""
  out, buf, start = [], '', 0
  for n, raw in enumerate(text.splitlines(), 1):
    line = raw.strip()
    if not buf and (not line or line.startswith('#')):
      continue
    if buf and line.startswith('#'):
      continue  # a comment inside a continued instruction
    start = start or n
    if line.endswith('\\'):
      buf += line[:-1] + ' '
      continue
    buf += line
    name, _, args = buf.partition(' ')
    if name.upper() not in INSTRUCTIONS:
      raise ValueError(f'line {start}: unknown instruction {name!r}')
    out.append(Instruction(start, name.upper(), ' '.join(args.split())))
    buf, start = '', 0
  if buf:
    raise ValueError('Dockerfile ends inside a continued instruction')
  return out


def stages(instrs: list[Instruction]) -> dict[str, list[Instruction]]:
  """Stage name -> its instructions (from its FROM on)."""
  out, current = {}, None
  for ins in instrs:
    if ins.name == 'FROM':
      current = ins.args.split()[-1] if ' AS ' in ins.args.upper() else ''
      out[current] = []
    if current is not None:
      out[current].append(ins)
  return out


def global_args(instrs: list[Instruction]) -> dict[str, str]:
  """ARGs before the first FROM, with their defaults."""
  args = {}
  for ins in instrs:
    if ins.name == 'FROM':
      break
    if ins.name == 'ARG':
      k, _, v = ins.args.partition('=')
      args[k] = v
  return args


def stage_arg(stage: list[Instruction], name: str) -> str:
  for ins in stage:
    if ins.name == 'ARG' and ins.args.split('=')[0] == name:
      return ins.args.partition('=')[2]
  raise KeyError(name)


def pip_installs(stage: list[Instruction]) -> list[list[str]]:
  """The argument lists of every `pip install` in a stage's RUNs."""
  out = []
  for ins in stage:
    if ins.name != 'RUN':
      continue
    for cmd in re.split(r'&&|;', ins.args):
      words = cmd.split()
      if 'pip' in words and 'install' in words:
        out.append(words[words.index('install') + 1 :])
  return out


@pytest.fixture(scope='module')
def dockerfile(repo_root):
  return parse_dockerfile((repo_root / 'Dockerfile').read_text())


def test_parser_joins_continuations_and_rejects_junk():
  got = parse_dockerfile('# c\nFROM x AS a\nRUN a \\\n  # note\n  && b\n')
  assert got == [
      Instruction(2, 'FROM', 'x AS a'),
      Instruction(3, 'RUN', 'a && b'),
  ]
  with pytest.raises(ValueError, match='unknown instruction'):
    parse_dockerfile('FROM x\nCOPPY a b\n')
  with pytest.raises(ValueError, match='continued'):
    parse_dockerfile('FROM x\nRUN a \\\n')


def test_stages_and_python_version(dockerfile, repo_root):
  by_stage = stages(dockerfile)
  assert list(by_stage) == ['base', 'cpu', 'tpu']  # tpu: the default target
  assert by_stage['cpu'][0].args == 'base AS cpu'
  assert by_stage['tpu'][0].args == 'base AS tpu'
  image = global_args(dockerfile)['PYTHON_IMAGE']
  assert by_stage['base'][0].args == '${PYTHON_IMAGE} AS base'
  pyproject = tomllib.loads((repo_root / 'pyproject.toml').read_text())
  want = pyproject['project']['requires-python'].lstrip('>=~')
  assert re.fullmatch(rf'python:{re.escape(want)}-slim(-\w+)?', image)


def test_installs_exactly_requirements(dockerfile, repo_root):
  by_stage = stages(dockerfile)
  base = by_stage['base']
  copies = [i.args.split() for i in base if i.name == 'COPY']
  assert copies[0] == ['requirements.txt', '/app/requirements.txt']
  installs = pip_installs(base)
  setup = (repo_root / 'launch' / 'setup.sh').read_text()
  pip_pin = re.search(r'pip==[\d.]+', setup).group(0)
  assert installs == [[pip_pin], ['--no-deps', '-r', '/app/requirements.txt']]
  run = next(i for i in base if '-r /app/requirements.txt' in i.args)
  assert run.args.endswith('python -m pip check')  # the pinned set is whole
  # The requirements file pins every package exactly; the CPU image is the
  # venv launch/setup.sh makes from it.
  pins = [
      l
      for l in (repo_root / 'requirements.txt').read_text().splitlines()
      if l and not l.startswith('#')
  ]
  assert all(re.fullmatch(r'[A-Za-z0-9_.\-]+==[\w.]+', p) for p in pins)
  for pin in pins:
    name, version = pin.split('==')
    assert importlib.metadata.version(name) == version, pin
  assert pip_installs(by_stage['cpu']) == []


def test_tpu_stage_adds_only_jax_tpu_libtpu(dockerfile):
  """The TPU stage installs what `jax[tpu]` adds to the pinned set."""
  tpu = stages(dockerfile)['tpu']
  assert pip_installs(tpu) == [['--no-deps', 'libtpu==${LIBTPU_VERSION}']]
  libtpu = stage_arg(tpu, 'LIBTPU_VERSION')
  extra = [
      r
      for r in importlib.metadata.requires('jax')
      if 'extra == "tpu"' in r and r.startswith('libtpu')
  ]
  assert len(extra) == 1, extra
  spec = requirements.Requirement(extra[0]).specifier
  assert spec.contains(libtpu), (libtpu, str(spec))
  others = [
      r.split(';')[0].strip()
      for r in importlib.metadata.requires('jax')
      if 'extra == "tpu"' in r and not r.startswith('libtpu')
  ]
  for req in others:  # jaxlib and requests: pinned already
    name = re.match(r'[A-Za-z0-9_.\-]+', req).group(0)
    importlib.metadata.version(name)


def test_dockerignore_keeps_local_state_out(repo_root):
  ignored = (repo_root / '.dockerignore').read_text().split()
  for path in ('.git', '.venv', 'build', 'runs', 'workdir'):
    assert path in ignored
  for needed in ('requirements.txt', 'launch', 'search_agent', 'tpu_configs'):
    assert needed not in ignored


def test_entrypoint_is_the_script_and_help_is_the_default(dockerfile):
  base = stages(dockerfile)['base']
  entry = json.loads(next(i.args for i in base if i.name == 'ENTRYPOINT'))
  cmd = json.loads(next(i.args for i in base if i.name == 'CMD'))
  workdir = next(i.args for i in base if i.name == 'WORKDIR')
  assert entry == [f'{workdir}/launch/entrypoint.sh'] and cmd == ['--help']


def _entrypoint(repo_root, *args):
  env = dict(os.environ, PYTHON=sys.executable, JAX_PLATFORMS='cpu')
  return subprocess.run(
      ['bash', str(repo_root / 'launch' / 'entrypoint.sh'), *args],
      cwd='/',
      env=env,
      capture_output=True,
      text=True,
      timeout=120,
  )


def test_entrypoint_help_lists_binaries_that_exist(repo_root):
  out = _entrypoint(repo_root, '--help')
  assert out.returncode == 0, out.stderr
  modules = re.findall(
      r'\b(?:index|eval|launch|search_agent)\.[\w.]+', out.stdout
  )
  assert 'search_agent.train.sft' in modules and len(modules) >= 10
  for m in modules:
    assert m in PENDING or importlib.util.find_spec(m) is not None, m
  assert _entrypoint(repo_root).stdout == out.stdout  # CMD ["--help"]


def test_entrypoint_runs_a_binary_help(repo_root):
  out = _entrypoint(repo_root, 'launch.xpk', '--help')
  # absl's --help prints the flags and exits with status 1.
  assert out.returncode == 1, out.stderr[-2000:]
  assert '--dry_run' in out.stdout and 'launch.xpk' in out.stdout
  out = _entrypoint(repo_root, 'bash', '-c', 'echo "$PWD"')
  assert out.stdout.strip() == str(repo_root)  # runs from the tree's root
  assert _entrypoint(repo_root, '--bogus').returncode == 2


def _build(repo_root, *args):
  return subprocess.run(
      ['bash', str(repo_root / 'launch' / 'build_image.sh'), *args],
      capture_output=True,
      text=True,
      timeout=60,
  )


def test_build_image_dry_run_pushes_the_configs_image(repo_root):
  images = {
      test_xpk._load(repo_root, name, arg).xpk.docker_image
      for name, args in (('sft', ('v5p-256', 'v5p-128')), ('rl', ('learner', 'rollout')))
      for arg in args
  }  # fmt: skip
  assert len(images) == 1
  image = images.pop()
  out = _build(repo_root, '--dry_run', '--tool=docker')
  assert out.returncode == 0, out.stderr
  lines = out.stdout.splitlines()
  assert lines[0].startswith(
      f'docker build --file=Dockerfile --target=tpu --tag={image} '
  )
  assert lines[0].endswith(' .')
  sha_tag = re.search(r'--tag=(\S+:git-[0-9a-f]{12}(-dirty)?)', lines[0])
  assert sha_tag, lines[0]
  assert lines[1:] == [f'docker push {image}', f'docker push {sha_tag[1]}']


def test_build_image_flags(repo_root):
  out = _build(
      repo_root,
      '--dry_run',
      '--no_push',
      '--tool=podman',
      '--target=cpu',
      '--image=localhost:5000/sa',
      '--libtpu=0.0.50.1',
  )
  assert out.returncode == 0, out.stderr
  (line,) = out.stdout.splitlines()
  assert line.startswith('podman build --file=Dockerfile --target=cpu')
  assert '--build-arg=LIBTPU_VERSION=0.0.50.1' in line
  assert '--tag=localhost:5000/sa ' in line
  assert '--tag=localhost:5000/sa:git-' in line
  assert _build(repo_root, '--target=gpu').returncode == 2
  assert _build(repo_root, '--frobnicate').returncode == 2
  assert 'Flags:' in _build(repo_root, '--help').stdout
