"""Reading Python for the verifier lint: `Python`, a parsed source with its imports resolved, what its
names hold (see KINDS), the literals they stand for, its comparisons and the calls that run the agent's
program."""

from __future__ import annotations

import ast
import sys
from collections.abc import Iterator

from qaflow.audit.lint.kinds import INTERPRETERS, KINDS, MODULES_OF_TESTS

# --- what Python calls mean --------------------------------------------------------------------

NOW_CALLS = frozenset(
    {"time.time", "time.time_ns", "datetime.datetime.now", "datetime.datetime.utcnow", "datetime.datetime.today",
     "datetime.date.today", "pandas.Timestamp.now", "pandas.Timestamp.today", "arrow.now", "arrow.utcnow",
     "pendulum.now", "pendulum.today"}
)  # fmt: skip
NOW_WITHOUT_ARGS = frozenset({"time.localtime", "time.gmtime", "time.ctime", "time.asctime"})
DATE_TYPES = frozenset({"datetime", "date", "time", "fromisoformat", "strptime", "fromtimestamp", "Timestamp"})
OFFSETS = frozenset({"timedelta", "relativedelta", "DateOffset", "Timedelta"})
LOG_CALLS = frozenset({"print", "debug", "info", "warning", "warn", "error", "exception", "log", "write", "echo"})
READ_CALLS = frozenset(
    {"read", "read_text", "read_bytes", "readline", "readlines", "load", "loads", "open", "check_output",
     "getoutput", "getstatusoutput", "communicate", "urlopen", "reader", "DictReader", "read_csv", "read_json"}
)  # fmt: skip
READ_ATTRS = frozenset({"stdout", "stderr", "text", "content", "output"})
COMPARE_CALLS = frozenset(
    {"isclose", "allclose", "assert_allclose", "assert_array_equal", "assert_frame_equal", "array_equal",
     "assertEqual", "assertNotEqual", "assertIn", "assertNotIn", "assertAlmostEqual", "assertListEqual",
     "assertDictEqual", "assertCountEqual", "assertSequenceEqual", "assertMultiLineEqual"}
)  # fmt: skip
RUN_CALLS = frozenset(
    {"subprocess.run", "subprocess.call", "subprocess.check_call", "subprocess.check_output", "subprocess.Popen",
     "subprocess.getoutput", "subprocess.getstatusoutput", "os.system", "os.popen"}
)  # fmt: skip
LOAD_CALLS = frozenset(
    {"importlib.util.module_from_spec", "importlib.import_module", "runpy.run_path", "runpy.run_module", "__import__"}
)
"""Calls that load the agent's code as a module."""
KNOWN_LIBRARIES = frozenset(
    {"numpy", "pandas", "scipy", "sklearn", "torch", "requests", "httpx", "yaml", "toml", "tomli", "jwt", "PIL",
     "cv2", "bs4", "lxml", "pydantic", "attrs", "flask", "fastapi", "boto3", "psycopg2", "sqlalchemy",
     "matplotlib", "pytest", "_pytest", "__future__"}
)  # fmt: skip
KNOWN_TOOLS = frozenset(
    {"diff", "cmp", "sqlite3", "git", "grep", "cat", "ls", "jq", "sort", "head", "tail", "wc", "md5sum",
     "sha256sum", "sha1sum", "file", "stat", "find", "curl", "wget", "psql", "mysql", "redis-cli", "tar",
     "unzip", "gzip", "zcat", "du", "df", "ps", "pgrep", "id", "whoami", "uname", "which", "test", "true",
     "false", "echo", "printf", "env", "timeout", "pytest", "meson", "ninja", "make", "cmake", "gcc", "cc",
     "openssl", "docker", "kubectl", "systemctl", "nginx", "pip", "npm", "cargo", "go", "rustc", "javac"}
)  # fmt: skip
"""Programs that are not the agent's: a verifier running them reads data, it does not test a program."""
STATUS_NAMES = frozenset({"returncode", "status", "status_code", "exit_code", "code", "rc", "ret", "__name__"})


class Python:
    """A parsed Python source: imports resolved, what names hold (see KINDS), literal names."""

    def __init__(self, tree: ast.Module):
        self.tree = tree
        self.aliases: dict[str, str] = {}
        self.parents: dict[ast.AST, ast.AST] = {}
        self.assigned: dict[str, list[tuple[ast.expr | None, bool]]] = {}
        """Per name, what it is bound to and whether directly (`x = value`: not a loop, not unpacking)."""
        modules: list[tuple[str, str]] = []  # (name bound, module)
        for node in ast.walk(tree):
            for child in ast.iter_child_nodes(node):
                self.parents[child] = node
            if isinstance(node, ast.Import):
                for alias in node.names:
                    top = alias.name.split(".")[0]
                    self.aliases[alias.asname or top] = alias.name if alias.asname else top
                    modules.append((alias.asname or top, alias.name))
            elif isinstance(node, ast.ImportFrom):
                for alias in node.names:
                    self.aliases[alias.asname or alias.name] = f"{node.module}.{alias.name}"
                    if not node.level:  # a relative import is the verifier's own package
                        modules.append((alias.asname or alias.name, node.module or ""))
            else:
                self._bind(node)
        agent_path = any(  # sys.path.insert(0, "/app"): the imports below may be the agent's modules
            isinstance(n, ast.Call)
            and self.dotted(n.func) in ("sys.path.insert", "sys.path.append")
            and any(isinstance(c, ast.Constant) and not str(c.value).startswith("/tests") for c in n.args[-1:])
            for n in ast.walk(tree)
        )
        self.agent_modules = {
            name
            for name, module in modules
            if agent_path and foreign(module) and module.split(".")[0] not in KNOWN_LIBRARIES
        }
        self.literals = {
            name: [v for v, _ in values if v is not None]
            for name, values in self.assigned.items()
            if all(v is not None and direct and self.literal(v) is not None for v, direct in values)
        }
        self.kinds: dict[str, str | None] = dict.fromkeys(self.agent_modules, "prog")
        for _ in range(4):  # names defined from names: a few rounds reach a fixpoint in practice
            kinds = dict(self.kinds)
            for name, values in self.assigned.items():
                if name in self.agent_modules:
                    continue
                found = {"out" if v is FIXTURE else self.kind(v) if v is not None else None for v, _ in values}
                if len(found) == 1:
                    kinds[name] = found.pop()
                else:  # bound to values of different kinds: only what the agent produced counts
                    kinds[name] = next((k for k in ("prog", "out") if k in found), None)
            if kinds == self.kinds:
                break
            self.kinds = kinds

    def _bind(self, node: ast.AST) -> None:
        bind = self.assigned.setdefault
        if isinstance(node, ast.Assign):
            for target in node.targets:
                for name in _target_names(target):
                    bind(name, []).append((node.value, isinstance(target, ast.Name)))
        elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
            bind(node.target.id, []).append((node.value, True))
        elif isinstance(node, ast.AugAssign) and isinstance(node.target, ast.Name):
            update = ast.BinOp(left=ast.Name(id=node.target.id), op=node.op, right=node.value)
            bind(node.target.id, []).append((update, False))
        elif isinstance(node, (ast.For, ast.AsyncFor, ast.comprehension)):
            for name in _target_names(node.target):
                bind(name, []).append((node.iter, False))
        elif isinstance(node, ast.withitem) and node.optional_vars is not None:
            for name in _target_names(node.optional_vars):
                bind(name, []).append((node.context_expr, False))
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            for arg in [*node.args.posonlyargs, *node.args.args, *node.args.kwonlyargs]:
                fixture = node.name.startswith("test") and arg.arg != "self"
                bind(arg.arg, []).append((FIXTURE if fixture else None, False))
            returns = [n.value for n in ast.walk(node) if isinstance(n, ast.Return) and n.value is not None]
            bind(node.name, []).extend((r, False) for r in returns)  # a call is what the function returns

    def dotted(self, node: ast.expr) -> str:
        parts: list[str] = []
        while isinstance(node, ast.Attribute):
            parts.append(node.attr)
            node = node.value
        if isinstance(node, ast.Name):
            parts.append(self.aliases.get(node.id, node.id))
        elif isinstance(node, ast.Call):
            parts.append(self.dotted(node.func) + "()")
        else:
            return ""
        return ".".join(reversed(parts))

    def last(self, node: ast.Call) -> str:
        return self.dotted(node.func).rsplit(".", 1)[-1]

    def is_now(self, node: ast.AST) -> bool:
        if not isinstance(node, ast.Call):
            return False
        name = self.dotted(node.func)
        if name in NOW_WITHOUT_ARGS:
            return not node.args
        return name in NOW_CALLS or (name == "time.strftime" and len(node.args) == 1)

    def runs_agent(self, node: ast.Call) -> bool:
        name = self.dotted(node.func)
        if name in RUN_CALLS:
            return _runs_agent_program(self, node)
        return name in LOAD_CALLS

    def kind(self, node: ast.expr) -> str | None:
        """What an expression holds (see KINDS), or None."""
        if isinstance(node, ast.Name):
            return self.kinds.get(node.id)
        if isinstance(node, (ast.Attribute, ast.Subscript, ast.Starred)):
            inner = self.kind(node.value)
            if isinstance(node, ast.Attribute) and node.attr in STATUS_NAMES and inner in ("prog", "out"):
                return "status"
            if isinstance(node, ast.Attribute) and node.attr in READ_ATTRS and inner != "now":
                return inner if inner == "prog" else "out"
            return inner
        if isinstance(node, ast.Call):
            if self.is_now(node):
                return "now"
            if self.runs_agent(node):
                return "prog"
            if self.last(node) in ("poll", "wait"):
                return "status"
            inner = self.kind(node.func)
            args = _strongest(self.kind(a) for a in [*node.args, *(k.value for k in node.keywords)])
            if "prog" in (inner, args):
                return "prog"
            if inner in ("now", "dur"):
                return inner  # a method of a time: now.date(), elapsed.total_seconds()
            return "out" if self.last(node) in READ_CALLS else _strongest([inner, args])
        if isinstance(node, ast.BinOp):
            left, right = self.kind(node.left), self.kind(node.right)
            if "now" in (left, right) and isinstance(node.op, ast.Sub):
                offset = isinstance(node.right, ast.Call) and self.last(node.right) in OFFSETS
                return "now" if left == "now" and offset else "dur"  # now - 7 days; an elapsed time or an age
            return "now" if "now" in (left, right) else _strongest([left, right])  # now + 30 days
        if isinstance(node, ast.JoinedStr):
            return _strongest(self.kind(v.value) for v in node.values if isinstance(v, ast.FormattedValue))
        if isinstance(node, ast.IfExp):
            return _strongest([self.kind(node.body), self.kind(node.orelse)])
        return None

    def literal(self, node: ast.expr, seen: frozenset[str] = frozenset()) -> ast.expr | None:
        """The literal `node` stands for (itself, or the value of a name bound once to a literal), else None."""
        if isinstance(node, ast.Constant):
            return node
        parts: list[ast.expr | None] = []
        if isinstance(node, ast.UnaryOp) and isinstance(node.op, (ast.USub, ast.UAdd)):
            parts = [node.operand]
        elif isinstance(node, (ast.List, ast.Tuple, ast.Set)):
            parts = list(node.elts)
        elif isinstance(node, ast.Dict):
            parts = [*node.keys, *node.values]
        elif isinstance(node, ast.BinOp):
            parts = [node.left, node.right]
        elif isinstance(node, ast.Call) and len(node.args) == 1 and not node.keywords:
            if self.last(node) in ("approx", "set", "frozenset", "list", "tuple", "sorted", "Path", "Decimal"):
                parts = [node.args[0]]
        elif isinstance(node, ast.Name) and node.id not in seen:
            values = self.assigned.get(node.id, [])
            if len(values) == 1 and values[0][1] and values[0][0] is not None:
                return self.literal(values[0][0], seen | {node.id})
        if parts and all(p is not None and self.literal(p, seen) is not None for p in parts):
            return node
        return None

    def date_literal(self, node: ast.expr) -> bool:
        """A literal, or a date or time built from literals (`datetime(2024, 1, 1)`)."""
        if self.literal(node) is not None:
            return True
        if isinstance(node, ast.Call) and self.last(node) in DATE_TYPES and node.args:
            return all(self.literal(a) is not None for a in node.args)
        return False

    def logged(self, node: ast.AST) -> bool:
        """`node` is inside an f-string or the arguments of a print or logging call."""
        parent = self.parents.get(node)
        while parent is not None and not isinstance(parent, ast.stmt):
            if isinstance(parent, ast.JoinedStr) or (isinstance(parent, ast.Call) and self.last(parent) in LOG_CALLS):
                return True
            parent = self.parents.get(parent)
        return False

    def comparisons(self) -> Iterator[tuple[int, list[ast.expr]]]:
        """(line, operands) of every comparison: `a == b`, `x in y`, `isclose(a, b)`, `assertEqual(a, b)`."""
        for node in ast.walk(self.tree):
            if isinstance(node, ast.Compare) and not all(isinstance(op, (ast.Is, ast.IsNot)) for op in node.ops):
                operands = [node.left, *node.comparators]
            elif isinstance(node, ast.Call) and len(node.args) >= 2 and self.last(node) in COMPARE_CALLS:
                operands = list(node.args[:2])
            else:
                continue
            if not self.logged(node):
                yield node.lineno, operands

    def names_behind(self, node: ast.expr, depth: int = 4) -> set[str]:
        """The names a value is computed from, followed through their assignments."""
        found: set[str] = set()
        for sub in ast.walk(node):
            if isinstance(sub, ast.Name) and sub.id not in found:
                found.add(sub.id)
                for value, _ in self.assigned.get(sub.id, []) if depth else []:
                    found |= self.names_behind(value, depth - 1) if value is not None else set()
        return found

    def now_call(self, node: ast.expr, depth: int = 4) -> str | None:
        """The time-now call behind a value (followed through names), as code."""
        for sub in ast.walk(node):
            if self.is_now(sub):
                return ast.unparse(sub)
            if isinstance(sub, ast.Name) and depth and self.kinds.get(sub.id) == "now":
                for value, _ in self.assigned.get(sub.id, []):
                    if value is not None and (found := self.now_call(value, depth - 1)):
                        return found
        return None


FIXTURE = ast.Name(id="<pytest fixture>")
"""What a test function's parameter is bound to: a fixture, usually the agent's output."""


def _strongest(kinds: Iterator[str | None] | list[str | None]) -> str | None:
    found = set(kinds)
    return next((k for k in KINDS if k in found and k != "status"), None)


def foreign(module: str) -> bool:
    return module.split(".")[0] not in sys.stdlib_module_names


def _target_names(target: ast.expr) -> list[str]:
    if isinstance(target, ast.Name):
        return [target.id]
    if isinstance(target, (ast.Tuple, ast.List)):
        return [n for e in target.elts for n in _target_names(e)]
    return _target_names(target.value) if isinstance(target, ast.Starred) else []


def _runs_agent_program(py: Python, node: ast.Call) -> bool:
    """A subprocess call whose command is not the verifier's own file nor a known tool."""
    first = node.args[0] if node.args else next((k.value for k in node.keywords if k.arg == "args"), None)
    if isinstance(first, ast.Name) and len(bound := py.assigned.get(first.id, [])) == 1 and bound[0][1]:
        first = bound[0][0]  # command = [...]; subprocess.run(command)
    words: list[str] = []
    if isinstance(first, ast.Constant) and isinstance(first.value, str):
        words = first.value.split()
    for element in first.elts if isinstance(first, (ast.List, ast.Tuple)) else []:
        if py.dotted(element) == "sys.executable":
            words.append("python3")
            continue
        for sub in ast.walk(element):
            if isinstance(sub, ast.Name) and sub.id in py.literals:
                constants = [c.value for v in py.literals[sub.id] for c in ast.walk(v) if isinstance(c, ast.Constant)]
                words += [str(c) for c in constants[:1]]
                break
            if isinstance(sub, ast.Constant) and isinstance(sub.value, str):
                words.append(sub.value)
                break
    for word in words:
        name = word.strip("'\"").rsplit("/", 1)[-1]
        if word.startswith("-") or INTERPRETERS.match(name):
            continue
        if word.startswith("/tests") or word in MODULES_OF_TESTS:
            return False
        return "/" in word or name not in KNOWN_TOOLS
    return False
