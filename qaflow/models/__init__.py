"""The data contracts of qaflow, and nothing else: every package imports these, they import no other
qaflow package (only `qaflow.errors`).

- `records`: the ledger's rows (task versions and their status, runs, results, findings) and its
  closed vocabularies.
- `trial`: what a trial returns (`TrialResult`, `StepResult`, `ExecResult`) and `ExitStatus`, the one
  vocabulary of how an attempt ended, shared by trial results, ledger results and rollout records.
- `audit`: findings with evidence and the per-task audit report (`qaflow audit --json`).
- `repair`: the records of repair rounds and reviews.
- `rollout`, `frame`: the rollout record (one attempt of an agent at a task) and its polars frame.

The JSON shapes are documented in `docs/contracts.md`.
"""
