"""MaxText adapter: model configs, sharding, logprobs, routing, sampler."""
