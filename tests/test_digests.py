"""SHA-256 of files and trees, against hashlib on the whole bytes."""

import hashlib

import pytest

from search_agent import digests


def test_a_file_read_in_blocks_hashes_as_its_whole_bytes(tmp_path):
  data = bytes(range(256)) * 5_000  # 1.28 MB: two 1 MiB blocks
  path = tmp_path / 'f.bin'
  path.write_bytes(data)
  assert digests.file_sha256(path) == hashlib.sha256(data).hexdigest()
  assert digests.file_sha256(str(path)) == hashlib.sha256(data).hexdigest()


def test_a_missing_file_raises_unless_missing_ok(tmp_path):
  with pytest.raises(FileNotFoundError):
    digests.file_sha256(tmp_path / 'absent')
  assert digests.file_sha256(tmp_path / 'absent', missing_ok=True) == ''
  # A directory is not a file either.
  assert digests.file_sha256(tmp_path, missing_ok=True) == ''


def test_a_tree_maps_each_file_but_the_skipped_to_its_digest(tmp_path):
  (tmp_path / 'b').mkdir()
  (tmp_path / 'b' / 'x.txt').write_text('x')
  (tmp_path / 'a.txt').write_text('a')
  (tmp_path / 'MANIFEST.json').write_text('{}')
  tree = digests.tree_sha256(str(tmp_path), skip=('MANIFEST.json',))
  sha = lambda s: hashlib.sha256(s.encode()).hexdigest()
  assert tree == {'a.txt': sha('a'), 'b/x.txt': sha('x')}
  assert 'MANIFEST.json' in digests.tree_sha256(str(tmp_path))
