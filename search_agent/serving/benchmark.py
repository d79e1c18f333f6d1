"""Rollout server vs the in-process sampler on one multi-turn agent workload.

  JAX_PLATFORMS=cpu python -m search_agent.serving.benchmark \
      --trajectories=32 --turns=5

  JAX_PLATFORMS=cpu python -m search_agent.serving.benchmark \
      --scenario=long_prefill --long_prompt=1536 --prefill_chunk=256

Both run the tiny MoE (random weights, one CPU device) behind the llm
protocol: the server over HTTP through the token-exact ServerLLM (sessions
keep their KV between turns), the sampler through SamplerLLM (concurrent
calls batched into one `Sampler.generate`, every prompt prefilled whole,
padded to max_prompt_len). Printed: generated tokens/s, mean time per
trajectory, prompt tokens computed (prefill) against the prompt tokens sent,
and tokens/s at concurrency 1, 8 and the full count. Sampling: temperature
1.0, top-p 1.0 (RL settings).

`--scenario=long_prefill` measures what a fresh long prompt costs the
requests already decoding, on the engine alone: `--decoding` requests
decode while one prompt of `--long_prompt` random tokens arrives, once
prefilled in one forward and once chunked (`--prefill_chunk`). Printed per
mode: the gaps between decode blocks before and while the prompt goes in
(the worst is the decode stall) and the prompt's time to its first token.
"""

import json
import logging
import threading
import time

from absl import app
from absl import flags
import httpx
import jax
import numpy as np

from search_agent.chat import chat_prompts
from search_agent.chat import tokenizer as tokenizer_lib
from search_agent.llm import protocol
from search_agent.llm import sampler_client
from search_agent.llm import server_client
from search_agent.model import engine as engine_lib
from search_agent.model import engine_core
from search_agent.model import engine_types
from search_agent.model import families
from search_agent.model import maxtext_model
from search_agent.model import sampler as sampler_lib
from search_agent.serving import app as app_lib
from search_agent.serving import bench_workload as W
from search_agent.serving import build
from tpu_configs import serve as serve_config

_N = flags.DEFINE_integer('trajectories', 32, 'Concurrent trajectories.')
_TURNS = flags.DEFINE_integer('turns', 5, 'Model calls per trajectory.')
_PROMPT = flags.DEFINE_integer('prompt_len', 256, 'First prompt tokens.')
_OUT = flags.DEFINE_list('out_range', ['16', '64'], 'Tokens per call.')
_OBS = flags.DEFINE_list('obs_range', ['64', '128'], 'Observation tokens.')
_STEPS = flags.DEFINE_integer('steps_per_call', 8, 'Server decode steps.')
_SWEEP = flags.DEFINE_list('concurrency', ['1', '8'], 'Extra sweep points.')
_PORT = flags.DEFINE_integer('port', 8911, 'Server port.')
_SCENARIO = flags.DEFINE_enum(
    'scenario', 'workload', ['workload', 'long_prefill'], 'What to measure.'
)
_LONG = flags.DEFINE_integer('long_prompt', 1536, 'long_prefill: prompt.')
_DECODING = flags.DEFINE_integer('decoding', 4, 'long_prefill: decoders.')
_PREFILL_CHUNK = flags.DEFINE_integer(
    'prefill_chunk', 256, "long_prefill: the chunked mode's chunk."
)
_CHUNK = flags.DEFINE_integer(
    'max_chunk',
    0,
    'Server max_chunk (0: obs max + 64; smaller re-prefills'
    ' the whole context when a turn adds more).',
)


def _workload(n, vocab, seed):
  return W.make(
      n, turns=_TURNS.value, prompt_len=_PROMPT.value,
      out_range=tuple(map(int, _OUT.value)),
      obs_range=tuple(map(int, _OBS.value)), vocab=vocab, seed=seed,
  )  # fmt: skip


def _measure(llm, prompts, vocab, before=None, after=None) -> dict:
  params = protocol.SamplingParams(temperature=1.0, top_p=1.0)
  W.run(llm, prompts, _workload(1, vocab, 99)[:1], params, 1)  # compile
  out = {}
  for c in [_N.value] + [int(x) for x in _SWEEP.value]:
    prompts.prompt_tokens = 0
    b = before() if before else {}
    s = W.run(llm, prompts, _workload(c, vocab, c), params, c)
    a = after() if after else {}
    row = dict(
        tokens_per_s=round(s.tokens_per_s, 1),
        seconds=round(s.seconds, 2),
        per_trajectory_s=round(s.per_trajectory_s, 2),
        generated=s.generated,
        prompt_tokens_sent=prompts.prompt_tokens,
    )
    for k in a:
      row[k] = round(a[k] - b[k], 2)
    out[c] = row
  return out


def _server(cfg, layout, params, tok, max_ctx) -> tuple[dict, object]:
  ecfg = engine_types.EngineConfig(
      slots=_N.value, max_context=max_ctx, max_new_tokens=int(_OUT.value[1]),
      max_chunk=_CHUNK.value or int(_OBS.value[1]) + 64, prefill_min_tokens=64,
      steps_per_call=_STEPS.value, max_queue=4 * _N.value,
  )  # fmt: skip
  core = engine_core.EngineCore(
      cfg, layout, slots=ecfg.slots, max_context=max_ctx,
      ring_len=ecfg.ring_len, steps_per_call=ecfg.steps_per_call,
      max_extend=ecfg.max_extend, devices=jax.devices()[:1],
  )  # fmt: skip
  # Compile every decode batch and the extends of one observation (plus
  # the last generated token), as a server does before it takes traffic.
  t0 = time.monotonic()
  obs = range(int(_OBS.value[0]) + 1, int(_OBS.value[1]) + 2)
  core.warmup(
      core.place_params(params), sorted(set(map(core.extend_width, obs)))
  )
  compile_s = time.monotonic() - t0
  engine = engine_lib.Engine(core, ecfg, vocab_size=cfg.vocab_size)
  engine.start(params, 0)
  served = build.Served(engine, chat_prompts.RendererPrompts(tok), 'tiny')
  srv = app_lib.make_server(served, host='127.0.0.1', port=_PORT.value)
  threading.Thread(target=srv.run, daemon=True).start()
  url = f'http://127.0.0.1:{_PORT.value}'
  while not srv.started:
    time.sleep(0.05)
  prompts = W.TokenPrompts(tok.decode)
  llm = server_client.ServerLLM(
      server_client.ServerConfig(base_urls=(url,)), prompts
  )

  def counters():
    m = httpx.get(url + '/metrics').json()
    return {
        'prefill_tokens_computed': (
            m['prefill_tokens'] + m['extended_tokens'] + m['fed_prompt_tokens']
        ),
        'reused_tokens': m['reused_tokens'],
        'extended_tokens': m['extended_tokens'],
        'extend_padded_tokens': m['extend_padded_tokens'],
        'extend_calls': m['extends'],
        'decode_blocks': m['blocks'],
        'decode_block_s': m['block_seconds'],
        'extend_s': m['extend_seconds'],
        'prefill_s': m['prefill_seconds'],
    }

  try:
    out = _measure(llm, prompts, cfg.vocab_size, counters, counters)
    out['warmup_compile_s'] = round(compile_s, 1)
    return out, srv
  finally:
    srv.should_exit = True
    engine.close()


def _sampler(cfg, layout, params, tok, max_ctx) -> dict:
  s = sampler_lib.Sampler(
      cfg, layout, batch_size=_N.value, max_prompt_len=max_ctx,
      max_new_tokens=int(_OUT.value[1]), devices=jax.devices()[:1],
  )  # fmt: skip
  s.set_params(params, 0)
  prompts = W.TokenPrompts(tok.decode)
  out = _measure(sampler_client.SamplerLLM(s, prompts), prompts, cfg.vocab_size)
  for c, row in out.items():  # every prompt prefilled whole, padded
    row['prefill_tokens_computed'] = row['prompt_tokens_sent']
    row['prefill_tokens_padded'] = c * _TURNS.value * max_ctx
  return out


def _gaps(times: list[float]) -> dict[str, float]:
  gaps = sorted(b - a for a, b in zip(times, times[1:]))
  if not gaps:
    return {'blocks': len(times)}
  return {
      'blocks': len(times),
      'gap_median_ms': round(1e3 * gaps[len(gaps) // 2], 1),
      'gap_max_ms': round(1e3 * gaps[-1], 1),
  }


def _long_prefill(cfg, layout, params, chunk: int) -> dict:
  """Decode block gaps while one long fresh prompt goes in (see above)."""
  n_long, out_len = _LONG.value, 256
  ecfg = engine_types.EngineConfig(
      slots=_DECODING.value + 1, max_context=n_long + 2 * out_len + 64,
      max_new_tokens=out_len, max_chunk=256, prefill_min_tokens=64,
      steps_per_call=_STEPS.value, prefill_chunk=chunk,
  )  # fmt: skip
  core = engine_core.EngineCore(
      cfg, layout, slots=ecfg.slots, max_context=ecfg.max_context,
      ring_len=ecfg.ring_len, steps_per_call=ecfg.steps_per_call,
      max_extend=ecfg.max_extend, devices=jax.devices()[:1],
  )  # fmt: skip
  core.warmup(core.place_params(params))
  engine = engine_lib.Engine(core, ecfg, vocab_size=cfg.vocab_size)
  engine.start(params, 0)
  rng = np.random.default_rng(0)
  ids = lambda n: tuple(int(x) for x in rng.integers(10, cfg.vocab_size, n))  # pylint: disable=g-long-lambda
  req = lambda p, n: engine_types.GenerateRequest(input_ids=p, max_new_tokens=n)  # pylint: disable=g-long-lambda
  try:
    engine.generate(req(ids(n_long), 1))  # compiles the prefill bucket
    done = threading.Event()
    for _ in range(_DECODING.value):
      engine.submit(req(ids(32), out_len), lambda r: done.set())
    while engine.stats.generated_tokens < 4 * _STEPS.value * _DECODING.value:
      time.sleep(0.01)
    t0 = time.monotonic()
    engine.generate(req(ids(n_long), 1))
    t1 = time.monotonic()
    done.wait(600)
    ends = [t for t, _ in list(engine.stats.recent)]
    before = [t for t in ends if t < t0]
    # The gaps that span the prompt: from the last block before it to the
    # first after its first token.
    during = (
        before[-1:]
        + [t for t in ends if t >= t0][
            : 1 + sum(t <= t1 for t in ends if t >= t0)
        ]
    )
    return {
        'prefill_chunk': chunk,
        'long_prompt_tokens': n_long,
        'decoding_requests': _DECODING.value,
        'long_prompt_first_token_s': round(t1 - t0, 3),
        'before': _gaps(before),
        'during': _gaps(during),
    }
  finally:
    engine.close()


def main(argv):
  del argv
  logging.getLogger('httpx').setLevel(logging.WARNING)
  cfg = families.model_preset('tiny')
  layout = families.layout_preset('fsdp')
  if _SCENARIO.value == 'long_prefill':
    model = maxtext_model.build(cfg, layout, devices=jax.devices()[:1])
    rows = [_long_prefill(cfg, layout, model.params, c)
            for c in (0, _PREFILL_CHUNK.value)]  # fmt: skip
    print(json.dumps({'long_prefill': rows}, indent=1))
    return
  max_ctx = _PROMPT.value + _TURNS.value * (
      int(_OUT.value[1]) + int(_OBS.value[1])
  )
  model = maxtext_model.build(cfg, layout, devices=jax.devices()[:1])
  tok = tokenizer_lib.load_tokenizer(serve_config.get_config('tiny').tokenizer)
  server, _ = _server(cfg, layout, model.params, tok, max_ctx)
  sampler = _sampler(cfg, layout, model.params, tok, max_ctx)
  n = _N.value
  report = {'server': server, 'sampler': sampler,
            'speedup_tokens_per_s': round(server[n]['tokens_per_s'] / sampler[n]['tokens_per_s'], 2)}  # fmt: skip
  print(json.dumps(report, indent=1))


if __name__ == '__main__':
  app.run(main)
