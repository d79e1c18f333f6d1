"""Controller checks against the real corpus, claims and search engine."""

import asyncio
import dataclasses

import pytest

from search_agent.synthesis import patterns
from search_agent.synthesis import roles
from search_agent.synthesis.controller import Controller
from search_agent.synthesis.controller import ControllerConfig
from search_agent.synthesis.schema import PageClaim
from search_agent.synthesis.schema import Path
from search_agent.synthesis.schema import Proposal


@pytest.fixture(scope='module')
def controller(prepared, engine):
  return Controller(prepared.docs, prepared.claims, engine, ControllerConfig())


def _claim(prepared, subject, relation):
  (c,) = [c for c in prepared.claims[subject] if c.relation == relation]
  return c


def _proposal(question, claims, answer=None, aliases=()):
  path = Path(claims=tuple(claims))
  return Proposal(
      id='p', graph='g', question=question, answer=answer or path.answer,
      aliases=tuple(aliases), path=path, generator='test',
  )  # fmt: skip


def test_a_two_hop_template_question_passes(prepared, controller):
  c1 = _claim(prepared, 'The_Tender_Years', 'director')
  c2 = _claim(prepared, 'Harold_D._Schuster', 'date_of_birth')
  p = _proposal('When was the director of the film The Tender Years born?',
                [c1, c2])  # fmt: skip
  (v,) = controller.check_batch([p])
  assert v.passed, v.reason
  assert [x['query'] for x in v.probes][0] == p.question
  assert all(len(x['top']) == 3 for x in v.probes)


def test_answer_page_title_in_question_is_leakage(prepared, controller):
  c = _claim(prepared, 'The_Tender_Years', 'director')
  p = _proposal('Did Harold D. Schuster direct The Tender Years?', [c],
                answer='the director')  # fmt: skip
  (v,) = controller.check_batch([p])
  assert (v.failed, v.passed) == ('leakage', False)
  assert 'Harold D. Schuster' in v.reason


def test_alias_in_question_is_leakage(prepared, controller):
  c = _claim(prepared, 'Frank_Tuttle', 'date_of_birth')
  p = _proposal('Was Frank Tuttle born on 6 August 1892?', [c],
                aliases=('6 August 1892',))  # fmt: skip
  (v,) = controller.check_batch([p])
  assert v.failed == 'leakage'


def test_passage_not_on_the_page_fails_evidence(prepared, controller):
  c = _claim(prepared, 'Frank_Tuttle', 'date_of_birth')
  fake = dataclasses.replace(c, passage='Frank Tuttle was born on the Moon.')
  (v,) = controller.check_batch(
      [_proposal('When was Frank Tuttle born?', [fake])]
  )
  assert v.failed == 'evidence'
  ghost = dataclasses.replace(c, subject='No_Such_Page')
  (v,) = controller.check_batch([_proposal('When was he born?', [ghost])])
  assert v.failed == 'evidence'


def test_ambiguous_start_fails_uniqueness(prepared, controller, by_title):
  # Two pages share the mention key "Seven Women" (film titles).
  seven = [d for t, d in by_title.items() if t.startswith('Seven Women')]
  assert len(seven) >= 2
  doc = next(d for d in seven if prepared.claims[d.doc_id])
  c = prepared.claims[doc.doc_id][0]
  p = _proposal(f'What about the film Seven Women ({c.relation})?', [c])
  (v,) = controller.check_batch([p])
  assert v.failed == 'uniqueness'


def test_probe_retrieving_the_answer_page_is_a_shortcut(prepared, controller):
  # The question quotes the answer page's own lead, so the probe finds it.
  c = _claim(prepared, 'The_Tender_Years', 'director')
  lead = patterns.sentences(prepared.docs['Harold_D._Schuster'].text)[0]
  lead = lead.replace('Harold D. Schuster', 'this man')
  p = _proposal(f'Who directed The Tender Years, {lead}?', [c])
  (v,) = controller.check_batch([p])
  assert v.failed == 'shortcut', v
  assert 'Harold_D._Schuster' in v.reason


def test_question_naming_the_page_its_answer_is_read_from_is_a_shortcut(
    prepared, controller
):
  # The seed's rule: the probe retrieves the page the answer is read from.
  c = _claim(prepared, 'Frank_Tuttle', 'date_of_birth')
  p = _proposal('When was Frank Tuttle born?', [c])
  (v,) = controller.check_batch([p])
  assert v.failed == 'shortcut' and 'Frank_Tuttle' in v.reason, v


def test_keep_lookups_keeps_a_one_hop_lookup_and_no_other_shortcut(
    prepared, engine
):
  """keep_lookups (the tiny main job's) lets the named start appear in the
  probes; a probe finding the answer page still sends the question back."""
  keep = Controller(
      prepared.docs,
      prepared.claims,
      engine,
      ControllerConfig(keep_lookups=True),
  )
  c = _claim(prepared, 'Frank_Tuttle', 'date_of_birth')
  (v,) = keep.check_batch([_proposal('When was Frank Tuttle born?', [c])])
  assert v.passed, v
  d = _claim(prepared, 'The_Tender_Years', 'director')
  lead = patterns.sentences(prepared.docs['Harold_D._Schuster'].text)[0]
  lead = lead.replace('Harold D. Schuster', 'this man')
  (v,) = keep.check_batch(
      [_proposal(f'Who directed The Tender Years, {lead}?', [d])]
  )
  assert v.failed == 'shortcut' and 'Harold_D._Schuster' in v.reason, v


def test_a_probe_that_does_not_parse_fails_the_check(prepared, controller):
  c1 = _claim(prepared, 'The_Tender_Years', 'director')
  c2 = _claim(prepared, 'Harold_D._Schuster', 'date_of_birth')
  long = 'When was the director of the film The Tender Years born' + (
      ' indeed' * 400
  )
  (v,) = controller.check_batch([_proposal(long + '?', [c1, c2])])
  assert v.failed == 'shortcut' and 'could not run' in v.reason, v
  assert 'error' in v.probes[0]


def test_template_questions_never_contain_their_answer(prepared, controller):
  gen = roles.TemplateGenerator(prepared.docs, prepared.types)
  props = [asyncio.run(gen.propose(g, 0, ())) for g in prepared.graphs[:400]]
  verdicts = controller.check_batch(props)
  # Most 1-hop template questions name the page their answer is read from,
  # a shortcut the probes catch; the multi-hop ones pass.
  assert sum(v.passed for v in verdicts) > 30
  for p, v in zip(props, verdicts):
    if v.passed:
      assert p.answer.lower() not in p.question.lower()
