"""Judge, reranker, summarizer and verifier roles against a served model.

A module-scoped `python -m search_agent.serving` process serves the tiny
model (random init, tests/llm/served_model.py); each role reaches it
through the OpenAI client over HTTP. Its replies are noise, so every
judgment must end in a counted, re-asked error (never a verdict), and the
roles with a documented fallback (reranker, summarizer) must record it.
"""

import asyncio
import dataclasses

import pytest

from search_agent.agent import task as task_lib
from search_agent.corpus.record import Document
from search_agent.llm import protocol
from search_agent.rewards import claims as claims_lib
from search_agent.rewards import judging
from search_agent.rewards import outcome
from search_agent.search import reranker as reranker_lib
from search_agent.search import visit as visit_lib
from search_agent.selfplay import verifier as selfplay_verifier
from tests.llm import served_model

pytestmark = [pytest.mark.slow, pytest.mark.maxtext]

TASK = task_lib.Task(
    id='t', question='Who directed The Glass Cage?', answer='Montgomery Tully'
)
CLAIMS = (
    task_lib.Claim(subject='The Glass Cage', relation='director',
                   object='Montgomery Tully'),
    task_lib.Claim(subject='The Glass Cage', relation='release year',
                   object='1955'),
)  # fmt: skip


@pytest.fixture(scope='module')
def endpoint():
  with served_model.serve() as url:
    yield url


def _run(coro):
  return asyncio.run(coro)


def test_answer_judge_parse_failure_is_an_error(endpoint):
  judge = served_model.role(endpoint, 'answer_judge')
  with pytest.raises(judging.JudgeReplyError, match="role 'answer_judge'"):
    _run(outcome.judge_answer(judge, TASK, 'Terence Fisher'))
  s = judge.stats
  assert (s.calls, s.parse_failures, s.parse_retries, s.parse_errors) == (
      2, 2, 1, 1,
  )  # fmt: skip
  report = judge.report()
  assert report['http_requests'] == 2 and report['http_retries'] == 0
  # Exact matches never reach the model.
  assert _run(outcome.judge_answer(judge, TASK, 'montgomery tully'))
  assert judge.stats.calls == 2


def test_claim_judge_seven_votes_fail_together(endpoint):
  judge = served_model.role(endpoint, 'claim_judge', parse_retries=0)
  voting = claims_lib.ClaimVoting(judge_calls=7, judge_min_votes=4)
  with pytest.raises(protocol.ReplyFormatError):
    _run(claims_lib.claim_coverage(
        judge, 'The Glass Cage was directed by Montgomery Tully.', CLAIMS,
        voting,
    ))  # fmt: skip
  s = judge.stats
  assert s.calls == 7 and s.parse_failures >= 1
  assert s.calls == s.completions + s.cancelled_calls + s.failed_calls


def test_claim_selection_judge_fails(endpoint):
  judge = served_model.role(endpoint, 'claim_select', parse_retries=0)
  with pytest.raises(protocol.ReplyFormatError):
    _run(claims_lib.select_required_claims(judge, TASK, CLAIMS))
  assert judge.stats.calls == claims_lib.ClaimVoting().select_calls


@dataclasses.dataclass(frozen=True)
class _Hit:
  title: str
  url: str
  snippet: str


def test_reranker_reasks_and_records_its_fallback(endpoint):
  llm = served_model.role(endpoint, 'reranker', max_tokens=8)
  reranker = reranker_lib.LLMReranker(
      llm, reranker_lib.RerankConfig(on_error='keep_order', max_tokens=8)
  )
  hits = [_Hit(f'Page {i}', f'https://x/{i}', f'snippet {i}') for i in range(3)]
  ranked, result = _run(reranker.rerank('q', 'glass cage', hits))
  assert sorted(h.title for h in ranked) == [h.title for h in hits]
  s = llm.stats
  if result.fallback:  # no reply named a candidate: kept order, said why
    assert result.ranked_by_model == 0 and s.parse_errors == 1
    assert s.calls == 2 and 'no usable reply' in result.fallback
  else:  # noise that names a number in 1..3 counts as a (bad) ranking
    assert result.ranked_by_model >= 1 and s.parse_errors == 0
  strict = reranker_lib.LLMReranker(
      served_model.role(endpoint, 'reranker', max_tokens=8, parse_retries=0),
      reranker_lib.RerankConfig(on_error='raise', max_tokens=8),
  )
  try:
    _run(strict.rerank('q', 'glass cage', hits))
  except reranker_lib.RerankError as e:
    assert 'fix the reranker model' in str(e)


def test_visit_summarizer_reads_through_the_served_model(endpoint):
  llm = served_model.role(endpoint, 'summarizer', max_tokens=16)
  reader = visit_lib.PageReader(
      llm, visit_lib.VisitConfig(max_tokens=16, on_llm_error='extractive')
  )
  doc = Document(
      doc_id='d', title='The Glass Cage', url='https://x/d',
      text='The Glass Cage is a 1955 film directed by Montgomery Tully.',
  )  # fmt: skip
  reading = _run(reader.read(doc, 'who directed it'))
  assert llm.stats.calls == 1 and llm.stats.length_finishes == 1
  # Noise has no <evidence>/<summary> tags: kept as an untagged summary.
  assert reading.method == 'llm' and not reading.tagged


def test_searchmaster_verifier_parse_failure_is_an_error(endpoint):
  llm = served_model.role(endpoint, 'verifier')
  verifier = selfplay_verifier.LLMVerifier(llm, max_tokens=16)
  with pytest.raises(selfplay_verifier.VerifierError, match="'correct'"):
    _run(verifier.correct('q', 'Montgomery Tully', 'Terence Fisher'))
  assert llm.stats.parse_retries == 1 and llm.stats.parse_errors == 1
  assert _run(verifier.correct('q', 'Montgomery Tully', 'Montgomery Tully'))


def test_served_role_stops_at_its_stop_string(endpoint):
  llm = served_model.role(endpoint, 'any', max_tokens=32, stop=('e',))
  (c,) = _run(llm.chat([{'role': 'user', 'content': 'hi'}],
                       protocol.SamplingParams(temperature=0.0)))  # fmt: skip
  # Noise over a 4k vocabulary almost surely holds an 'e' in 32 tokens;
  # generation ends at the token that completes the first one.
  assert c.finish_reason == 'stop' and 'e' in c.text
  assert c.text.index('e') >= len(c.text) - 8
