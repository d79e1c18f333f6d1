"""RL core: advantages, policy loss, scheduler, replay queue, forest."""
