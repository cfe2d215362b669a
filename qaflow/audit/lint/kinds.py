"""The vocabulary the verifier lint's shell and Python readers share: the kinds of value an expression
holds, and the interpreters and test modules that tell the agent's programs from the verifier's own."""

from __future__ import annotations

import re

KINDS = ("status", "prog", "out", "now", "dur")
"""Kinds of a value, strongest first: an exit status, the output of the agent's program, something
read at run time (a file, a fixture), the time now, a duration."""
INTERPRETERS = re.compile(r"^(python[\d.]*|pypy3?|node|ruby|perl|php|bash|sh|dash|zsh|Rscript)$")
MODULES_OF_TESTS = frozenset({"pytest", "unittest", "json.tool", "pip", "venv", "http.server", "py_compile"})
