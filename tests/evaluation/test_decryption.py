"""Decryptors: the real xbench file, and BrowseComp's scheme by hand.

Plaintext is never printed: assertions compare hashes and properties.
"""

import base64
import hashlib

import pytest

from search_agent.evaluation import datasets
from search_agent.evaluation import decryption

# SHA-256 of the decrypted answer and question of xbench row id=1.
XBENCH_1_ANSWER = (
    '341dcd64a08ed290828d1160d5af30f43b2a9d4d30a4e24cb068f6cca48a3d03'
)
XBENCH_1_QUESTION = (
    '0500df1642067f54f7efa8fc14745bcbe3b5231f1da6093a4df0a9eefd8817f3'
)


def _sha(text: str) -> str:
  return hashlib.sha256(text.encode('utf-8')).hexdigest()


@pytest.fixture(scope='module')
def xbench(shared_data):
  path = shared_data / 'benchmarks' / 'xbench-DeepSearch-2505.csv'
  return datasets.load(
      datasets.DatasetConfig(name='xbench', format='xbench', path=str(path))
  )


def test_real_xbench_file_decrypts_in_memory(xbench):
  assert len(xbench) == 100
  assert [t.id for t in xbench[:2]] == ['xbench-1', 'xbench-2']
  assert _sha(xbench[0].answer) == XBENCH_1_ANSWER
  assert _sha(xbench[0].question) == XBENCH_1_QUESTION
  # A Chinese benchmark: every question decrypts to text with CJK characters.
  assert all(any('\u4e00' <= c <= '\u9fff' for c in t.question) for t in xbench)
  assert all(0 < len(t.answer) <= 50 for t in xbench)
  assert all(t.meta['canary'] for t in xbench)


def test_xbench_round_trip_and_wrong_canary(xbench):
  task = xbench[0]
  blob = decryption.xbench_encrypt(task.answer, task.meta['canary'])
  assert decryption.xbench_decrypt(blob, task.meta['canary']) == task.answer
  with pytest.raises(decryption.DecryptionError):
    # A different canary gives bytes that are not the same text (or not UTF-8).
    out = decryption.xbench_decrypt(blob, 'not the canary')
    assert out != task.answer
    raise decryption.DecryptionError('decrypted to other text')


def test_browsecomp_scheme_by_hand():
  canary = 'BENCHMARK DATA canary GUID test'
  key = hashlib.sha256(canary.encode()).digest()  # 32 bytes, repeated
  plain = 'The answer is 42, and it is longer than thirty-two bytes.'.encode()
  cipher = bytes(p ^ key[i % 32] for i, p in enumerate(plain))
  blob = base64.b64encode(cipher).decode()
  assert decryption.browsecomp_decrypt(blob, canary) == plain.decode()
  assert decryption.browsecomp_encrypt(plain.decode(), canary) == blob


def test_bad_base64_is_a_clear_error():
  with pytest.raises(decryption.DecryptionError, match='not valid base64'):
    decryption.browsecomp_decrypt('***', 'c')
  with pytest.raises(decryption.DecryptionError, match='empty canary'):
    decryption.xbench_decrypt('AAAA', '')
