"""The deliverable exists and is valid Python."""
import py_compile


def test_module_compiles():
    py_compile.compile("/app/durations.py", doraise=True, cfile="/tmp/durations-check.pyc")
