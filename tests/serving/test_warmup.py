"""The serve config's warm-up compiles before traffic and changes no output."""

from search_agent.model import engine_types as T
from search_agent.serving import build
from tests.serving import conftest


def _turns(engine):
  """Greedy tokens of a fresh prompt, then of a session's follow-up turn."""
  first = list(range(5, 45))
  a = engine.generate(
      T.GenerateRequest(input_ids=tuple(first), temperature=0.0,
                        max_new_tokens=6, session_id='s')
  )  # fmt: skip
  follow = first + list(a.token_ids) + list(range(50, 70))
  b = engine.generate(
      T.GenerateRequest(input_ids=tuple(follow), temperature=0.0,
                        max_new_tokens=6, session_id='s')
  )  # fmt: skip
  return list(a.token_ids), list(b.token_ids)


def test_warmup_leaves_outputs_as_without_it():
  # Two fresh builds of the same config (the package's shared server has had
  # its weights replaced by test_api's /update_weights).
  c = conftest.tiny_config()
  plain = build.build(c)
  try:
    expected = _turns(plain.engine)
  finally:
    plain.engine.close()
  c.warmup.update(enabled=True, max_extend_width=32)
  warmed = build.build(c)
  try:
    # The warm-up wrote garbage into the cache rows: a request taking a slot
    # must not see it, on its first turn (prefill) or its next (extend).
    assert _turns(warmed.engine) == expected
    assert warmed.engine.metrics()['extends'] >= 1
  finally:
    warmed.engine.close()
