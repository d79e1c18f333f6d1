"""The whole recipe as one run: `python -m launch.pipeline
--config=tpu_configs/pipeline.py[:auto|:tiny|:learn_accel|:learn]
--workdir=DIR`.

Stages (each its own binary, DIR/<stage>, reused while its inputs are
unchanged; search_agent/pipeline/plan.py wires them):
  index            index.build over the bundled 2Wiki corpus (tantivy, or
                   a cluster: --config.search.backend=elasticsearch)
  tasks            synthesis.run :tiny
  tokenizer        the tiny BPE every model stage shares
  pretrain         next-token pretraining on the corpus (train.sft pretrain
                   mode)
  eval_before_sft  eval.run, held-out tasks
  collect          teacher demonstrations in the real environment
  filter           filtering.run (correctness, completeness, failed-turn masks)
  split            train / validation demonstrations, split by task
  sft              train.sft from the pretrained checkpoint
  eval_after_sft   eval.run
  eval_phrasings_after_sft
                   eval.run on held-out phrasings (tasks.heldout_phrasings
                   and eval.phrasing_questions > 0, else skipped)
  rl               train.rl.run from the SFT checkpoint
  eval_after_rl    eval.run
  eval_phrasings_after_rl
                   the same after RL
  rl_seen          (rl_seen.enabled) the tasks RL's updates trained on
  eval_rl_seen_sft (rl_seen.enabled) eval.run of SFT on them
  eval_rl_seen_rl  (rl_seen.enabled) eval.run of RL on them
  eval_rl_{siblings,untouched}_{sft,rl}
                   (rl_seen.reach) SFT and RL on train tasks RL did not
                   draw: other questions about its pages, and pages it
                   never drew
  climb_data       (climb.enabled) RL's rollouts in the pass band + demos
  climb_sft        (climb.enabled) train.sft from the RL checkpoint
  climb_rl         (climb.enabled) train.rl.run from climb_sft
  eval_after_climb (climb.enabled) eval.run
  report           DIR/report.md, report.json and plots

Variants (`--config=tpu_configs/pipeline.py:VARIANT`):
  auto   (no variant, as `bash launch/run_main.sh` runs it) chosen by the
         devices JAX sees: a GPU or TPU runs learn_accel, a CPU tiny
         (search_agent/pipeline/variant.py; a subprocess asks JAX). The
         console's first line and report.json (`variant`, `device_kind`,
         `variant_reason`) say which and why; naming a variant overrides it.
  tiny   the README's main job on CPU (`bash launch/run_main.sh` there):
         imports the shipped 4-layer base (SHIPPED_BASE, made by `learn`'s
         pretraining in 500 updates) instead of pretraining, 450 SFT
         updates rehearsing the pretraining texts, 3 RL updates, 100
         held-out tasks; minutes on 2 CPU cores.
  learn_accel
         learn sized for one accelerator (<= 15 minutes on one H100): 60 RL
         updates, no rl_seen stages.
  learn  the learning-signal run: 200 held-out tasks, every train task's
         demonstrations with search and visit, the tiny model with 4
         layers, 1,000 pretraining and 1,200 SFT updates rehearsing the
         pretraining texts, 120 RL updates, RL checked on its own tasks:
         `python -m launch.pipeline --config=tpu_configs/pipeline.py:learn
         --workdir=DIR`. Expected: held-out pass@1 about 31% after SFT.

Measured runs: docs/experiments/learning-signal.md; the choices behind the
values: docs/decisions.md ("The main job").
"""

import ml_collections

from search_agent.pipeline import variant as variant_lib

STAGES = (
    'index',
    'tasks',
    'tokenizer',
    'pretrain',
    'eval_before_sft',
    'collect',
    'filter',
    'split',
    'sft',
    'eval_after_sft',
    'eval_phrasings_after_sft',
    'rl',
    'eval_after_rl',
    'eval_phrasings_after_rl',
    'report',
)
# The optional stage families (RL pool, rl_seen, climb) are inserted when
# their sections are enabled (search_agent/pipeline/families.py).

VARIANTS = ('tiny', 'learn', 'learn_accel')
# The tiny base model `learn`'s pretraining makes (4 layers, 500 updates on
# shuffle sequences), shipped with its manifest; `python -m
# search_agent.pipeline.make_base --workdir=DIR` makes it again and checks
# the hashes.
SHIPPED_BASE = 'search_agent/pipeline/data/base_tiny4'


def get_config(arg: str | None = None) -> ml_collections.ConfigDict:
  """Returns the pipeline config of variant `arg` (VARIANTS; None or 'auto':
  the one the devices call for)."""
  if arg in (None, '', variant_lib.AUTO):
    choice = variant_lib.auto()
  elif arg in VARIANTS:
    choice = variant_lib.named(arg)
  else:
    raise ValueError(
        f'pipeline variant {arg!r}: use {", ".join(VARIANTS)} or auto'
    )
  variant = choice.variant
  learn = variant in ('learn', 'learn_accel')
  accel = variant == 'learn_accel'
  tiny = variant == 'tiny'
  c = ml_collections.ConfigDict()
  c.variant = variant
  # What JAX sees ('' = not asked yet: the driver asks before the first
  # stage) and why this variant runs; both go into the report.
  c.device_kind = choice.device_kind
  c.variant_reason = choice.reason
  # Interpreter of the stage binaries; '' = the driver's own.
  c.python = ''
  # JAX's persistent compilation cache for the stage binaries, under the run
  # directory ('' = none; a JAX_COMPILATION_CACHE_DIR already set wins).
  c.compilation_cache = 'jax_cache'
  # Stages to run, in order (a subset runs only those; inputs must be in it).
  c.stages = STAGES
  # What the agent sees, the same in collection, eval and RL: compact
  # prompts (a one-line tool signature, 3 results of <= 24 words) for tiny
  # models; 'json' / 10 / 0 / 'agent_system.md' are the recipe's.
  # `learn` offers visit too: only then did RL raise held-out pass@1
  # (docs/experiments/learning-signal.md).
  c.env = dict(
      tools=('search', 'visit') if learn else ('search',),
      top_k=3,
      snippet_words=24,
      system_prompt='agent_system_compact.md',
      tool_text='signature',
      # 0: each stage its own context policy. N: SFT, evaluation and RL
      # slide a window keeping N observations, the recipe's long horizon
      # (with more eval.max_steps; docs/horizon.md).
      keep_observations=0,
  )
  # Where the index is built and searched: 'tantivy' (embedded, in
  # DIR/index/index) or a cluster, 'elasticsearch' or 'opensearch': the
  # index stage builds <prefix>-doc/-passage on `hosts` (shards x replicas)
  # and leaves their location in DIR/index/index, where collect, every
  # eval and RL open it (search_agent/search/locations.py). The defaults
  # are the 3-node cluster of `ELASTICSEARCH_PORT=9301
  # ELASTICSEARCH_NODES=3 bash launch/elasticsearch.sh start`.
  c.search = dict(
      backend='tantivy',
      hosts=tuple(f'http://127.0.0.1:{p}' for p in (9301, 9302, 9303)),
      prefix='search-agent-pipeline',
      shards=1,
      replicas=0,
  )
  # The tasks stage: search_agent.synthesis.run with this config.
  c.tasks = dict(
      synthesis_config='tpu_configs/synthesis.py:tiny',
      # 0 = every train task (both variants: the teacher's 10k rollouts take
      # ~30 s, and 4,185 demonstrations over 240 updates are < 1 epoch).
      max_train=0,
      # > 0: synthesis.run's third split (tasks.rl.jsonl, that share of the
      # tasks, evidence pages disjoint from the train and held-out ones; the
      # held-out split is unchanged) is RL's question pool, as the recipe's
      # RL draws new questions; 0: RL draws from the train tasks, whose
      # demonstrations SFT fitted.
      rl_fraction=0.0,
      # Keep one-hop lookups, which the seed's shortcut rule sends back
      # (synthesis controller.keep_lookups): the tiny model learns the tool
      # loop on them (docs/experiments/synthesis.md).
      keep_lookups=True,
      # Question phrasings per relation no training task uses (synthesis
      # heldout_phrasings): the held-out tasks are asked again in them and
      # scored after SFT and after RL, paired with the held-out evaluation
      # (eval.phrasing_questions; docs/phrasings.md). 0 = none.
      heldout_phrasings=1,
  )
  c.tokenizer = dict(vocab_size=4096)
  # A base model to start from instead of training the tokenizer and
  # pretraining: a directory of search_agent/pipeline/base_model.py
  # (parameters, tokenizer, manifest with hashes), imported and checked by
  # the tokenizer and pretrain stages, as a user imports a pretrained model
  # ('' = train both here). model.dims must be the base's. `tiny`: the
  # shipped base, so that its SFT starts from a model that copies (its own
  # quarter hour holds no pretraining that forms copying).
  c.base = dict(path=SHIPPED_BASE if tiny else '')
  # The tiny model's sizes, overridden for every model stage alike
  # (pretrain, SFT, RL: model.dims.NAME; evals: sampler.dims), as
  # 'name=value' strings, e.g. ('head_dim=32',); names: tpu_configs/model.
  # `learn`: 4 layers instead of 2, so copying forms early in pretraining
  # (docs/decisions.md, "The main job").
  c.model = dict(dims=('base_num_decoder_layers=4',))
  # Pretraining on corpus text with synthetic sequences (train.sft,
  # data.mode='pretrain': tpu_configs/sft.py:pretrain_tiny). `learn`: 95%
  # 'shuffle' sequences (twelve corpus words, repeated) at a constant step
  # after warmup, under which the copy probe (copy_nll) falls: copying forms
  # (docs/decisions.md, "The main job"). `schedule='warmup_stable_decay'`
  # with `decay` > 0 decays the step over the last `decay` updates to
  # pretrain_tiny's schedule.minimum (set it through `extra`).
  # `extra`: more overrides.
  c.pretrain = dict(
      config='tpu_configs/sft.py:pretrain_tiny',
      # `learn`: 1,000, by which the 4-layer model copies; `tiny`: 500,
      # the shipped base's (what `--config.base.path=''` pretrains here).
      updates=1000 if learn else 500,
      warmup=10,
      synthetic_fraction=0.95,
      synthetic_kinds=('shuffle',),
      schedule='warmup_constant',
      decay=0,  # 'warmup_stable_decay': the last updates, decayed
      extra=(),
  )
  # Teacher demonstrations: 'programmatic' (the stand-in that follows each
  # task's evidence path) or 'openai' (any LLM at base_url / model).
  c.teacher = dict(
      kind='programmatic',
      base_url='',
      model='',
      rollouts=3,
      # Read found pages with visit (when env.tools offers it): 'always'
      # every page found, 'missing' only one whose search results lack what
      # the next step needs (TeacherConfig.visit_when). `learn`: 'missing'
      # (docs/experiments/learning-signal.md).
      visit=learn,
      visit_when='missing' if learn else 'always',
      recovery_rate=0.2,
      think=False,
      # The share of rollouts that search the title quoted first: none, as
      # quoted queries broke in their escapes (docs/decisions.md).
      quote_rate=0.0,
      # True: a space before the query's title and the answer, so a copied
      # name keeps the token ids it has in the question and observations
      # (byte-level BPE: ' Fred' there, '["'+'F'+'red' after a quote): what
      # the pretraining's copying (token for token) can reuse.
      value_space=True,
      # True: a <think> naming the question's relation before the answer
      # ('The answer is the date of death.'; TeacherConfig.name_relation):
      # the tiny model otherwise gives one answer to every question about a
      # page (docs/decisions.md).
      name_relation=True,
      # True: the first query is the question itself, then the title
      # (TeacherConfig.question_query): the model copies the whole user turn
      # instead of cutting the entity's name out of it. Off: the model
      # garbles the longer copy (docs/decisions.md).
      question_query=False,
      max_steps=6,
  )
  # filtering.run: the recipe's selection with an offline exact-match judge.
  c.filter = dict(config='tpu_configs/filtering.py:recipe', judge='exact')
  # search_agent.pipeline.split's flags, passed to it as they are.
  c.split = dict(val_fraction=0.05, min_val=16)
  # SFT (train.sft :tiny). `init` holds the overrides that start it from
  # the pretrain stage's checkpoint (placeholder {pretrain}), used when the
  # pretrain stage runs; `extra` any others.
  c.sft = dict(
      config='tpu_configs/sft.py:tiny',
      # `tiny`: 450 from the shipped base, so that the main job fits its
      # budget on 2 CPU cores (docs/experiments/main-job.md).
      updates=1200 if learn else 450,
      # Packed rows of 2,048 tokens (a compact demonstration is ~420).
      seq_len=2048,
      micro_steps=2,
      warmup=20,
      eval_every=100 if learn else 150,
      init=('init_from={pretrain}',),
      # The share of SFT's training elements that are pretraining texts
      # (the pretrain section's corpus, synthetic_fraction and kinds;
      # train.sft data.rehearsal_*), so SFT keeps what pretraining formed
      # (copying). 0 = demonstrations only. 0.5, or SFT unlearns copying
      # (docs/decisions.md).
      rehearsal=0.5,
      extra=(),
  )
  # Held-out evaluation, greedy, exact match.
  c.eval = dict(
      # The first N held-out tasks; 0 = all (838 in both variants).
      questions=200 if learn else 100,
      # The first N held-out tasks asked in held-out phrasings
      # (tasks.heldout_phrasings; the first N of `questions` when N is not
      # more); `tiny`: 50, to keep the main job in its 25 minutes.
      phrasing_questions=100 if learn else 50,
      # `learn`: 4, a search, a visit and the answer after one retry.
      max_steps=4 if learn else 3,
      max_new_tokens=64,
      max_prompt_len=1536,  # as RL's tiny sampler
      batch_size=16,
      temperature=0.0,
      # How the evaluated checkpoint answers: 'served' (a rollout server the
      # eval starts on this host, search_agent.serving, eval.run's
      # policy.kind='served') or 'sampler' (the in-process sampler): the
      # same greedy answers, faster served (docs/experiments/serving.md).
      policy='served',
  )
  # RL (train.rl.run :tiny) from the SFT checkpoint on the train
  # tasks, in the same environment (plan.py sets tasks, init, tokenizer,
  # search, prompt and agent limits); `extra`: more overrides.
  # checkpoint_dir is what eval_after_rl restores.
  c.rl = dict(
      config='tpu_configs/rl.py:tiny',
      # `learn`: 120 (docs/experiments/learning-signal.md); `learn_accel`:
      # 60, to fit its quarter hour on one accelerator.
      updates=(60 if accel else 120) if learn else 3,
      # Constant Muon step size: the recipe's 2e-6 moves a 1M-parameter
      # model nowhere in 30 updates; 1e-3 is where tiny SFT's cosine ends.
      learning_rate=1e-3,
      # The rollouts' sampling temperature (the learner scores at the same
      # one). The recipe samples at 1.0; `learn` at 0.6, so that more groups
      # hold a right and a wrong rollout (docs/decisions.md).
      temperature=0.6 if learn else 1.0,
      checkpoint_dir='{rl}',
      # Where the rollouts are sampled: 'in_process' (the RL run's own
      # sampler) or 'server' (`servers` rollout servers the RL run starts on
      # this host, search_agent.serving: continuous batching, the KV cache
      # kept across a rollout's turns; train/rl/local_servers.py): faster
      # updates (docs/experiments/serving.md).
      policy='server',
      servers=1,
      extra=(),
  )
  # RL's question pool (search_agent/pipeline/rl_pool_job.py): rl_probe runs
  # eval.run with the SFT checkpoint on the first probe_tasks train tasks
  # (greedy, the eval's limits) and rl_pool keeps those it answered plus
  # unsolved_fraction as many it missed; RL (and the climb's RL) then draws
  # from them. A group-relative advantage is zero when a group is all right
  # or all wrong, and from a weak policy most groups over all train tasks
  # are all wrong. The seed leaves the pool's selection open
  # (docs/decisions.md). Off by default: `--config.rl_pool.enabled`
  # (docs/experiments/learning-signal.md).
  c.rl_pool = dict(
      enabled=False,
      probe_tasks=480 if learn else 32,
      unsolved_fraction=0.25,
      min_tasks=16 if learn else 1,
  )
  # The in-pool check: rl_seen writes the tasks of the groups RL's updates
  # consumed, eval_rl_seen_sft and eval_rl_seen_rl score the SFT and the RL
  # checkpoints on them (greedy, the eval's limits), and the report pairs
  # the two: did RL raise pass@1 on the questions it was rewarded on (its
  # rewards, masks, losses and weight sync composed in the right direction),
  # apart from whether that reaches held-out pages. On in `learn`.
  # `reach` > 0 also scores both checkpoints on up to `reach` train tasks
  # RL did not draw that share an evidence page with one it did
  # (eval_rl_siblings_*) and as many sharing none (eval_rl_untouched_*):
  # whether RL's gain reaches other questions about its pages, and pages
  # it never visited, before held-out ones (rl_seen_job.py).
  # Off in `learn_accel`: six more evaluations than its quarter hour holds.
  c.rl_seen = dict(
      enabled=learn and not accel, reach=240 if learn and not accel else 0
  )
  # One SFT-RL climb (Iris, "SFT-RL climbing"): climb_data selects from the
  # RL stage's used rollouts, per query whose pass rate p has min_pass < p <
  # max_pass, the shortest correct one with >= min_tool_turns tool calls
  # (the RL stage itself is unchanged, so enabling the climb after a
  # finished run reuses it); climb_sft trains on
  # them from the RL checkpoint (with the first SFT pass's demonstrations
  # mixed in when mix_demonstrations: a few dozen rollouts alone pull a
  # tiny model off the rest), climb_rl resumes RL from it, and
  # eval_after_climb scores it. The seed leaves band, depth, mix and sizes
  # open (docs/decisions.md). Off by default: `--config.climb.enabled`.
  c.climb = dict(
      enabled=False,
      min_pass=0.0,
      max_pass=1.0,
      # One: tiny tasks are mostly one-hop (a search, then the answer).
      min_tool_turns=1,
      mix_demonstrations=True,
      sft_updates=300 if learn else 10,
      # Constant: the climb refines an RL policy, not a fresh start.
      sft_learning_rate=1e-3,
      rl_updates=15 if learn else 2,
      sft_extra=(),
      rl_extra=(),
  )
  return c
