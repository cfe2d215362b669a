"""Is a surviving code mutant a wrong solution? Run it beside the oracle's code on the tests' own inputs.

A code mutant (`qaflow.audit.mutants.code`) that the verifier accepts is a weak test only if it behaves
differently from the reference: an equivalent mutant (the same results on every input) is no wrong
solution. The inputs come from the task's tests: the literal arguments of every call in tests/ that can
be a call of one of the module's public functions and fits its arity (`f(3, [1, 2])`, `solution.f(3)`,
`candidate("abc")`; never a builtin, a name the file imports or defines, or another object's method:
`Path("/app/x.py")` is no input), the literal rows of a parametrize table (the last column taken for the
expected value when one too many), the rows of a table of inputs written as source strings beside the
expected values (`[["[(1.0, 0.1)]", 0.8], ...]`, which HumanEval-style tests `eval`), and each with one of
its integers (or an item of a short list of them) moved by one. In a fresh sandbox of the task's
image, with the oracle's other outputs in place, both versions of the module are loaded and every
function is called on every fitting input (2 s each); a different result (its repr, or the
exception's type) is the evidence, unless both are of one type and `==` holds (`[True, 1]` and `[1, True]`
are the same answer to a test). No inputs, or no difference: the mutant is not reported
(`probes.code_mutants.equivalent`).
"""

from __future__ import annotations

import ast
import builtins
import json
import shlex
from pathlib import Path
from typing import Any

from pydantic import BaseModel

from qaflow.audit.mutants.base import Mutant, MutantKind, oracle_state
from qaflow.audit.mutants.code import MAX_PER_FILE, code_mutants
from qaflow.models.audit import AuditFinding
from qaflow.models.records import FindingCode
from qaflow.text import utf8_text
from qaflow.trial.effects import Effect

MAX_CALLS = 200
DIFF_SCRIPT = r"""
import copy, json, signal, sys, types

cfg = json.load(open(sys.argv[1]))
sys.path.insert(0, cfg["dir"])


def load(src):
    module = types.ModuleType(cfg["module"])
    module.__file__ = cfg["path"]
    sys.modules[cfg["module"]] = module
    exec(compile(src, cfg["path"], "exec"), module.__dict__)
    return module


def alarm(*_):
    raise TimeoutError("qaflow: call took over 2 s")


signal.signal(signal.SIGALRM, alarm)


MISSING = object()


def call(module, name, args):
    signal.alarm(2)
    try:
        value = getattr(module, name)(*copy.deepcopy(args))
        return "ok " + repr(value)[:400], value
    except BaseException as e:
        return "raised " + type(e).__name__, MISSING
    finally:
        signal.alarm(0)


def same(a, b):
    # equal results of one type are the same answer though their reprs differ ([True, 1] and [1, True])
    if a is MISSING or b is MISSING or type(a) is not type(b):
        return False
    signal.alarm(2)
    try:
        return bool(a == b)
    except BaseException:
        return False
    finally:
        signal.alarm(0)


oracle = load(cfg["oracle"])
mutant = load(cfg["mutant"])
differs = []
for name, args in cfg["calls"]:
    (a, va), (b, vb) = call(oracle, name, args), call(mutant, name, args)
    if a != b and not same(va, vb):
        differs.append({"call": name + "(" + ", ".join(repr(x) for x in args) + ")", "oracle": a, "mutant": b})
print(json.dumps({"checked": len(cfg["calls"]), "differs": differs[:5]}))
"""


def public_functions(source: str) -> dict[str, int]:
    """Top-level public functions of a module and their positional parameter counts."""
    try:
        tree = ast.parse(source)
    except (SyntaxError, ValueError):
        return {}
    found: dict[str, int] = {}
    functions = [n for n in tree.body if isinstance(n, ast.FunctionDef | ast.AsyncFunctionDef)]
    for node in functions:
        if not node.name.startswith("_") and node.args.vararg is None:
            found[node.name] = len(node.args.posonlyargs) + len(node.args.args) - len(node.args.defaults)
    return found


def inputs_from_tests(tests_dir: Path, functions: dict[str, int]) -> list[tuple[str, list[Any]]]:
    """(function, arguments) pairs from the literal calls and parametrize rows of the task's test files."""
    rows: list[list[Any]] = []
    exact: list[list[Any]] = []  # arguments alone, no expected value after them
    for path in sorted(tests_dir.rglob("*.py")) if tests_dir.is_dir() else []:
        text = utf8_text(path.read_bytes()) if path.is_file() else None
        try:
            tree = ast.parse(text or "")
        except (SyntaxError, ValueError):
            continue
        bound = _bound_names(tree)
        for node in ast.walk(tree):
            if isinstance(node, ast.List | ast.Tuple) and len(node.elts) > 1:
                exact += _encoded_rows(node)
            if not isinstance(node, ast.Call):
                continue
            if _is_parametrize(node) and len(node.args) >= 2 and _literal(node.args[1]):
                table = ast.literal_eval(node.args[1])
                if isinstance(table, list | tuple):
                    rows += [list(row) if isinstance(row, tuple | list) else [row] for row in table]
            elif (
                not node.keywords
                and _may_call_the_module(node.func, functions, bound)
                and (args := _literals(node.args)) is not None
            ):
                rows.append(args)
    calls: list[tuple[str, list[Any]]] = []
    seen: set[str] = set()
    for row, has_expected in [*((r, True) for r in rows), *((r, False) for r in exact)]:
        for name, arity in functions.items():
            for args in (row, row[:-1]) if has_expected and len(row) == arity + 1 else (row,):
                # a table's inputs are what the tests pass: optional parameters too (`f('( )', True)`)
                fits = len(args) == arity or (not has_expected and len(args) > arity)
                if not fits or arity == 0:
                    continue
                for variant in [args, *_moved(args)]:
                    key = json.dumps([name, variant], default=repr, sort_keys=True)
                    if key not in seen and _jsonable(variant):
                        seen.add(key)
                        calls.append((name, variant))
    return calls[:MAX_CALLS]


def diff_config(path: str, oracle: str, mutant: str, calls: list[tuple[str, list[Any]]]) -> str:
    module = Path(path).stem
    return json.dumps(
        {
            "path": path,
            "dir": str(Path(path).parent),
            "module": module,
            "oracle": oracle,
            "mutant": mutant,
            "calls": [[n, a] for n, a in calls],
        }
    )


def _bound_names(tree: ast.Module) -> set[str]:
    """Names the test file binds to something of its own: imports, functions and classes it defines."""
    names = set(dir(builtins))
    for node in ast.walk(tree):
        if isinstance(node, ast.Import | ast.ImportFrom):
            names |= {(a.asname or a.name).split(".")[0] for a in node.names}
        elif isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            names.add(node.name)
    return names


def _may_call_the_module(func: ast.expr, functions: dict[str, int], bound: set[str]) -> bool:
    """Whether a call's callee can be the module's function: its name (`f(...)`, `solution.f(...)`), or a
    name the file does not bind itself (`candidate(...)`); never a builtin, an import (`Path(...)`) or a method
    of something else (`line.startswith(...)`)."""
    if isinstance(func, ast.Attribute):
        return func.attr in functions
    return isinstance(func, ast.Name) and (func.id in functions or func.id not in bound)


def _encoded_rows(node: ast.List | ast.Tuple) -> list[list[Any]]:
    """Rows of a table whose inputs are written as Python source in a string, next to the expected value
    (`[["[(1.0, 0.1), (2.0, 0.2)]", 0.8], ["'abc', 2", "c"]]`, HumanEval-style tests that `eval` them):
    each input as its arguments (a tuple: one argument each)."""
    rows: list[list[Any]] = []
    for row in node.elts:
        if not (isinstance(row, ast.List | ast.Tuple) and len(row.elts) == 2):
            return []
        first = row.elts[0]
        if not (isinstance(first, ast.Constant) and isinstance(first.value, str)) or not _literal(row.elts[1]):
            return []
        try:
            value = ast.literal_eval(first.value.strip())
        except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
            continue  # an input with arithmetic in it (`1.0 + 1e-9`) is no literal: that row alone is left out
        rows.append(list(value) if isinstance(value, tuple) else [value])
    return rows if 2 * len(rows) >= len(node.elts) else []  # mostly words: no table of inputs


def _is_parametrize(node: ast.Call) -> bool:
    func = node.func
    return isinstance(func, ast.Attribute) and func.attr == "parametrize"


def _literal(node: ast.expr) -> bool:
    try:
        ast.literal_eval(node)
    except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
        return False
    return True


def _literals(nodes: list[ast.expr]) -> list[Any] | None:
    if not nodes or not all(_literal(n) for n in nodes):
        return None
    return [ast.literal_eval(n) for n in nodes]


MAX_MOVED_ITEMS = 8


def _moved(args: list[Any]) -> list[list[Any]]:
    """The arguments with one integer moved by one, an argument's or an item's of a short list of them
    (the boundaries a test may skip: `[1, 2, -4]` also as `[1, 2, -3]`)."""
    out = []
    for i, value in enumerate(args):
        if type(value) is int:
            out += [[*args[:i], value - 1, *args[i + 1 :]], [*args[:i], value + 1, *args[i + 1 :]]]
        elif isinstance(value, list) and len(value) <= MAX_MOVED_ITEMS:
            for j, item in enumerate(value):
                if type(item) is int:
                    for moved in (item - 1, item + 1):
                        out.append([*args[:i], [*value[:j], moved, *value[j + 1 :]], *args[i + 1 :]])
    return out


def _jsonable(value: Any) -> bool:
    try:
        json.dumps(value)
    except (TypeError, ValueError):
        return False
    return True


class CodeMutantPlan(BaseModel):
    """A code mutant as a trial (`mutant`: the oracle's state with the file changed) and what the
    differential check needs: the file, the oracle's and the mutant's source, the diff, the calls."""

    mutant: Mutant
    path: str
    oracle: str
    source: str
    diff: str
    calls: list[tuple[str, list[Any]]]


def plan_code_mutants(
    modules: dict[str, bytes], effect: Effect, tests_dir: Path, *, per_file: int = MAX_PER_FILE
) -> tuple[list[CodeMutantPlan], str | None]:
    """Code mutants of the modules the verifier imported that the oracle wrote (`modules`), with the
    tests' inputs for their functions; ([], why) when there is nothing to mutate or no input to judge by."""
    base, modes, links = oracle_state(effect)
    plans: list[CodeMutantPlan] = []
    why: str | None = "the verifier imported no Python module the reference solution wrote"
    for path, data in modules.items():
        oracle = utf8_text(data)
        if oracle is None:
            continue
        calls = inputs_from_tests(tests_dir, public_functions(oracle))
        if not calls:
            why = "the tests hold no literal call of the module's functions to compare the mutants on"
            continue
        for cm in code_mutants(path, oracle, limit=per_file):
            writes = {**base, path: cm.source.encode()}
            mutant = Mutant(
                name=cm.name,
                kind=MutantKind.CODE,
                description=f"the oracle's result with one change to {path} (line {cm.line}, {cm.operator})",
                targets=[path],
                writes=writes,
                modes={p: m for p, m in modes.items() if writes.get(p) is not None},
                links=links,
            )
            plans.append(
                CodeMutantPlan(mutant=mutant, path=path, oracle=oracle, source=cm.source, diff=cm.diff, calls=calls)
            )
    return plans, (None if plans else why)


def judge_code_mutants(survivors: list[tuple[CodeMutantPlan, dict[str, Any]]], task: str) -> list[AuditFinding]:
    """One `weak_verifier` for the surviving code mutants that behave differently from the oracle on the
    tests' inputs (`survivors`: each with its differential outcome); the rest are taken for equivalent."""
    differing = [(plan, outcome) for plan, outcome in survivors if outcome.get("differs")]
    if not differing:
        return []
    first, outcome = differing[0]
    example = outcome["differs"][0]
    return [
        AuditFinding(
            code=FindingCode.WEAK_VERIFIER,
            message=(
                f"{len(differing)} one-change mutant(s) of the reference solution's code get full reward though "
                f"they compute something else (e.g. {first.mutant.name}: {example['call']} gives {example['mutant']} "
                f"where the reference gives {example['oracle']}): the tests miss that behaviour; add a case for it"
            ),
            evidence={
                "code_mutants": [
                    {
                        "mutant": plan.mutant.name,
                        "file": plan.path,
                        "diff": plan.diff,
                        "differs": result["differs"][:3],
                        "reproduce": f"qaflow run {shlex.quote(task)} --agent mutant:{plan.mutant.name}",
                    }
                    for plan, result in differing[:5]
                ],
            },
        )
    ]
