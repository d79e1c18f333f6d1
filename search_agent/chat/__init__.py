"""Chat below the agent and the server: turns, tokenizers, chat templates,
the token-exact renderer and `<tool_call>` parsing."""
