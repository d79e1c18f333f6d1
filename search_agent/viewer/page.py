"""The page: one self-contained HTML file (static export) or a server shell.

Static export: the index (every run's summary and light rows) and each
item's detail are embedded as `<script type="application/json">` blocks
(details one per item, parsed only when opened, so a 10,000-trajectory run
opens without parsing every step); long system prompts are stored once in a
pool. The index and the app come first and the details after them, so the
page renders its list while the browser is still reading the details. Text of encrypted benchmarks is only ever embedded sealed (see
`static_html`). Server mode embeds the same index and fetches details from the
server. CSS and JS are the package's assets, inlined.
"""

import hashlib
import html
import json
import pathlib
from typing import Any, Iterator, Sequence

from search_agent.evaluation import decryption
from search_agent.viewer import run_files
from search_agent.viewer import runs as runs_lib
from search_agent.viewer import sniff

Json = dict[str, Any]
ASSETS = pathlib.Path(__file__).parent / 'assets'
_JS = ('app.js', 'trajectory.js')
_POOL_MIN_CHARS = 200
SEALED = '(encrypted: enter the canary above to read it)'


def load_workdir(
    workdir: pathlib.Path, canary: str | None = None
) -> list[runs_lib.Run]:
  """Every run under `workdir`.

  Raises:
    ViewerError: there is no such directory, or nothing in it is a run.
  """
  if not workdir.is_dir():
    raise run_files.ViewerError(f'--workdir={workdir} is not a directory')
  found = sniff.find_runs(workdir)
  if not found:
    raise run_files.ViewerError(
        f'no run found under {workdir}: expected trajectories / results /'
        ' decisions / tasks / scored groups / metrics files (eval.run,'
        ' filtering.run, synthesis or RL workdirs)'
    )
  return [runs_lib.load(rf, workdir, canary) for rf in found]


def index(
    workdir: pathlib.Path, runs: Sequence[runs_lib.Run], source: str
) -> Json:
  return {
      'workdir': str(workdir),
      'source': source,
      'runs': [{**r.header(), 'rows': r.rows} for r in runs],
      'pool': [],
  }


def dumps(obj: Any) -> str:
  """JSON safe inside a <script> element ('<' escaped)."""
  return json.dumps(obj, ensure_ascii=False, separators=(',', ':')).replace(
      '<', '\\u003c'
  )


def _intern(d: Json, pool: list[str], where: dict[str, int]) -> Json:
  for s in d.get('steps', ()):
    text = s.get('content', '')
    if s.get('role') == 'system' and len(text) >= _POOL_MIN_CHARS:
      key = hashlib.sha1(text.encode('utf-8')).hexdigest()
      if key not in where:
        where[key] = len(pool)
        pool.append(text)
      s['pool'] = where[key]
      s['content'] = ''
  return d


_PUBLIC = ('i', 'id', 'task_id', 'status', 'verdict', 'tools', 'steps')


def seal(obj: Any, canary: str) -> str:
  """`obj` as JSON encrypted in the benchmarks' own scheme (BrowseComp's)."""
  text = json.dumps(obj, ensure_ascii=False)
  return decryption.browsecomp_encrypt(text, canary)


def _row(row: Json, canary: str | None) -> Json:
  """A decrypted row, sealed again: ids and labels stay readable."""
  if not (canary and row.get('decrypted')):
    return row
  public = {k: row[k] for k in _PUBLIC if k in row}
  return {
      **public,
      'question': SEALED,
      'encrypted': True,
      'sealed': seal(row, canary),
  }


def _details(runs, pool: list[str], canary: str | None) -> Iterator[str]:
  where: dict[str, int] = {}
  for r_idx, run in enumerate(runs):
    for i in range(len(run.rows)):
      d = run.detail(i)
      if canary and d.get('decrypted'):
        d = {'sealed': seal(d, canary)}
      else:
        d = _intern(d, pool, where)
      yield (
          f'<script type="application/json" id="d-{r_idx}-{i}">'
          f'{dumps(d)}</script>\n'
      )


def _head(workdir: str) -> str:
  css = (ASSETS / 'viewer.css').read_text(encoding='utf-8')
  return (
      '<!doctype html>\n<html lang="en"><head><meta charset="utf-8">'
      '<meta name="viewport" content="width=device-width, initial-scale=1">'
      '<link rel="icon" href="data:,">'
      f'<title>viewer: {html.escape(workdir)}</title><style>{css}</style>'
      '</head>\n<body><header></header><main><p>loading…</p></main>\n'
  )


def _app(idx: Json) -> str:
  """The index and the app, which starts as soon as the parser reaches it."""
  js = '\n'.join((ASSETS / f).read_text(encoding='utf-8') for f in _JS)
  return (
      f'<script type="application/json" id="viewer-index">{dumps(idx)}'
      f'</script>\n<script>{js}</script>\n'
  )


_END = '</body></html>\n'


def shell(idx: Json) -> str:
  """The page without embedded details (server mode fetches them)."""
  return _head(idx['workdir']) + _app(idx) + _END


def static_pieces(
    workdir: pathlib.Path,
    runs: Sequence[runs_lib.Run],
    canary: str | None = None,
) -> Iterator[str]:
  """The self-contained page, piece by piece (the index, then details).

  With `canary`, the text of encrypted benchmarks (decrypted in memory to
  build the page) is sealed again with it: the page holds ciphertext only
  and decrypts in the browser's memory when the reader types the canary.
  """
  yield _head(str(workdir))
  pool: list[str] = []
  details = list(_details(runs, pool, canary))  # fills the pool
  idx = index(workdir, runs, 'static')
  for run in idx['runs']:
    run['rows'] = [_row(r, canary) for r in run['rows']]
    run['sealed'] = any('sealed' in r for r in run['rows'])
  idx['pool'] = pool
  yield _app(idx)
  yield from details
  yield _END


def static_html(
    workdir: pathlib.Path,
    runs: Sequence[runs_lib.Run],
    canary: str | None = None,
) -> str:
  """The whole page as one string (see static_pieces)."""
  return ''.join(static_pieces(workdir, runs, canary))


def write_static(
    workdir: pathlib.Path, out: pathlib.Path, canary: str | None
) -> int:
  """Writes the static page (never decrypted text); returns its size."""
  runs = load_workdir(workdir, canary)
  with open(out, 'w', encoding='utf-8') as f:
    for piece in static_pieces(workdir, runs, canary):
      f.write(piece)
  return out.stat().st_size
