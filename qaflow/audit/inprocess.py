"""Attacks on the agent's code that the verifier runs inside its own process: `exit-at-import` and
`always-equal`.

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

Both are proven by running, never inferred: a verifier that checks exact types, counts passed tests or
reads pytest's report stays clean.
"""

from __future__ import annotations

import ast
from collections.abc import Sequence

from qaflow.audit.effects import Effect
from qaflow.audit.exploits import Exploit, Plant
from qaflow.audit.observation import Observation
from qaflow.audit.probe_run import ProbeRun
from qaflow.models.audit import AuditFinding
from qaflow.models.records import FindingCode

EXIT_AT_IMPORT = "exit-at-import"
ALWAYS_EQUAL = "always-equal"
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


def plan_in_process(observation: Observation, effect: Effect | None) -> list[Exploit]:
    """The exit-at-import and always-equal exploits over the modules the verifier imported (none when it
    imported no module the reference solution wrote)."""
    modules = imported_modules(observation, effect)
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
