"""Tests for the LLM reranker (reply parsing and fallback policy)."""

import asyncio
import dataclasses

import pytest

from search_agent.llm import protocol
from search_agent.llm.scripted import ScriptedLLM
from search_agent.search import reranker


@dataclasses.dataclass(frozen=True)
class _Hit:
  title: str
  url: str
  snippet: str


HITS = [
    _Hit(f'Title {i}', f'https://en.wikipedia.org/wiki/T{i}', f'snippet {i}')
    for i in range(1, 6)
]


@pytest.mark.parametrize(
    'reply,order,placed',
    [
        ('3, 1, 2', (2, 0, 1), 3),
        ('<think>maybe 1 then 2</think>\n2 > 3 > 1', (1, 2, 0), 3),
        ('Ranking: [3] [2] [1]\nCandidate 1 is weak.', (2, 1, 0), 3),
        ('I would go with [2, 3, 1] overall.', (1, 2, 0), 3),
        ('2, 2, 9, 0, 3', (1, 2, 0), 2),  # repeats and out-of-range dropped
        ('reasoning</think>1,3', (0, 2, 1), 2),  # no opening tag
    ],
)
def test_parse_order(reply, order, placed):
  assert reranker.parse_order(reply, 3) == (order, placed)


@pytest.mark.parametrize(
    'reply', ['none are relevant', '<think>3, 1, 2 ... (cut off)', '7, 8']
)
def test_parse_order_without_a_usable_number_raises(reply):
  with pytest.raises(ValueError, match='names no candidate'):
    reranker.parse_order(reply, 3)


def _rerank(llm, config, candidates=HITS):
  r = reranker.LLMReranker(llm, config)
  return asyncio.run(
      r.rerank('Who designed Fulham Town Hall?', 'q', candidates)
  )


def test_rerank_reorders_and_shows_the_model_context_and_candidates():
  llm = ScriptedLLM(['<think>x</think>3, 1'])
  config = reranker.RerankConfig(enabled=True, max_candidates=3)
  hits, result = _rerank(llm, config)
  assert [h.title for h in hits] == [
      'Title 3',
      'Title 1',
      'Title 2',
      'Title 4',
      'Title 5',
  ]
  assert result.order == (2, 0, 1) and result.ranked_by_model == 2
  assert result.fallback is None
  prompt = llm.calls[0][0]['content']
  assert 'Who designed Fulham Town Hall?' in prompt
  assert '[3] Title 3\nURL: https://en.wikipedia.org/wiki/T3' in prompt
  assert 'Title 4' not in prompt  # past max_candidates


def test_failed_rerank_raises_by_default():
  llm = ScriptedLLM([protocol.LLMError('timeout')])
  with pytest.raises(reranker.RerankError, match='timeout'):
    _rerank(llm, reranker.RerankConfig(enabled=True))
  # A reply naming no candidate is asked again (twice), then an error.
  with pytest.raises(reranker.RerankError, match='names no candidate'):
    _rerank(ScriptedLLM(['no idea'] * 3), reranker.RerankConfig(enabled=True))


def test_failed_rerank_keeps_order_when_configured_and_records_why():
  config = reranker.RerankConfig(enabled=True, on_error='keep_order')
  hits, result = _rerank(ScriptedLLM(['no idea'] * 3), config)
  assert hits == HITS
  assert 'names no candidate' in result.fallback
  assert result.reply == 'no idea'


def test_single_candidate_needs_no_call_and_config_is_checked():
  llm = ScriptedLLM([])
  hits, result = _rerank(llm, reranker.RerankConfig(), HITS[:1])
  assert hits == HITS[:1] and result.order == (0,) and not llm.calls
  with pytest.raises(ValueError, match='on_error'):
    reranker.RerankConfig(on_error='ignore')
