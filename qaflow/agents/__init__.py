"""Agents that act on a task inside a sandbox. Model agents come with the rollouts issue."""

from qaflow.agents.base import Agent
from qaflow.agents.scripted import NopAgent, OracleAgent, agent_by_name

__all__ = ["Agent", "NopAgent", "OracleAgent", "agent_by_name"]
