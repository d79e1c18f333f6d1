#!/usr/bin/env bash
# Creates .venv (Python 3.12) and installs the pinned requirements.
# Idempotent: a second run does nothing unless requirements.txt changed.
set -euo pipefail
cd "$(dirname "$0")/.."

find_python() {
  for c in "${PYTHON:-}" python3.12 /root/.pyenv/versions/3.12.1/bin/python; do
    [ -n "$c" ] || continue
    if command -v "$c" >/dev/null 2>&1 &&
       "$c" -c 'import sys; sys.exit(sys.version_info[:2] != (3, 12))' 2>/dev/null; then
      command -v "$c"; return 0
    fi
  done
  return 1
}

# Headless browser for the viewer's browser tests (tests/eval/test_view_browser.py).
install_chromium() {
  if command -v chromium >/dev/null 2>&1 && command -v chromedriver >/dev/null 2>&1; then
    return 0
  fi
  if [ "$(id -u)" != 0 ] || ! command -v apt-get >/dev/null 2>&1; then
    echo "setup: chromium/chromedriver missing and not root with apt-get: skipping" \
         "(the viewer's browser tests will skip; install Debian's chromium and chromium-driver)" >&2
    return 0
  fi
  echo "setup: installing Debian's chromium and chromium-driver"
  if ! { apt-get update -q >/dev/null &&
         DEBIAN_FRONTEND=noninteractive apt-get install -y -q chromium chromium-driver >/dev/null; }; then
    echo "setup: apt-get could not install chromium (the viewer's browser tests will skip)" >&2
  fi
}
install_chromium

stamp=.venv/.requirements.sha256
want=$(sha256sum requirements.txt | cut -d' ' -f1)
if [ -f "$stamp" ] && [ "$(cat "$stamp")" = "$want" ]; then
  exit 0
fi
if [ ! -x .venv/bin/python ]; then
  if ! py=$(find_python); then
    echo "setup: Python 3.12 not found (MaxText 0.2.5 needs it)." >&2
    echo "  Install it (e.g. 'pyenv install 3.12.1' or your distro's python3.12)" >&2
    echo "  or point PYTHON=/path/to/python3.12 at one, then rerun." >&2
    exit 1
  fi
  echo "setup: creating .venv with $py"
  "$py" -m venv .venv
fi
echo "setup: installing requirements.txt into .venv (a few minutes the first time)"
.venv/bin/python -m pip install -q --upgrade pip==26.3
.venv/bin/python -m pip install -q -r requirements.txt
.venv/bin/python -m pip check
echo "$want" > "$stamp"
echo "setup: done"
