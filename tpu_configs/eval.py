"""Eval: run an agent (single or MAS) on a benchmark, grade, report.

  python -m eval.run --config=tpu_configs/eval.py:tiny --workdir=DIR

  python -m eval.run --config=tpu_configs/eval.py --workdir=DIR \
      --config.dataset.path=browse_comp_test_set.csv \
      --config.policy.openai.base_url=http://HOST:8000/v1 \
      --config.policy.openai.model=MODEL --config.search.index_dir=IDX

Variants (`--config=tpu_configs/eval.py:<arg>`; combine them with commas,
e.g. `:xbench,mas`, `:tiny,no_cm`):
  * '' (default): BrowseComp CSV, single agent, recipe budgets, discard-all
    context management (iris.md's default), OpenAI-compatible policy and
    judge endpoints.
  * 'mas': the same with two searchers and a verifier (open-recipe.md).
  * 'no_cm': the same without context management (iris.md reports both).
  * 'xbench': xbench-DeepSearch-2505 from ../shared/data/benchmarks,
    graded by its Chinese judge prompt, 5 repeats (avg@5, pass@5).
  * 'browsecomp_plus': BrowseComp-Plus (dataset.path: its decrypted
    queries JSONL) with its tools (search k=5 with 512-token snippets,
    get_document), judge template, evidence qrels (bundled) and its output
    files (runs/, evaluation_summary.json, detailed_judge_results.csv).
  * 'tiny': four demo questions over the bundled 2Wiki corpus, a scripted
    policy and exact-match grading: a CPU pulse of the whole harness; with
    no search.index_dir it indexes the first 500 bundled documents into
    <workdir>/index on first use.
"""

import pathlib

import ml_collections

_REPO = pathlib.Path(__file__).resolve().parents[1]
_BENCHMARKS = _REPO.parent / 'shared/data/benchmarks'


def _openai(model: str = '') -> dict:
  return dict(
      base_url='http://127.0.0.1:8000/v1',
      model=model,
      api_key_env='',  # name of the env var holding the key, never the key
      timeout_s=1800.0,  # one call may generate 32k tokens
      max_retries=4,
      backoff_s=2.0,
      max_concurrency=64,
      logprobs=False,
      return_token_ids=False,
      tool_role='tool',
      extra_body={},  # merged into every request body
  )


def get_config(arg: str | None = None) -> ml_collections.ConfigDict:
  """Returns the eval config for variant `arg` (see the module docstring)."""
  c = ml_collections.ConfigDict()
  # Benchmark: format in (browsecomp, xbench, browsecomp_plus, tasks).
  c.dataset = dict(
      name='browsecomp',
      format='browsecomp',
      path='browse_comp_test_set.csv',
      qrels_path='',  # browsecomp_plus: TREC qrels for evidence doc ids
      canary='',  # browsecomp_plus: canary when rows carry none
      limit=0,  # 0 = every question
  )
  c.mode = 'single'  # 'single' or 'mas'
  # The policy LLM (registry kinds: openai, scripted, sampler; and served).
  c.policy = dict(kind='openai', name='', openai=_openai(), script=())
  # policy.kind='sampler': the in-process model (evaluation/in_process.py);
  # the agent limits must fit it: agent.context_limit <= max_prompt_len +
  # max_new_tokens, agent.max_output_tokens <= max_new_tokens.
  # policy.kind='served': the same model (this section's preset, dims,
  # checkpoint, tokenizer, template, limits) served by a rollout server this
  # run starts on its own host (search_agent/serving/local.py, `served`
  # below) and called through its OpenAI endpoint; stopped at the end.
  c.sampler = dict(
      preset='tiny',  # search_agent/model/families.py
      # 'name=value' sizes overriding the preset's, as the checkpoint was
      # trained (e.g. ('head_dim=32',)).
      dims=(),
      layout='fsdp',
      params_path='',  # converted orbax params (model.tools.import_hf)
      # Or a training run's checkpoints: its workdir (or workdir/checkpoints)
      # and the update step (-1 = latest); params only, onto this mesh.
      # preset must be the run's model; tokenizer its tokenizer (tiny SFT:
      # <workdir>/tokenizer).
      checkpoint_dir='',
      checkpoint_step=-1,
      tokenizer='qwen3',  # tokenizer.json path, or 'qwen3'
      template='chatml',  # renderer template: chatml | qwen3
      batch_size=8,  # prompts per generate call
      max_prompt_len=4_096,  # longer prompts end the run (context limit)
      max_new_tokens=1_024,
      policy_version=-1,  # -1: the checkpoint's step (0 without one)
      devices=0,  # 0 = all
  )
  # policy.kind='served': the server's base config, then 'key=value'
  # overrides (after those the sampler section sets), the children's
  # environment ('NAME=value'; one XLA:CPU device by default) and how long
  # it may take to answer /health. Its log: <workdir>/server.log.
  c.served = dict(
      config='tpu_configs/serve.py:tiny',
      overrides=(),
      env=('XLA_FLAGS=--xla_force_host_platform_device_count=1',),
      start_timeout_s=600.0,
  )
  # The judge: kind 'none' grades by exact match (rewards/answer_match).
  c.judge = dict(kind='openai', name='', openai=_openai(), script=())
  # Auxiliary LLM for visit summaries (and the reranker); 'none' =
  # extractive visit readings, no reranking.
  c.aux = dict(kind='none', name='', openai=_openai(), script=())
  c.search = dict(
      index_dir='',  # a tantivy index (python -m index.build), or
      url='',  # an HTTP search service (python -m index.serve)
      tools=('search', 'visit'),  # SearchMaster-style: search, open, find
      top_k=10,
      rerank=False,  # the seed's LLM reranker (needs aux)
      # Longest snippet excerpt in words (index_dir only; 0 = the seed's 48):
      # short observations for tiny models.
      snippet_words=0,
      # 'default' (our tools above) or 'browsecomp_plus': its own search
      # (top_k hits, snippet = the first snippet_max_tokens tokens of the
      # document by snippet_tokenizer, '' = words) and get_document.
      toolset='default',
      snippet_max_tokens=512,
      snippet_tokenizer='qwen3',
      include_get_document=True,
      # > 0 with index_dir and url empty: index the first N bundled 2Wiki
      # documents into <workdir>/index when no index is there (tiny).
      build_if_missing=0,
  )
  c.agent = dict(
      max_steps=500,  # open-recipe.md: up to 500 agent steps
      max_output_tokens=32_768,  # per assistant call
      context_limit=262_144,
      min_output_tokens=1_024,  # less room than this = context limit
      compress_at=0.8,  # discard-all / summary fire at 80% of the limit
      temperature=1.0,  # recipe sampling: temperature 1.0, top-p 1.0
      top_p=1.0,
      seed=0,  # step i of searcher j uses seed + 1000 j + i
  )
  # none | sliding_window | discard_all | summary.
  c.context = dict(
      policy='discard_all',
      keep_observations=5,
      notes_max_chars=8_000,
      summary_prompt='context_summary.md',
      summary_max_tokens=4_096,
  )
  c.mas = dict(searchers=2, attempt_max_chars=12_000)
  # protocol '' = the benchmark's own (evaluation/grading_protocols.py:
  # browsecomp, browsecomp_plus, xbench); template '' = that protocol's official one.
  c.grader = dict(
      protocol='', template='', max_attempts=3, backoff_s=2.0,
      max_tokens=4_096, temperature=0.0, top_p=1.0,
  )  # fmt: skip
  c.system_prompt = 'agent_system.md'
  # How the system prompt lists the tools: 'json' (their schemas) or
  # 'signature' (one `name(arg: type)` line a tool; compact, for tiny runs).
  c.tool_text = 'json'
  # Prompt-token counting for the context limit: '' = characters / 3 (safe
  # side), 'qwen3' = Qwen3's tokenizer, or a tokenizer.json path.
  c.tokenizer = ''
  # Grade every trajectory in the workdir again (e.g. after changing the
  # judge); otherwise only new ones and judge errors are graded.
  c.regrade = False
  c.concurrency = 32  # questions in flight (the MAS runs 3 agents each)
  c.repeats = 1  # rollouts per question: avg@N and pass@N (xbench: 5)
  # More failed rollouts (endpoint down, crashes) than this share of all of
  # them fails the eval: no new rollout starts, exit status 1.
  c.max_failed_share = 0.1
  c.progress_every_s = 10.0  # seconds between progress log lines

  for variant in (arg or '').split(','):
    _apply(c, variant.strip())
  return c


def _apply(c: ml_collections.ConfigDict, arg: str) -> None:
  """Applies one variant to `c` (variants combine: 'xbench,mas')."""
  if arg == 'mas':
    c.mode = 'mas'
  elif arg == 'no_cm':
    c.context.policy = 'none'
  elif arg == 'xbench':
    c.dataset.update(
        name='xbench-deepsearch-2505',
        format='xbench',
        path=str(_BENCHMARKS / 'xbench-DeepSearch-2505.csv'),
    )
    c.repeats = 5  # xbench_evals.py --n-repeats default: avg@5, pass@5
  elif arg == 'browsecomp_plus':
    # The decrypted queries (BrowseComp-Plus decrypt_dataset.py) or the
    # encrypted JSONL with its canary; the corpus indexed with
    # index.build --config.corpus.kind=browsecomp_plus.
    c.dataset.update(
        name='browsecomp-plus',
        format='browsecomp_plus',
        path='browsecomp_plus_decrypted.jsonl',
        qrels_path=str(_BENCHMARKS / 'browsecomp-plus-qrel_evidence.txt'),
    )
    c.search.update(toolset='browsecomp_plus', top_k=5)
    # Its judge sampling (evaluate_run.py: Qwen3-32B, temperature 0.7,
    # top-p 0.8, top-k 20, thinking off, 4,096 tokens).
    c.grader.update(temperature=0.7, top_p=0.8, max_tokens=4_096)
    c.judge.openai.extra_body = {
        'top_k': 20,
        'chat_template_kwargs': {'enable_thinking': False},
    }
    c.system_prompt = str(_REPO / 'eval/data/browsecomp_plus_system.md')
  elif arg == 'tiny':
    c.dataset.update(
        name='2wiki-demo',
        format='tasks',
        path=str(_REPO / 'eval/data/2wiki_demo_tasks.jsonl'),
    )
    search = '{"name": "search", "arguments": {"query": ["Teutberga queen"]}}'
    c.policy = dict(
        kind='scripted',
        name='scripted-demo',
        openai=_openai(),
        script=(
            '<think>\nSearch first.\n</think>\n'
            f'<tool_call>{search}</tool_call>',
            '<think>\nThe page names her husband.\n</think>\nConfidence: 80%\n'
            '<answer>Lothair II</answer>',
        ),
    )
    c.judge.kind = 'none'
    c.agent.update(max_steps=4, context_limit=32_768, max_output_tokens=1_024)
    c.agent.min_output_tokens = 256
    c.concurrency = 2
    # The bundled 2Wiki corpus's first 500 documents, indexed into
    # <workdir>/index on first use (as index.build's tiny config).
    c.search.build_if_missing = 500
  elif arg:
    raise ValueError(
        f'unknown eval variant {arg!r}: mas, no_cm, xbench, browsecomp_plus,'
        ' tiny (combine'
        ' them with commas: tiny,no_cm)'
    )
