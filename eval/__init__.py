"""Evaluation binaries: run an agent on a benchmark, grade, report, compare."""
