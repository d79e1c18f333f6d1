"""One path layer for every file the binaries read or write (etils.epath).

A workdir, data file or checkpoint may be local (`/data/run`) or on an object
store (`gs://bucket/run`, `s3://...`): `path()` turns either into an
`epath.Path` (orbax uses the same type), so `gs://b/x` is never mangled into
a local `gs:/b/x`. Object stores have no append and no atomic rename, so:

  * `write_atomic` publishes a whole file at once: locally through a temporary
    file, fsync and `os.replace`; on an object store with one object upload,
    which is visible only once complete (GCS and S3 never show a partial
    object).
  * Files that grow (metrics.jsonl) are rewritten whole, never appended.
  * Listings are never cached across writers (`use_listings_cache=False`).
  * Code that needs POSIX semantics (the RL replay queue's exclusive rename
    and hard links) calls `require_local`.

No JAX here: the search service imports this module too.
"""

import os
import tempfile
from typing import Union

from etils import epath
import fsspec.config

PathLike = Union[str, os.PathLike]

# Directory listings of an object store are read fresh, not from gcsfs's or
# s3fs's per-process listing cache: other processes write the same workdir
# (a resumed run lists the checkpoints a killed one published; rollout
# workers watch the learner's), and a cached listing would hide them.
for _proto in ('gs', 'gcs', 's3'):
  fsspec.config.conf.setdefault(_proto, {}).setdefault(
      'use_listings_cache', False
  )

_OBJECT_SCHEMES = ('gs://', 's3://', 'az://', 'hf://')


class NotLocalError(ValueError):
  """A path on an object store where only a local filesystem works."""


def is_local(p: PathLike) -> bool:
  """Whether `p` is on the local filesystem (not gs://, s3://, ...)."""
  return not os.fspath(p).startswith(_OBJECT_SCHEMES)


def path(p: PathLike) -> epath.Path:
  """`p` as an epath.Path: local paths made absolute, URIs kept as they are."""
  s = os.fspath(p)
  if is_local(s):
    return epath.Path(os.path.abspath(s))
  return epath.Path(s)


def join(p: PathLike, *parts: str) -> str:
  """`p`/parts as a string (a URI stays a URI; `os.path.join` keeps it too)."""
  return os.fspath(path(p).joinpath(*parts))


def require_local(
    p: PathLike,
    what: str,
    why: str = 'it reads and writes files with local (POSIX) file IO',
) -> str:
  """`p` as an absolute local path, or NotLocalError naming `what` and why."""
  s = os.fspath(p)
  if not is_local(s):
    raise NotLocalError(
        f'{what} must be on a local filesystem ({why}); got {s}. Use a local'
        ' disk or an NFS/Filestore mount for it.'
    )
  return os.path.abspath(s)


def write_atomic(p: PathLike, data: str | bytes) -> None:
  """Replaces the file `p` with `data` so a reader sees old or new, never half.

  Creates the parent directory. Locally: temporary file, fsync, os.replace,
  fsync of the directory. On an object store: a single upload (an object is
  only visible once its upload completes).
  """
  target = path(p)
  target.parent.mkdir(parents=True, exist_ok=True)
  mode = 'wb' if isinstance(data, bytes) else 'w'
  if not is_local(target):
    with target.open(mode) as f:
      f.write(data)
    return
  local = os.fspath(target)
  tmp = f'{local}.tmp.{os.getpid()}'
  kwargs = {} if isinstance(data, bytes) else {'encoding': 'utf-8'}
  with open(tmp, mode, **kwargs) as f:
    f.write(data)
    f.flush()
    os.fsync(f.fileno())
  os.replace(tmp, local)
  dir_fd = os.open(os.path.dirname(local), os.O_RDONLY)
  try:
    os.fsync(dir_fd)
  finally:
    os.close(dir_fd)


def read_text(p: PathLike) -> str:
  return path(p).read_text(encoding='utf-8')


def exists(p: PathLike) -> bool:
  return path(p).exists()


def local_copy(p: PathLike) -> str:
  """A local directory with the files of directory `p` (itself if local).

  For libraries that only read local files (a tokenizer's JSON): the files
  directly under an object-store `p` are downloaded to a temporary directory.
  """
  if is_local(p):
    return os.path.abspath(os.fspath(p))
  out = tempfile.mkdtemp('-copy')
  for child in path(p).iterdir():
    if child.is_file():
      with open(os.path.join(out, child.name), 'wb') as f:
        f.write(child.read_bytes())
  return out


def upload_dir(local: PathLike, p: PathLike) -> None:
  """Writes the files directly under local directory `local` into `p`."""
  for name in sorted(os.listdir(local)):
    src = os.path.join(local, name)
    if os.path.isfile(src):
      with open(src, 'rb') as f:
        write_atomic(path(p) / name, f.read())
