"""The whole recipe as one run: `python -m launch.pipeline
--config=tpu_configs/pipeline.py[:tiny|:learn] --workdir=DIR`.

Stages (each its own binary, DIR/<stage>, reused while its inputs are
unchanged; search_agent/pipeline/plan.py wires them):
  index            index.build over the bundled 2Wiki corpus (tantivy)
  tasks            synthesis.run :tiny (or the temporary lookup tasks)
  tokenizer        the tiny BPE every model stage shares
  pretrain         next-token pretraining on the corpus (train.sft pretrain
                   mode; the SFT issue)
  eval_before_sft  eval.run, in-process sampler, held-out tasks
  collect          teacher demonstrations in the real environment
  filter           filtering.run (correctness, completeness, failed-turn masks)
  split            train / validation demonstrations, split by task
  sft              train.sft from the pretrained checkpoint
  eval_after_sft   eval.run
  rl               train.rl.run from the SFT checkpoint (issue 11)
  eval_after_rl    eval.run
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

Variants: 'tiny' (the README's main job: under 15 minutes on 2 free cores)
and 'learn' (the learning-signal benchmark: 200 held-out tasks, every train
task's demonstrations with search and visit, the teacher visiting only when
the results lack the answer, the tiny model with 4 layers, 1,000
pretraining and 1,200 SFT updates rehearsing the pretraining texts, 120 RL
updates, RL checked on its own tasks; ~57 minutes of stages on 2 free cores
with served evaluations).
WORKSPACE.md "Learning signal" has measured runs of it and their figures:
at these defaults 31.5% held-out pass@1 after SFT, then after RL 36.5%
(A, stop 42: 15 gained / 5 lost, McNemar p = 0.041; on all 838 held-out
tasks +3.6 points, p = 0.0039) and 35.5% (V2, stop 41; 29.5% with another
draw of RL's tasks); search-only, before
stop 41, four runs 31.0% / 28.5% / 25.0% / 32.5% after SFT and 30.5% /
29.0% / 24.5% / 31.5% after 60 RL updates.
"""

import ml_collections

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
    'rl',
    'eval_after_rl',
    'report',
)
# One SFT-RL climb (Iris), inserted before 'report' when climb.enabled.
CLIMB_STAGES = ('climb_data', 'climb_sft', 'climb_rl', 'eval_after_climb')


def get_config(arg: str | None = None) -> ml_collections.ConfigDict:
  """Returns the pipeline config of variant `arg` ('tiny' or 'learn')."""
  variant = arg or 'tiny'
  if variant not in ('tiny', 'learn'):
    raise ValueError(f'pipeline variant {variant!r}: use tiny or learn')
  learn = variant == 'learn'
  c = ml_collections.ConfigDict()
  c.variant = variant
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
  # `learn` offers visit too (the teacher reads a page when its search
  # results lack the answer: teacher.visit_when).
  c.env = dict(
      tools=('search', 'visit') if learn else ('search',),
      top_k=3,
      snippet_words=24,
      system_prompt='agent_system_compact.md',
      tool_text='signature',
  )
  # Task source: 'synthesis' (synthesis.run, issue 13) or 'lookup' (the
  # temporary one-hop tasks of search_agent/pipeline/lookup_tasks.py).
  c.tasks = dict(
      source='synthesis',
      synthesis_config='tpu_configs/synthesis.py:tiny',
      heldout=200 if learn else 100,
      # 0 = every train task (both variants: the teacher's 10k rollouts take
      # ~30 s, and 4,185 demonstrations over 240 updates are < 1 epoch).
      max_train=0,
      # > 0: synthesis.run's third split (tasks.rl.jsonl, that share of the
      # tasks, evidence pages disjoint from the train and held-out ones; the
      # held-out split is unchanged) is RL's question pool, as the recipe's
      # RL draws new questions; 0: RL draws from the train tasks, whose
      # demonstrations SFT fitted.
      rl_fraction=0.0,
  )
  c.tokenizer = dict(vocab_size=4096)
  # The tiny model's sizes, overridden for every model stage alike
  # (pretrain, SFT, RL: model.dims.NAME; evals: sampler.dims), as
  # 'name=value' strings, e.g. ('head_dim=32',); names: tpu_configs/model.
  # `learn`: 4 layers instead of 2. Its copy probe fell to 0.83 nats in 500
  # pretraining updates (2 layers: 2.31; 0.93 after 2,000) and held-out
  # pass@1 after SFT rose to 17.0% (2 layers: 7.5-12.0%; WORKSPACE.md,
  # "Learning signal"). Twice the layers cost ~1.5x per pretraining update.
  c.model = dict(dims=('base_num_decoder_layers=4',) if learn else ())
  # Pretraining on corpus text with synthetic sequences (train.sft,
  # data.mode='pretrain': tpu_configs/sft.py:pretrain_tiny). `learn`: 95%
  # 'shuffle' sequences (twelve corpus words, repeated) at a constant step
  # after warmup, the setting under which the copy probe (copy_nll) fell
  # from ~5 nats to ~1 (WORKSPACE.md, "Learning signal"): with cosine decay
  # and copy/recall of titles it stayed at ~5 (titles memorized, not
  # copied). `schedule='warmup_stable_decay'` with `decay` > 0 decays the
  # step over the last `decay` updates to pretrain_tiny's schedule.minimum
  # (set it through `extra`): 2,000 held + 500
  # decayed lowered copy_nll (0.93 -> 0.73) but not held-out pass@1 after
  # SFT (15/200 against 18-24/200 held throughout), so `learn` holds it.
  # `extra`: more overrides.
  c.pretrain = dict(
      config='tpu_configs/sft.py:pretrain_tiny',
      # `learn`: 1,000 (4 layers copy by then: copy_nll 0.58).
      updates=1000 if learn else 40,
      warmup=10,
      synthetic_fraction=0.95 if learn else 0.2,
      synthetic_kinds=('shuffle',) if learn else ('copy', 'recall'),
      schedule='warmup_constant' if learn else 'warmup_cosine',
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
      # the next step needs (TeacherConfig.visit_when). `learn`: 'missing'.
      # The teacher then answers 9,918 of 10,053 rollouts (8,676 with
      # search alone); after SFT 31.5% held out (32.5% without); RL in 120
      # updates 36.5% (15 gained / 5 lost, p = 0.041) and 35.5% in two
      # runs, 29.5% on another draw of tasks; without visit the same RL
      # lost 3 points (WORKSPACE.md, "Learning signal", stops 41-42).
      visit=learn,
      visit_when='missing' if learn else 'always',
      recovery_rate=0.2,
      think=False,
      # The share of rollouts that search the title quoted first: none, as
      # quoted queries broke in their escapes (WORKSPACE.md).
      quote_rate=0.0,
      # True: a space before the query's title and the answer, so a copied
      # name keeps the token ids it has in the question and observations
      # (byte-level BPE: ' Fred' there, '["'+'F'+'red' after a quote): what
      # the pretraining's copying (token for token) can reuse.
      value_space=True,
      # True: a <think> naming the question's relation before the answer
      # ('The answer is the date of death.'; TeacherConfig.name_relation).
      # It raised `learn`'s held-out pass@1 after SFT from 4.5% to 11.0%
      # (paired, p = 0.007; WORKSPACE.md, "Learning signal"): the tiny model
      # otherwise gave one answer to every question about a page.
      name_relation=True,
      # True: the first query is the question itself, then the title
      # (TeacherConfig.question_query): the model copies the whole user turn
      # instead of cutting the entity's name out of it. Off: in `learn` it
      # gave 7.0% after SFT against 12.0% (WORKSPACE.md, "Learning signal").
      question_query=False,
      max_steps=6,
  )
  # filtering.run: the recipe's selection with an offline exact-match judge.
  c.filter = dict(config='tpu_configs/filtering.py:recipe', judge='exact')
  c.split = dict(val_fraction=0.05, min_val=16)
  # SFT (train.sft :tiny). `init` holds the overrides that start it from
  # the pretrain stage's checkpoint (placeholder {pretrain}), used when the
  # pretrain stage runs; `extra` any others.
  c.sft = dict(
      config='tpu_configs/sft.py:tiny',
      # `tiny`: 240, where every first call after SFT is well formed (60
      # updates: 1%; WORKSPACE.md, "Learning signal", stop 40).
      updates=1200 if learn else 240,
      # Packed rows of 2,048 tokens (a compact demonstration is ~420).
      seq_len=2048,
      micro_steps=2,
      warmup=20 if learn else 5,
      eval_every=100 if learn else 60,
      init=('init_from={pretrain}',),
      # The share of SFT's training elements that are pretraining texts
      # (the pretrain section's corpus, synthetic_fraction and kinds;
      # train.sft data.rehearsal_*), so SFT keeps what pretraining formed
      # (copying). 0 = demonstrations only. `learn`: 0.5, which raised
      # held-out pass@1 after SFT from 16.5% to 31.0% (WORKSPACE.md,
      # Learning signal, stop 37).
      rehearsal=0.5 if learn else 0.0,
      extra=(),
  )
  # Held-out evaluation with the in-process sampler, greedy, exact match.
  c.eval = dict(
      # The first N held-out tasks; 0 = all (838 in both variants: A's RL
      # gain read +5.0 points on 200, +3.6 on 838, p = 0.0039; stop 42).
      questions=200 if learn else 100,
      # `learn`: 4, a search, a visit and the answer after one retry.
      max_steps=4 if learn else 3,
      max_new_tokens=64,
      max_prompt_len=1536,  # as RL's tiny sampler
      batch_size=16,
      temperature=0.0,
      # How the evaluated checkpoint answers: 'served' (a rollout server the
      # eval starts on this host, search_agent.serving, eval.run's
      # policy.kind='served') or 'sampler' (the in-process sampler). The same
      # greedy trajectories (100 of 100 on :tiny's held-out tasks); served
      # took 115 s against 183 s in-process, 53 s once compiled (WORKSPACE.md,
      # Benchmarks).
      policy='served',
  )
  # RL (train.rl.run :tiny, issue 11) from the SFT checkpoint on the train
  # tasks, in the same environment (plan.py sets tasks, init, tokenizer,
  # search, prompt and agent limits); `extra`: more overrides.
  # checkpoint_dir is what eval_after_rl restores.
  c.rl = dict(
      config='tpu_configs/rl.py:tiny',
      # `learn`: 120. Search-only, 60 updates raised greedy pass@1 on the
      # 240 tasks they trained on from 41.9% to 50.2% (McNemar p = 0.0008),
      # held-out pass@1 at none of 15, 30, 60 or 120; with visit held-out
      # 31.5% -> 35.0% at 60 updates, 35.5%, 36.5% (p = 0.041) and, on
      # another draw of tasks, 29.5% at 120 (WORKSPACE.md, "Learning
      # signal").
      updates=120 if learn else 3,
      # Constant Muon step size: the recipe's 2e-6 moves a 1M-parameter
      # model nowhere in 30 updates; 1e-3 is where tiny SFT's cosine ends.
      learning_rate=1e-3,
      # The rollouts' sampling temperature (the learner scores at the same
      # one). The recipe samples at 1.0; `learn` at 0.6: from a 4.5% SFT
      # policy the outcome reward was nonzero in 16 of 30 updates (at 1.0 in
      # 6 of 20), so more groups hold a right and a wrong rollout.
      temperature=0.6 if learn else 1.0,
      checkpoint_dir='{rl}',
      # Where the rollouts are sampled: 'in_process' (the RL run's own
      # sampler) or 'server' (`servers` rollout servers the RL run starts on
      # this host, search_agent.serving: continuous batching, the KV cache
      # kept across a rollout's turns; train/rl/local_servers.py). 'server':
      # from `learn`'s SFT checkpoint an update took 16 s (median of 60)
      # against 85 s in-process (WORKSPACE.md, "Learning signal").
      policy='server',
      servers=1,
      extra=(),
  )
  # RL's question pool (search_agent/pipeline/rl_pool.py): rl_probe runs
  # eval.run with the SFT checkpoint on the first probe_tasks train tasks
  # (greedy, the eval's limits) and rl_pool keeps those it answered plus
  # unsolved_fraction as many it missed; RL (and the climb's RL) then draws
  # from them. A group-relative advantage is zero when a group is all right
  # or all wrong, and from a weak policy most groups over all train tasks
  # are all wrong. The seed leaves the pool's selection open (WORKSPACE.md,
  # Decisions). Off by default: `--config.rl_pool.enabled`; in `learn` it
  # doubled RL's groups with an advantage (44 vs 23 of 120) but held-out
  # pass@1 after RL stayed put (11.0% vs 12.5%; Learning signal).
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
  # it never visited, before held-out ones (rl_seen.py).
  c.rl_seen = dict(enabled=learn, reach=240 if learn else 0)
  # One SFT-RL climb (Iris, "SFT-RL climbing"): climb_data selects from the
  # RL stage's used rollouts, per query whose pass rate p has min_pass < p <
  # max_pass, the shortest correct one with >= min_tool_turns tool calls
  # (the RL stage itself is unchanged, so enabling the climb after a
  # finished run reuses it); climb_sft trains on
  # them from the RL checkpoint (with the first SFT pass's demonstrations
  # mixed in when mix_demonstrations: a few dozen rollouts alone pull a
  # tiny model off the rest), climb_rl resumes RL from it, and
  # eval_after_climb scores it. The seed leaves band, depth, mix and sizes
  # open (WORKSPACE.md, Decisions). Off by default: `--config.climb.enabled`.
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
