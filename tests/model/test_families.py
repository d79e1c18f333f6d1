"""Model presets with some sizes overridden (families.with_dims)."""

import pytest

from search_agent.model import families


def test_with_dims_replaces_only_the_named_sizes():
  tiny = families.model_preset('tiny')
  wider = families.with_dims(
      tiny, ('head_dim=32', ' base_num_decoder_layers = 3')
  )
  dims = dict(wider.dims)
  assert dims['head_dim'] == 32 and dims['base_num_decoder_layers'] == 3
  changed = ('head_dim', 'base_num_decoder_layers')
  assert {k: v for k, v in dims.items() if k not in changed} == {
      k: v for k, v in tiny.dims if k not in changed
  }
  assert wider.vocab_size == tiny.vocab_size
  # A mapping works too; no overrides (or the preset's own values) is the preset.
  by_map = families.with_dims(tiny, {'head_dim': '32'})
  assert by_map == families.with_dims(tiny, ('head_dim=32',))
  assert dict(by_map.dims)['head_dim'] == 32
  assert families.with_dims(tiny, ()) is tiny
  assert families.with_dims(tiny, ('head_dim=16',)) is tiny


@pytest.mark.parametrize(
    'entry, message',
    [
        ('heads=8', "'heads'.*sizes are"),
        ('head_dim=wide', 'must be an integer'),
        ('head_dim', 'must be an integer'),
    ],
)
def test_with_dims_names_the_bad_override(entry, message):
  with pytest.raises(families.DimsError, match=message):
    families.with_dims(families.model_preset('tiny'), (entry,))


def test_presets_sized_by_maxtext_have_no_dims_to_override():
  with pytest.raises(families.DimsError, match='none to override'):
    families.with_dims(families.model_preset('qwen3-30b-a3b'), ('head_dim=32',))
