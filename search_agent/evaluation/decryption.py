"""The published encryption schemes of the benchmarks (decrypt in memory).

* BrowseComp (openai/simple-evals): key = SHA-256(canary) repeated to the
  ciphertext length; plaintext = base64-decode(field) XOR key.
* xbench-DeepSearch (xbench-ai/xbench-evals): plaintext =
  base64-decode(field) XOR the raw UTF-8 canary bytes, repeated.

Plaintext must never be printed, logged or written to disk; callers keep it
in memory (eval results of encrypted datasets store it encrypted again with
the same scheme).
"""

import base64
import binascii
import hashlib


class DecryptionError(ValueError):
  """A field is not valid base64 or does not decrypt to UTF-8 text."""


def _xor(data: bytes, key: bytes) -> bytes:
  if not key:
    raise DecryptionError('empty canary: cannot derive a key')
  reps = len(data) // len(key) + 1
  return bytes(a ^ b for a, b in zip(data, key * reps))


def sha256_key(canary: str) -> bytes:
  """BrowseComp's key: SHA-256 digest of the canary (repeated by _xor)."""
  return hashlib.sha256(canary.encode('utf-8')).digest()


def _decrypt(ciphertext_b64: str, key: bytes, scheme: str) -> str:
  try:
    data = base64.b64decode(ciphertext_b64, validate=True)
  except (binascii.Error, ValueError) as e:
    raise DecryptionError(f'{scheme}: field is not valid base64 ({e})') from e
  try:
    return _xor(data, key).decode('utf-8')
  except UnicodeDecodeError as e:
    raise DecryptionError(
        f'{scheme}: decrypted bytes are not UTF-8 (wrong canary?)'
    ) from e


def browsecomp_decrypt(ciphertext_b64: str, canary: str) -> str:
  return _decrypt(ciphertext_b64, sha256_key(canary), 'browsecomp')


def browsecomp_encrypt(plaintext: str, canary: str) -> str:
  data = _xor(plaintext.encode('utf-8'), sha256_key(canary))
  return base64.b64encode(data).decode('ascii')


def xbench_decrypt(ciphertext_b64: str, canary: str) -> str:
  return _decrypt(ciphertext_b64, canary.encode('utf-8'), 'xbench')


def xbench_encrypt(plaintext: str, canary: str) -> str:
  data = _xor(plaintext.encode('utf-8'), canary.encode('utf-8'))
  return base64.b64encode(data).decode('ascii')
