"""SHA-256 digests of files and directory trees (manifests, reuse checks)."""

import hashlib
import os
import pathlib


def file_sha256(path: str | pathlib.Path, *, missing_ok: bool = False) -> str:
  """Hex SHA-256 of a file's bytes, read in 1 MiB blocks.

  Args:
    path: The file.
    missing_ok: Return '' for a path that is not a file instead of raising.
  """
  if missing_ok and not os.path.isfile(path):
    return ''
  h = hashlib.sha256()
  with open(path, 'rb') as f:
    for block in iter(lambda: f.read(1 << 20), b''):
      h.update(block)
  return h.hexdigest()


def tree_sha256(root: str, skip: tuple[str, ...] = ()) -> dict[str, str]:
  """{relative path: file_sha256} of every file under `root`, in sorted
  order, but the relative paths in `skip`."""
  out = {}
  for base, dirs, files in os.walk(root):
    dirs.sort()
    for name in sorted(files):
      path = os.path.join(base, name)
      rel = os.path.relpath(path, root)
      if rel not in skip:
        out[rel] = file_sha256(path)
  return out
