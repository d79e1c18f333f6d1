"""Training: SFT and RL (losses, scheduling, replay, partial rollouts)."""
