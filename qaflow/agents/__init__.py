"""Agents that act on a task inside a sandbox: the nop and oracle agents (`scripted`), the model harness
(`harness`, tools read/write/edit/bash in `tool_exec`), multi-step agents (`stepwise`) and effort levels."""

from qaflow.agents.base import Agent
from qaflow.agents.scripted import NopAgent, OracleAgent, agent_by_name

__all__ = ["Agent", "NopAgent", "OracleAgent", "agent_by_name"]
