"""Agent: chat rendering, tool calls, ReAct loop, context management, MAS."""
