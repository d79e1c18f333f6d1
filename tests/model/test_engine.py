"""Rollout engine on the tiny MaxText MoE: exactness, batching, sessions."""

import dataclasses
import threading

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from search_agent.model import engine as engine_lib
from search_agent.model import engine_core
from search_agent.model import engine_types as T
from search_agent.model import families
from search_agent.model import logprobs
from search_agent.model import maxtext_model
from search_agent.model import sampler as sampler_lib

pytestmark = [pytest.mark.maxtext, pytest.mark.slow]

PROMPTS = [[5, 6, 7, 8, 9, 10, 11], [100, 200, 300]]
LONG = list(range(40, 80))  # prefilled in one forward (>= prefill_min_tokens)
CONFIG = T.EngineConfig(
    slots=4, max_context=96, max_new_tokens=16, max_chunk=24,
    prefill_min_tokens=20, steps_per_call=4, max_queue=8,
)  # fmt: skip


@pytest.fixture(scope='module')
def engine(tiny_cfg, model1):
  core = engine_core.EngineCore(
      tiny_cfg, families.layout_preset('fsdp'), slots=CONFIG.slots,
      max_context=CONFIG.max_context, ring_len=CONFIG.ring_len,
      steps_per_call=CONFIG.steps_per_call, max_extend=CONFIG.max_extend,
      devices=jax.devices()[:1],
  )  # fmt: skip
  e = engine_lib.Engine(core, CONFIG, vocab_size=tiny_cfg.vocab_size)
  e.start(model1.params, version=7)
  yield e
  e.close()


def _greedy(prompt, n=12, **kw):
  return T.GenerateRequest(
      input_ids=tuple(prompt), temperature=0.0, max_new_tokens=n, **kw
  )


def _full_forward(model, seq, routing=None):
  toks = jnp.asarray([seq[:-1]], jnp.int32)
  n = toks.shape[1]
  pos, seg = jnp.arange(n)[None], jnp.ones_like(toks)
  forced = None if routing is None else jnp.asarray(routing[None, :n])
  with model.rules():
    lp, out = logprobs.token_logprobs(
        model, model.params, toks, pos, seg, jnp.asarray([seq[1:]]), forced
    )
    logits = maxtext_model.logits_from_hidden(
        model.graphdef, model.params, model.rest, out.hidden_btd
    )
  return np.asarray(lp[0]), np.asarray(jnp.argmax(logits[0], -1)), out


def test_greedy_equals_sampler_and_full_forward_argmax(
    engine, tiny_cfg, model1
):
  sampler = sampler_lib.Sampler(
      tiny_cfg, families.layout_preset('fsdp'), batch_size=3,
      max_prompt_len=48, max_new_tokens=12, devices=jax.devices()[:1],
  )  # fmt: skip
  sampler.set_params(model1.params, policy_version=7)
  prompts = PROMPTS + [LONG]
  ref = sampler.generate(prompts, temperature=0.0)
  for prompt, want in zip(prompts, ref):
    got = engine.generate(_greedy(prompt))
    assert got.token_ids == want.token_ids
    assert got.finish_reason == 'length' and got.versions == (7,) * 12
    np.testing.assert_allclose(got.logprobs, want.logprobs, atol=1e-4)
    seq = list(prompt) + list(got.token_ids)
    lp, argmax, out = _full_forward(model1, seq)
    assert tuple(argmax[len(prompt) - 1 :].tolist()) == got.token_ids
    np.testing.assert_allclose(lp[len(prompt) - 1 :], got.logprobs, atol=1e-4)
    # Routing of every token fed, i.e. prompt + generated but the last.
    assert got.routed_from == 0
    np.testing.assert_array_equal(got.routed_experts, out.routing_bsle[0])


def test_sampled_logprobs_are_the_sampling_distribution(engine, model1):
  prompt = [21, 22, 23, 24, 25, 26, 27]  # no other slot shares a prefix
  req = T.GenerateRequest(
      input_ids=tuple(prompt), max_new_tokens=12, seed=5, session_id='x'
  )
  got = engine.generate(req)
  again = engine.generate(dataclasses.replace(req, session_id='y'))
  assert got.routed_from == 0 and got.cached_tokens == 0
  assert got.token_ids == again.token_ids  # the seed fixes the draw
  assert again.cached_tokens == 6  # copied from session x's slot
  seq = prompt + list(got.token_ids)
  lp, _, _ = _full_forward(model1, seq, got.routed_experts)
  np.testing.assert_allclose(lp[len(prompt) - 1 :], got.logprobs, atol=1e-4)


def test_session_turn_prefills_only_new_tokens(engine, model1):
  LONG2 = list(range(300, 340))  # pylint: disable=invalid-name
  first = engine.generate(_greedy(LONG2, 8, session_id='s1'))
  turn2 = LONG2 + list(first.token_ids) + [900, 901, 902]
  before = engine.metrics()
  second = engine.generate(_greedy(turn2, 8, session_id='s1'))
  after = engine.metrics()
  # The cached context is every token fed in turn 1.
  assert second.cached_tokens == len(LONG2) + len(first.token_ids) - 1
  assert after['prefill_tokens'] == before['prefill_tokens']
  # 4 new tokens: 3 in one extend forward, the last in the first decode step.
  assert after['extended_tokens'] - before['extended_tokens'] == 3
  assert after['extends'] - before['extends'] == 1
  assert after['fed_prompt_tokens'] - before['fed_prompt_tokens'] == 1
  # The routing of the whole sequence, the extended tokens included.
  _, argmax, out = _full_forward(model1, turn2 + list(second.token_ids))
  assert tuple(argmax[len(turn2) - 1 :].tolist()) == second.token_ids
  assert second.routed_from == 0
  np.testing.assert_array_equal(second.routed_experts, out.routing_bsle[0])
  # A diverging turn reuses only the common prefix.
  branch = engine.generate(_greedy(LONG2[:30] + [7, 7], 8, session_id='s2'))
  assert branch.cached_tokens == 30  # copied from session s1's slot
  # Same tokens as a fresh request over the whole context.
  engine.release('s1')
  engine.release('s2')
  with pytest.raises(T.UnknownIdError):
    engine.release('s1')
  fresh = engine.generate(_greedy(turn2, 8, session_id='other'))
  assert fresh.cached_tokens == 0 and fresh.token_ids == second.token_ids
  np.testing.assert_allclose(fresh.logprobs, second.logprobs, atol=1e-4)
  engine.release('other')


def test_continuous_batching_matches_requests_alone(engine):
  prompts = [[i + 1, i + 2, i + 3] for i in range(7)]
  alone = [engine.generate(_greedy(p, 5 + i)) for i, p in enumerate(prompts)]
  results = [None] * len(prompts)
  done = threading.Barrier(len(prompts) + 1)

  def run(i):
    results[i] = engine.generate(_greedy(prompts[i], 5 + i))
    done.wait()

  # 7 requests of different lengths on 4 slots: they join as others leave.
  for i in range(len(prompts)):
    threading.Thread(target=run, args=(i,)).start()
  done.wait(timeout=300)
  for a, b in zip(alone, results):
    assert a.token_ids == b.token_ids


def test_bad_requests(engine):
  with pytest.raises(
      T.ContextTooLongError, match='97 tokens is too long.*max_context.* is 96'
  ):
    engine.generate(_greedy([1] * 97))
  with pytest.raises(T.RequestError, match='vocabulary'):
    engine.generate(_greedy([1, 10**6]))
  with pytest.raises(T.RequestError, match='max_new_tokens'):
    engine.generate(_greedy([1], 17))
  with pytest.raises(T.UnknownIdError):
    engine.abort(['nope'])


def test_abort_returns_partial_pause_and_queue_limit(engine):
  engine.pause()
  box = []
  engine.submit(_greedy([3, 4, 5], 16, request_id='a1'), box.append)
  for i in range(CONFIG.max_queue - 1):
    engine.submit(_greedy([3, 4, 5], 2, request_id=f'q{i}'), box.append)
  with pytest.raises(T.QueueFullError, match='max_queue') as e:
    engine.submit(_greedy([3, 4, 5], 2), box.append)
  assert e.value.retry_after_s == CONFIG.retry_after_s
  engine.abort([f'q{i}' for i in range(CONFIG.max_queue - 1)])
  engine.abort(['a1'])
  engine.resume()
  engine.generate(_greedy([1, 2], 2))  # a full loop iteration ran
  assert {r.finish_reason for r in box} == {'abort'} and len(box) == 8


def test_update_weights_aborts_in_flight_and_recomputes(engine, model1):
  first = engine.generate(_greedy(PROMPTS[1], 6, session_id='w'))
  doubled = jax.tree.map(lambda x: x * 1.5, model1.params)
  info = engine.update_weights(doubled, version=8, abort=True)
  assert info['version'] == 8 and info['recomputed_tokens'] > 0
  turn2 = PROMPTS[1] + list(first.token_ids) + [11]
  second = engine.generate(_greedy(turn2, 6, session_id='w'))
  assert second.versions == (8,) * 6 and second.cached_tokens > 0
  fresh = engine.generate(_greedy(turn2, 6, session_id='w2'))
  assert fresh.token_ids == second.token_ids
  engine.update_weights(model1.params, version=9, abort=False)


def test_group_shares_its_prompt_prefill(engine):
  before = engine.metrics()
  prompt = tuple(range(200, 240))
  box = []
  engine.pause()
  for i in range(3):
    engine.submit(
        T.GenerateRequest(input_ids=prompt, max_new_tokens=4, seed=i,
                          session_id=f'g{i}', request_id=f'g{i}'),
        box.append,
    )  # fmt: skip
  engine.resume()
  engine.generate(_greedy([1], 1))
  after = engine.metrics()
  # One prefill forward of 39 tokens; the two others copy its KV.
  assert after['prefill_tokens'] - before['prefill_tokens'] == 39
  assert after['copied_tokens'] - before['copied_tokens'] == 2 * 39
  alone = engine.generate(
      T.GenerateRequest(input_ids=prompt, max_new_tokens=4, seed=2,
                        session_id='g-alone')
  )  # fmt: skip
  by_id = {r.request_id: r for r in box}
  assert by_id['g2'].token_ids == alone.token_ids


def _installed_core(tiny_cfg, params, ctx, *, slots, steps_per_call, extend):
  """An EngineCore (max_context 64) with `ctx` prefilled into every slot;
  `extend` is both max_extend and extend_budget."""
  core = engine_core.EngineCore(
      tiny_cfg, families.layout_preset('fsdp'), slots=slots, max_context=64,
      ring_len=24, steps_per_call=steps_per_call, max_extend=extend,
      extend_budget=extend, devices=jax.devices()[:1],
  )  # fmt: skip
  for slot in range(slots):
    core.prefill(params, ctx)
    core.install(slot, len(ctx))
  return core


def test_extend_equals_feeding_tokens_one_by_one(tiny_cfg, model1):
  """Extend forwards leave the cache, logits and routing that feeding the
  same tokens one per decode step (then committing them) leaves."""
  params, ctx, new = model1.params, list(range(40, 70)), list(range(5, 25))
  core = _installed_core(
      tiny_cfg, params, ctx, slots=3, steps_per_call=8, extend=16
  )
  # Slots 0 and 1 at a dynamic offset; 20 tokens = pieces of 16 and 4, one
  # row per forward (extend_budget), slot 1 shorter.
  out = core.extend(params, [(0, len(ctx), new), (1, len(ctx), new[:3])])
  # Slot 2: the tokens fed one per decode step, then moved into its context.
  n, z, ring0 = len(new), np.zeros(3, np.int32), core.ring
  blocks = []
  for k in range(3):
    forced = np.zeros((3, 8), np.int32)
    chunk = new[8 * k : 8 * k + 8]
    forced[2, : len(chunk)] = chunk
    blocks.append(core.decode_block(
        params, forced, np.asarray([0, 0, len(chunk)], np.int32), z,
        np.asarray([0, 0, len(ctx) + 8 * k], np.int32), z.astype(np.uint32),
        np.zeros(3, np.float32), np.ones(3, np.float32),
    ))  # fmt: skip
  core.commit(2, ring0, n, len(ctx))
  fed_routes = np.concatenate([b.routing_bkle[2] for b in blocks])[:n]
  # Greedy decode step after the last token: its argmax and log-probability.
  logp = np.asarray(jax.nn.log_softmax(out.logits_rv[0]))
  assert int(np.argmax(logp)) == blocks[2].tokens_bk[2, 3]
  np.testing.assert_allclose(logp.max(), blocks[2].logprobs_bk[2, 3],
                             atol=1e-5)  # fmt: skip
  np.testing.assert_array_equal(out.routing[0], fed_routes)
  np.testing.assert_array_equal(out.routing[1], fed_routes[:3])
  end = len(ctx) + n
  for path, x in engine_core._flat(core.cache):  # pylint: disable=protected-access
    name, ax = engine_core._leaf(path, core._axes)  # pylint: disable=protected-access
    if name not in ('cached_prefill_key', 'cached_prefill_value',
                    'cache_prefill_segment_id'):  # fmt: skip
      continue
    rows = [np.asarray(ax.row(x, i)) for i in range(3)]
    np.testing.assert_allclose(rows[0][:end], rows[2][:end], atol=1e-5)
    short = len(ctx) + 3
    np.testing.assert_allclose(rows[1][:short], rows[2][:short], atol=1e-5)
    if name == 'cache_prefill_segment_id':
      assert (rows[0][:end] == 1).all() and (rows[0][end:] == 0).all()
      assert (rows[1][short:] == 0).all()


def test_a_row_wider_than_the_extend_budget_goes_in_pieces_that_fit(
    tiny_cfg, model1
):
  """extend_budget bounds every forward's padded tokens (the attention
  weights, [rows, heads, width, max_context]), a single long row's too; the
  pieces leave what one wide forward leaves."""
  params, ctx, new = model1.params, list(range(40, 50)), list(range(5, 45))
  core = _installed_core(
      tiny_cfg, params, ctx, slots=2, steps_per_call=4, extend=64
  )
  sizes = []
  call = core._extend_call  # pylint: disable=protected-access

  def spy(p, rows):
    out = call(p, rows)
    sizes.append(out[2])
    return out

  core._extend_call = spy  # pylint: disable=protected-access
  wide = core.extend(params, [(0, len(ctx), new)])
  assert sizes == [64]
  sizes.clear()
  core.extend_budget = 16
  cut = core.extend(params, [(1, len(ctx), new)])
  assert sizes == [16, 16, 16] and cut.padded_tokens == 48
  np.testing.assert_allclose(cut.logits_rv, wide.logits_rv, atol=1e-4)
  if wide.routing[0] is not None:
    np.testing.assert_array_equal(cut.routing[0], wide.routing[0])
  end = len(ctx) + len(new)
  for path, x in engine_core._flat(core.cache):  # pylint: disable=protected-access
    name, ax = engine_core._leaf(path, core._axes)  # pylint: disable=protected-access
    if name in ('cached_prefill_key', 'cached_prefill_value',
                'cache_prefill_segment_id'):  # fmt: skip
      a, b = (np.asarray(ax.row(x, i))[:end] for i in range(2))
      np.testing.assert_allclose(b, a, atol=1e-5)


def test_a_smaller_decode_batch_makes_no_cache_of_its_own(
    tiny_cfg, monkeypatch
):
  """The decode graph of a batch of busy slots reads its rows from the
  slots' cache: making it allocates no cache of its own (it used to make a
  zeroed one and drop it, for a moment up to ~80% more cache on device)."""
  core = engine_core.EngineCore(
      tiny_cfg, families.layout_preset('fsdp'), slots=4, max_context=64,
      ring_len=24, steps_per_call=4, devices=jax.devices()[:1],
  )  # fmt: skip
  made, jit = [], jax.jit

  def spy(f, *args, **kwargs):
    g = jit(f, *args, **kwargs)

    def call(*a, **kw):
      out = g(*a, **kw)
      made.append(sum(x.nbytes for x in jax.tree.leaves(out)))
      return out

    return call

  monkeypatch.setattr(jax, 'jit', spy)
  rows = core._rows([2])  # pylint: disable=protected-access
  monkeypatch.undo()
  assert rows.tolist() == [2] and made
  row_bytes = sum(x.nbytes for x in jax.tree.leaves(core.cache)) / 4
  assert sum(made) < row_bytes / 10


@pytest.fixture(scope='module')
def chunked(tiny_cfg, model1):
  """The engine with chunked prefill: 16 prompt tokens between blocks."""
  config = dataclasses.replace(CONFIG, prefill_chunk=16)
  core = engine_core.EngineCore(
      tiny_cfg, families.layout_preset('fsdp'), slots=config.slots,
      max_context=config.max_context, ring_len=config.ring_len,
      steps_per_call=config.steps_per_call, max_extend=config.max_extend,
      devices=jax.devices()[:1],
  )  # fmt: skip
  e = engine_lib.Engine(core, config, vocab_size=tiny_cfg.vocab_size)
  e.start(model1.params, version=7)
  yield e
  e.close()


def test_chunked_prefill_is_exact_and_decodes_between_chunks(
    engine, chunked, model1
):
  # A request decoding while a long prompt goes in, chunk by chunk.
  box = []
  chunked.submit(_greedy(PROMPTS[0], 16, request_id='d'), box.append)
  while not chunked.metrics()['generated_tokens']:  # decoding
    pass
  before = chunked.metrics()
  long = chunked.generate(_greedy(LONG, 12, session_id='c'))
  after = chunked.metrics()
  while not box:
    pass
  (decoding,) = box
  # Both are what one-shot prefill (and a lone request) gives.
  assert (
      decoding.token_ids == engine.generate(_greedy(PROMPTS[0], 16)).token_ids
  )
  want = engine.generate(_greedy(LONG, 12))
  assert long.token_ids == want.token_ids
  np.testing.assert_allclose(long.logprobs, want.logprobs, atol=1e-4)
  np.testing.assert_array_equal(long.routed_experts, want.routed_experts)
  assert long.routed_from == 0 and long.cached_tokens == 0
  # 39 prompt tokens in chunks of 16, none in a prefill-mode forward.
  assert after['chunks'] - before['chunks'] == 3
  assert after['chunked_tokens'] - before['chunked_tokens'] == len(LONG) - 1
  assert after['prefill_tokens'] == before['prefill_tokens']
  # A session turn adding more than max_chunk tokens keeps its context and
  # chunks only the new tokens.
  turn2 = LONG + list(long.token_ids) + list(range(500, 530))
  second = chunked.generate(_greedy(turn2, 8, session_id='c'))
  assert second.cached_tokens == len(LONG) + len(long.token_ids) - 1
  ref = engine.generate(_greedy(turn2, 8))
  assert second.token_ids == ref.token_ids
  np.testing.assert_allclose(second.logprobs, ref.logprobs, atol=1e-4)
  _, argmax, out = _full_forward(model1, turn2 + list(second.token_ids))
  assert tuple(argmax[len(turn2) - 1 :].tolist()) == second.token_ids
  assert second.routed_from == 0
  np.testing.assert_array_equal(second.routed_experts, out.routing_bsle[0])


@pytest.fixture(scope='module')
def stepped(tiny_cfg, model1):
  """The chunked engine without its thread: the test calls `step`."""
  config = dataclasses.replace(CONFIG, prefill_chunk=16)
  core = engine_core.EngineCore(
      tiny_cfg, families.layout_preset('fsdp'), slots=config.slots,
      max_context=config.max_context, ring_len=config.ring_len,
      steps_per_call=config.steps_per_call, max_extend=config.max_extend,
      devices=jax.devices()[:1],
  )  # fmt: skip
  e = engine_lib.Engine(core, config, vocab_size=tiny_cfg.vocab_size)
  e.start(model1.params, version=7, thread=False)
  return e


def test_a_prefix_copied_while_its_prompt_is_in_chunks_keeps_routing(
    engine, stepped
):
  # A group's sibling arrives while the first rollout's prompt is still
  # going in chunk by chunk: it copies the chunks already in, and its reply
  # must still route every position (routed_from 0).
  prompt = list(range(120, 180))
  done = {}
  keep = lambda r: done.setdefault(r.request_id, r)
  stepped.submit(_greedy(prompt, 4, session_id='a', request_id='a'), keep)
  stepped.step()  # a: 16 of its 59 prompt tokens in
  # b copies those 16, then chunks the 43 others itself.
  stepped.submit(_greedy(prompt, 4, session_id='b', request_id='b'), keep)
  stepped.step()  # a: 32 in
  # c copies a's 32 and extends the 12 others in one forward.
  stepped.submit(_greedy(prompt[:45], 4, session_id='c', request_id='c'), keep)
  for _ in range(40):
    if len(done) == 3:
      break
    stepped.step()
    for s in stepped.slots:  # every slot knows the routing of its context
      if s.ctx:
        assert s.routes is not None and len(s.routes) == len(s.ctx), s.index
  assert stepped.metrics()['copied_tokens'] == 16 + 32
  full = engine.generate(_greedy(prompt, 4))
  short = engine.generate(_greedy(prompt[:45], 4))
  for rid, want in (('a', full), ('b', full), ('c', short)):
    got = done[rid]
    assert got.token_ids == want.token_ids, rid
    assert got.routed_from == 0, rid
    np.testing.assert_array_equal(got.routed_experts, want.routed_experts)
