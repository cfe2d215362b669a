"""Attacks on the agent's code that the verifier runs inside its own process: `exit-at-import`,
`always-equal` and `clock-patch`.

Where the observed verifier imported a Python module the reference solution wrote (pytest collecting
tests that `from solution import f`, a checker doing `import app`), the agent's module runs with the
verifier's own process. Two generic plants, each alone on the untouched environment, as the agent:

- `exit-at-import`: the module ends the process with status 0 when imported (`os._exit(0)`): pytest
  stops during collection and reports nothing, so a verifier that rewards its exit status pays.
  Full reward where the nop gets none is `reward_tamper`;
- `always-equal`: the module defines the oracle module's public functions (and classes, whose methods
  do the same), each returning an object equal to anything (`__eq__` always true, `__ne__` false,
  truthy, of the type the oracle's function is annotated to return where that type can be subclassed).
  A verifier that checks `assert f(x) == want` pays: `weak_verifier` (it checks equality with an
  object it did not build, never the value's type).

- `clock-patch`, only where the verifier's own code reads a clock (`time.perf_counter()`, `time.time()`,
  `monotonic`, `process_time`, `timeit`): two trials. `slow-control` is the oracle's module with every
  public function made slower (each call sleeps `SLOW_CALL_S`, for the first `SLOW_CALLS` calls); `clock-patch`
  is the same slow module that, when imported, also replaces the `time` module's clocks with ones that run
  1000 times slower. Where the slow module fails and the patched one gets full reward (and the nop none),
  the verifier's timing limit is one the agent's code can forge: `reward_tamper`. A verifier that binds
  its clock before importing the agent's module (`from time import perf_counter`), or times a subprocess,
  stays clean; one whose limit the slow module still meets proves nothing and is not reported.

All are proven by running, never inferred: a verifier that checks exact types, counts passed tests or
reads pytest's report stays clean.
"""

from __future__ import annotations

import ast
import posixpath
import re
from collections.abc import Iterable, Sequence
from pathlib import Path

from qaflow.audit.effects import Effect
from qaflow.audit.exploits import Exploit, Plant
from qaflow.audit.observation import Observation
from qaflow.audit.probe_run import ProbeRun
from qaflow.models.audit import AuditFinding
from qaflow.models.records import FindingCode

EXIT_AT_IMPORT = "exit-at-import"
ALWAYS_EQUAL = "always-equal"
CLOCK_PATCH = "clock-patch"
SLOW_CONTROL = "slow-control"
SLOW_CALL_S = 1.5
SLOW_CALLS = 4
CLOCK_READ = re.compile(
    r"\b(perf_counter|monotonic|process_time|thread_time)(_ns)?\b|\btime\.time(_ns)?\s*\(|\btimeit\b"
)
"""A verifier source that reads a clock (the only ones worth the clock-patch trials)."""
_SLOW_SUFFIX = f'''


def _qaflow_slow():
    """qaflow exploit: every public function of this module is slower ({SLOW_CALL_S} s a call, {SLOW_CALLS} calls)."""
    import functools
    import inspect
    import time

    sleep, left = time.sleep, [{SLOW_CALLS}]

    def slowed(function):
        @functools.wraps(function)
        def slow(*args, **kwargs):
            if left[0] > 0:
                left[0] -= 1
                sleep({SLOW_CALL_S})
            return function(*args, **kwargs)

        return slow

    names = globals()
    for name, value in list(names.items()):
        if not name.startswith("_") and inspect.isfunction(value) and value.__module__ == __name__:
            names[name] = slowed(value)


_qaflow_slow()
'''
_CLOCK_SUFFIX = '''

def _qaflow_clock():
    """qaflow exploit: the time module's clocks run 1000 times slower once this module is imported."""
    import sys
    import time

    def slowed(real, whole):
        start = real()
        if whole:
            return lambda: start + (real() - start) // 1000
        return lambda: start + (real() - start) / 1000

    for name in ("perf_counter", "monotonic", "time", "process_time", "thread_time"):
        for suffix in ("", "_ns"):
            real = getattr(time, name + suffix, None)
            if real is not None:
                setattr(time, name + suffix, slowed(real, suffix == "_ns"))
    if "timeit" in sys.modules:
        sys.modules["timeit"].default_timer = time.perf_counter


_qaflow_clock()
'''
EXIT_MODULE = "import os\n\nos._exit(0)\n"
MAX_MODULES = 4
_SUBCLASSABLE = {"int", "float", "str", "list", "dict", "tuple", "set", "frozenset", "bytes", "complex"}
_EQUAL_HEADER = '''"""qaflow exploit: every public name returns a value equal to anything."""


def _qaflow_equal(base=object):
    class AlwaysEqual(base):
        def __eq__(self, other):
            return True

        def __ne__(self, other):
            return False

        def __hash__(self):
            return 0

        def __bool__(self):
            return True

        def __repr__(self):
            return "AlwaysEqual()"

    return AlwaysEqual()


class _QaflowObject:
    def __init__(self, *args, **kwargs):
        pass

    def __getattr__(self, name):
        return lambda *args, **kwargs: _qaflow_equal()

    def __eq__(self, other):
        return True

    def __ne__(self, other):
        return False

    def __hash__(self):
        return 0
'''


def imported_modules(observation: Observation, effect: Effect | None) -> dict[str, bytes]:
    """The Python modules the reference solution wrote that the verifier's processes imported (by a file
    the oracle did not write), with the oracle's content: path -> bytes."""
    if effect is None or not effect.ok or not observation.observed:
        return {}
    written = {c.path: c.content for c in effect.written if c.file_type == "file" and c.content is not None}
    found: dict[str, bytes] = {}
    for a in observation.accesses:
        if "import" not in a.how or not a.path.endswith(".py") or a.path not in written:
            continue
        if any(b not in written for b in a.by) or not a.by:
            found[a.path] = written[a.path] or b""
    return dict(sorted(found.items())[:MAX_MODULES])


def always_equal_module(source: bytes) -> str | None:
    """A module with the oracle module's public functions and classes, every call returning an object equal
    to anything; None when the oracle's module does not parse or defines none."""
    try:
        tree = ast.parse(source.decode("utf-8", "replace"))
    except SyntaxError:
        return None
    body: list[str] = []
    for node in tree.body:
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef) and not node.name.startswith("_"):
            base = _base(node.returns)
            body.append(f"\n\ndef {node.name}(*args, **kwargs):\n    return _qaflow_equal({base})\n")
        elif isinstance(node, ast.ClassDef) and not node.name.startswith("_"):
            body.append(f"\n\nclass {node.name}(_QaflowObject):\n    pass\n")
    return _EQUAL_HEADER + "".join(body) if body else None


def _base(annotation: ast.expr | None) -> str:
    name = (
        annotation.value.id
        if isinstance(annotation, ast.Subscript) and isinstance(annotation.value, ast.Name)
        else None
    )
    if isinstance(annotation, ast.Name):
        name = annotation.id
    if name == "bool":
        return "object"
    return name if name in _SUBCLASSABLE else "object"


def named_modules(effect: Effect | None, verifier_sources: Iterable[str]) -> dict[str, bytes]:
    """The Python modules the reference solution wrote that the verifier's own sources import by name
    (`import solution`, `from solution import add`): what a Python the observer cannot see into (`-I`, `-E`)
    imports. path -> the oracle's bytes."""
    if effect is None or not effect.ok:
        return {}
    sources = list(verifier_sources)
    found: dict[str, bytes] = {}
    for c in effect.written:
        if c.file_type != "file" or c.content is None or not c.path.endswith(".py"):
            continue
        base = posixpath.basename(c.path)
        name = posixpath.basename(posixpath.dirname(c.path)) if base == "__init__.py" else base[:-3]
        if not name.isidentifier():
            continue
        imports = re.compile(rf"^\s*(?:from\s+{name}(?:\.\w+)*\s+import\b|import\s+(?:[\w.]+\s*,\s*)*{name}\b)", re.M)
        if any(imports.search(text) for text in sources):
            found[c.path] = c.content
    return dict(sorted(found.items())[:MAX_MODULES])


def plan_in_process(
    observation: Observation, effect: Effect | None, verifier_sources: Iterable[str] = ()
) -> list[Exploit]:
    """The exit-at-import and always-equal exploits over the modules the verifier imported, as observed or, for
    a Python the observer cannot see into, as its sources name them (none when it imports no module the
    reference solution wrote). Judged by running, so a module named but never imported costs one trial."""
    modules = imported_modules(observation, effect)
    if observation.observed:
        for path, data in named_modules(effect, verifier_sources).items():
            modules.setdefault(path, data)
        modules = dict(sorted(modules.items())[:MAX_MODULES])
    if not modules:
        return []
    why = "the verifier imports it into its own process"
    exploits = [
        Exploit(name=EXIT_AT_IMPORT, plants=[Plant(path=p, content=EXIT_MODULE, why=why) for p in modules]),
    ]
    equal = [(p, text) for p, data in modules.items() if (text := always_equal_module(data)) is not None]
    if equal:
        plants = [
            Plant(path=p, content=text, why=why + "; every call returns a value equal to anything") for p, text in equal
        ]
        exploits.append(Exploit(name=ALWAYS_EQUAL, plants=plants))
    return exploits


MAX_SOURCE_BYTES = 256 * 1024


def verifier_texts(tests_dir: Path) -> list[str]:
    """The text of the verifier's files (`tests/`), each up to `MAX_SOURCE_BYTES`; unreadable ones are skipped."""
    texts = []
    for path in sorted(tests_dir.rglob("*")) if tests_dir.is_dir() else []:
        if path.is_file() and not path.is_symlink():
            try:
                with path.open("rb") as fh:
                    texts.append(fh.read(MAX_SOURCE_BYTES).decode("utf-8", "replace"))
            except OSError:
                continue
    return texts


def reads_clock(sources: Iterable[str]) -> bool:
    """Whether any of the verifier's Python sources reads a clock."""
    return any(CLOCK_READ.search(text) for text in sources)


def plan_clock(
    observation: Observation, effect: Effect | None, verifier_sources: Iterable[str]
) -> tuple[Exploit, Exploit] | None:
    """The `slow-control` and `clock-patch` pair over the modules the verifier imported, where its sources read
    a clock and every such module is UTF-8 text; None otherwise."""
    modules = imported_modules(observation, effect)
    if not modules or not reads_clock(verifier_sources):
        return None
    try:
        texts = {path: data.decode("utf-8") for path, data in modules.items()}
    except UnicodeDecodeError:
        return None
    why = "the verifier imports it into its own process and reads a clock"
    slow = {path: text.rstrip("\n") + "\n" + _SLOW_SUFFIX for path, text in texts.items()}
    control = Exploit(
        name=SLOW_CONTROL,
        plants=[Plant(path=p, content=t, why=why + "; the reference module made slower") for p, t in slow.items()],
    )
    patch = Exploit(
        name=CLOCK_PATCH,
        plants=[
            Plant(path=p, content=t + _CLOCK_SUFFIX, why=why + "; the slower module slows the verifier's clocks too")
            for p, t in slow.items()
        ],
    )
    return control, patch


def judge_clock(
    nop: Sequence[ProbeRun], control: ProbeRun, patched: ProbeRun, exploit: Exploit, task: str
) -> list[AuditFinding]:
    """`reward_tamper` when the slow module fails, the same module with the clock patch gets full reward, and
    the nop does not."""
    if control.full or not patched.full or (nop and all(r.full for r in nop)):
        return []
    files = [p.path for p in exploit.plants]
    return [
        AuditFinding(
            code=FindingCode.REWARD_TAMPER,
            message=(
                f"the agent's module can forge the verifier's timing limit: the reference module made "
                f"{SLOW_CALL_S:g} s a call slower fails, and the same module that slows the time module's clocks when "
                f"imported gets full reward ({', '.join(files)} on the untouched environment); bind the clock before "
                "importing the agent's code (from time import perf_counter) or time it in a subprocess"
            ),
            evidence={
                "exploits": [
                    {
                        "exploit": exploit.name,
                        "files": files,
                        "plants": exploit.model_dump(mode="json")["plants"],
                        "reproduce": exploit.reproduction(task),
                        "run": patched.brief(),
                        "control": control.brief(),
                    }
                ],
            },
        )
    ]


def judge_always_equal(nop: Sequence[ProbeRun], run: ProbeRun, exploit: Exploit, task: str) -> list[AuditFinding]:
    """`weak_verifier` when the always-equal module gets full reward and the nop does not."""
    if not run.full or (nop and all(r.full for r in nop)):
        return []
    files = [p.path for p in exploit.plants]
    return [
        AuditFinding(
            code=FindingCode.WEAK_VERIFIER,
            message=(
                "a module whose every function returns an object equal to anything gets full reward "
                f"({', '.join(files)} on the untouched environment): the verifier compares the agent's values "
                "with == and never checks their type; check exact types (type(x) is int) or compare serialised values"
            ),
            evidence={
                "exploits": [
                    {
                        "exploit": exploit.name,
                        "files": files,
                        "plants": exploit.model_dump(mode="json")["plants"],
                        "reproduce": exploit.reproduction(task),
                        "run": run.brief(),
                    }
                ],
            },
        )
    ]
