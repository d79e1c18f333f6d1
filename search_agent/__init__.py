"""search_agent: post-training of LLM search agents on JAX/TPU."""
