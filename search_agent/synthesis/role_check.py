"""One probe call of every LLM role before the loop (`role_check=True`).

The loop reaches a role only when the stages before it pass: a weak
generator leaves the critic, solver, verifier and claim judge without
work, and a misconfigured endpoint for one of them (wrong URL, model name
or token budget) would only surface hours into a run. The check asks each
built role once, on a real input: the first evidence graph with a
template question (programmatic, so it exists whatever the generator
does), through the same role objects, clients and caches as the loop.

Each probe's outcome ('ok', 'unparsable': no reply parsed after the role's
re-asks, 'failed': the call failed) goes to funnel.json `role_check`; its
result decides nothing (no task comes from it). Its calls are counted in
the roles' counters like the loop's. A 'failed' probe (unreachable
endpoint, HTTP error, budget the server refuses) stops the run before the
loop unless `role_check_fail_fast` is off (`raise_on_failed`); an
unparsable one does not (a weak model is a result, not a misconfiguration).
"""

import asyncio
import dataclasses
from typing import Any

from search_agent.llm import protocol
from search_agent.synthesis import roles as roles_lib


class RoleCheckError(RuntimeError):
  """A role's probe call failed: its endpoint is unreachable or refuses."""


def raise_on_failed(result: dict[str, Any]) -> None:
  """Raises RoleCheckError naming every probe whose call failed."""
  failed = {
      name: p['error']
      for name, p in (result.get('probes') or {}).items()
      if p['outcome'] == 'failed'
  }
  if failed:
    lines = '\n'.join(f'  {k}: {v}' for k, v in failed.items())
    raise RoleCheckError(
        f'role check: {len(failed)} role(s) could not call their model'
        f' before the loop:\n{lines}\nfix the endpoint (base_url, model,'
        ' max_tokens) or set --config.role_check_fail_fast=False'
    )


async def _probe(coro) -> dict[str, Any]:
  try:
    result = await coro
  except protocol.ReplyFormatError as e:
    return {'outcome': 'unparsable', 'error': str(e)[:400]}
  except protocol.LLMError as e:
    return {'outcome': 'failed', 'error': f'{type(e).__name__}: {e}'[:400]}
  return {'outcome': 'ok', 'result': _summary(result)}


def _summary(result: Any) -> Any:
  if dataclasses.is_dataclass(result):
    out = dataclasses.asdict(result)
    out.pop('trajectory', None)
    out.pop('path', None)
    return out
  if isinstance(result, (list, tuple)):
    return [_summary(r) for r in result][:8]
  return result


async def _probe_input(prep):
  template = roles_lib.TemplateGenerator(prep.docs, prep.types)
  for graph in prep.graphs[:16]:
    proposal = await template.propose(graph, 0, ())
    if proposal is not None:
      return graph, proposal
  return None, None


async def check(built: dict[str, Any], extractor, prep) -> dict[str, Any]:
  """Probes every built role once; stage → outcome."""
  graph, proposal = await _probe_input(prep)
  if graph is None:
    return {'skipped': 'no evidence graph with a template question to probe'}
  probes: dict[str, Any] = {}
  if extractor is not None:
    by_id = prep.docs
    doc = by_id[proposal.path.start]
    probes['extractor'] = extractor.page_claims(doc, by_id, lambda name: None)
  generator = built.get('generator')
  if generator is not None and not isinstance(
      generator, roles_lib.TemplateGenerator
  ):
    probes['generator'] = generator.propose(graph, 0, ())
  critic = built.get('critic')
  if critic is not None:
    probes['critic'] = critic.review(proposal, graph)
    attempt = roles_lib.Attempt(answer='(role check)', correct=False, calls=0)
    probes['critic_validity'] = critic.validity(proposal, attempt, 1)
  if built.get('solver') is not None:
    probes['solver'] = built['solver'].solve(proposal)
  if built.get('verifier') is not None:
    probes['verifier'] = built['verifier'].verify(proposal, graph)
  if built.get('claim_selector') is not None:
    probes['claim_selector'] = built['claim_selector'].select(proposal, graph)
  names = list(probes)
  got = await asyncio.gather(*(_probe(probes[n]) for n in names))
  out: dict[str, Any] = {
      'graph': graph.id,
      'question': proposal.question,
      'answer': proposal.answer,
  }
  out['probes'] = dict(zip(names, got))
  return out
