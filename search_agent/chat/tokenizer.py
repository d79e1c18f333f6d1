"""Tokenizers: any HF `tokenizer.json` by path, and a tiny local byte-level BPE.

`Tokenizer.encode` never turns text into control tokens: the special tokens
(`<|im_start|>`, `<|im_end|>`, `<|endoftext|>`, ... — the added tokens marked
`special`) written inside a web page or a user message are encoded as plain
bytes, so no content can forge a turn boundary. Only the renderer inserts them,
by id. Non-special added tokens (`<think>`, `<tool_call>`, ...) are matched in
text, as the model writes them.

The tiny tokenizer (`train_tiny_tokenizer`) is trained locally on the bundled
2WikiMultihopQA corpus (`corpus.twowiki.read_2wiki()`), with no download. It
has the chat-format tokens: control tokens CONTROL_TOKENS (ids 0..2) and
marker tokens MARKER_TOKENS (the last ids). The trained fixture lives in
tests/chat/golden/tiny_tokenizer/. This module does not import maxtext.
"""

import importlib.util
import json
import os
import pathlib
from typing import Any, Iterable, Sequence

import tokenizers
from tokenizers import decoders
from tokenizers import models
from tokenizers import pre_tokenizers
from tokenizers import trainers

CONTROL_TOKENS = ('<|endoftext|>', '<|im_start|>', '<|im_end|>')
MARKER_TOKENS = (
    '<think>',
    '</think>',
    '<tool_call>',
    '</tool_call>',
    '<tool_response>',
    '</tool_response>',
    '<answer>',
    '</answer>',
)
TOKENIZER_FILE = 'tokenizer.json'
CONFIG_FILE = 'tokenizer_config.json'
JINJA_FILE = 'chat_template.jinja'


class TokenizerError(ValueError):
  """A tokenizer file is missing or lacks a token the chat format needs."""


class VocabSizeError(TokenizerError):
  """The tokenizer has more ids than the model's vocabulary."""


class Tokenizer:
  """A `tokenizers.Tokenizer` with the ids the chat format needs.

  Attributes:
    name: Where it was loaded from (for manifests).
    chat_template: The HF jinja chat template from tokenizer_config.json, if
      any (informational: the renderer uses its own ChatTemplate objects).
  """

  def __init__(
      self,
      hf_tokenizer: tokenizers.Tokenizer,
      *,
      name: str = '',
      chat_template: str | None = None,
  ):
    self._hf = hf_tokenizer
    # Special tokens in text are encoded as text, never as control ids.
    self._hf.encode_special_tokens = True
    self.name = name
    self.chat_template = chat_template

  @property
  def hf(self) -> tokenizers.Tokenizer:
    """The wrapped `tokenizers.Tokenizer`."""
    return self._hf

  @property
  def vocab_size(self) -> int:
    """Number of ids, added tokens included."""
    return self._hf.get_vocab_size(with_added_tokens=True)

  def encode(self, text: str) -> list[int]:
    """Encodes text; special tokens in it stay plain text (see module doc)."""
    return self._hf.encode(text, add_special_tokens=False).ids

  def encode_batch(self, texts: Sequence[str]) -> list[list[int]]:
    """Encodes several texts independently (one token list per text)."""
    encodings = self._hf.encode_batch(list(texts), add_special_tokens=False)
    return [e.ids for e in encodings]

  def decode(self, ids: Iterable[int], skip_special: bool = False) -> str:
    """Decodes ids; special tokens are kept unless `skip_special`."""
    return self._hf.decode(list(ids), skip_special_tokens=skip_special)

  def token_id(self, token: str) -> int:
    """Id of a token that must exist as a single vocabulary entry."""
    token_id = self._hf.token_to_id(token)
    if token_id is None:
      raise TokenizerError(
          f'tokenizer {self.name!r} has no single token {token!r}; use a'
          ' tokenizer with the chat-format tokens (see train_tiny_tokenizer)'
          ' or a ChatTemplate whose markers it has'
      )
    return token_id

  def has_token(self, token: str) -> bool:
    """True if `token` is one vocabulary entry."""
    return self._hf.token_to_id(token) is not None

  @property
  def im_start_id(self) -> int:
    return self.token_id('<|im_start|>')

  @property
  def im_end_id(self) -> int:
    """End of a chat turn: the assistant's stop token."""
    return self.token_id('<|im_end|>')

  @property
  def pad_id(self) -> int:
    return self.token_id('<|endoftext|>')

  @property
  def eos_id(self) -> int:
    """End of a generated turn (same as im_end_id in the chat format)."""
    return self.im_end_id


def load_tokenizer(path: str | os.PathLike[str]) -> Tokenizer:
  """Loads an HF tokenizer.json (a file, or a directory holding one).

  A `tokenizer_config.json` (or `chat_template.jinja`) next to it supplies
  the jinja `chat_template`.

  Raises:
    TokenizerError: no tokenizer.json at `path`, or it (or its config)
      cannot be parsed.
  """
  path = pathlib.Path(path)
  file = path / TOKENIZER_FILE if path.is_dir() else path
  if not file.is_file():
    raise TokenizerError(
        f'no tokenizer at {path}: give a tokenizer.json file or a directory'
        ' that holds one (train one with train_tiny_tokenizer)'
    )
  try:
    hf = tokenizers.Tokenizer.from_file(str(file))
  except Exception as e:  # the Rust side raises plain Exception
    raise TokenizerError(f'cannot parse {file}: {e}') from e
  return Tokenizer(
      hf, name=str(file), chat_template=_chat_template(file.parent)
  )


def _chat_template(directory: pathlib.Path) -> str | None:
  """The jinja chat template saved next to a tokenizer, if any.

  transformers keeps it in tokenizer_config.json ('chat_template') or, in
  newer versions, in chat_template.jinja.
  """
  config_file = directory / CONFIG_FILE
  if config_file.is_file():
    try:
      config = json.loads(config_file.read_text(encoding='utf-8'))
    except json.JSONDecodeError as e:
      raise TokenizerError(f'cannot parse {config_file}: {e}') from e
    if isinstance(config.get('chat_template'), str):
      return config['chat_template']
  jinja_file = directory / JINJA_FILE
  if jinja_file.is_file():
    return jinja_file.read_text(encoding='utf-8')
  return None


def load_model_tokenizer(path: str, vocab_size: int) -> Tokenizer:
  """A model's tokenizer: `path`, or 'qwen3' for MaxText's bundled one.

  Raises:
    VocabSizeError: it has more ids than the model's `vocab_size`.
  """
  if path == 'qwen3':
    path = maxtext_tokenizer_dir()
  tok = load_tokenizer(path)
  if tok.vocab_size > vocab_size:
    raise VocabSizeError(
        f'tokenizer {path} has {tok.vocab_size} ids but the model vocab_size'
        f' is {vocab_size}'
    )
  return tok


def maxtext_tokenizer_dir(name: str = 'qwen3-tokenizer') -> pathlib.Path:
  """A tokenizer directory bundled with the maxtext wheel (found, not imported).

  `maxtext_tokenizer_dir()` is Qwen3's real tokenizer.json with its chat
  template: a real tokenizer available offline.
  """
  spec = importlib.util.find_spec('maxtext')
  if spec is None or not spec.submodule_search_locations:
    raise TokenizerError('maxtext is not installed: run launch/setup.sh')
  root = pathlib.Path(list(spec.submodule_search_locations)[0])
  path = root / 'assets' / 'tokenizers' / name
  if not path.is_dir():
    raise TokenizerError(f'maxtext ships no tokenizer directory {name!r}')
  return path


def corpus_texts(docs: Iterable[Any]) -> Iterable[str]:
  """Training texts from documents: `Document`s or `{title, text}` dicts."""
  for doc in docs:
    if isinstance(doc, str):
      yield doc
    elif isinstance(doc, dict):
      yield f"{doc.get('title', '')}\n{doc['text']}"
    else:
      yield f'{doc.title}\n{doc.text}'


def train_tiny_tokenizer(
    corpus_docs: Iterable[Any],
    out_path: str | os.PathLike[str],
    vocab_size: int = 4096,
    chat_template: str | None = None,
) -> Tokenizer:
  """Trains a byte-level BPE with the chat-format tokens; saves it.

  Deterministic for a given corpus order. Every byte is in the base alphabet,
  so any text (any script) encodes and decodes losslessly.

  Args:
    corpus_docs: Documents (`Document`, `{title, text}` dicts or strings).
    out_path: Directory to write `tokenizer.json` and `tokenizer_config.json`
      into (created if missing).
    vocab_size: Total number of ids, control and marker tokens included.
    chat_template: HF jinja chat template to store in tokenizer_config.json
      (e.g. `chat.renderer.to_jinja(CHATML)`, for OpenAI-compatible servers).

  Returns:
    The trained tokenizer.
  """
  min_size = 256 + len(CONTROL_TOKENS) + len(MARKER_TOKENS)
  if vocab_size < min_size:
    raise TokenizerError(
        f'vocab_size {vocab_size} is below {min_size} (256 bytes + chat'
        ' tokens); choose a larger vocab_size'
    )
  hf = tokenizers.Tokenizer(models.BPE())
  hf.pre_tokenizer = pre_tokenizers.ByteLevel(
      add_prefix_space=False, use_regex=True
  )
  hf.decoder = decoders.ByteLevel()
  trainer = trainers.BpeTrainer(
      vocab_size=vocab_size - len(MARKER_TOKENS),
      special_tokens=list(CONTROL_TOKENS),
      initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
      show_progress=False,
  )
  hf.train_from_iterator(corpus_texts(corpus_docs), trainer=trainer)
  hf.add_tokens(
      [
          tokenizers.AddedToken(t, special=False, normalized=False)
          for t in MARKER_TOKENS
      ]
  )
  out = pathlib.Path(out_path)
  out.mkdir(parents=True, exist_ok=True)
  hf.save(str(out / TOKENIZER_FILE))
  _write_config(out, chat_template)
  return load_tokenizer(out)


def _write_config(out: pathlib.Path, chat_template: str | None) -> None:
  """Writes the HF tokenizer_config.json of a tiny tokenizer."""
  config = {
      'tokenizer_class': 'PreTrainedTokenizerFast',
      'eos_token': '<|im_end|>',
      'pad_token': '<|endoftext|>',
      'bos_token': None,
      'add_bos_token': False,
      'model_max_length': 262_144,
  }
  if chat_template is not None:
    config['chat_template'] = chat_template
  (out / CONFIG_FILE).write_text(json.dumps(config, indent=2) + '\n')
