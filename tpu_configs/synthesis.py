"""Config of `python -m search_agent.synthesis.run`.

Variants (`--config=tpu_configs/synthesis.py:<variant>`):
  tiny     the bundled 2Wiki corpus, every role programmatic: claims from
           sentence patterns, template questions over 1–3 hop paths, the
           real controller (evidence, leakage, uniqueness, shortcut probes
           through the real index); no critic, solver or LLM. >= 500 tasks
           in well under a minute of work on 2 cores.
  recipe   the open recipe's loop: LLM claim extractor, generator and
           critic, agent solver (accept correct after >= 50 search + visit
           calls), required claims chosen by the judge.
  rl_pool  recipe + the RL pool's extra verification of each accepted task.
  iris     Iris: answer-anchored entity graphs, abstraction operator with
           the no-surviving-name check, dual verification (closed-book all
           wrong over n samples, correct with evidence) by a semantic judge.
LLM roles read `llm.<role>` (llm.registry fields: kind openai|scripted,
openai.base_url/model, ...); responses are cached under WORKDIR/llm_cache.
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
          max_concurrency=16,
      )
  )
  c.script = ('',)
  return c


def get_config(arg: str | None = None) -> ml_collections.ConfigDict:
  """Returns the config of one variant (default: recipe)."""
  arg = arg or 'recipe'
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
  c.seed = 0
  c.progress = True
  c.cache_dir = ''  # '' = WORKDIR/llm_cache
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
  elif arg == 'rl_pool':
    c.roles.verifier = 'llm'
  elif arg == 'iris':
    c.mode = 'iris'
  elif arg != 'recipe':
    raise ValueError(f'unknown variant {arg!r}; use tiny|recipe|rl_pool|iris')
  return c
