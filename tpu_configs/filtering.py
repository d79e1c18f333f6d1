"""Config of `python -m search_agent.filtering.run`.

  python -m search_agent.filtering.run \
      --config=tpu_configs/filtering.py:tiny --workdir=DIR

Variants (`--config=tpu_configs/filtering.py:<variant>`):
  tiny    the bundled 20 real WebDancer trajectories, offline 'contains'
          judge, Iris detectors, no turn judge (runs in seconds on a CPU);
  recipe  the open recipe's selection: three rollouts per task, LLM answer
          judge, completeness (terminated, no unterminated block) and real
          tool use (>= 1 tool-call turn); failed tool-call turns kept as
          context without loss;
  iris    Iris trajectory-level filters (LLM judge, compression ratio and
          auxiliary detectors, >= 2 tool-call turns, exact dedup) and
          turn-level masking by an LLM judge.
Choose the mode with --config.mode=filter|calibrate|induce_rubric.
"""

import pathlib

import ml_collections

_REPO = pathlib.Path(__file__).resolve().parents[1]
_TINY_INPUT = _REPO / 'tests' / 'filtering' / 'data' / 'webdancer_20.jsonl'


def _llm() -> ml_collections.ConfigDict:
  """The judge LLM, as search_agent.llm.registry reads it."""
  c = ml_collections.ConfigDict()
  # '' (no LLM) | 'openai' (any OpenAI-compatible server: vLLM, SGLang)
  # | 'scripted' (pulse tests only: the same reply to every call).
  c.kind = ''
  # Name recorded in the report ('' = the model name or the kind).
  c.name = ''
  c.openai = ml_collections.ConfigDict()
  # API root of the endpoint, e.g. 'http://127.0.0.1:8000/v1'.
  c.openai.base_url = ''
  # Model name sent with every request.
  c.openai.model = ''
  # Environment variable holding the API key ('' for servers without auth).
  c.openai.api_key_env = ''
  # Read timeout of one request, seconds.
  c.openai.timeout_s = 600.0
  # Requests in flight at once.
  c.openai.max_concurrency = 16
  # Replies of the 'scripted' kind.
  c.script = ('',)
  # Role settings (llm.role_client.RoleLLM): a cap on one call's tokens
  # (0 = as the judge asks), stop strings, re-asks of an unparsable reply.
  c.max_tokens = 0
  c.stop = ('',)
  c.parse_retries = 2
  return c


def _degeneration() -> ml_collections.ConfigDict:
  c = ml_collections.ConfigDict()
  # Compression window and stride over the model-written text, in bytes.
  c.window_bytes = 2048
  c.stride_bytes = 512
  c.zlib_level = 9
  # Threshold above every real trajectory's ratio and below looped ones,
  # calibrated with `--config.mode=calibrate`
  # (docs/experiments/filtering-and-viewer.md). 0 disables.
  c.max_ratio = 3.34
  # A block of <= line_max_period non-empty lines repeated this many times.
  c.line_min_repeats = 3
  c.line_max_period = 8
  # Longest allowed run of one character (real data: at most 4).
  c.max_char_run = 64
  # Consecutive tool calls allowed with byte-identical name and arguments.
  c.max_identical_calls = 1
  # Most tool calls in one trajectory; 0 = no limit.
  c.max_tool_calls = 0
  # Reject unterminated <think>, <tool_call> or <answer> blocks.
  c.check_unterminated = True
  return c


def _turn_mask() -> ml_collections.ConfigDict:
  c = ml_collections.ConfigDict()
  # Run turn-level masking with an LLM judge (needs config.llm).
  c.enabled = False
  # Messages shown on each side of the judged turn.
  c.window_messages = 4
  # Most assistant turns masked per trajectory (earliest masks kept).
  c.max_masked_fraction = 0.2
  # Whether the final answer turn may be masked.
  c.judge_final_turn = False
  c.max_observation_chars = 1500
  c.max_turn_chars = 4000
  # Rubric file; '' = search_agent/filtering/prompts/turn_rubric.md.
  c.rubric_path = ''
  c.temperature = 0.0
  c.max_tokens = 1024
  c.concurrency = 16
  return c


def get_config(arg: str | None = None) -> ml_collections.ConfigDict:
  """Returns the config of variant `arg` (tiny, recipe or iris)."""
  variant = arg or 'tiny'
  if variant not in ('tiny', 'recipe', 'iris'):
    raise ValueError(f'unknown variant {variant!r}: tiny, recipe or iris')
  c = ml_collections.ConfigDict()
  # filter | calibrate | induce_rubric.
  c.mode = 'filter'
  # Trajectory JSONL: our format or chatml (detected per line).
  c.input_path = str(_TINY_INPUT) if variant == 'tiny' else ''
  c.input_format = 'auto'
  # Optional task JSONL with reference answers (else meta.answer is used).
  c.tasks_path = ''
  # Tools the agent had; calls to other names mark their turn invalid.
  c.known_tools = ('search', 'visit', 'open', 'find')
  # Answer judge: exact | contains | llm.
  c.judge = 'contains' if variant == 'tiny' else 'llm'
  c.judge_concurrency = 16
  # The judge endpoint (answer judge, turn judge and rubric induction).
  c.llm = _llm()
  # Rollouts kept per task, first in input order; 0 keeps all.
  c.rollouts_per_task = 3 if variant == 'recipe' else 0
  # Minimum tool-call turns (Iris N; the open recipe asks for real tool use).
  c.min_tool_turns = 2 if variant == 'iris' else 1
  # Exact dedup over full message sequences.
  c.dedup = True
  c.degeneration = _degeneration()
  if variant == 'recipe':  # Completeness only: no loop detectors.
    for key in ('max_ratio', 'line_min_repeats', 'max_char_run'):
      c.degeneration[key] = 0
    c.degeneration.max_identical_calls = 0
  c.turn_mask = _turn_mask()
  c.turn_mask.enabled = variant == 'iris'
  c.examples_per_reason = 3
  # Calibration: periods and lengths (characters) of looped variants.
  c.loop_periods = (30, 120, 500, 1000)
  c.loop_lengths = (1024, 2048, 4096, 8192)
  c.seed = 0
  # Rubric induction: trajectories sampled for free-form critiques.
  c.rubric_samples = 20
  return c
