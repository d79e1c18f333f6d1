"""Evaluation library: datasets, the harness, grading, metrics, reports.

The binaries over it are `eval.run`, `eval.compare` and `eval.view`.
"""
