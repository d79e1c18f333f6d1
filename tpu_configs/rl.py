"""The open recipe's RL stage (plus SearchMaster's GRPO variant as options).

Usage: --config=tpu_configs/rl.py (the recipe), tpu_configs/rl.py:tiny (a
2-core CPU run), :searchmaster (SearchMaster self-play, selfplay.*: std-normalized
advantages, clipped objective with KL 0.001) or :searchmaster,tiny, :partial (Iris: synchronous steps
over-sampled 25%, partial rollouts, truncated IS; :partial,tiny), :long (one observation kept, the window slides
within each rollout; :tiny,long), :warm (tiny only, :tiny,warm: the :tiny main job's SFT policy on train tasks it
answers sometimes, dynamic sampling on: the RL contract that can fail on learning). Every value below is from open-recipe.md unless its comment says otherwise.
"""

import os

import ml_collections

from search_agent.model import families

_REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
_TINY_TASKS = os.path.join(
    _REPO, 'search_agent', 'train', 'rl', 'data', 'tiny_tasks.jsonl'
)
# A tiny SFT policy made by the project's binaries (its MANIFEST.json).
_TINY_POLICY = os.path.join(
    _REPO, 'search_agent', 'train', 'rl', 'data', 'tiny_policy'
)
# The :tiny main job's SFT policy (450 updates from the shipped base) and
# the pool of its train tasks it answers sometimes (MANIFEST.json).
_TINY_SFT_POLICY = os.path.join(
    _REPO, 'search_agent', 'train', 'rl', 'data', 'tiny_sft_policy'
)
# The :searchmaster,tiny,warm policy: tiny_sft_policy continued on Proposer
# demonstrations beside the Solver's, with its seed pool (MANIFEST.json).
_TINY_SELFPLAY_POLICY = os.path.join(
    _REPO, 'search_agent', 'train', 'rl', 'data', 'tiny_selfplay_policy'
)
_CORPUS = os.path.join(
    _REPO, 'search_agent', 'corpus', 'data', '2wikimultihopqa_corpus.json'
)


def get_config(arg: str | None = None) -> ml_collections.ConfigDict:
  """Returns the RL config; arg: comma-separated variants (see above)."""
  c = ml_collections.ConfigDict()
  # Group size (rollouts per question) and reward weights r = 0.6 y + 0.4 c.
  c.group_size = 4
  c.reward = ml_collections.ConfigDict(
      dict(
          correct_weight=0.6,
          coverage_weight=0.4,
          select_calls=5,  # required-claim selection calls per task
          select_min_votes=3,
          judge_calls=7,  # coverage judgments per final report
          judge_min_votes=5,
          judge_temperature=1.0,  # our choice: "independently sampled"
      )
  )
  # SearchMaster proposer/solver rewards (used by self-play runs).
  c.searchmaster = ml_collections.ConfigDict(
      dict(
          r0=0.2, depth_horizon=10, oop_alpha=1.5, oop_beta=2.5, oop_lambda=0.5
      )
  )
  # Advantages: Dr. GRPO (mean only); True = SearchMaster's std-normalized.
  c.normalize_std = False
  # Policy loss: 'icepop' (recipe) or 'grpo_clip' (SearchMaster).
  c.loss = ml_collections.ConfigDict(
      dict(
          objective='icepop',  # or 'tis' (Iris) or 'grpo_clip' (SearchMaster)
          icepop_low=0.2,
          icepop_high=5.0,
          max_token_age=8,
          clip_low=0.2,  # grpo_clip only
          clip_high=0.28,  # grpo_clip only
          kl_coef=0.0,  # recipe: 0; SearchMaster: 0.001
      )
  )
  # Ready-first scheduling.
  c.scheduler = ml_collections.ConfigDict(
      dict(
          groups_per_update=32,
          start_after_ready=8,
          dispatch_batch_groups=32,
          admission_window=8,
          synchronous=False,  # the on-policy baseline (benchmarks)
          oversample=0.0,  # synchronous only: Iris's over-sampling
      )
  )
  # Rollouts (the agent issue consumes these).
  c.rollout = ml_collections.ConfigDict(
      dict(
          max_agent_steps=500,
          max_tokens_per_call=32_768,
          context_limit=262_144,
          temperature=1.0,
          top_p=1.0,
          tis_cap=2.0,  # our choice: truncated IS cap for spliced prefixes
      )
  )
  # Optimizer (the learner issue consumes these).
  c.optimizer = ml_collections.ConfigDict(
      dict(
          name='muon',
          learning_rate=2e-6,
          weight_decay=0.1,
          momentum=0.9,
          nesterov=True,
          spectral_multiplier=0.2,
      )
  )
  # Simulator of the schedule (search_agent/train/rl/simulator_benchmark.py).
  c.sim = ml_collections.ConfigDict(
      dict(
          generation_nodes=7,
          group_slots_per_node=6,  # our choice: 42 groups = 168 rollouts
          training_nodes=10,
          learner_node_minutes_per_group=1.5,  # our choice: 9 s per group
          apply_minutes=1.0,  # our choice: optimizer step + weight broadcast
          turn_minutes=0.5,  # our choice: one assistant request
          median_minutes=23.6,
          p99_minutes=91.7,
          updates=50,  # 50 x 32 = the seed's 1,600 groups
          oversample=0.25,  # synchronous+partial only (Iris headroom)
          zero_signal_prob=0.0,
          seed=0,
      )
  )
  _add_run_fields(c)
  variants = set(arg.split(',')) if arg else set()
  unknown = variants - {'tiny', 'searchmaster', 'partial', 'long', 'warm'}
  if unknown:
    raise ValueError(
        f'unknown variant(s) {sorted(unknown)}; want tiny, searchmaster,'
        ' partial, long and/or warm'
    )
  if 'warm' in variants and ('tiny' not in variants or 'long' in variants):
    raise ValueError(
        'warm is a tiny variant: use :tiny,warm or :searchmaster,tiny,warm'
        ' (without long)'
    )
  if 'searchmaster' in variants:  # SearchMaster's GRPO (searchmaster.md)
    c.group_size = 8  # K_P = K_S = 8
    c.normalize_std = True
    c.loss.update(dict(objective='grpo_clip', kl_coef=0.001))
    _searchmaster_selfplay(c)
  if 'partial' in variants:  # Iris: synchronous steps + partial rollouts
    c.scheduler.update(dict(synchronous=True, oversample=0.25))
    c.loss.objective = 'tis'
    c.rollout.partial = True
  if 'tiny' in variants:
    c.scheduler.update(
        dict(
            groups_per_update=4,
            start_after_ready=2,
            dispatch_batch_groups=4,
            admission_window=2,
        )
    )
    c.sim.update(
        dict(
            generation_nodes=1,
            group_slots_per_node=6,
            updates=2,
            training_nodes=1,
        )
    )
    _tiny_run(c)
    if 'searchmaster' in variants:
      _tiny_selfplay(c)
  if 'long' in variants:  # the recipe's horizon: the window slides
    # One observation kept and more steps: from the third call on every
    # prompt rewrites the one before, so each rollout trains as segments
    # (agent.token_record) instead of being dropped as inexact.
    c.rollout.update(dict(keep_observations=1, max_agent_steps=6))
    if 'tiny' in variants:
      _tiny_policy(c)
  if 'warm' in variants:
    _tiny_warm(c)
    if 'searchmaster' in variants:
      _tiny_selfplay_warm(c)
  return c


def _add_run_fields(c: ml_collections.ConfigDict) -> None:
  """The fields of the RL binary (search_agent/train/rl/run.py)."""
  c.max_updates = 50  # 50 x 32 groups = the seed's 1,600 groups
  # Tasks (agent/task.py JSONL): the synthesis output; tiny: the fixture.
  c.tasks_path = '/data/rl/tasks.jsonl'
  c.task_seed = 0
  # The policy (model/families.py presets): qwen3.5 replays routing.
  c.model = families.as_dict(families.model_preset('qwen3.5-35b-a3b'))
  c.model.freeze_router = True  # the seed: router frozen during RL
  # Where the weights come from: an SFT workdir (its latest checkpoint and
  # <sft_workdir>/tokenizer), converted HF params, or random init.
  c.init = ml_collections.ConfigDict(
      dict(sft_workdir='', sft_step=-1, params_path='')
  )
  # tokenizer.json path ('' = train the tiny one on `corpus` into
  # <workdir>/tokenizer, or take <init.sft_workdir>/tokenizer).
  c.tokenizer = ml_collections.ConfigDict(
      dict(path='', corpus=_CORPUS, chat_template='qwen3')
  )
  # The learner's mesh and update packing.
  c.learner = ml_collections.ConfigDict(
      dict(
          layout='recipe_tp2_cp8_ep8',
          # --role=all: the first N devices (0 = half; at least one when
          # rollouts are served, which leaves the sampler none).
          devices=0,
          seq_len=262_144,
          # One row per batch shard: the layout splits rows over
          # data x fsdp x expert = 8 (row_placement.py).
          microbatch_size=8,
          dynamic_sampling=True,
          checkpoint_every=1,
          checkpoint_keep=3,
          poll_s=0.5,
          stall_timeout_s=3600.0,
          lease_timeout_s=1800.0,
      )
  )
  # The in-process sampler of each rollout worker (its own mesh).
  c.sampler = ml_collections.ConfigDict(
      dict(
          layout='fsdp',
          # --role=all, in_process rollouts: the last N devices (0 = the
          # other half).
          devices=0,
          batch_size=16,
          max_prompt_len=229_376,
          max_new_tokens=32_768,
      )
  )
  c.rollout.update(
      dict(
          # '' = named after the host: 's<slice>-h<host>' for --role=rollout
          # (one worker per pod host), 'w0' inside --role=all.
          worker_id='',
          max_groups=8,  # groups a worker runs at once
          max_attempts=3,  # tries of a failing group (judge, infra)
          context_policy='sliding_window',  # shared with SFT
          keep_observations=5,
          min_output_tokens=1_024,
          system_prompt='agent_system.md',
          # How tools appear in the system prompt: 'json' (the schemas) or
          # 'signature' (one line a tool, for tiny models).
          tool_text='json',
          # The policy the worker samples: 'in_process' (its own sampler),
          # 'server' (rollout servers, search_agent.serving, at server_urls;
          # new weights pushed by /update_weights) or 'openai' (an
          # OpenAI-compatible endpoint at `openai`; no routing record, so
          # parity.require_routing=False: see train/rl/server_policy.py).
          policy='in_process',
          # Iris partial rollouts (train/rl/partial.py): once an update has
          # its groups, in-flight rollouts hold (the server aborts the
          # request) and resume from their committed prefix under the new
          # version; use with a synchronous, over-sampled schedule and
          # loss.objective='tis' (the :partial variant).
          partial=False,
          server_urls=(),
          # 'server' with no server_urls (or 'openai', count 1, at the
          # server's /v1): the run starts `count` rollout servers on its
          # own host (train/rl/local_servers.py: `config`
          # with the run's tokenizer, model sizes and in-flight rollouts as
          # slots, then `overrides` 'key=value'; `env` 'NAME=value' for the
          # children, one XLA:CPU device each by default). For CPU runs and
          # hosts with accelerators to spare.
          local_servers=dict(
              count=0,
              config='tpu_configs/serve.py:tiny',
              overrides=(),
              env=('XLA_FLAGS=--xla_force_host_platform_device_count=1',),
              start_timeout_s=600.0,
          ),
          # 'openai': the endpoint (llm/openai_client.OpenAIConfig fields;
          # token ids and logprobs are always asked for).
          openai=dict(
              base_url='http://127.0.0.1:8000/v1',
              model='',
              api_key_env='',
              timeout_s=600.0,
              connect_timeout_s=10.0,
              max_retries=4,
              max_concurrency=64,
          ),
          # 'openai': push each published version to the endpoint's
          # /update_weights (search_agent.serving; its tokens then carry
          # the pushed versions). False for an endpoint whose operator
          # loads the weights (tokens get the store's newest version).
          openai_push_weights=True,
          # Benchmarks only: injected per-group tool latency (0 = none).
          latency_median_s=0.0,
          latency_p99_s=0.0,
      )
  )
  # Search: a tantivy index ('' = <workdir>/index over the bundled corpus,
  # built when absent) or an index.serve URL. snippet_words > 0 shortens the
  # embedded engine's excerpts (0 = the seed's 48 words).
  c.search = ml_collections.ConfigDict(
      dict(
          index_dir='',
          url='',
          tools=('search', 'visit'),
          top_k=10,
          snippet_words=0,
      )
  )
  # Judges: 'llm' (answer + claim judges through llm/, below) or
  # 'deterministic' (no LLM; named in the manifest).
  c.judge = ml_collections.ConfigDict(
      dict(
          kind='llm',
          llm=dict(
              kind='openai',
              name='',
              openai=dict(base_url='http://127.0.0.1:8000/v1', model=''),
          ),
      )
  )
  # Step-0 parity: learner vs sampler logprobs before the first update.
  c.parity = ml_collections.ConfigDict(
      dict(max_abs_logprob_diff=0.05, require_routing=True)
  )
  c.weights = ml_collections.ConfigDict(dict(keep=3))  # versions kept
  # SFT-RL climbing (Iris): after the run, pick one rollout per query in the
  # pass band (filtering/climb_selection.py) into
  # <workdir>/climbing/sft_train.jsonl
  # for `python -m search_agent.train.sft --config.data.train_path=...`.
  c.climbing = ml_collections.ConfigDict(
      dict(enabled=False, min_pass=0.0, max_pass=1.0, min_tool_turns=2)
  )
  _add_selfplay_fields(c)


def _add_selfplay_fields(c: ml_collections.ConfigDict) -> None:
  """SearchMaster self-play (search_agent/train/rl/selfplay.py); off unless
  :searchmaster. The seeds are sampled from `corpus_*` into
  <workdir>/selfplay/seeds.jsonl (or read from `seeds_path`) and become the
  task pool; `scheduler.groups_per_update` counts RETAINED seeds (the seed:
  64 per iteration); each carries a K_P Proposer and a K_S Solver group."""
  c.selfplay = ml_collections.ConfigDict(
      dict(
          enabled=False,
          k_proposer=8,  # K_P
          k_solver=8,  # K_S
          proposer_max_steps=200,  # our choice: as the Solver's
          solver_max_steps=200,  # our choice: as the tool-call cap
          max_tool_calls=200,  # "up to 200 tool calls per rollout" (both)
          # Ablation switches (the seed's Table 2): naive self-play =
          # ecg=False, difficulty='success_rate', oop=False.
          ecg=True,  # Evidence-Chain Generator prompt (else the naive one)
          difficulty='sdr',  # 'sdr' or 'success_rate' (1 - |2C/K_S - 1|)
          oop=True,  # subtract the over-opening penalty in both roles
          seed_gate=True,  # drop seeds whose best task reward <= r0
          seed_chars=4_000,  # seed text shown to the Proposer (our choice)
          # Filter thresholds (our choice; the seed's supplement is absent).
          filters=dict(min_searches=2, min_opens=1, min_chain=2),
          # The frozen Verifier: 'frozen' (the seed's: a copy of the
          # initial model, the learner's version 0, on its own sampler in
          # each rollout worker, never updated; train/rl/frozen_verifier.py),
          # 'llm' (any llm/ endpoint, e.g. the initial model served by
          # search_agent.serving) or 'programmatic' (the deterministic
          # stand-in, named in the manifest).
          verifier=dict(
              kind='llm',
              max_tokens=1_024,
              trace_chars=8_000,  # the Proposer's trace shown (its tail)
              llm=dict(
                  kind='openai',
                  name='verifier',
                  openai=dict(base_url='http://127.0.0.1:8001/v1', model=''),
              ),
          ),
          seeds_path='',  # '' = sample from the corpus below
          num_seeds=20_000,  # our choice (20 iterations x 64 retained)
          seed=0,
          min_seed_chars=200,
          corpus_kind='2wiki',
          corpus_path='',  # '' = the bundled 2Wiki corpus
      )
  )


def _searchmaster_selfplay(c: ml_collections.ConfigDict) -> None:
  """The :searchmaster variant: self-play on (searchmaster.md)."""
  c.selfplay.enabled = True
  c.search.tools = ('search', 'open', 'find')
  c.scheduler.update(
      dict(groups_per_update=64, dispatch_batch_groups=64)
  )  # 64 retained seeds per iteration
  c.optimizer.learning_rate = 1e-6
  c.max_updates = 20  # 20 iterations
  c.learner.dynamic_sampling = False  # the seed gate decides instead
  # "The Verifier V is a frozen copy of the initial model" (in process).
  c.selfplay.verifier.kind = 'frozen'


def _tiny_selfplay(c: ml_collections.ConfigDict) -> None:
  """:searchmaster,tiny: K_P = K_S = 2, short rollouts, the stand-in
  Verifier, no seed gate (a random-init policy writes no parseable
  proposal, so every seed would be discarded and the learner would starve;
  `seed_gate` is in the manifest)."""
  c.selfplay.update(
      dict(
          k_proposer=2,
          k_solver=2,
          proposer_max_steps=2,
          solver_max_steps=2,
          seed_gate=False,
          seed_chars=300,
          num_seeds=16,
      )
  )
  c.selfplay.verifier.kind = 'programmatic'


def _tiny_run(c: ml_collections.ConfigDict) -> None:
  """2 updates on a 2-core CPU in a few minutes (random-init tiny MoE)."""
  c.max_updates = 2
  c.tasks_path = _TINY_TASKS
  c.model = families.as_dict(families.model_preset('tiny'))
  c.model.update(dict(max_target_length=1_568, logits_chunk=224))
  # The learner's attention in 128-token blocks (train.sft's tiny setting;
  # the sampler keeps MaxText's, parity checks the two agree).
  c.model.attention_block = 128
  c.model.freeze_router = True
  c.tokenizer.chat_template = 'chatml'
  c.learner.update(
      dict(
          layout='fsdp',
          devices=4,
          seq_len=1_568,
          microbatch_size=4,
          # A random-init policy earns no reward: dropping every all-zero
          # group would starve the learner, so tiny trains on them (zero
          # advantages, zero policy gradient); the recipe drops them.
          dynamic_sampling=False,
          poll_s=0.05,
          stall_timeout_s=600.0,
          lease_timeout_s=300.0,
      )
  )
  c.sampler.update(
      dict(
          devices=4,
          batch_size=8,
          max_prompt_len=1_536,
          max_new_tokens=32,
      )
  )
  c.rollout.update(
      dict(
          max_agent_steps=3,
          max_tokens_per_call=32,
          context_limit=1_568,
          min_output_tokens=8,
          max_groups=2,
      )
  )
  c.search.top_k = 3
  c.judge.kind = 'deterministic'
  c.parity.max_abs_logprob_diff = 0.01


def _tiny_policy(c: ml_collections.ConfigDict) -> None:
  """Start from a tiny SFT policy that writes tool calls (a random one ends
  every rollout at its first token budget, so no window ever slides), in the
  main job's compact environment it was trained in."""
  c.init.sft_workdir = _TINY_POLICY
  c.search.update(dict(tools=('search',), top_k=3, snippet_words=24))
  c.rollout.update(
      dict(
          system_prompt='agent_system_compact.md',
          tool_text='signature',
          max_tokens_per_call=64,
      )
  )
  c.sampler.max_new_tokens = 64
  c.optimizer.learning_rate = 1e-3  # the step tiny SFT's schedule ends at


def _tiny_warm(c: ml_collections.ConfigDict) -> None:
  """:tiny,warm: RL that can fail on learning. The :tiny main job's SFT
  policy (4 layers, 450 updates from the shipped base) on the pool of train
  tasks it answers sometimes (made by eval.run and rl_pool: the
  fixture's MANIFEST.json), in the main job's RL environment (the pipeline's
  `rl` stage), with dynamic sampling on: every trained group has a non-zero
  advantage, and a second update trains tokens the first one's weights
  sampled."""
  c.init.sft_workdir = _TINY_SFT_POLICY
  c.tasks_path = os.path.join(_TINY_SFT_POLICY, 'tasks.jsonl')
  c.model.dims.base_num_decoder_layers = 4
  c.search.update(dict(tools=('search',), top_k=3, snippet_words=24))
  c.rollout.update(
      dict(
          system_prompt='agent_system_compact.md',
          tool_text='signature',
          max_agent_steps=3,
          max_tokens_per_call=64,
      )
  )
  c.sampler.max_new_tokens = 64
  # One sampler device: faster than four on a 2-core CPU.
  c.sampler.devices = 1
  c.optimizer.learning_rate = 1e-3  # the step tiny SFT's schedule ends at
  c.learner.dynamic_sampling = True


def _tiny_selfplay_warm(c: ml_collections.ConfigDict) -> None:
  """:searchmaster,tiny,warm: self-play whose proposals reach the learner.
  The policy is tiny_sft_policy continued on Proposer demonstrations
  rendered from synthesized two-hop tasks beside the Solver's, then on the
  25 pool seeds' demonstrations, learned by heart
  (data/tiny_selfplay_policy/MANIFEST.json); its seeds are those 25. Both roles get search and open (the
  Proposer needs an open to pass the tool-use filter) in the compact
  environment; the Verifier stays the programmatic stand-in (a tiny model
  writes no verdict JSON), and there is no seed gate (as :searchmaster,tiny).
  Rollouts sample at temperature 1.35, so both roles' rewards vary within a
  group of a pool learned by heart."""
  c.init.sft_workdir = _TINY_SELFPLAY_POLICY
  c.selfplay.seeds_path = os.path.join(_TINY_SELFPLAY_POLICY, 'seeds.jsonl')
  c.search.tools = ('search', 'open')
  # The Proposer's prompt (proposer_ecg.md, the seed, two result lists and
  # a page: 1,726 tokens at the median of its demonstrations, 2,399 at most)
  # and its proposal (<= 160 tokens): rows of 3,072 tokens, as the SFT that
  # made the policy.
  c.model.update(dict(max_target_length=3_072, logits_chunk=256))
  c.learner.seq_len = 3_072
  c.rollout.update(dict(context_limit=3_072, max_tokens_per_call=256))
  c.sampler.update(dict(max_prompt_len=2_816, max_new_tokens=256))
  # Six seeds an update (our choice): seeds differ in how often their
  # Proposer passes and their Solver misses, so the contract that both
  # roles carry an advantage rests on several.
  c.scheduler.update(dict(groups_per_update=6, dispatch_batch_groups=6))
  # Our choice: hot enough that the filters reject some proposals and the
  # Solver misses some tasks of a pool learned by heart, so most seeds'
  # groups carry an advantage in both roles (docs/experiments/selfplay.md).
  c.rollout.temperature = 1.35
  c.learner.dynamic_sampling = False  # self-play: groups as the seeds give
  c.selfplay.update(
      dict(
          k_proposer=4,
          k_solver=4,
          proposer_max_steps=4,  # search, search, open, the proposal
          solver_max_steps=3,
      )
  )
