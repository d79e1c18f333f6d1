"""grain pipeline: real trajectories -> context policy -> renderer -> packs."""

import numpy as np
import pytest

from search_agent.agent import trajectory
from search_agent.chat import tokenizer as tokenizer_lib
from search_agent.train import data as data_lib


@pytest.fixture(scope='module')
def render(tiny_tokenizer_dir):
  tok = tokenizer_lib.load_tokenizer(tiny_tokenizer_dir)
  return data_lib.make_render_fn(tok, 'sliding_window', 5, 'chatml')


def _cfg(path, **kw):
  base = dict(
      train_path=path,
      seq_len=512,
      micro_batch=2,
      micro_steps=2,
      num_packing_bins=4,
      train_lines=(0, 20),
  )
  base.update(kw)
  return data_lib.DataConfig(**base)


def test_fit_keeps_whole_turns_and_counts_the_rest():
  cov = data_lib.Coverage()
  # Turns (mask runs) at ids [2, 4) and [5, 8); seq_len 5 fits 6 ids, so the
  # second turn (ends at 8) does not fit with its context: dropped, not cut.
  ex = data_lib.to_examples(
      [
          ([5, 6, 7, 8, 9, 10, 11, 12], [0, 0, 1, 1, 0, 1, 1, 1]),
          ([1, 2], [1, 0]),
      ],
      seq_len=5,
      coverage=cov,
  )
  assert len(ex) == 1  # the second view has no supervised target
  assert ex[0]['inputs'].tolist() == [5, 6, 7]
  assert ex[0]['targets'].tolist() == [6, 7, 8]
  assert ex[0]['loss_mask'].tolist() == [0, 1, 1]
  d = cov.as_dict()
  assert (d['supervised_tokens'], d['kept_tokens']) == (5, 2)
  assert (d['turns'], d['kept_turns'], d['dropped_turns']) == (2, 1, 1)
  assert d['supervised_token_coverage'] == pytest.approx(0.4)
  # The answer (last turn of the trajectory) did not fit.
  assert (d['final_turns'], d['kept_final_turns']) == (1, 0)
  # Everything fits: nothing dropped, the answer kept.
  cov = data_lib.Coverage()
  data_lib.to_examples([([5, 6, 7, 8, 9], [0, 0, 1, 0, 1])], 4, cov)
  assert cov.as_dict()['supervised_token_coverage'] == 1.0
  assert cov.kept_final_turns == 1


def test_packed_updates_are_consistent(sft_jsonl, render):
  cfg = _cfg(sft_jsonl)
  batch = next(iter(data_lib.update_dataset(sft_jsonl, render, cfg)))
  assert set(batch) == {
      'inputs',
      'targets',
      'loss_mask',
      'segment_ids',
      'positions',
  }
  for v in batch.values():
    assert v.shape == (2, 2, 512)
  seg, pos, mask = batch['segment_ids'], batch['positions'], batch['loss_mask']
  assert np.all(mask[seg == 0] == 0)  # padding carries no loss
  assert mask.sum() > 0
  rows_in, rows_tg = batch['inputs'].reshape(4, 512), batch['targets'].reshape(
      4, 512
  )
  for r, (s, p) in enumerate(zip(seg.reshape(4, 512), pos.reshape(4, 512))):
    for sid in set(s.tolist()) - {0}:
      idx = np.flatnonzero(s == sid)
      assert p[idx].tolist() == list(range(len(idx)))  # positions restart
      # next-token targets within a segment
      assert rows_tg[r, idx[:-1]].tolist() == rows_in[r, idx[1:]].tolist()


def test_loss_tokens_are_the_renderers_assistant_tokens(sft_jsonl, render):
  traj = data_lib.JsonlTrajectories(sft_jsonl)[0]
  assert isinstance(traj, trajectory.Trajectory)
  ids, mask = render(traj)[0]
  ex = data_lib.to_examples([(ids, mask)], 10_000)[0]
  supervised = ex['targets'][ex['loss_mask'] == 1]
  want = np.asarray(ids)[1:][np.asarray(mask)[1:] == 1]
  assert supervised.tolist() == want.tolist()
  assert 0 < len(supervised) < len(ids)


def test_iterator_state_resumes_exactly(sft_jsonl, render):
  cfg = _cfg(sft_jsonl)
  it = iter(data_lib.update_dataset(sft_jsonl, render, cfg))
  next(it)
  state = it.get_state()
  want = next(it)
  it2 = iter(data_lib.update_dataset(sft_jsonl, render, cfg))
  it2.set_state(state)
  got = next(it2)
  for k in want:
    np.testing.assert_array_equal(got[k], want[k])


def test_validation_counts_every_token_once(sft_jsonl, render):
  cfg = _cfg(sft_jsonl, val_lines=(20, 24))
  total = sum(
      b['loss_mask'].sum()
      for b in data_lib.validation_batches(sft_jsonl, render, cfg)
  )
  src = data_lib.JsonlTrajectories(sft_jsonl, (20, 24))
  want = sum(
      e['loss_mask'].sum()
      for i in range(len(src))
      for e in data_lib.to_examples(render(src[i]), cfg.seq_len)
  )
  assert total == want > 0


def test_bad_inputs_raise(tmp_path, sft_jsonl):
  empty = tmp_path / 'empty.jsonl'
  empty.write_text('\n')
  with pytest.raises(data_lib.DataError, match='no trajectories'):
    data_lib.JsonlTrajectories(str(empty))
  with pytest.raises(data_lib.DataError, match='format'):
    data_lib.JsonlTrajectories(sft_jsonl, fmt='csv')


def test_updates_carry_the_supervised_positions_when_asked(sft_jsonl, render):
  plain = next(
      iter(data_lib.update_dataset(sft_jsonl, render, _cfg(sft_jsonl)))
  )
  cfg = _cfg(sft_jsonl, loss_positions_multiple=64)
  batch = next(iter(data_lib.update_dataset(sft_jsonl, render, cfg)))
  for k in plain:
    np.testing.assert_array_equal(batch[k], plain[k])
  index, mask = batch['score_index'], batch['loss_mask']
  most = int((mask > 0).sum(-1).max())
  assert index.shape == (2, 2, -(-most // 64) * 64) and index.shape[-1] < 512
  gathered = np.take_along_axis(mask, index, -1)
  assert gathered.sum() == mask.sum() > 0
  for row_index, row_mask in zip(index.reshape(4, -1), mask.reshape(4, -1)):
    n = int(row_mask.sum())
    assert row_index[:n].tolist() == np.flatnonzero(row_mask).tolist()
  val = list(data_lib.validation_batches(sft_jsonl, render, cfg))
  assert all('score_index' in b for b in val)


def _updates(path, render, cfg, rows):
  source = data_lib.JsonlTrajectories(path, cfg.train_lines, cfg.format)
  examples = data_lib.sft_examples(render, cfg.seq_len)
  return data_lib.Updates(
      lambda k: data_lib.packed_updates(
          source, examples, cfg, shard=k, score=False
      ),
      cfg,
      rows,
  )


def test_hosts_load_only_their_streams_and_together_make_the_batch(
    sft_jsonl, render
):
  """4 loader streams, micro_batch 4: a host holding rows [0, 2) runs streams
  0 and 1 only, the other host 2 and 3; side by side they are the batch one
  host holding every row assembles."""
  cfg = _cfg(sft_jsonl, micro_batch=4, shards=4)
  whole = _updates(sft_jsonl, render, cfg, (0, 4))
  first = _updates(sft_jsonl, render, cfg, (0, 2))
  second = _updates(sft_jsonl, render, cfg, (2, 4))
  assert (first.shards, second.shards) == ((0, 1), (2, 3))
  for _ in range(2):
    w, a, b = next(whole), next(first), next(second)
    assert w['inputs'].shape == (2, 4, 512)
    for k in w:
      np.testing.assert_array_equal(np.concatenate([a[k], b[k]], axis=1), w[k])
  # A host holding part of a stream's rows runs the stream and keeps them.
  part = _updates(sft_jsonl, render, _cfg(sft_jsonl), (1, 2))
  full = _updates(sft_jsonl, render, _cfg(sft_jsonl), (0, 2))
  np.testing.assert_array_equal(
      next(part)['inputs'], next(full)['inputs'][:, 1:]
  )


def test_stream_positions_resume_each_stream(sft_jsonl, render):
  cfg = _cfg(sft_jsonl, micro_batch=4, shards=2)
  it = _updates(sft_jsonl, render, cfg, (2, 4))
  next(it)
  state = it.get_state()
  assert set(state) == {'1'}
  want = next(it)
  again = _updates(sft_jsonl, render, cfg, (2, 4))
  again.set_state(state)
  np.testing.assert_array_equal(next(again)['targets'], want['targets'])
  other = _updates(sft_jsonl, render, cfg, (0, 2))
  with pytest.raises(data_lib.DataError, match=r'lacks loader streams \[0\]'):
    other.set_state(state)


def test_shards_must_divide_the_microbatch(sft_jsonl):
  with pytest.raises(data_lib.DataError, match='divide'):
    _cfg(sft_jsonl, micro_batch=4, shards=3)


def test_score_index_width_can_be_given():
  mask = np.array([[[0, 1, 1, 0, 0, 0, 0, 0]]])
  assert data_lib.score_width(mask, 2) == 2
  index = data_lib.score_index(mask, 2, width=4)
  assert index.tolist() == [[[1, 2, 0, 3]]]
