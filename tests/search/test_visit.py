"""Tests for goal-directed page reading (visit)."""

import asyncio

import pytest

from search_agent.corpus.record import Document
from search_agent.corpus.twowiki import read_2wiki
from search_agent.llm import protocol
from search_agent.llm.scripted import ScriptedLLM
from search_agent.search import visit


@pytest.fixture(scope='module')
def docs():
  return {d.doc_id: d for d in read_2wiki()}


def test_extractive_reading_finds_the_goal_in_a_real_page(docs):
  doc = docs['Teutberga']
  reader = visit.PageReader(None, visit.VisitConfig(extract_windows=2))
  reading = asyncio.run(reader.read(doc, 'whose daughter was she'))
  assert reading.method == 'extractive' and reading.fallback is None
  assert 'daughter of Bosonid Boso the Elder' in reading.evidence
  text = visit.format_reading('r1', doc, reading)
  assert text.startswith('[r1] Teutberga\nURL: https://en.wikipedia.org/')
  assert visit.EXTRACTIVE_NOTE in text
  miss = asyncio.run(reader.read(doc, 'zzqx'))
  assert miss.evidence.startswith('(no passage matches the goal')


def test_long_page_gives_non_overlapping_windows(docs):
  longest = max(docs.values(), key=lambda d: len(d.text.split()))
  reader = visit.PageReader(None, visit.VisitConfig(extract_windows=3))
  goal = ' '.join(longest.text.split()[200:206])
  reading = asyncio.run(reader.read(longest, goal))
  windows = reading.evidence.split('\n...\n')
  assert 1 <= len(windows) <= 3
  # Windows are padded by 32 words a side; overlapping ones are merged.
  assert sum(len(w.split()) for w in windows) <= 3 * (64 + 2 * 32)
  assert goal in reading.evidence


def test_a_window_between_two_others_merges_them_all():
  # best_windows for "zebra": [39,103) (3 hits at 100-102), [173,237)
  # (hits 235, 236), [107,171) (hit 170). Padded by 32: [7,135),
  # [141,269), [75,203): the third touches both, so all three become one
  # span [7,269) (262 words); merging it into the first only showed words
  # 141-202 twice.
  words = [f'w{i}' for i in range(500)]
  for i in (100, 101, 102, 235, 236, 170):
    words[i] = 'zebra'
  windows = visit.bm25_windows()(' '.join(words), 'zebra', 3)
  assert windows == [' '.join(words[7:269])]


def test_llm_reading_uses_the_prompt_and_parses_blocks(docs):
  doc = docs['Teutberga']
  llm = ScriptedLLM(
      [
          '<think>hmm</think><evidence>"She was a daughter of Bosonid Boso the'
          ' Elder"</evidence>\n<summary>Teutberga was a Lotharingian queen.'
          '</summary>'
      ]
  )
  reader = visit.PageReader(llm)
  reading = asyncio.run(reader.read(doc, 'her father'))
  assert reading.method == 'llm' and reading.tagged
  assert reading.evidence.startswith('"She was a daughter')
  assert reading.summary == 'Teutberga was a Lotharingian queen.'
  prompt = llm.calls[0][0]['content']
  assert 'her father' in prompt and doc.url in prompt and doc.text in prompt
  text = visit.format_reading('r2', doc, reading)
  assert 'Summary:\nTeutberga was a Lotharingian queen.' in text


def test_long_page_is_shortened_to_head_and_goal_passages():
  filler = ' '.join(f'w{i}' for i in range(400))
  doc = Document(
      doc_id='x', title='X', url='u',
      text=f'{filler} The treaty was signed in Verdun in 843. {filler}',
  )  # fmt: skip
  llm = ScriptedLLM(['just a summary, no tags'])
  config = visit.VisitConfig(max_content_words=200)
  reading = asyncio.run(visit.PageReader(llm, config).read(doc, 'treaty'))
  assert reading.truncated and not reading.tagged
  assert reading.summary == 'just a summary, no tags'
  prompt = llm.calls[0][0]['content']
  assert 'w0 w1' in prompt and 'w99 w100' not in prompt  # 100-word head
  assert 'signed in Verdun in 843.' in prompt  # the goal's passage
  template = visit.PageReader(None).prompt.text
  # {content} becomes 200 page words and one '[...]' separator ({goal},
  # {title}, {url} are one word each here).
  assert len(prompt.split()) == len(template.split()) - 1 + 200 + 1
  assert 'best match the goal were read' in visit.format_reading(
      'r1', doc, reading
  )


def test_model_failure_raises_or_falls_back_as_configured(docs):
  doc = docs['Teutberga']
  failing = lambda: ScriptedLLM([protocol.LLMError('503 from summarizer')])
  with pytest.raises(visit.VisitError, match='503 from summarizer'):
    asyncio.run(visit.PageReader(failing()).read(doc, 'father'))
  with pytest.raises(visit.VisitError, match='empty reply'):
    asyncio.run(visit.PageReader(ScriptedLLM([' '])).read(doc, 'father'))
  config = visit.VisitConfig(on_llm_error='extractive')
  reading = asyncio.run(visit.PageReader(failing(), config).read(doc, 'father'))
  assert reading.method == 'extractive' and '503' in reading.fallback
  text = visit.format_reading('r1', doc, reading)
  assert 'summarizer model failed' in text and '503' in text
  with pytest.raises(ValueError, match='on_llm_error'):
    visit.VisitConfig(on_llm_error='ignore')


def test_parse_reply_handles_missing_close_tags():
  assert visit.parse_reply('<evidence>a</evidence><summary>b') == (
      'a',
      'b',
      True,
  )
  assert visit.parse_reply('<summary>only</summary>') == ('', 'only', True)
