"""Supervised fine-tuning on agent trajectories (open-recipe.md, SFT)."""
