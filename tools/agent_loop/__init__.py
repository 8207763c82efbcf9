"""The core's side of the agent-loop tools: where their calls are routed, and the memory providers."""
