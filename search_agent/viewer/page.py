"""The page: one self-contained HTML file (static export) or a server shell.

Static export: the index (every run's summary and light rows) and each
item's detail are embedded as `<script type="application/json">` blocks
(details one per item, parsed only when opened, so a 10,000-trajectory run
opens without parsing every step); long system prompts are stored once in a
pool. Server mode embeds the same index and fetches details from the
server. CSS and JS are the package's assets, inlined.
"""

import hashlib
import json
import pathlib
from typing import Any, Iterator, Sequence

from search_agent.viewer import records
from search_agent.viewer import runs as runs_lib
from search_agent.viewer import sniff

Json = dict[str, Any]
ASSETS = pathlib.Path(__file__).parent / 'assets'
_JS = ('app.js', 'trajectory.js')
_POOL_MIN_CHARS = 200


def load_workdir(
    workdir: pathlib.Path, canary: str | None = None
) -> list[runs_lib.Run]:
  """Every run under `workdir`.

  Raises:
    ViewerError: there is no such directory, or nothing in it is a run.
  """
  if not workdir.is_dir():
    raise records.ViewerError(f'--workdir={workdir} is not a directory')
  found = sniff.find_runs(workdir)
  if not found:
    raise records.ViewerError(
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


def _details(runs: Sequence[runs_lib.Run], pool: list[str]) -> Iterator[str]:
  where: dict[str, int] = {}
  for r_idx, run in enumerate(runs):
    for i in range(len(run.rows)):
      d = _intern(run.detail(i), pool, where)
      yield f'<script type="application/json" id="d-{r_idx}-{i}">{dumps(d)}</script>\n'


def shell(idx: Json, body_tail: str = '') -> str:
  css = (ASSETS / 'viewer.css').read_text(encoding='utf-8')
  js = '\n'.join((ASSETS / f).read_text(encoding='utf-8') for f in _JS)
  return (
      '<!doctype html>\n<html lang="en"><head><meta charset="utf-8">'
      '<meta name="viewport" content="width=device-width, initial-scale=1">'
      '<link rel="icon" href="data:,">'
      f'<title>viewer: {idx["workdir"]}</title><style>{css}</style></head>\n'
      '<body><header></header><main><p>loading…</p></main>\n'
      f'<script type="application/json" id="viewer-index">{dumps(idx)}</script>\n'
      f'{body_tail}<script>{js}</script></body></html>\n'
  )


def static_html(workdir: pathlib.Path, runs: Sequence[runs_lib.Run]) -> str:
  """The whole self-contained page."""
  pool: list[str] = []
  details = ''.join(_details(runs, pool))
  idx = index(workdir, runs, 'static')
  idx['pool'] = pool
  return shell(idx, details)


def write_static(
    workdir: pathlib.Path, out: pathlib.Path, canary: str | None
) -> int:
  """Writes the static page; returns its size in bytes.

  Raises:
    ViewerError: a canary was given (the file would hold decrypted text).
  """
  if canary:
    raise records.ViewerError(
        '--out with --canary would write decrypted benchmark text to disk;'
        ' serve it instead (--port), which decrypts in memory only'
    )
  text = static_html(workdir, load_workdir(workdir))
  out.write_text(text, encoding='utf-8')
  return len(text.encode('utf-8'))
