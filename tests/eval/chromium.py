"""A minimal W3C WebDriver client for Debian's headless chromium + chromedriver.

Enough for the viewer's browser tests: open a URL, find and click elements,
run a script, take a screenshot, read the browser console log. Talks to a
real `chromedriver` process over HTTP (no selenium dependency).
"""

import base64
import json
import os
import shutil
import socket
import subprocess
import time
import urllib.error
import urllib.request

_ELEMENT = 'element-6066-11e4-a52e-4f735466cecf'


def find_binaries() -> tuple[str, str] | None:
  """(chromium, chromedriver) paths, or None when either is missing."""
  browser = shutil.which('chromium') or shutil.which('chromium-browser')
  driver = shutil.which('chromedriver')
  return (browser, driver) if browser and driver else None


def _free_port() -> int:
  with socket.socket() as s:
    s.bind(('127.0.0.1', 0))
    return s.getsockname()[1]


class WebDriverError(RuntimeError):
  """chromedriver answered with an error."""


class Browser:
  """One headless chromium session."""

  def __init__(self, width: int = 1300, height: int = 900):
    found = find_binaries()
    if found is None:
      raise WebDriverError('chromium or chromedriver is not installed')
    browser, driver = found
    self.port = _free_port()
    self.proc = subprocess.Popen(
        [driver, f'--port={self.port}'],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )  # fmt: skip
    self.base = f'http://127.0.0.1:{self.port}'
    deadline = time.monotonic() + 30
    while True:
      try:
        self._req('GET', '/status')
        break
      except (urllib.error.URLError, ConnectionError):
        if time.monotonic() > deadline:
          self.proc.kill()
          raise
        time.sleep(0.1)
    args = ['--headless=new', '--no-sandbox', '--disable-gpu',
            '--disable-dev-shm-usage', f'--window-size={width},{height}']  # fmt: skip
    caps = {
        'browserName': 'chrome',
        'goog:chromeOptions': {'binary': browser, 'args': args},
        'goog:loggingPrefs': {'browser': 'ALL'},
    }
    value = self._req(
        'POST', '/session', {'capabilities': {'alwaysMatch': caps}}
    )
    self.session = f'/session/{value["sessionId"]}'

  def _req(self, method: str, path: str, body=None):
    data = None if body is None else json.dumps(body).encode()
    req = urllib.request.Request(
        self.base + path, data=data, method=method,
        headers={'Content-Type': 'application/json'},
    )  # fmt: skip
    try:
      with urllib.request.urlopen(req, timeout=120) as r:
        return json.loads(r.read() or b'{}').get('value')
    except urllib.error.HTTPError as e:
      raise WebDriverError(f'{method} {path}: {e.read()[:500]!r}') from e

  def cmd(self, method: str, path: str, body=None):
    return self._req(method, self.session + path, body)

  def get(self, url: str) -> None:
    self.cmd('POST', '/url', {'url': url})

  def run(self, script: str, *args):
    return self.cmd(
        'POST', '/execute/sync', {'script': script, 'args': list(args)}
    )

  def wait_for(self, script: str, timeout: float = 20.0):
    deadline = time.monotonic() + timeout
    while True:
      value = self.run(script)
      if value:
        return value
      if time.monotonic() > deadline:
        raise TimeoutError(f'waited {timeout} s for: {script}')
      time.sleep(0.05)

  def find(self, css: str) -> str:
    value = self.cmd(
        'POST', '/element', {'using': 'css selector', 'value': css}
    )
    return value[_ELEMENT]

  def click(self, css: str) -> None:
    self.cmd('POST', f'/element/{self.find(css)}/click', {})

  def text(self, css: str) -> str:
    return self.cmd('GET', f'/element/{self.find(css)}/text')

  def screenshot(self, path: str | os.PathLike[str]) -> bytes:
    png = base64.b64decode(self.cmd('GET', '/screenshot'))
    with open(path, 'wb') as f:
      f.write(png)
    return png

  def console(self) -> list[dict]:
    """Browser console entries since the last call (chromedriver's log)."""
    return self.cmd('POST', '/se/log', {'type': 'browser'}) or []

  def close(self) -> None:
    try:
      self.cmd('DELETE', '')
    except (WebDriverError, urllib.error.URLError, ConnectionError):
      pass
    self.proc.terminate()
    try:
      self.proc.wait(timeout=10)
    except subprocess.TimeoutExpired:
      self.proc.kill()
