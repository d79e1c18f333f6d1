"""An SFT run's checkpoint, restored (params only) into the sampler and eval.

The tiny SFT runs 2 updates into tmp; its checkpoints are restored onto a
2-device sampler mesh (the trainer ran on 1 device), compared with the
trainer's own parameters, decoded greedily against a full forward, and
evaluated by `eval.run` with the in-process policy.
"""

import dataclasses
import json
import subprocess
import sys

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from search_agent.agent import trajectory
from search_agent.corpus.sources import CorpusSpec
from search_agent.evaluation import results
from search_agent.model import checkpoint_params
from search_agent.model import families
from search_agent.model import maxtext_model
from search_agent.model import sampler as sampler_lib
from search_agent.search.tantivy_build import build_tantivy_index
from search_agent.train import checkpoint as checkpoint_lib
from search_agent.train import data as data_lib
from search_agent.train import optim
from search_agent.train import schedule as schedule_lib
from search_agent.train.sft import config as sft_config
from search_agent.train.sft import trainer

pytestmark = [pytest.mark.maxtext, pytest.mark.slow]

TOKENIZER = 'tests/chat/golden/tiny_tokenizer'
# Equal lengths: one compile of the full forward for both.
PROMPTS = [[5, 6, 7, 8, 9, 10, 11], [100, 200, 300, 400, 500, 600, 700]]


def _sft_config(model, sft_jsonl, repo_root, *, lines: int, updates: int):
  """A tiny SFT of `updates` updates on the first `lines` demonstrations,
  a checkpoint after every update."""
  return sft_config.SFTConfig(
      model=dataclasses.replace(model, max_target_length=512, logits_chunk=128),
      layout=families.layout_preset('fsdp'),
      optimizer=optim.OptimizerConfig(),
      schedule=schedule_lib.ScheduleConfig(kind='constant', peak=1e-2),
      data=data_lib.DataConfig(
          train_path=sft_jsonl,
          train_lines=(0, lines),
          seq_len=512,
          num_packing_bins=4,
      ),
      checkpoint=checkpoint_lib.CheckpointConfig(every=1, keep=3),
      tokenizer_path=str(repo_root / TOKENIZER),
      total_updates=updates,
  )


@pytest.fixture(scope='module')
def sft_run(tmp_path_factory, repo_root, sft_jsonl):
  """(workdir, host params after update 2) of a 2-update tiny SFT."""
  cfg = _sft_config(
      families.model_preset('tiny'), sft_jsonl, repo_root, lines=20, updates=2
  )
  workdir = tmp_path_factory.mktemp('sft_run')
  state = trainer.train(cfg, str(workdir), devices=jax.devices()[:1])
  return workdir, jax.device_get(state['params'])


def test_sampler_restores_the_trained_params_and_decodes_greedily(
    sft_run, tiny_cfg_for_sampler
):
  workdir, trained = sft_run
  devices = jax.devices()[:2]
  s = sampler_lib.Sampler(
      tiny_cfg_for_sampler, families.layout_preset('fsdp'), batch_size=2,
      max_prompt_len=16, max_new_tokens=8, devices=devices,
  )  # fmt: skip
  like = s.abstract_params()
  params, step = checkpoint_params.restore_params(workdir, like)
  assert step == 2
  # Exactly the trainer's weights after update 2, on the sampler's mesh.
  jax.tree.map(np.testing.assert_array_equal, params, trained)
  shardings = jax.tree.leaves(jax.tree.map(lambda x: x.sharding, params))
  assert shardings == jax.tree.leaves(jax.tree.map(lambda x: x.sharding, like))
  assert any(len(set(x.addressable_devices)) == 2 for x in shardings)
  first, _ = checkpoint_params.restore_params(workdir, like, step=1)
  assert not all(
      np.array_equal(a, b)
      for a, b in zip(jax.tree.leaves(first), jax.tree.leaves(trained))
  )

  s.set_params(params, policy_version=step)
  samples = s.generate(PROMPTS, temperature=0.0)
  model = maxtext_model.build(
      tiny_cfg_for_sampler, families.layout_preset('fsdp'), devices=devices
  )
  for prompt, sample in zip(PROMPTS, samples):
    assert sample.policy_version == 2 and len(sample.token_ids) == 8
    seq = list(prompt) + list(sample.token_ids)
    toks = jnp.asarray([seq[:-1]], jnp.int32)
    pos = jnp.arange(toks.shape[1])[None]
    with model.rules():
      out = maxtext_model.forward(
          model.graphdef, params, model.rest, toks, pos, jnp.ones_like(toks)
      )
      logits = maxtext_model.logits_from_hidden(
          model.graphdef, params, model.rest, out.hidden_btd
      )
    argmax = np.asarray(jnp.argmax(logits[0], axis=-1))
    assert tuple(argmax[len(prompt) - 1 :].tolist()) == sample.token_ids


@pytest.fixture(scope='module')
def tiny_cfg_for_sampler():
  return dataclasses.replace(
      families.model_preset('tiny'), max_target_length=32, logits_chunk=32
  )


def test_eval_run_on_the_sft_checkpoint(sft_run, tmp_path, repo_root):
  workdir, _ = sft_run
  index = tmp_path / 'index'
  build_tantivy_index(CorpusSpec(max_docs=500), index)
  out_dir = tmp_path / 'eval'
  out = subprocess.run(
      [sys.executable, '-m', 'eval.run',
       '--config=tpu_configs/eval.py:tiny', f'--workdir={out_dir}',
       f'--config.search.index_dir={index}',
       '--config.policy.kind=sampler', '--config.policy.name=tiny-sft',
       f'--config.sampler.checkpoint_dir={workdir}',
       '--config.sampler.checkpoint_step=1',
       f'--config.sampler.tokenizer={repo_root / TOKENIZER}',
       '--config.sampler.max_prompt_len=1536',
       '--config.sampler.max_new_tokens=16', '--config.sampler.batch_size=2',
       '--config.sampler.devices=1',
       '--config.dataset.limit=2', '--config.agent.max_steps=2',
       '--config.agent.context_limit=1552',
       '--config.agent.max_output_tokens=16',
       '--config.agent.min_output_tokens=8'],
      cwd=repo_root, capture_output=True, text=True, timeout=600, check=False,
  )  # fmt: skip
  assert out.returncode == 0, out.stderr[-3000:]
  summary = json.loads(out.stdout.strip().splitlines()[-1])
  assert summary['questions'] == 2
  manifest = json.loads((out_dir / 'manifest.json').read_text())
  policy = manifest['policy_llm']
  assert policy['checkpoint']['step'] == 1
  assert policy['checkpoint']['dir'] == str(workdir / 'checkpoints' / '1')
  assert policy['sampler']['checkpoint_dir'] == str(workdir)
  trajs = list(trajectory.iter_jsonl(out_dir / results.TRAJECTORIES))
  assert len(trajs) == 2
  for t in trajs:
    # Every generated token carries the checkpoint step as its version.
    assert {v for v in t.tokens.versions if v >= 0} == {1}


def test_the_sampler_takes_the_sizes_the_run_was_trained_with(
    tmp_path, repo_root, sft_jsonl
):
  """A run trained with wider heads (model.dims) restores into the in-process
  sampler given the same `dims`, and is refused, naming the shapes, without."""
  # pylint: disable-next=g-import-not-at-top
  from search_agent.evaluation import in_process

  wider = families.with_dims(families.model_preset('tiny'), ('head_dim=32',))
  cfg = _sft_config(wider, sft_jsonl, repo_root, lines=8, updates=1)
  state = trainer.train(cfg, str(tmp_path), devices=jax.devices()[:1])
  section = {
      'checkpoint_dir': str(tmp_path),
      'tokenizer': str(repo_root / TOKENIZER),
      'batch_size': 1,
      'max_prompt_len': 16,
      'max_new_tokens': 4,
      'devices': 1,
  }
  llm, manifest = in_process.build({**section, 'dims': ('head_dim=32',)})
  assert manifest['sampler']['dims'] == ('head_dim=32',)
  trained = jax.device_get(state['params'])
  restored = jax.device_get(llm.sampler.params)
  jax.tree.map(np.testing.assert_array_equal, restored, trained)
  with pytest.raises(checkpoint_params.CheckpointMismatchError, match='shape'):
    in_process.build(section)  # the preset's head_dim 16
