"""The rollout server: `python -m search_agent.serving`.

  python -m search_agent.serving --config=tpu_configs/serve.py[:tiny] \
      --port=8000

Variants (`--config=tpu_configs/serve.py:<arg>`):
  * '' (default): qwen3-30b-a3b with the recipe layout on a TPU slice,
    weights from a training run's checkpoints (checkpoint_dir) or converted
    HF params (params_path), 64 slots, 32k context.
  * 'tiny': the tiny MoE on CPU with random weights and the tiny test
    tokenizer (tests, the benchmark, a quick look).
"""

import pathlib

import ml_collections

_REPO = pathlib.Path(__file__).resolve().parents[1]


def get_config(arg: str | None = None) -> ml_collections.ConfigDict:
  """Returns the serve config for variant `arg` (see the module docstring)."""
  c = ml_collections.ConfigDict()
  # The model: a preset of search_agent/model/families.py and its layout.
  c.model = dict(
      preset='qwen3-30b-a3b',
      layout='recipe_tp2_cp8_ep8',
      # 'name=value' sizes overriding the preset's, as the checkpoint was
      # trained (families.with_dims; the tiny preset's only).
      dims=(),
      # Weights: a training workdir (or its checkpoints/) and step (-1 =
      # latest), or HF-converted orbax params (model.tools.import_hf), or
      # neither (random init, pulses only).
      checkpoint_dir='',
      checkpoint_step=-1,
      params_path='',
      policy_version=-1,  # -1: the checkpoint's step (0 without one)
      devices=0,  # 0 = all
  )
  # The chat template of the OpenAI endpoints (chat/chat_template.py) and
  # the tokenizer ('qwen3' = Qwen3's, or a tokenizer.json path).
  c.tokenizer = 'qwen3'
  c.template = 'chatml'
  c.model_name = 'search-agent'  # the `model` the OpenAI endpoints report
  # The engine (search_agent/model/engine_types.EngineConfig).
  c.engine = dict(
      slots=64,  # decode rows, also the sessions whose KV is kept
      max_context=32_768,  # longest prompt and most context kept per session
      max_new_tokens=8_192,  # per request
      max_chunk=4_096,  # new tokens appended to a cached context in one extend
      prefill_min_tokens=256,  # fresh prompts this long: one prefill forward
      steps_per_call=8,  # decode steps per device call
      max_queue=1_024,  # waiting requests before 429
      retry_after_s=2.0,
      prefills_per_step=2,
      # Chunked prefill: a long fresh prompt goes in 1,024 tokens (one
      # compiled extend width) between decode blocks, so decoding slots
      # wait for one chunk instead of the whole prompt (0: one forward).
      prefill_chunk=1_024,
      # Alternatives per token the OpenAI routes may ask for (top_logprobs);
      # > 0 adds a top-k over the vocabulary to every decode step.
      top_logprobs=0,
  )
  # Compile before taking traffic (EngineCore.warmup): every decode batch
  # size and the extends up to max_extend_width tokens; a shape left out
  # compiles on first use and stalls decoding meanwhile.
  c.warmup = dict(enabled=True, max_extend_width=1_024)
  c.host = '0.0.0.0'
  c.port = 8000
  c.log_level = 'warning'
  c.max_body_bytes = 64 * 2**20  # token ids of long contexts

  if arg == 'tiny':
    c.model.update(preset='tiny', layout='fsdp', devices=1)
    c.tokenizer = str(_REPO / 'tests/chat/golden/tiny_tokenizer')
    c.model_name = 'tiny'
    c.engine.update(
        slots=8, max_context=2_048, max_new_tokens=256, max_chunk=256,
        prefill_min_tokens=64, steps_per_call=8, max_queue=64,
        retry_after_s=1.0, prefill_chunk=256, top_logprobs=5,
    )  # fmt: skip
    c.warmup.enabled = False  # tests start many tiny servers
    c.host = '127.0.0.1'
  elif arg:
    raise ValueError(f'unknown serve variant {arg!r}: tiny')
  return c
