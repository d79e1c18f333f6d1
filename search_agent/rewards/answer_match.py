"""Exact-match answer scoring shared by rewards and eval.

`normalize_answer` follows the SQuAD/TriviaQA convention (lower case, drop
punctuation and the articles a/an/the, collapse whitespace) and additionally
folds accents and drops thousands separators, so '12,000' matches '12000'.
"""

import re
import string
from typing import Iterable
import unicodedata

_ARTICLES = re.compile(r'\b(a|an|the)\b')
_THOUSANDS = re.compile(r'(?<=\d),(?=\d{3}\b)')
_PUNCT = str.maketrans({c: ' ' for c in string.punctuation})


def normalize_answer(text: str) -> str:
  """Returns the canonical form of an answer string.

  Args:
    text: A predicted or reference answer.

  Returns:
    Lower-cased, accent-folded text without punctuation, articles or
    thousands separators, whitespace collapsed to single spaces.
  """
  text = unicodedata.normalize('NFKD', text)
  text = ''.join(c for c in text if not unicodedata.combining(c))
  text = _THOUSANDS.sub('', text.lower())
  text = text.translate(_PUNCT)
  text = _ARTICLES.sub(' ', text)
  return ' '.join(text.split())


def exact_match(
    prediction: str | None, answer: str, aliases: Iterable[str] = ()
) -> bool:
  """Whether `prediction` equals the answer or an alias after normalization.

  Args:
    prediction: The agent's final answer; None (never answered) never matches.
    answer: The reference answer.
    aliases: Other accepted surface forms.

  Returns:
    True when the normalized prediction is non-empty and equals the
    normalized answer or any normalized alias.
  """
  if prediction is None:
    return False
  pred = normalize_answer(prediction)
  if not pred:
    return False
  return any(pred == normalize_answer(a) for a in (answer, *aliases))
