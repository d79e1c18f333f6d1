"""Launchers: the same binary on a TPU pod through XPK or locally."""
