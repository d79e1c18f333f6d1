"""Tests for the leakage guard."""

import pytest

from search_agent.chat.turns import ToolCall
from search_agent.chat.turns import Turn
from search_agent.search import guard
from tpu_configs.search import serve as serve_config

G = guard.LeakageGuard()


@pytest.mark.parametrize(
    'url',
    [
        'https://huggingface.co/datasets/openai/browsecomp',
        'http://www.HuggingFace.co/datasets',
        'huggingface.co/spaces/x/y?tab=files#top',
        'https://hf.co/datasets/x',
        'https://cdn.huggingface.co/datasets/x',
        # Spellings a browser reads as the same page:
        'https://huggingface.co/%64atasets/openai/browsecomp',
        'https://huggingface.co/datasets%2Fopenai',
        'https://huggingface.co\\datasets\\x',
        'https://huggingface.co/./datasets/x',
        'https://huggingface.co/models/../datasets/x',
        'https://huggingface.co.:443/datasets/x',
        # The same data through the Hub API and the dataset viewer's server:
        'https://huggingface.co/api/datasets/openai/browsecomp/parquet',
        'https://huggingface.co/api/spaces/x/y',
        'https://hf.co/api/datasets/x',
        'https://datasets-server.huggingface.co/rows?dataset=openai/x',
        'https://datasets-server.huggingface.co/search?dataset=x&query=q',
    ],
)
def test_blocked(url):
  assert G.is_blocked(url)
  # ... and the post-hoc scan finds it in free text.
  assert G.find_in_text(f'see {url} for the answer') == [url]


@pytest.mark.parametrize(
    'url',
    [
        'https://huggingface.co/models/x',
        'https://huggingface.co/api/models/x',
        'https://huggingface.co/docs/datasets-server',
        'https://huggingface.co/datasetsfoo',
        'https://nothuggingface.co/datasets/x',
        'https://en.wikipedia.org/wiki/Hugging_Face',
        'https://example.com/?u=huggingface.co/datasets',
        'https://huggingface.co.uk/datasets/x',
        'https://huggingface.com/datasets/x',
        '',
    ],
)
def test_allowed(url):
  assert not G.is_blocked(url)


def test_serve_config_blocks_the_guard_defaults():
  for arg in ('', 'tiny'):
    patterns = serve_config.get_config(arg).blocked_patterns
    assert tuple(patterns) == guard.DEFAULT_BLOCKED


def test_configurable_patterns_and_filter():
  g = guard.LeakageGuard(guard.GuardConfig(blocked_patterns=('example.com',)))
  assert g.is_blocked('https://a.example.com/anything')
  assert not g.is_blocked('https://huggingface.co/datasets/x')
  items = ['https://example.com/1', 'https://ok.org/2', 'https://example.com']
  kept, removed = g.filter(items, url_of=lambda u: u)
  assert kept == ['https://ok.org/2'] and len(removed) == 2
  with pytest.raises(ValueError, match='no host'):
    guard.LeakageGuard(guard.GuardConfig(blocked_patterns=('/x',)))


def test_post_hoc_check_over_a_trajectory():
  messages = [
      Turn(role='user', content='see huggingface.co/datasets/q (user text)'),
      Turn(
          role='assistant',
          content='',
          tool_calls=(
              ToolCall(
                  name='visit',
                  arguments={
                      'url': ['https://huggingface.co/datasets/a/b', 'x.org'],
                      'goal': 'answer',
                  },
              ),
          ),
      ),
      Turn(
          role='tool',
          name='search',
          content='1. Leak (https://hf.co/spaces/s/t). 2. fine https://x.org/',
      ),
  ]
  assert G.check_messages(messages) == [
      'https://huggingface.co/datasets/a/b',
      'https://hf.co/spaces/s/t',
  ]
  assert G.check_messages(messages[:1]) == []  # user turns are not tools
