"""Peak FLOP/s of a run's devices, for MFU."""

import pytest

from search_agent.train.sft import flops


def test_peak_is_the_sum_over_known_chips():
  assert flops.peak_flops(['TPU v5p'] * 4, 'tpu') == pytest.approx(4 * 459e12)
  assert flops.peak_flops(['TPU v5 lite', 'TPU v5 lite'], 'tpu') == (
      pytest.approx(2 * 197e12)
  )
  assert flops.peak_flops(['NVIDIA H200'], 'gpu') == pytest.approx(989e12)


def test_an_unknown_chip_gives_no_peak_and_cpu_counts_the_host_once():
  assert flops.peak_flops(['TPU v5p', 'Mystery X1'], 'tpu') is None
  assert flops.peak_flops(['cpu'] * 8, 'cpu') == flops.cpu_peak_flops()
