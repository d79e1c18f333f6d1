"""The LLM roles of the open recipe: extractor, generator, critic, verifier.

Each calls its prompt file under prompts/ through `llm/` (any LLM: an
OpenAI-compatible endpoint, the in-process sampler, a scripted client for
wiring tests); `role_builders.LLMRoles` builds them from the job's
`llm.<role>` sections, each behind the content-addressed cache
(`cache.CachedLLM`).
"""

import asyncio
import re

from search_agent.agent import task as task_lib
from search_agent.corpus.record import Document
from search_agent.llm import protocol
from search_agent.rewards import claims as claims_lib
from search_agent.rewards import judging
from search_agent.synthesis import entities
from search_agent.synthesis import patterns
from search_agent.synthesis import prompting
from search_agent.synthesis import roles
from search_agent.synthesis import templates
from search_agent.synthesis.schema import EvidenceGraph
from search_agent.synthesis.schema import PageClaim
from search_agent.synthesis.schema import Proposal


def _snake(relation: str) -> str:
  return '_'.join(re.findall(r'[a-z0-9]+', relation.lower()))


class LLMClaimExtractor:
  """Claims from the passages around each link, checked against them.

  A claim is kept when its passage number is valid, its object is written
  in that passage (or is a linked page's title), and its subject is the
  page or a linked page. Claims are deduplicated per page by (relation,
  object); the object is resolved to a page by title.

  A page whose extraction fails (the call failed, or no reply parsed after
  the role's re-asks) gets no LLM claims; with `fallback='pattern'` it gets
  the sentence-pattern claims instead. Either way it is counted in
  `report()` (pages, failed pages, fallback pages, the first errors).
  """

  def __init__(
      self,
      llm: protocol.LLM,
      max_concurrency: int = 8,
      fallback: str = 'none',
  ):
    if fallback not in ('none', 'pattern'):
      raise ValueError(
          f"extractor fallback must be 'none' or 'pattern': {fallback!r}"
      )
    self.llm = llm
    self.fallback = fallback
    self._max_concurrency = max_concurrency
    self.pages = 0
    self.failed_pages = 0
    self.fallback_pages = 0
    self.errors: list[str] = []

  def report(self) -> dict:
    """What extraction did, for funnel.json."""
    return {
        'pages': self.pages,
        'failed_pages': self.failed_pages,
        'fallback': self.fallback,
        'fallback_pages': self.fallback_pages,
        'first_errors': self.errors[:5],
    }

  async def page_claims(
      self, doc: Document, docs: dict[str, Document], resolve, sem=None
  ) -> list[PageClaim]:
    """The page's LLM claims (raises LLMError when extraction failed)."""
    sem = sem or asyncio.Semaphore(1)
    linked = [docs[t] for t in doc.links if t in docs]
    names = {entities.display_name(d.title): d.doc_id for d in linked}
    passages = [
        s for s in patterns.sentences(doc.text)
        if any(n in s for n in names)
    ] or patterns.sentences(doc.text)[:3]  # fmt: skip
    if not passages:
      return []
    fields = {
        'title': doc.title,
        'description': (patterns.sentences(doc.text) or [''])[0],
        'linked': '\n'.join(
            f'- {d.title}: {(patterns.sentences(d.text) or [""])[0][:200]}'
            for d in linked
        ) or '(none)',
        'passages': '\n'.join(f'{i}. {p}' for i, p in enumerate(passages, 1)),
    }  # fmt: skip

    def check(reply):
      if not isinstance(reply.get('claims'), list):
        raise judging.JudgeReplyError(
            f'extractor {self.llm.name!r} must reply {{"claims": [...]}}, got'
            f' {reply!r:.120}'
        )

    async with sem:
      reply = await prompting.ask_json(
          self.llm, 'claim_extract', fields, check=check
      )
    items = reply['claims']
    out, seen = [], set()
    subject_names = {entities.display_name(doc.title), doc.title}
    for x in items:
      try:
        subject, rel = str(x['subject']), _snake(str(x['relation']))
        obj, idx = str(x['object']).strip(), int(x['passage'])
      except (KeyError, TypeError, ValueError):
        continue
      if not 1 <= idx <= len(passages) or not rel or not obj:
        continue
      passage = passages[idx - 1]
      if subject not in subject_names or (
          obj not in passage and obj not in names
      ):
        continue
      if (rel, obj) in seen:
        continue
      seen.add((rel, obj))
      out.append(
          PageClaim(
              subject=doc.doc_id,
              relation=rel,
              object=obj,
              object_doc=names.get(obj) or resolve(obj),
              passage=passage,
              extractor=f'llm:{self.llm.name}',
          )
      )
    return out

  def __call__(self, docs: list[Document], title_index) -> dict[str, list]:
    by_id = {d.doc_id: d for d in docs}
    resolver = patterns.Extractor(by_id, title_index)

    async def one(doc, sem):
      try:
        return await self.page_claims(doc, by_id, resolver.resolve, sem)
      except protocol.LLMError as e:
        self.failed_pages += 1
        self.errors.append(f'{doc.doc_id}: {e}'[:300])
        if self.fallback == 'pattern':
          self.fallback_pages += 1
          return resolver.extract(doc)
        return []

    async def run_all():
      sem = asyncio.Semaphore(self._max_concurrency)
      got = await asyncio.gather(*(one(d, sem) for d in docs))
      return {d.doc_id: cs for d, cs in zip(docs, got)}

    self.pages += len(docs)
    return asyncio.run(run_all())


class LLMGenerator:
  """Questions from an evidence graph's paths, revised with feedback."""

  def __init__(self, llm: protocol.LLM, docs: dict[str, Document]):
    self.llm = llm
    self.name = f'llm:{llm.name}'
    self._titles = {k: d.title for k, d in docs.items()}

  def _check(self, reply) -> None:
    question = reply.get('question')
    if not isinstance(question, str) or not question.strip():
      raise judging.JudgeReplyError(
          f'generator {self.llm.name!r} gave no "question": {reply!r:.120}'
      )
    for key in ('paths_used', 'starting_entities'):
      if not isinstance(reply.get(key) or [], list):
        raise judging.JudgeReplyError(
            f'generator {self.llm.name!r}: "{key}" must be a list, got'
            f' {reply.get(key)!r:.80}'
        )

  async def propose(self, graph, revision, feedback):
    reply = await prompting.ask_json(
        self.llm,
        'generate',
        {
            'answer': graph.answer,
            'evidence': prompting.format_graph(graph, self._titles),
            'feedback': prompting.format_feedback(feedback),
        },
        seed=revision,
        check=self._check,
    )
    question = reply['question']
    used = [
        i for i in reply.get('paths_used') or [1]
        if isinstance(i, int) and 1 <= i <= len(graph.paths)
    ] or [1]  # fmt: skip
    path = graph.paths[used[0] - 1]
    answer_title = (
        self._titles.get(path.answer_doc) if path.answer_doc else None
    )
    return Proposal(
        id=roles.proposal_id(graph.id, revision, question),
        graph=graph.id,
        question=question.strip(),
        answer=graph.answer,
        aliases=templates.answer_forms(graph.answer, answer_title),
        path=path,
        generator=self.name,
        revision=revision,
        meta={
            'paths_used': used,
            'starting_entities': list(reply.get('starting_entities') or []),
        },
    )


class LLMCritic:
  """Five-dimension review; validity reviews of long failed attempts."""

  def __init__(self, llm: protocol.LLM, docs: dict[str, Document]):
    self.llm = llm
    self.name = f'llm:{llm.name}'
    self._titles = {k: d.title for k, d in docs.items()}

  def _check(self, reply) -> None:
    ratings = reply.get('ratings')
    if not isinstance(ratings, dict) or set(roles.CRITIC_DIMENSIONS) - set(
        ratings
    ):
      raise judging.JudgeReplyError(
          f'critic {self.llm.name!r} must rate {roles.CRITIC_DIMENSIONS},'
          f' got {reply!r:.160}'
      )
    try:
      float(reply.get('score') or 0.0)
    except (TypeError, ValueError) as e:
      raise judging.JudgeReplyError(
          f'critic {self.llm.name!r} score is not a number: {reply!r:.160}'
      ) from e

  async def review(self, proposal: Proposal, graph: EvidenceGraph):
    reply = await prompting.ask_json(
        self.llm,
        'critic',
        {
            'question': proposal.question,
            'answer': proposal.answer,
            'evidence': prompting.format_graph(graph, self._titles),
        },
        check=self._check,
    )
    ratings = reply['ratings']
    return roles.Review(
        ratings={k: str(ratings[k]).lower() for k in roles.CRITIC_DIMENSIONS},
        diagnosis=str(reply.get('diagnosis', '')),
        score=float(reply.get('score') or 0.0),
    )

  def _check_validity(self, reply) -> None:
    if not isinstance(reply.get('valid'), bool):
      raise judging.JudgeReplyError(
          f'critic {self.llm.name!r} validity review needs "valid": true|false,'
          f' got {reply!r:.160}'
      )

  async def validity(self, proposal, attempt, samples):
    graph_text = prompting.format_path(1, proposal.path, self._titles)
    fields = {
        'question': proposal.question,
        'answer': proposal.answer,
        'evidence': graph_text,
        'attempt_answer': attempt.answer or '',
        'calls': attempt.calls,
        'actions': '\n'.join(attempt.recent_actions) or '(none)',
    }
    replies = await asyncio.gather(*(
        prompting.ask_json(
            self.llm, 'validity', fields, temperature=1.0, seed=i,
            check=self._check_validity,
        )
        for i in range(samples)
    ))  # fmt: skip
    return [
        roles.Validity(
            valid=r['valid'],
            confidence=str(r.get('confidence', 'low')).lower(),
            reason=str(r.get('reason', '')),
        )
        for r in replies
    ]


class LLMVerifier:
  """RL-pool verification: constraints vs evidence, alternative answers.

  Fails a proposal when any constraint is unsupported by the evidence, or
  when the judge finds another valid answer among the results of its
  alternative-answer queries run through the real search engine.
  """

  def __init__(self, llm, engine, docs, k: int = 5):
    self.llm = llm
    self.name = f'llm:{llm.name}'
    self._engine = engine
    self._titles = {key: d.title for key, d in docs.items()}
    self._k = k

  def _check(self, reply) -> None:
    constraints = reply.get('constraints')
    if (
        not isinstance(constraints, list)
        or not constraints
        or not all(isinstance(c, dict) for c in constraints)
    ):
      raise judging.JudgeReplyError(
          f'verifier {self.llm.name!r} listed no constraints: {reply!r:.120}'
      )

  async def verify(self, proposal, graph):
    evidence = prompting.format_graph(graph, self._titles)
    reply = await prompting.ask_json(
        self.llm,
        'verify_constraints',
        {'question': proposal.question, 'answer': proposal.answer,
         'evidence': evidence},
        check=self._check,
    )  # fmt: skip
    constraints = reply['constraints']
    bad = [
        c.get('text', '?')
        for c in constraints
        if c.get('supported') is not True
    ]
    if bad:
      return False, f'unsupported constraints: {bad}'
    queries = [
        q for q in reply.get('alternative_queries') or [] if isinstance(q, str)
    ]
    if not queries:
      return True, 'all constraints supported; no alternative queries'
    hits = await asyncio.to_thread(
        self._engine.search_or_errors, queries[:3], self._k
    )
    results = '\n'.join(
        f'- {h.title}: {h.snippet}'
        for hs in hits if not isinstance(hs, Exception) for h in hs
    ) or '(no results)'  # fmt: skip
    alt = await prompting.ask_json(
        self.llm,
        'verify_alternatives',
        {'question': proposal.question, 'answer': proposal.answer,
         'results': results},
    )  # fmt: skip
    if alt.get('alternative_answer'):
      return (
          False,
          f'ambiguous: {alt["alternative_answer"]!r} ({alt.get("reason", "")})',
      )
    return True, 'all constraints supported; no alternative answer found'


class JudgeClaimSelector:
  """Required claims by rewards/claims.py (5 sampled calls + refinement)."""

  def __init__(self, judge: protocol.LLM, docs: dict[str, Document],
               voting: claims_lib.ClaimVoting = claims_lib.ClaimVoting()):  # fmt: skip
    self.judge = judge
    self._titles = {k: d.title for k, d in docs.items()}
    self._voting = voting

  async def select(self, proposal, graph) -> tuple[task_lib.Claim, ...]:
    candidates: list[task_lib.Claim] = []
    for p in (proposal.path,) + tuple(graph.paths):
      candidates += [c.as_task_claim(self._titles[c.subject]) for c in p.claims]
    task = task_lib.Task(
        id=proposal.id, question=proposal.question, answer=proposal.answer
    )
    return await claims_lib.select_required_claims(
        self.judge, task, candidates, self._voting
    )
