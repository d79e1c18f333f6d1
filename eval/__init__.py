"""Evaluation binaries: `eval.run`, `eval.compare`, `eval.view`.

Each is a short `main` over search_agent.evaluation (and search_agent.viewer).
"""
