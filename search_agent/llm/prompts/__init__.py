"""Prompt files (agent, MAS verifier, BrowseComp grader) and their loader."""
