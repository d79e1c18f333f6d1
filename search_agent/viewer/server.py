"""Server mode: the same page over HTTP, details fetched on demand.

Routes: `/` the page (index embedded; `/?reload=1` reads the workdir
again first), `/api/index` the index as JSON,
`/api/detail?run=R&i=I` one item's detail. Decrypted text (with --canary)
lives only in this process's memory and in responses; nothing is written.
"""

import http.server
import json
import pathlib
import threading
import urllib.parse

from search_agent.viewer import page
from search_agent.viewer import run_files


class _Handler(http.server.BaseHTTPRequestHandler):
  app: 'ViewerApp'

  def _send(self, code: int, body: str, kind: str) -> None:
    data = body.encode('utf-8')
    self.send_response(code)
    self.send_header('Content-Type', kind + '; charset=utf-8')
    self.send_header('Content-Length', str(len(data)))
    self.send_header('Cache-Control', 'no-store')
    self.end_headers()
    self.wfile.write(data)

  def do_GET(self):  # pylint: disable=invalid-name
    url = urllib.parse.urlparse(self.path)
    q = urllib.parse.parse_qs(url.query)
    if url.path in ('/', '/index.html'):
      if q.get('reload'):  # the files on disk again (a live RL run grows)
        self.app.load()
      self._send(200, self.app.html, 'text/html')
    elif url.path == '/api/index':
      self._send(200, json.dumps(self.app.index), 'application/json')
    elif url.path == '/api/detail':
      try:
        run = self.app.runs[int(q['run'][0])]
        i = int(q['i'][0])
        if not 0 <= i < len(run.rows):
          raise IndexError(i)
        body = json.dumps(run.detail(i), ensure_ascii=False)
      except (KeyError, ValueError, IndexError) as e:
        self._send(404, f'no such item: {e!r}', 'text/plain')
        return
      self._send(200, body, 'application/json')
    else:
      self._send(404, 'not found', 'text/plain')

  def log_message(self, fmt, *args):  # quiet: one line per request is noise
    del fmt, args


class ViewerApp:
  """The loaded workdir and its HTTP server."""

  def __init__(
      self,
      workdir: pathlib.Path,
      canary: str | None,
      port: int,
      host: str = '127.0.0.1',
  ):
    self.workdir, self._canary = workdir, canary
    self._lock = threading.Lock()
    self.load()
    handler = type('Handler', (_Handler,), {'app': self})
    try:
      self.httpd = http.server.ThreadingHTTPServer((host, port), handler)
    except OSError as e:
      raise run_files.ViewerError(f'cannot listen on {host}:{port}: {e}') from e

  def load(self) -> None:
    """(Re)reads the workdir; requests see the old or the new state whole."""
    with self._lock:
      runs = page.load_workdir(self.workdir, self._canary)
      idx = page.index(self.workdir, runs, 'server')
      self.runs, self.index, self.html = runs, idx, page.shell(idx)

  @property
  def url(self) -> str:
    host, port = self.httpd.server_address[:2]
    return f'http://{host}:{port}/'

  def serve_forever(self) -> None:
    self._serving = True
    self.httpd.serve_forever()

  def close(self) -> None:
    if getattr(self, '_serving', False):  # shutdown() waits for the loop
      self.httpd.shutdown()
    self.httpd.server_close()
