"""The in-process policy's setup errors, raised before any model is built.

The working path (an SFT checkpoint scored by eval.run) is tested in
tests/train/sft/test_checkpoint_to_sampler.py; the random-init pulse in
test_run_sampler.py.
"""

import pytest

from search_agent.evaluation import in_process
from search_agent.model import checkpoint_params

pytestmark = pytest.mark.maxtext  # in_process imports the model package

GOLDEN_TOKENIZER = 'tests/chat/golden/tiny_tokenizer'


def test_missing_checkpoint_dir(tmp_path):
  with pytest.raises(checkpoint_params.CheckpointError, match='not exist'):
    in_process.build({'checkpoint_dir': str(tmp_path / 'run')})


def test_workdir_without_a_checkpoint(tmp_path):
  (tmp_path / 'checkpoints').mkdir()
  with pytest.raises(checkpoint_params.CheckpointError, match='no finished'):
    in_process.build({'checkpoint_dir': str(tmp_path)})


def test_params_path_and_checkpoint_dir_exclude_each_other(tmp_path):
  with pytest.raises(in_process.SamplerSetupError, match='at most one'):
    in_process.build(
        {'checkpoint_dir': str(tmp_path), 'params_path': str(tmp_path)}
    )


def test_tokenizer_larger_than_the_model_vocab():
  # Qwen3's 151k-id tokenizer on the tiny 4096-id model.
  with pytest.raises(in_process.SamplerSetupError, match='vocab_size'):
    in_process.build({'preset': 'tiny', 'tokenizer': 'qwen3'})
