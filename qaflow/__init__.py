"""qaflow: a task-pool manager for agentic-coding training data that can be trusted."""

__version__ = "0.1.0"
