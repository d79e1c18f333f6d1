"""The viewer in a real headless browser (Debian's chromium + chromedriver).

The contract: `python -m eval.view --workdir=DIR --out=DIR/view.html` on an
`eval.run :tiny` workdir writes one self-contained HTML file that headless
Chromium renders with the question text of each task visible. Then: open a
trajectory, expand a step, switch runs, compare two runs, a synthesized
task's evidence graph, server mode (with a canary, in memory), and a
10,000-trajectory run opening in under 2 s. Screenshots are checked to be
non-blank; the console must stay free of errors.
"""

import contextlib
import io
import json
import pathlib
import socket
import subprocess
import sys
import time
import urllib.request

from PIL import Image
import pytest

from tests.eval import chromium
from tests.eval import view_workdirs as wd

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(
        chromium.find_binaries() is None,
        reason='chromium + chromedriver not installed (launch/setup.sh installs them as root)',
    ),
]
_REPO = wd.REPO


def _view(*args: str) -> str:
  out = subprocess.run([sys.executable, '-m', 'eval.view', *args], cwd=_REPO, capture_output=True,
                       text=True, timeout=300, check=False)  # fmt: skip
  assert out.returncode == 0, out.stderr[-3000:]
  return out.stdout


@pytest.fixture(scope='module')
def browser():
  b = chromium.Browser()
  yield b
  b.close()


def _ready(b, url):
  b.get(url)
  return b.wait_for('return window.__viewerReady')


def _no_console_errors(b):
  bad = [e for e in b.console() if e.get('level') == 'SEVERE']
  assert not bad, bad


def _non_blank(b, path):
  img = Image.open(io.BytesIO(b.screenshot(path))).convert('L')
  lo, hi = img.getextrema()
  colors = len(img.getcolors(256 * 256) or ())
  assert hi - lo > 100 and colors > 20, (lo, hi, colors)


def _visible_text(b, css):
  return b.run(f'return [...document.querySelectorAll({json.dumps(css)})]'
               '.filter(e => e.checkVisibility({visibilityProperty: true}))'
               '.map(e => e.innerText)')  # fmt: skip


@pytest.fixture(scope='module')
def tiny_run(tmp_path_factory, tiny_index):
  return wd.eval_run(tmp_path_factory.mktemp('contract') / 'run', tiny_index)


def test_contract_every_question_visible(tiny_run, browser, tmp_path):
  _view(f'--workdir={tiny_run}', f'--out={tiny_run}/view.html')
  html = (tiny_run / 'view.html').read_text()
  assert (
      '<script src' not in html and 'stylesheet' not in html
  )  # self-contained
  _ready(browser, (tiny_run / 'view.html').as_uri())
  shown = _visible_text(browser, 'td.q')
  assert shown == wd.questions()
  _non_blank(browser, tmp_path / 'list.png')
  _no_console_errors(browser)


def test_mas_searchers_expand(tmp_path, tiny_index, browser):
  run = wd.eval_run(tmp_path / 'mas', tiny_index, '--config.mode=mas')
  _view(f'--workdir={run}', f'--out={run}/view.html')
  _ready(browser, (run / 'view.html').as_uri() + '#run=0&t=0')
  browser.wait_for('return document.querySelector("#mas")')
  assert not _visible_text(browser, '#searcher-0 .hit')
  browser.click('#searcher-0 > summary')
  browser.click('#searcher-0 details.tool > summary')
  hits = _visible_text(browser, '#searcher-0 .hit')
  assert len(hits) == 10 and hits[0].startswith('[r1]Teutberga')
  _no_console_errors(browser)


@pytest.fixture(scope='module')
def many_runs(tmp_path_factory, tiny_index):
  root = tmp_path_factory.mktemp('views') / 'all'
  ev = wd.eval_run(root / 'eval_cm', tiny_index)
  wd.eval_run(root / 'eval_no_cm', tiny_index, '--config.context.policy=none')
  wd.synthesis_run(root / 'synthesis')
  wd.rl_run(root / 'rl', ev)
  _view(f'--workdir={root}', f'--out={root}/view.html')
  return root


def test_open_expand_switch_compare(many_runs, browser, tmp_path):
  _ready(browser, (many_runs / 'view.html').as_uri())
  browser.click('tr.row[data-i="0"]')
  browser.wait_for('return document.querySelector(".trajectory")')
  assert browser.text('.question') == wd.questions()[0]
  assert not browser.run(
      'return document.querySelector("#step-3").open'
  )  # observations start closed
  browser.click('#step-3 > summary')
  assert browser.run('return document.querySelector("#step-3").open')
  hits = _visible_text(browser, '#step-3 .hit')
  assert len(hits) == 10 and hits[0].startswith('[r1]Teutberga')
  assert 'https://en.wikipedia.org/wiki/Teutberga' in hits[0]
  browser.run(
      'document.dispatchEvent(new KeyboardEvent("keydown", {key: "j"}))'
  )
  browser.wait_for('return location.hash === "#run=0&t=1"')
  browser.wait_for(
      'return document.querySelector(".question").innerText === %s'
      % json.dumps(wd.questions()[1])
  )
  browser.run(
      'document.dispatchEvent(new KeyboardEvent("keydown", {key: "k"}))'
  )
  browser.wait_for(
      'return location.hash === "#run=0&t=0" && document.querySelector("#step-3")'
  )
  browser.click('#step-3 > summary')
  browser.click('#step-2 details.reasoning > summary')
  assert 'Search first.' in _visible_text(browser, '#step-2 .reasoning')[0]
  assert '2 of 2 assistant turns train' in browser.text('#tokens')
  assert (
      browser.run(
          'return document.querySelectorAll("#graph .node.seen").length'
      )
      == 1
  )
  _non_blank(browser, tmp_path / 'trajectory.png')
  # Compare with the same task in the no-CM run, side by side.
  browser.click('#compare-select option[value^="1:"]')
  browser.wait_for(
      'return document.querySelectorAll("#compare .trajectory").length === 2'
  )
  sides = _visible_text(browser, '#compare .trajectory .provenance')
  assert sides[0].startswith('eval_cm') and sides[1].startswith('eval_no_cm')
  _non_blank(browser, tmp_path / 'compare.png')
  # Switch runs: the synthesis run's list, then its task's evidence graph.
  runs = browser.run('return V.index.runs.map(r => r.id)')
  assert runs == ['eval_cm', 'eval_no_cm', 'rl', 'synthesis']
  browser.click('#run-select option[value="3"]')
  browser.wait_for('return location.hash === "#run=3"')
  rows = _visible_text(browser, 'td.q')
  assert rows[1].startswith('Which king married')
  browser.click('tr.row[data-i="1"]')
  browser.wait_for('return document.querySelector("#graph svg")')
  assert (
      browser.run('return document.querySelectorAll("#graph .edge.hot").length')
      == 3
  )
  _non_blank(browser, tmp_path / 'graph.png')
  browser.click('#run-select option[value="2"]')  # RL: reward and advantage
  browser.wait_for('return location.hash === "#run=2"')
  browser.click('tr.row[data-i="1"]')
  browser.wait_for('return document.querySelector("#reward")')
  reward = browser.text('#reward')
  assert 'advantage' in reward and '-0.400' in reward
  # Two runs task by task, then one task side by side.
  browser.click('#run-select option[value="0"]')
  browser.wait_for('return location.hash === "#run=0"')
  browser.click('#compare-runs-link')
  browser.wait_for('return document.querySelector("#compare-runs")')
  assert len(_visible_text(browser, '#compare-runs tr.row')) == 4
  flips = _visible_text(browser, '#flips .card')
  assert (
      flips[0] == 'correct in both\n1' and flips[3] == 'correct in neither\n3'
  )
  browser.click('#compare-runs tr.row')
  browser.wait_for(
      'return document.querySelectorAll("#compare .trajectory").length === 2'
  )
  _no_console_errors(browser)


def _free_port():
  with socket.socket() as s:
    s.bind(('127.0.0.1', 0))
    return s.getsockname()[1]


@contextlib.contextmanager
def _serving(workdir, *extra):
  """`python -m eval.view --port` in a subprocess; yields its URL."""
  port = _free_port()
  proc = subprocess.Popen([sys.executable, '-m', 'eval.view', f'--workdir={workdir}', f'--port={port}', *extra],
                          cwd=_REPO, stdout=subprocess.PIPE, text=True)  # fmt: skip
  try:
    assert proc.stdout.readline().startswith('serving')
    yield f'http://127.0.0.1:{port}/'
  finally:
    proc.terminate()
    proc.wait(timeout=30)


def test_server_mode_decrypts_in_memory(tmp_path, tiny_index, browser):
  enc = wd.encrypted_eval_run(tmp_path / 'secret' / 'enc', tiny_index)
  before = sorted(p for p in tmp_path.rglob('*'))
  with _serving(enc, f'--canary={wd.CANARY}') as url:
    _ready(browser, url)
    assert sorted(_visible_text(browser, 'td.q')) == sorted(wd.questions())
    browser.click('tr.row[data-i="1"]')
    browser.wait_for('return document.querySelector(".trajectory")')
    assert browser.text('.question') in wd.questions()
    assert 'decrypted in memory' in browser.text('.trajectory .toolbar')
    with urllib.request.urlopen(url + 'api/index') as r:
      assert json.load(r)['runs'][0]['n'] == 4
    lines = (enc / 'trajectories.jsonl').read_text().splitlines()
    more = {**json.loads(lines[0]), 'id': 'appended#1'}
    (enc / 'trajectories.jsonl').write_text(
        '\n'.join(lines + [json.dumps(more)]) + '\n'
    )
    browser.click('#reload')  # a run that grew: read again from disk
    browser.wait_for('return window.__viewerReady && V.index.runs[0].n === 5')
    (enc / 'trajectories.jsonl').write_text('\n'.join(lines) + '\n')
    _no_console_errors(browser)
  assert sorted(p for p in tmp_path.rglob('*')) == before  # nothing written


def test_sealed_static_page_opens_with_the_canary(
    tmp_path, tiny_index, browser
):
  enc = wd.encrypted_eval_run(tmp_path / 'secret' / 'enc', tiny_index)
  out = tmp_path / 'sealed.html'
  _view(f'--workdir={enc}', f'--out={out}', f'--canary={wd.CANARY}')
  assert not any(q in out.read_text() for q in wd.questions())
  _ready(browser, out.as_uri())
  assert not set(_visible_text(browser, 'td.q')) & set(wd.questions())
  browser.cmd(
      'POST', f'/element/{browser.find("#canary")}/value', {'text': 'wrong'}
  )
  browser.click('#unseal')
  browser.wait_for(
      'return document.querySelector("#canary-msg").innerText.includes("does not")'
  )
  browser.run('document.querySelector("#canary").value = ""')
  browser.cmd(
      'POST', f'/element/{browser.find("#canary")}/value', {'text': wd.CANARY}
  )
  browser.click('#unseal')
  browser.wait_for('return !document.querySelector("#canary-form")')
  assert sorted(_visible_text(browser, 'td.q')) == sorted(wd.questions())
  browser.click('tr.row[data-i="2"]')
  browser.wait_for('return document.querySelector(".trajectory")')
  assert browser.text('.question') in wd.questions()
  _no_console_errors(browser)


def _big_run(src: pathlib.Path, dst: pathlib.Path, n: int) -> None:
  """n trajectories and results: the tiny run's, renamed and varied."""
  dst.mkdir(parents=True)
  trajs = [
      json.loads(l)
      for l in (src / 'trajectories.jsonl').read_text().splitlines()
  ]
  recs = [
      json.loads(l) for l in (src / 'results.jsonl').read_text().splitlines()
  ]
  with (
      open(dst / 'trajectories.jsonl', 'w') as ft,
      open(dst / 'results.jsonl', 'w') as fr,
  ):
    for k in range(n):
      t, r = dict(trajs[k % 4]), dict(recs[k % 4])
      t['id'] = r['traj_id'] = f'big-{k}'
      t['task_id'] = r['task_id'] = f'task-{k}'
      t['question'] = r['question'] = f'{t["question"]} (variant {k})'
      ft.write(json.dumps(t) + '\n')
      fr.write(json.dumps(r) + '\n')
  for name in ('manifest.json', 'report.json'):
    (dst / name).write_bytes((src / name).read_bytes())


def test_a_10000_trajectory_run_opens_and_pages(tiny_run, tmp_path, browser):
  big = tmp_path / 'big'
  _big_run(tiny_run, big, 10_000)
  t0 = time.monotonic()
  _view(f'--workdir={big}', f'--out={big}/view.html')
  export_s = time.monotonic() - t0
  size_mb = (big / 'view.html').stat().st_size / 1e6
  opened_ms = _ready(browser, (big / 'view.html').as_uri())
  print(
      f'10,000 trajectories: export {export_s:.1f} s, {size_mb:.0f} MB, opened in {opened_ms:.0f} ms'
  )
  # The target: the index and the app come before the 63 MB of details, so
  # the list renders before they are parsed (0.64 s on the loaded 2 cores,
  # 2.7 s when the details came first: docs/experiments/serving.md).
  assert opened_ms < 2_000
  assert browser.text('#page-info') == 'page 1 of 200 · 10000 of 10000'
  browser.click('#next-page')
  browser.wait_for(
      'return document.querySelector("#page-info").innerText.startsWith("page 2 ")'
  )
  assert _visible_text(browser, 'td.q')[0].endswith('(variant 50)')
  browser.click('th[data-col="verdict"]')  # sort: 'correct' rows first
  browser.wait_for('return location.hash.includes("sort=verdict")')
  verdicts = _visible_text(browser, 'td.verdict-correct')
  assert len(verdicts) == 50 and browser.text('#page-info').startswith(
      'page 1 '
  )
  browser.run(
      'const s = document.querySelector("#search"); s.value = "variant 9998";'
      ' s.dispatchEvent(new Event("change"))'
  )
  browser.wait_for(
      'return document.querySelector("#page-info").innerText.includes("1 of 10000")'
  )
  assert _visible_text(browser, 'td.q')[0].endswith('(variant 9998)')
  browser.get((big / 'view.html').as_uri() + '#run=0&t=9999')
  browser.wait_for('return document.querySelector(".trajectory")')
  assert browser.text('.question').endswith('(variant 9999)')
  _no_console_errors(browser)
  # Server mode over the same run: load time, then the page opens.
  t0 = time.monotonic()
  with _serving(big) as url:
    serve_s = time.monotonic() - t0
    opened_ms = _ready(browser, url)
    print(
        f'server: loaded in {serve_s:.1f} s, page opened in {opened_ms:.0f} ms'
    )
    assert opened_ms < 2000
    browser.get(url + '#run=0&t=5000')
    browser.wait_for('return document.querySelector(".trajectory")')
    assert browser.text('.question').endswith('(variant 5000)')
  _no_console_errors(browser)
