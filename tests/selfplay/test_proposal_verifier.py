"""The strict proposal parser and both Verifiers (the LLM one scripted)."""

import asyncio
import json
import pathlib
import sys

import pytest

from search_agent.llm import protocol
from search_agent.llm import scripted
from search_agent.selfplay import proposal
from search_agent.selfplay import verifier as verifier_lib

sys.path.insert(0, str(pathlib.Path(__file__).parent))
import scripts  # pylint: disable=g-import-not-at-top,wrong-import-position

CHAIN = '<chain>\n<evidence doc="A">a fact</evidence>\n</chain>\n'


def test_parse_good():
  p = proposal.parse_proposal(scripts.GOOD)
  assert [e.doc for e in p.chain] == ['Teutberga', 'Lothair II']
  assert p.answer == 'Lothair I' and p.question.startswith('Who was')


@pytest.mark.parametrize(
    'text, why',
    [
        ('no blocks at all', 'exactly one <chain>'),
        (CHAIN + '<question>q</question>', 'exactly one <answer>'),
        (CHAIN + '<question> </question><answer>a</answer>', 'empty'),
        (CHAIN * 2 + '<question>q</question><answer>a</answer>',
         'found 2'),
        ('<chain>\nA -> B\n</chain><question>q</question><answer>a</answer>',
         'not an <evidence>'),
        ('<chain>\n<evidence doc="">x</evidence>\n</chain>'
         '<question>q</question><answer>a</answer>', 'empty doc'),
    ],
)  # fmt: skip
def test_parse_is_strict(text, why):
  with pytest.raises(proposal.ProposalFormatError, match=why):
    proposal.parse_proposal(text)


def test_programmatic_verifier():
  v = verifier_lib.ProgrammaticVerifier()
  p = proposal.parse_proposal(scripts.GOOD)
  seen = ['[r1] Teutberga ...', '[r2] Lothair II: son of Emperor Lothair I']
  assert asyncio.run(v.valid(p, seen))
  assert not asyncio.run(v.valid(p, seen[:1]))  # answer, 2nd doc unseen
  assert asyncio.run(v.knows('Is Lothair I the father?', 'Lothair I'))
  assert not asyncio.run(v.knows(p.question, p.answer))
  assert asyncio.run(v.correct('q', 'Lothair I', 'lothair i.'))
  assert not asyncio.run(v.correct('q', 'Lothair I', None))
  assert v.manifest['name'] == 'programmatic'


def test_llm_verifier_wiring():
  replies = {
      'Evidence chain': json.dumps({'valid': True, 'reason': 'ok'}),
      'without any tools': '<answer>Charlemagne</answer>',
      "Response's answer: Charlemagne": '{"correct": false}',
      "Response's answer: Lothar": '{"correct": true}',
  }

  def respond(messages):
    (m,) = messages
    return next(r for k, r in replies.items() if k in m['content'])

  llm = scripted.ScriptedLLM(respond, name='frozen-init')
  v = verifier_lib.LLMVerifier(llm)
  p = proposal.parse_proposal(scripts.GOOD)
  assert asyncio.run(v.valid(p, ['obs']))
  assert 'Lothair II' in llm.calls[0][0]['content']  # chain rendered
  assert not asyncio.run(v.knows(p.question, p.answer))  # wrong guess
  assert asyncio.run(v.correct('q', 'Lothair I', 'Lothair I'))  # exact
  n = len(llm.calls)
  assert asyncio.run(v.correct('q', 'Lothair I', 'Lothar'))
  assert len(llm.calls) == n + 1
  assert v.manifest == {'name': 'llm', 'model': 'frozen-init'}
  bad = verifier_lib.LLMVerifier(scripted.ScriptedLLM(lambda m: 'yes'))
  with pytest.raises(verifier_lib.VerifierError, match="'valid'"):
    asyncio.run(bad.valid(p, []))
  assert issubclass(verifier_lib.VerifierError, protocol.LLMError)
