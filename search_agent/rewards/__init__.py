"""Judges and reward functions: outcome, claim coverage, SearchMaster."""
