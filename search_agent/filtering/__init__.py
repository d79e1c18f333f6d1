"""Trajectory filters: from raw rollouts to SFT-ready data."""
