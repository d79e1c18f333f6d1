"""Iris task synthesis: entity-graph distillation, abstraction, dual checks.

For an evidence graph's answer (answer-anchored seeding: the answer is
fixed, pages describing it are retrieved through the search engine and
joined with the answer page's out-links and the path pages), the
generator distills an entity graph (LLM), keeps the relations connected
to the answer, authors a question over >= k coupled relations (LLM), and
abstracts every non-answer entity into a descriptive reference (LLM). A
programmatic check rejects the abstracted question when any non-answer
entity name (or a used page's title) survives in it. `DualVerifier`
admits a question only when a reference model fails it closed-book in all
n samples and answers it with the evidence supplied, answers compared by
a semantic-matching judge.
"""

import asyncio
import dataclasses
import re

from search_agent.llm import protocol
from search_agent.rewards import judging
from search_agent.rewards.answer_match import exact_match
from search_agent.rewards.answer_match import normalize_answer
from search_agent.synthesis import entities
from search_agent.synthesis import prompting
from search_agent.synthesis import roles
from search_agent.synthesis import templates
from search_agent.synthesis.schema import PageClaim
from search_agent.synthesis.schema import Path
from search_agent.synthesis.schema import Proposal

IRIS_EXTRACTOR = 'iris'  # PageClaim.extractor prefix of a question's steps
_SENTENCE = re.compile(r'[^.!?\n]+[.!?]?')


@dataclasses.dataclass(frozen=True, kw_only=True)
class IrisConfig:
  """Iris config_lib.

  Attributes:
    min_relations: k, coupled relations on the reasoning path.
    closed_book_samples: n, closed-book samples that must all be wrong.
    page_chars: Text budget per page shown to the distiller.
    max_pages: Pages in the seed subgraph.
    retrieve_k: Pages retrieved for the fixed answer.
  """

  min_relations: int = 2
  closed_book_samples: int = 4
  page_chars: int = 1500
  max_pages: int = 8
  retrieve_k: int = 5


def surviving_names(question: str, names) -> list[str]:
  """Non-answer names still present (normalised substring) in `question`."""
  q = f' {normalize_answer(question)} '
  out = []
  for name in names:
    n = normalize_answer(entities.display_name(name))
    if n and f' {n} ' in q:
      out.append(name)
  return sorted(set(out))


def connected_relations(relations, answer: str) -> list[dict[str, str]]:
  """Relations in the answer's connected component (undirected)."""
  key = normalize_answer(answer)
  reach = {key}
  changed = True
  while changed:
    changed = False
    for r in relations:
      s, o = normalize_answer(r['subject']), normalize_answer(r['object'])
      if (s in reach) != (o in reach):
        reach |= {s, o}
        changed = True
  return [r for r in relations if normalize_answer(r['subject']) in reach]


def coupled(path) -> bool:
  """Consecutive steps share an entity (a chain, not loose facts)."""
  for a, b in zip(path, path[1:]):
    ends = {normalize_answer(a['subject']), normalize_answer(a['object'])}
    if not ends & {
        normalize_answer(b['subject']),
        normalize_answer(b['object']),
    }:
      return False
  return True


def passage_for(text: str, *names: str) -> str:
  """The first sentence of `text` naming one of `names` ('' if none)."""
  keys = [f' {normalize_answer(n)} ' for n in names if normalize_answer(n)]
  for m in _SENTENCE.finditer(text):
    sentence = m.group(0).strip()
    if any(k in f' {normalize_answer(sentence)} ' for k in keys):
      return sentence
  return ''


def _check_question(reply) -> None:
  """An authored question: a string question and lists where lists go."""
  if not isinstance(reply.get('question') or '', str):
    raise judging.JudgeReplyError(
        f'question author gave a non-string "question": {reply!r:.120}'
    )
  for key in ('reasoning_path', 'entities'):
    if not isinstance(reply.get(key) or [], list):
      raise judging.JudgeReplyError(
          f'question author: "{key}" must be a list: {reply!r:.120}'
      )


def _check_abstract(reply) -> None:
  if not isinstance(reply.get('question') or '', str) or not isinstance(
      reply.get('references') or {}, dict
  ):
    raise judging.JudgeReplyError(
        'abstraction needs a string "question" and a "references" object:'
        f' {reply!r:.120}'
    )


def _relations(reply) -> list[dict[str, str]]:
  items = reply.get('relations')
  if not isinstance(items, list):
    raise judging.JudgeReplyError(
        f'distiller gave no relations: {reply!r:.120}'
    )
  out = []
  for r in items:
    if isinstance(r, dict) and all(
        isinstance(r.get(k), str) for k in ('subject', 'relation', 'object')
    ):
      out.append({k: r[k] for k in ('subject', 'relation', 'object', 'page')
                  if isinstance(r.get(k), str)})  # fmt: skip
  return out


class IrisGenerator:
  """Distill → author → abstract; rejects carry meta['rejected']."""

  def __init__(self, llm, engine, docs, config: IrisConfig = IrisConfig()):
    self.llm = llm
    self.name = f'iris:{llm.name}'
    self._engine = engine
    self._docs = docs
    self._config = config

  async def _pages(self, graph) -> list[str]:
    """doc_ids of the seed subgraph around the fixed answer."""
    name = entities.display_name(
        self._docs[graph.answer_doc].title if graph.answer_doc else graph.answer
    )
    (hits,) = await asyncio.to_thread(
        self._engine.search, [name], self._config.retrieve_k
    )
    pages = [graph.answer_doc] if graph.answer_doc else []
    pages += list(graph.pages) + [h.doc_id for h in hits]
    if graph.answer_doc:
      pages += list(self._docs[graph.answer_doc].links)
    pages = [p for p in dict.fromkeys(pages) if p in self._docs]
    return pages[: self._config.max_pages]

  async def _distill(self, graph):
    """Seed pages, their titles, and the relations reaching the answer."""
    pages = await self._pages(graph)
    text = '\n\n'.join(
        f'## {self._docs[p].title}\n'
        f'{self._docs[p].text[: self._config.page_chars]}'
        for p in pages
    )
    distilled = await prompting.ask_json(
        self.llm,
        'iris_distill',
        {'answer': graph.answer, 'pages': text},
        check=_relations,
    )
    titles = {self._docs[p].title for p in pages}
    rels = [r for r in _relations(distilled) if r.get('page', '') in titles]
    return pages, titles, connected_relations(rels, graph.answer)

  def _on_graph(self, question: str, path, rels) -> bool:
    """>= k coupled steps, each a relation of the distilled graph."""
    known = {
        (normalize_answer(r['subject']), normalize_answer(r['object']))
        for r in rels
    }
    steps_known = all(
        isinstance(s, dict)
        and (normalize_answer(str(s.get('subject'))),
             normalize_answer(str(s.get('object')))) in known
        for s in path
    )  # fmt: skip
    return (
        bool(question)
        and len(path) >= self._config.min_relations
        and steps_known
        and coupled(path)
    )

  def _non_answer_names(self, graph, authored, rels, titles) -> set[str]:
    names = {str(e) for e in authored.get('entities') or []}
    names |= {r[k] for r in rels for k in ('subject', 'object')}
    names |= titles
    answer_forms = {normalize_answer(graph.answer)}
    if graph.answer_doc:
      title = self._docs[graph.answer_doc].title
      answer_forms.add(normalize_answer(entities.display_name(title)))
    return {
        n
        for n in names
        if normalize_answer(entities.display_name(n)) not in answer_forms
    }

  def _question_path(self, graph, steps, rels, pages) -> Path:
    """The question's own reasoning path, as claims read from seed pages.

    Steps are ordered to end at the answer; each is read from the page its
    distilled relation came from, with the first sentence there naming its
    object (or subject) as passage. The last step's object page is the
    answer page when the answer is one of its ends.
    """
    key = lambda x: normalize_answer(str(x))  # pylint: disable=g-long-lambda
    answer = key(graph.answer)
    ends = lambda st: (key(st.get('subject')), key(st.get('object')))  # pylint: disable=g-long-lambda
    if answer in ends(steps[0]) and answer not in ends(steps[-1]):
      steps = steps[::-1]
    by_title = {self._docs[p].title: p for p in pages}
    by_name = {
        key(entities.display_name(self._docs[p].title)): p for p in pages
    }
    page_of = {
        (key(r['subject']), key(r['object'])): by_title[r['page']]
        for r in rels
        if r.get('page') in by_title
    }
    claims = []
    for i, step in enumerate(steps):
      doc = page_of[ends(step)]
      object_doc = by_name.get(key(step['object']))
      if i == len(steps) - 1 and graph.answer_doc and answer in ends(step):
        object_doc = graph.answer_doc
      claims.append(
          PageClaim(
              subject=doc,
              relation=str(step.get('relation') or ''),
              object=str(step['object']),
              object_doc=object_doc,
              passage=passage_for(
                  self._docs[doc].text, step['object'], step['subject']
              ),
              extractor=f'{IRIS_EXTRACTOR}:{self.llm.name}',
          )
      )
    return Path(claims=tuple(claims))

  async def propose(self, graph, revision, feedback):
    k = self._config.min_relations
    pages, titles, rels = await self._distill(graph)
    base = dict(pages=[self._docs[p].title for p in pages], entity_graph=rels)
    if len(rels) < k:
      return self._reject(graph, revision, 'entity_graph',
                          f'{len(rels)} relations reach the answer', base)  # fmt: skip
    authored = await prompting.ask_json(
        self.llm, 'iris_question',
        {'answer': graph.answer, 'min_relations': k,
         'relations': '\n'.join(
             f'{r["subject"]} | {r["relation"]} | {r["object"]}' for r in rels),
         'feedback': prompting.format_feedback(feedback)},
        seed=revision, check=_check_question,
    )  # fmt: skip
    path = authored.get('reasoning_path') or []
    question = str(authored.get('question') or '').strip()
    if not self._on_graph(question, path, rels):
      return self._reject(graph, revision, 'reasoning_path',
                          f'needs >= {k} coupled relations of the entity'
                          ' graph', dict(base, question=question))  # fmt: skip
    own = self._question_path(graph, path, rels, pages)
    names = self._non_answer_names(graph, authored, rels, titles)
    facts = '\n'.join(
        f'- {n}: ' + '; '.join(f'{r["relation"]} {r["object"]}' for r in rels
                             if r['subject'] == n)
        for n in sorted(names) if n.lower() in question.lower()
    ) or '(none)'  # fmt: skip
    abstracted = await prompting.ask_json(
        self.llm, 'iris_abstract',
        {'question': question, 'answer': graph.answer, 'entities': facts},
        check=_check_abstract,
    )  # fmt: skip
    final = str(abstracted.get('question') or '').strip()
    meta = dict(base, original_question=question, reasoning_path=path,
                references=abstracted.get('references') or {})  # fmt: skip
    left = surviving_names(final, names)
    if not final or left:
      return self._reject(graph, revision, 'abstraction',
                          f'entity names survive abstraction: {left}',
                          dict(meta, abstracted=final), own)  # fmt: skip
    return self._proposal(graph, revision, final, meta, own)

  def _proposal(self, graph, revision, question, meta, path=None) -> Proposal:
    """A proposal over `path`, the question's own (the graph's first path
    only for a rejection made before the question had one)."""
    path = path or graph.paths[0]
    title = self._docs[path.answer_doc].title if path.answer_doc else None
    return Proposal(
        id=roles.proposal_id(graph.id, revision, question or f'rej{revision}'),
        graph=graph.id,
        question=question,
        answer=graph.answer,
        aliases=templates.answer_forms(graph.answer, title),
        path=path,
        generator=self.name,
        revision=revision,
        meta=meta,
    )

  def _reject(self, graph, revision, check, reason, meta, path=None):
    meta = dict(meta, rejected=check, reason=reason)
    shown = meta.get('abstracted') or meta.get('original_question')
    return self._proposal(
        graph, revision, shown or meta.get('question', ''), meta, path
    )


class SemanticJudge:
  """Answer equality: exact match first, then an LLM semantic match."""

  def __init__(self, llm: protocol.LLM):
    self.llm = llm

  async def match(self, question, answer, aliases, prediction) -> bool:
    if not prediction or not prediction.strip():
      return False
    if exact_match(prediction, answer, aliases):
      return True
    reply = await prompting.ask_json(
        self.llm, 'semantic_match',
        {'question': question, 'answer': answer, 'prediction': prediction},
        check=self._check,
    )  # fmt: skip
    return reply['match']

  def _check(self, reply) -> None:
    if not isinstance(reply.get('match'), bool):
      raise judging.JudgeReplyError(
          f'semantic judge {self.llm.name!r} must reply {{"match": bool}}:'
          f' {reply!r:.120}'
      )


_ANSWER_LINE = re.compile(r'Answer:\s*(.+)\s*$', re.I | re.M)


def final_answer(text: str) -> str:
  """The text after the last 'Answer:', else the last line."""
  found = _ANSWER_LINE.findall(text)
  if found:
    return found[-1].strip()
  lines = text.strip().splitlines()
  return lines[-1].strip() if lines else ''


class DualVerifier:
  """Hard closed-book (all n samples wrong) and solvable with evidence."""

  def __init__(self, reference, judge, docs, config: IrisConfig = IrisConfig()):
    self.name = f'dual:{reference.name}'
    self._ref = reference
    self._judge = SemanticJudge(judge)
    self._docs = docs
    self._config = config

  async def verify(self, proposal, graph) -> tuple[bool, str]:
    n = self._config.closed_book_samples
    replies = await asyncio.gather(*(
        prompting.ask_text(self._ref, 'iris_closed_book',
                           {'question': proposal.question},
                           temperature=1.0, seed=i)
        for i in range(n)
    ))  # fmt: skip
    closed = [final_answer(r) for r in replies]
    right = [
        await self._judge.match(proposal.question, proposal.answer,
                                proposal.aliases, a)
        for a in closed
    ]  # fmt: skip
    if any(right):
      return False, f'answered closed-book in {sum(right)} of {n} samples'
    evidence = self._evidence(proposal, graph)
    reply = await prompting.ask_text(
        self._ref, 'iris_with_evidence',
        {'question': proposal.question, 'evidence': evidence},
    )  # fmt: skip
    answer = final_answer(reply)
    if not await self._judge.match(
        proposal.question, proposal.answer, proposal.aliases, answer
    ):
      return False, f'not solved with evidence (answered {answer!r})'
    return True, f'closed-book wrong in {n}/{n}; solved with evidence'

  def _evidence(self, proposal, graph) -> str:
    """The question's own evidence: its steps' passages and pages."""
    del graph  # its other paths are not what the question asks about
    passages = [c.passage for c in proposal.path.claims if c.passage]
    texts = [
        self._docs[d].text[: self._config.page_chars]
        for d in proposal.path.pages if d in self._docs
    ]  # fmt: skip
    return '\n'.join(dict.fromkeys(passages + texts))
