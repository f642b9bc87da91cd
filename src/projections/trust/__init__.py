"""The trust projection: each agent's posterior, its reads and rows."""
