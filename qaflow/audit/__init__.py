"""The QA-flow audit: run every task (lint, build, nop, oracle, repeats, mutants, tamper) and report
findings with evidence. Knows nothing of LLMs."""
