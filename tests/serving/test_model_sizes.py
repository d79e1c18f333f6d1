"""The served model takes the sizes a checkpoint was trained with (dims)."""

import jax
import pytest

from search_agent.model import families
from search_agent.serving import build
from tests.serving import conftest

pytestmark = pytest.mark.maxtext


def _layers_and_head_dim(served) -> tuple[int, int]:
  """From the scanned query kernel: [embed, layers, heads, head_dim]."""
  leaves = jax.tree_util.tree_leaves_with_path(
      served.engine.core.abstract_params()
  )
  query = [l for p, l in leaves if 'query' in jax.tree_util.keystr(p)]
  assert query, 'no query projection in the served params'
  return query[0].shape[1], query[0].shape[-1]


def test_served_engine_has_the_configured_sizes():
  c = conftest.tiny_config()
  c.engine.update(slots=1, max_context=256)
  c.model.dims = ('head_dim=32', 'base_num_decoder_layers=3')
  served = build.build(c)
  try:
    sizes = _layers_and_head_dim(served)
  finally:
    served.engine.close()
  assert sizes == (3, 32)  # the preset's: (2, 16)
  c.model.dims = ('heads=8',)
  with pytest.raises(families.DimsError, match='heads'):
    build.build(c)
