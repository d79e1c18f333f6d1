"""Config of `python -m search_agent.synthesis.run`.

Variants (`--config=tpu_configs/synthesis.py:<variant>`):
  tiny     the bundled 2Wiki corpus, every role programmatic: claims from
           sentence patterns, template questions over 1–3 hop paths, the
           real controller (evidence, leakage, uniqueness, shortcut probes
           through the real index); no critic, solver or LLM. >= 500 tasks
           in well under a minute of work on 2 cores. One question
           phrasing per relation is held out of training; the held-out
           tasks are asked again in it (tasks.heldout_phrasings.jsonl).
  recipe   the open recipe's loop: LLM claim extractor, generator and
           critic, agent solver (accept correct after >= 50 search + visit
           calls), required claims chosen by the judge.
  rl_pool  recipe + the RL pool's extra verification of each accepted task.
  iris     Iris: answer-anchored entity graphs, abstraction operator with
           the no-surviving-name check, dual verification (closed-book all
           wrong over n samples, correct with evidence) by a semantic judge.
  <variant>,iris
           Iris mode on another variant's sizes (tiny,iris,served: Iris's
           generator, reference model and judge on the served tiny model).
  <variant>,served
           every LLM role without an endpoint of its own on one served
           model: `served.base_url` (any OpenAI-compatible API root), or a
           `python -m search_agent.serving` this run starts and stops
           (`served.config`). `tiny,served` turns every role of the recipe
           (and the RL pool's verifier) into an LLM role on a random-init
           tiny model served on CPU, over a few graphs, and probes each role
           once before the loop (`role_check`): the wiring check of
           docs/llm-roles.md. On another variant, `,served` serves the
           same tiny model with the same 48-token cap (a real endpoint:
           served.base_url, served.model, served.max_tokens=0).
LLM roles read `llm.<role>` (llm.registry fields: kind openai|scripted,
openai.base_url/model, ..., and the role settings max_tokens, stop,
parse_retries); responses are cached under WORKDIR/llm_cache. One role on
its own endpoint: --config.llm.<role>.kind=openai
--config.llm.<role>.openai.base_url=http://HOST:PORT/v1
--config.llm.<role>.openai.model=NAME.
"""

import ml_collections


def _llm(kind: str = '') -> ml_collections.ConfigDict:
  """One role's LLM, as search_agent.llm.registry.from_dict reads it."""
  c = ml_collections.ConfigDict()
  # '' (unused) | 'openai' (any OpenAI-compatible endpoint) | 'scripted'.
  c.kind = kind
  c.name = ''
  c.openai = ml_collections.ConfigDict(
      dict(
          base_url='',  # e.g. http://127.0.0.1:8000/v1
          model='',
          api_key_env='',  # env var holding the key ('' = no auth)
          timeout_s=600.0,
          max_retries=4,
          max_concurrency=16,
      )
  )
  c.script = ('',)
  # Role settings (llm.role_client.RoleLLM): a cap on one call's tokens
  # (0 = as the role asks), stop strings, re-asks of an unparsable reply.
  c.max_tokens = 0
  c.stop = ('',)
  c.parse_retries = 2
  return c


def _served() -> ml_collections.ConfigDict:
  """One served model for every LLM role (synthesis/served.py)."""
  return ml_collections.ConfigDict(
      dict(
          enabled=False,
          # An OpenAI-compatible API root (http://HOST:PORT/v1); '' = start
          # `python -m search_agent.serving --config=<config>` here.
          base_url='',
          model='',  # the `model` sent (the tiny server reports 'tiny')
          api_key_env='',
          config='tpu_configs/serve.py:tiny',
          overrides=('',),  # 'KEY=VALUE' serve config overrides
          env=('',),  # 'NAME=value' environment of the started server
          start_timeout_s=600.0,
          # Client settings every served role gets.
          timeout_s=600.0,
          max_retries=4,
          backoff_s=1.0,
          max_concurrency=16,
          max_tokens=0,  # cap of a served role's call (0 = as it asks)
      )
  )


def _served_tiny_model(c: ml_collections.ConfigDict) -> None:
  """`served` on: the tiny model served here, each call within its budget.

  For a real endpoint: --config.served.base_url=http://HOST:PORT/v1
  --config.served.model=NAME --config.served.max_tokens=0 (or the budget
  the endpoint allows).
  """
  c.role_check = True
  c.served.update(
      enabled=True,
      model='tiny',
      overrides=(
          'engine.slots=4', 'engine.max_context=4096',
          'engine.max_new_tokens=64', 'engine.max_chunk=512',
          'engine.max_queue=256',
      ),
      timeout_s=120.0,
      max_retries=2,
      backoff_s=0.5,
      max_concurrency=4,
      max_tokens=48,
  )  # fmt: skip


def _tiny_served(c: ml_collections.ConfigDict) -> None:
  """Every recipe role an LLM role on a tiny served model, a few graphs."""
  c.roles = ml_collections.ConfigDict(
      dict(
          extractor='llm',
          generator='llm',
          critic='llm',
          solver='agent',
          verifier='llm',
          claim_selection='judge',
      )
  )
  c.corpus.max_docs = 3000
  c.anchor.update(num_seeds=2, max_nodes=4)
  c.max_graphs = 2
  c.loop.update(
      max_revisions=2, max_solver_attempts=1, hard_reviews=1,
      max_concurrency=4,
  )  # fmt: skip
  c.extractor_fallback = 'pattern'
  c.progress = False


def get_config(arg: str | None = None) -> ml_collections.ConfigDict:
  """Returns the config of one variant (default: recipe).

  `arg` is a variant, optionally followed by ',served'.
  """
  parts = [p.strip() for p in (arg or 'recipe').split(',') if p.strip()]
  arg = parts[0] if parts else 'recipe'
  mods = parts[1:]
  if [m for m in mods if m not in ('served', 'iris')]:
    raise ValueError(f'unknown variant modifiers {mods}; use served, iris')
  c = ml_collections.ConfigDict()
  # 'recipe' (open-recipe loop) | 'iris' (abstraction + dual verification).
  c.mode = 'recipe'
  # The corpus (corpus.sources.CorpusSpec); '' path = the bundled 2Wiki.
  c.corpus = ml_collections.ConfigDict(
      dict(kind='2wiki', path='', max_docs=0, derive_links=True)
  )
  # Anchor graphs (synthesis.graph.AnchorConfig): seeds sampled round-robin
  # across entity types, expanded `radius` link hops (both directions),
  # capped at max_nodes, dropped below min_nodes.
  c.anchor = ml_collections.ConfigDict(
      dict(num_seeds=3000, radius=2, min_nodes=2, max_nodes=16, seed=0)
  )
  c.max_hops = 3  # longest evidence path
  c.max_graphs = 0  # 0 = every evidence graph
  # Controller (synthesis.controller.ControllerConfig): shortcut probes'
  # top k and how many a question gets; keep_lookups keeps one-hop lookups
  # the seed's rule sends back (the tiny main job sets it: its model learns
  # the tool loop on them; docs/experiments/synthesis.md).
  c.controller = ml_collections.ConfigDict(
      dict(probe_k=3, max_probes=3, keep_lookups=False)
  )
  # Loop budgets (synthesis.loop.LoopConfig); min_solver_calls is the
  # seed's 50 search + visit calls for acceptance.
  c.loop = ml_collections.ConfigDict(
      dict(
          max_revisions=4,
          max_tasks_per_graph=1,
          max_solver_attempts=3,
          min_solver_calls=50,
          hard_reviews=3,
          max_concurrency=8,
      )
  )
  # Role → kind: extractor pattern|llm, generator template|llm, critic
  # none|llm, solver none|agent, verifier none|llm, claim_selection
  # path|judge (rewards/claims.py's 5-call selection + refinement).
  c.roles = ml_collections.ConfigDict(
      dict(
          extractor='llm',
          generator='llm',
          critic='llm',
          solver='agent',
          verifier='none',
          claim_selection='judge',
      )
  )
  # One LLM per role (generator, critic, solver policy, judge, ...).
  c.llm = ml_collections.ConfigDict(
      {
          r: _llm()
          for r in ('extractor', 'generator', 'critic', 'solver', 'judge',
                    'verifier', 'reference')  # fmt: skip
      }
  )
  # Iris (synthesis.iris.IrisConfig): k coupled relations on the reasoning
  # path, n closed-book samples that must all be wrong, the seed subgraph's
  # size (pages, chars per page, pages retrieved for the fixed answer).
  c.iris = ml_collections.ConfigDict(
      dict(
          min_relations=2,
          closed_book_samples=4,
          page_chars=1500,
          max_pages=8,
          retrieve_k=5,
      )
  )
  c.chunk_size = 256  # evidence graphs per journalled chunk
  c.heldout_fraction = 0.2
  # RL's question pool as a third split (tasks.rl.jsonl): whole components
  # of tasks sharing evidence pages, none shared with train or held-out
  # (synthesis/split.py); 0 = no RL split. The recipe synthesises a new
  # pool for RL (`rl_pool`); this carves one out of the same run.
  c.rl_fraction = 0.0
  # Question phrasings per relation no task is generated in (the template
  # generator's frames, synthesis/phrasings.py); the held-out tasks asked
  # again in them form tasks.heldout_phrasings.jsonl, an evaluation set
  # (docs/phrasings.md).
  # 0 = none; `tiny`: 1 of each relation's 4-5.
  c.heldout_phrasings = 0
  c.seed = 0
  c.progress = True
  c.cache_dir = ''  # '' = WORKDIR/llm_cache
  # A page whose LLM claim extraction failed: 'none' (no claims) or
  # 'pattern' (its sentence-pattern claims); counted in funnel.json.
  c.extractor_fallback = 'none'
  # Probe every LLM role once before the loop (funnel.json role_check);
  # a probe whose call failed (not one that did not parse) stops the run.
  c.role_check = False
  c.role_check_fail_fast = True
  c.served = _served()
  if arg == 'tiny':
    c.roles = ml_collections.ConfigDict(
        dict(
            extractor='pattern',
            generator='template',
            critic='none',
            solver='none',
            verifier='none',
            claim_selection='path',
        )
    )
    c.chunk_size = 512
    c.heldout_phrasings = 1
  elif arg == 'rl_pool':
    c.roles.verifier = 'llm'
  elif arg == 'iris':
    c.mode = 'iris'
  elif arg != 'recipe':
    raise ValueError(f'unknown variant {arg!r}; use tiny|recipe|rl_pool|iris')
  if 'served' in mods:
    _served_tiny_model(c)
    if arg == 'tiny':
      _tiny_served(c)
  if 'iris' in mods:  # e.g. tiny,iris,served: Iris's roles on the tiny run
    c.mode = 'iris'
  return c
