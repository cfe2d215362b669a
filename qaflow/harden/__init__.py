"""Hardening: requirement graphs (networkx), transforms that make harder task versions, and the acceptance gate.

- `graph`: the requirement graph of a task (requirements, artifacts, checks) from `[metadata.qaflow]`, from a
  static reading of its tests, or proposed by a model; node-link JSON, PNG, queries and difficulty metrics.
- `process_chain`, `compose`, `expand`: transforms, each writing a new task folder recorded as a new version.
- `gate`: `qaflow accept`, which accepts a hardened or repaired version only on independent evidence.

Importing this package imports none of its modules (the audit's lint imports `graph` alone).
"""
