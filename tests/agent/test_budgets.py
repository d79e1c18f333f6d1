"""Budgets, token counters and the Turn -> message conversion."""

import pytest

from search_agent.agent import budgets
from search_agent.chat import tokenizer as tokenizer_lib


def test_recipe_defaults():
  b = budgets.Budgets()
  assert (b.max_steps, b.max_output_tokens, b.context_limit) == (
      500,
      32_768,
      262_144,
  )


def test_output_room_and_fits_by_hand():
  b = budgets.Budgets(
      max_output_tokens=100,
      context_limit=1000,
      min_output_tokens=50,
      compress_at=0.8,
  )
  assert b.output_room(10) == 100  # capped by max_output_tokens
  assert b.output_room(940) == 60  # capped by what is left of the context
  assert b.fits(950) and not b.fits(951)  # 1000 - 951 = 49 < 50
  assert b.compress_tokens == 800


@pytest.mark.parametrize(
    'kw',
    [
        dict(max_steps=0),
        dict(max_output_tokens=0),
        dict(context_limit=10, min_output_tokens=10),
        dict(compress_at=0.0),
    ],
)
def test_invalid_budgets_raise(kw):
  with pytest.raises(budgets.BudgetConfigError):
    budgets.Budgets(**kw)


def test_char_counter_by_hand():
  messages = [
      {'role': 'user', 'content': 'abcdef'},
      {'role': 'assistant', 'content': 'abc', 'reasoning': 'abc'},
  ]
  # 12 chars / 3 = 4 tokens, plus 8 per message.
  assert budgets.CharTokenCounter().count(messages) == 4 + 16


def test_tokenizer_counter_with_the_real_qwen3_tokenizer():
  tok = tokenizer_lib.load_tokenizer(tokenizer_lib.maxtext_tokenizer_dir())
  counter = budgets.TokenizerCounter(tok, per_message=3)
  messages = [
      {'role': 'user', 'content': 'Hello world'},  # 2 tokens
      {'role': 'user', 'content': 'Capital of France?'},  # 4 tokens
  ]
  assert counter.count(messages) == 2 + 4 + 2 * 3
