"""Mutants: wrong solutions derived from the oracle's work, which a verifier that checks the task rejects.

`base` holds the shapes (`Mutant`, `MutantKind`, `MutantAgent`) and the mutants of the oracle's recorded effect
(outputs emptied, cut, shuffled, a line or JSON value changed, a change left out); `code` makes one-change mutants
of the Python code the reference solution wrote and `brace` of its C-family code; `overfit` answers only the
instruction's examples. A surviving code mutant counts as a wrong solution only with proof: `differential` runs it
beside the oracle's code on the tests' own inputs, `skipped_tests` enables the tests the verifier never runs.
"""

from qaflow.audit.mutants.base import (
    Mutant,
    MutantAgent,
    MutantKind,
    deliverables,
    in_dot_folder,
    is_code,
    is_scratch,
    make_mutants,
    oracle_state,
)

__all__ = [
    "Mutant",
    "MutantAgent",
    "MutantKind",
    "deliverables",
    "in_dot_folder",
    "is_code",
    "is_scratch",
    "make_mutants",
    "oracle_state",
]
