"""Hardening: transforms that make harder task versions, and the acceptance gate.

- `process_chain`, `compose`, `expand`: transforms, each writing a new task folder recorded as a new version,
  built on the task's requirement graph (`qaflow.requirements`), declared, read from its tests or proposed
  by a model (`propose`).
- `gate`: `qaflow accept`, which accepts a hardened or repaired version only on independent evidence.

Importing this package imports none of its modules.
"""
