"""The programmatic teacher through the real ReAct loop, tools and index."""

import asyncio
import dataclasses

import pytest

from search_agent.agent import react
from search_agent.agent import task as task_lib
from search_agent.agent import teacher as teacher_lib
from search_agent.chat import renderer
from search_agent.chat import tokenizer as tokenizer_lib
from search_agent.corpus import twowiki
from search_agent.corpus.sources import CorpusSpec
from search_agent.search import engine as engine_lib
from search_agent.search import tools as tools_lib
from search_agent.search.tantivy_backend import tantivy_engine
from search_agent.search.tantivy_build import build_tantivy_index


@pytest.fixture(scope='module')
def index_path(tmp_path_factory):
  path = tmp_path_factory.mktemp('teacher_index') / 'index'
  build_tantivy_index(CorpusSpec(max_docs=500), path)
  return path


@pytest.fixture(scope='module')
def engine(index_path):
  eng = tantivy_engine(index_path)
  yield eng
  eng.close()


@pytest.fixture(scope='module')
def short_snippets(index_path):
  """The same index with 8-word snippets: a page's search result shows
  less than the page."""
  eng = tantivy_engine(index_path, engine_lib.snippet_words_config(8))
  yield eng
  eng.close()


def _run(engine, task, config, seed, tools=('search',)):
  toolbox = tools_lib.Toolbox(
      engine, config=tools_lib.ToolboxConfig(tools=tools, top_k=3)
  )
  llm = teacher_lib.ProgrammaticTeacher(task, config, seed=seed, tools=tools)
  agent = react.ReActAgent(llm, react.AgentConfig(temperature=0.0))
  return asyncio.run(
      agent.run(
          traj_id=f'{task.id}#{seed}',
          task_id=task.id,
          question=task.question,
          system_prompt='Search, then answer.',
          toolbox=toolbox,
      )
  )


TEUTBERGA = task_lib.Task(
    id='t1',
    question='Who was Teutberga married to?',
    answer='Lothair II',
    evidence=('Teutberga',),
)


def test_follows_the_evidence_and_answers_from_what_it_read(engine):
  traj = _run(engine, TEUTBERGA, teacher_lib.TeacherConfig(recovery_rate=0), 0)
  assert traj.status == 'answered'
  assert traj.final_answer == 'Lothair II'
  [call] = traj.tool_calls
  assert call.name == 'search'
  assert call.arguments['query'][0].strip('"') == 'Teutberga'
  tool_turns = [m for m in traj.messages if m.role == 'tool']
  assert '[r1] Teutberga' in tool_turns[0].content


def test_recovers_from_a_broken_call_and_the_broken_turn_has_no_loss(
    engine, tmp_path
):
  config = teacher_lib.TeacherConfig(recovery_rate=1.0)
  traj = _run(engine, TEUTBERGA, config, 0)
  replies = [m for m in traj.messages if m.role == 'assistant']
  assert replies[0].invalid and not replies[0].trainable
  assert [m.name for m in traj.messages if m.role == 'tool'][0] == 'error'
  assert replies[1].tool_calls[0].name == 'search' and not replies[1].invalid
  assert traj.final_answer == 'Lothair II'
  tok = tokenizer_lib.train_tiny_tokenizer(
      twowiki.read_2wiki()[:300], tmp_path / 'tok', 1024
  )
  rendered = renderer.render(traj.messages, tok)
  text = tok.decode(
      [t for t, m in zip(rendered.token_ids, rendered.loss_mask) if m]
  )
  assert replies[0].content not in text  # the broken call carries no loss
  assert replies[1].content in text


def test_two_hop_path_searches_each_page_in_order(engine):
  task = task_lib.Task(
      id='t2',
      question='Who was the wife of the father of Bertha?',
      answer='Teutberga',
      meta={
          'evidence_path': [
              {'title': 'Bertha, daughter of Lothair II'},
              {'title': 'Lothair II'},
          ]
      },
  )
  traj = _run(engine, task, teacher_lib.TeacherConfig(recovery_rate=0), 1)
  queries = [c.arguments['query'][0].strip('"') for c in traj.tool_calls]
  assert queries == ['Bertha, daughter of Lothair II', 'Lothair II']
  assert traj.final_answer == 'Teutberga'


def test_visit_reads_the_page_it_found(engine):
  config = teacher_lib.TeacherConfig(recovery_rate=0, visit=True)
  traj = _run(engine, TEUTBERGA, config, 0, tools=('search', 'visit'))
  assert [c.name for c in traj.tool_calls] == ['search', 'visit']
  assert traj.tool_calls[1].arguments['ref_id'] == ['r1']
  assert traj.final_answer == 'Lothair II'


def test_visit_when_missing_reads_only_a_page_whose_snippet_lacks_the_answer(
    short_snippets,
):
  config = teacher_lib.TeacherConfig(
      recovery_rate=0, visit=True, visit_when='missing'
  )
  tools = ('search', 'visit')
  # The 8-word snippet holds the date of death, not the brother.
  died = task_lib.Task(
      id='t5',
      question='When did Teutberga die?',
      answer='11 November 875',
      evidence=('Teutberga',),
  )
  traj = _run(short_snippets, died, config, 0, tools=tools)
  assert '11 November 875' in traj.messages[3].content  # the search result
  assert [c.name for c in traj.tool_calls] == ['search']
  assert traj.final_answer == '11 November 875'
  brother = dataclasses.replace(
      died,
      id='t6',
      question='Who was the brother of Teutberga?',
      answer='Hucbert',
  )
  traj = _run(short_snippets, brother, config, 0, tools=tools)
  assert 'Hucbert' not in traj.messages[3].content
  assert [c.name for c in traj.tool_calls] == ['search', 'visit']
  assert traj.tool_calls[1].arguments == {
      'ref_id': ['r1'],
      'goal': 'Who was the brother of Teutberga?',
  }
  assert traj.final_answer == 'Hucbert'
  # 'always' reads the page whether or not the result showed the answer.
  always = dataclasses.replace(config, visit_when='always')
  traj = _run(short_snippets, died, always, 0, tools=tools)
  assert [c.name for c in traj.tool_calls] == ['search', 'visit']


def test_visit_when_missing_on_an_earlier_page_looks_for_the_next_title(
    short_snippets,
):
  config = teacher_lib.TeacherConfig(
      recovery_rate=0, visit=True, visit_when='missing'
  )
  # The first page's 8-word snippet does not name the second page.
  task = task_lib.Task(
      id='t7',
      question='Who was the brother of the wife of Lothair II?',
      answer='Hucbert',
      meta={'evidence_path': [{'title': 'Teutberga'}, {'title': 'Hucbert'}]},
  )
  traj = _run(short_snippets, task, config, 0, tools=('search', 'visit'))
  names = [c.name for c in traj.tool_calls]
  assert names[:2] == ['search', 'visit']
  assert traj.tool_calls[2].arguments['query'][0].strip('"') == 'Hucbert'


def test_an_unknown_visit_when_is_refused():
  with pytest.raises(ValueError, match='visit_when'):
    teacher_lib.TeacherConfig(visit_when='sometimes')


def test_says_so_when_the_answer_is_not_in_what_it_read(engine):
  task = task_lib.Task(
      id='t3', question='Q?', answer='Nowhere Answer', evidence=('Teutberga',)
  )
  traj = _run(engine, task, teacher_lib.TeacherConfig(recovery_rate=0), 0)
  assert traj.final_answer == teacher_lib.NOT_FOUND


def test_a_task_without_evidence_is_refused():
  task = task_lib.Task(id='t4', question='Q?', answer='A')
  with pytest.raises(ValueError, match='no evidence path'):
    teacher_lib.ProgrammaticTeacher(task)


def _contains(seq, sub):
  return any(seq[i : i + len(sub)] == sub for i in range(len(seq)))


@pytest.mark.parametrize('quote_rate', [0.0, 1.0])
def test_value_space_lets_the_name_keep_its_question_tokens(
    engine, tmp_path, quote_rate
):
  tok = tokenizer_lib.train_tiny_tokenizer(
      twowiki.read_2wiki()[:300], tmp_path / 'tok', 1024
  )
  name = tok.encode(' Teutberga')  # as the question spells it
  answer = tok.encode(' Lothair II')  # as the observation spells it
  assert _contains(tok.encode(TEUTBERGA.question), name)
  seen = {}
  for value_space in (False, True):
    config = teacher_lib.TeacherConfig(
        recovery_rate=0, quote_rate=quote_rate, value_space=value_space
    )
    traj = _run(engine, TEUTBERGA, config, 0)
    # The spaced query still finds the page and the answer reads the same.
    assert traj.final_answer == 'Lothair II'
    [call] = traj.tool_calls
    assert call.arguments['query'][0].strip('" ') == 'Teutberga'
    replies = [m.content for m in traj.messages if m.role == 'assistant']
    seen[value_space] = [tok.encode(r) for r in replies]
  assert not _contains(seen[False][0], name)  # '"'+'Te'..., not ' Te'...
  assert not _contains(seen[False][1], answer)
  assert _contains(seen[True][0], name)
  assert _contains(seen[True][1], answer)


def test_name_relation_writes_what_the_question_asks_before_the_answer(
    engine,
):
  task = task_lib.Task(
      id='t5',
      question=TEUTBERGA.question,
      answer='Lothair II',
      evidence=('Teutberga',),
      meta={'relations': ['director', 'spouse']},
  )
  for think in (False, True):
    config = teacher_lib.TeacherConfig(
        recovery_rate=0, name_relation=True, think=think
    )
    traj = _run(engine, task, config, 0)
    assert traj.final_answer == 'Lothair II'  # the think is not the answer
    last = [m for m in traj.messages if m.role == 'assistant'][-1]
    # The loop keeps the think as the turn's reasoning (rendered, with loss).
    assert last.reasoning == 'The answer is the spouse.'
    assert last.content == '<answer>Lothair II</answer>'
    first = [m for m in traj.messages if m.role == 'assistant'][0]
    assert bool(first.reasoning) == think  # calls: as before
  # Off, or a task without relations: no line before the answer.
  for config, t in (
      (teacher_lib.TeacherConfig(recovery_rate=0), task),
      (
          teacher_lib.TeacherConfig(recovery_rate=0, name_relation=True),
          TEUTBERGA,
      ),
  ):
    last = [m for m in _run(engine, t, config, 0).messages][-1]
    assert not last.reasoning and last.content.startswith('<answer>')


def test_question_query_searches_the_question_then_the_title(engine):
  config = teacher_lib.TeacherConfig(recovery_rate=0, question_query=True)
  traj = _run(engine, TEUTBERGA, config, 0)
  [call] = traj.tool_calls  # the question found the page: no retry
  assert call.arguments['query'] == [TEUTBERGA.question]
  assert traj.final_answer == 'Lothair II'
  # A question whose words miss the page: the title is searched next.
  vague = task_lib.Task(
      id='t6',
      question='Who is this?',
      answer='Lothair II',
      evidence=('Teutberga',),
  )
  traj = _run(engine, vague, config, 0)
  queries = [c.arguments['query'][0] for c in traj.tool_calls]
  assert queries == ['Who is this?', 'Teutberga']
  assert traj.final_answer == 'Lothair II'
  # Off: the title first, as before; on with value_space: a space before.
  off = _run(engine, TEUTBERGA, teacher_lib.TeacherConfig(recovery_rate=0), 0)
  assert off.tool_calls[0].arguments['query'][0].strip('"') == 'Teutberga'
  spaced = teacher_lib.TeacherConfig(
      recovery_rate=0, question_query=True, value_space=True
  )
  traj = _run(engine, TEUTBERGA, spaced, 0)
  assert traj.tool_calls[0].arguments['query'] == [' ' + TEUTBERGA.question]
