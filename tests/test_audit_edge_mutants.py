"""Edge-value mutants and what the instruction states (issue 40): wrong answers a careless comparison accepts,
made from the semantics of the comparing language, run for real against such comparisons and careful ones."""

from __future__ import annotations

import json
import math
import os
import subprocess
import sys
from pathlib import Path

import pytest

from qaflow.audit.mutants import make_mutants
from qaflow.audit.mutants.edge import (
    VerifierSources,
    arithmetic_names,
    compares_patterns,
    edge_mutants,
    matches_regex,
    splits_words,
    verifier_sources,
)
from qaflow.audit.mutants.stated import asks_for_order, tolerated_share
from qaflow.audit.observation import Observation
from qaflow.audit.trace import parse_trace
from qaflow.trial.effects import ChangeKind, Effect, FileChange

SCRIPT = "/app/prog.py"
EVERYTHING = lambda _path: True  # noqa: E731
NONE = VerifierSources(shell=[], other=[])


def _observed(calls: list[tuple[list[str], str]]) -> Observation:
    lines = ["proc\t1\t0", "exec\t1\t0\t/usr/bin/bash\tbash%1F/tests/test.sh"]
    for n, (args, printed) in enumerate(calls, start=2):
        lines += [f"proc\t{n}\t1", f"exec\t{n}\t0\t/usr/bin/python3\t" + "%1F".join(["python3", SCRIPT, *args])]
        lines += [f"out\t{n}\t{printed.encode().hex()}", f"exit\t{n}\t0"]
    return Observation(observed=True, trace=parse_trace("\n".join([*lines, "exit\t1\t0"])))


GRADE = b"import sys\nprint('A' if float(sys.argv[1]) >= 90 else 'F')\n"
STATS = b"""import json, statistics, sys
from helpers import as_float
values = [as_float(v) for v in open(sys.argv[1]).read().split()]
print(statistics.pstdev(values))
json.dump({"n": len(values), "mean": statistics.mean(values), "values": values}, open("/app/stats.json", "w"))
"""


def _program_effect(source: bytes = GRADE) -> Effect:
    return Effect(changes=[FileChange(path=SCRIPT, kind=ChangeKind.CREATED, content=source, mode=0o755)])


def _materialise(mutant_writes: dict[str, bytes | None], root: Path) -> None:
    """The mutant's files under `root` (its `/app/` paths, in names and in the wrappers' text, moved there)."""
    for path, data in mutant_writes.items():
        target = root / path.lstrip("/")
        target.parent.mkdir(parents=True, exist_ok=True)
        moved = (data or b"").replace(b"/app/", f"{root}/app/".encode()).replace(b"'/app'", f"'{root}/app'".encode())
        target.write_bytes(moved)


def _file_effect(path: str, text: str) -> Effect:
    return Effect(changes=[FileChange(path=path, kind=ChangeKind.CREATED, content=text.encode(), mode=0o644)])


def _printed(mutant_writes: dict[str, bytes | None], args: list[str], root: Path) -> str:
    _materialise(mutant_writes, root)
    program = root / SCRIPT.lstrip("/")
    done = subprocess.run([sys.executable, str(program), *args], capture_output=True, text=True, check=True)
    return done.stdout


def _bash(script: str) -> bool:
    return subprocess.run(["bash", "-c", script], capture_output=True, check=False).returncode == 0


@pytest.mark.parametrize(
    ("test", "names"),
    [
        ('got=$(python3 /app/prog.py "$a")\nif [[ $got -eq $want ]]; then :; fi', ["want"]),
        ('got=$(cat out)\n[[ "$want" -ge "$got" ]] && ok=1', ["want"]),
        ("got=$(cat out)\n(( got == expected_total ))", ["expected_total"]),
        ("n=$(cat out)\nlet diff=n-limit", ["diff", "limit"]),
        ('got=$(cat out)\n[ "$got" -eq "$want" ]', []),  # test's -eq takes integers only: no arithmetic
        ("[[ $got == $want ]]", []),
    ],
)
def test_arithmetic_names_are_the_variables_a_shell_evaluates_except_the_captured_answer(test: str, names: list[str]):
    assert arithmetic_names([test]) == names


def test_a_name_printed_as_the_answer_reads_the_verifiers_variable_in_arithmetic_but_not_in_a_string_test():
    (name,) = arithmetic_names(["got=$(cat out)\n[[ $got -eq $want ]]"])
    arithmetic = f"want=17; got={name}; [[ $got -eq $want ]]"
    string = f'want=17; got={name}; [[ "$got" == "$want" ]]'
    assert _bash(arithmetic) and not _bash(string)


@pytest.mark.parametrize(
    ("test", "compares"),
    [("[[ $want == $got ]]", True), ("case $want in\n  $got) ok ;;\nesac", True), ('[ "$a" = "$b" ]', False)],
)
def test_pattern_comparisons_are_string_tests_in_double_brackets_and_case(test: str, compares: bool):
    assert compares_patterns([test]) is compares


def test_the_pattern_mutant_passes_an_unquoted_pattern_and_fails_a_quoted_one(tmp_path: Path):
    shell = VerifierSources(shell=['got=$(python3 /app/prog.py "$s")\n[[ $want == $got ]]'], other=[])
    obs = _observed([(["91"], "A\n"), (["55"], "F\n")])
    mutants = {m.name: m for m in edge_mutants(_program_effect(), obs, "Print the grade.", shell, EVERYTHING)}
    writes = mutants["edge:pattern"].writes
    got = _printed(writes, ["91"], tmp_path).strip()
    assert got == "*" and _printed(writes, ["12"], tmp_path).strip() == "*"  # any input: the real program runs
    assert _bash(f"want=A; got='{got}'; [[ $want == $got ]]")
    assert not _bash(f"want=A; got='{got}'; [[ $want == \"$got\" ]]")


def test_a_wrapped_script_changes_what_it_prints_and_the_files_it_writes_for_inputs_never_recorded(tmp_path: Path):
    obs = _observed([(["/tests/a.txt"], "2.5\n")])
    obs.trace = parse_trace(
        "\n".join(
            [
                "proc\t1\t0",
                "exec\t1\t0\t/usr/bin/bash\tbash%1F/tests/test.sh",
                "proc\t2\t1",
                f"exec\t2\t0\t/usr/bin/python3\tpython3%1F{SCRIPT}%1F/tests/a.txt",
                f"open\t2\t3\t{os.O_WRONLY | os.O_CREAT | os.O_TRUNC}\t/app/stats.json",
                f"out\t2\t{b'2.5'.hex()}",
                "exit\t2\t0",
                "exit\t1\t0",
            ]
        )
    )
    obs.outputs = {"/app/stats.json": '{"n": 2, "mean": 2.5, "values": [0.0, 5.0]}'}
    mutants = {m.name: m for m in edge_mutants(_program_effect(STATS), obs, "", NONE, EVERYTHING)}
    assert sorted(mutants) == ["edge:degenerate", "edge:not-a-number"]
    data = tmp_path / "data.txt"
    data.write_text("1 2 3 4\n")  # not an input the verifier gave
    (tmp_path / "app").mkdir()
    (tmp_path / "app/helpers.py").write_text("def as_float(v):\n    return float(v)\n")  # a sibling module
    assert _printed(mutants["edge:degenerate"].writes, [str(data)], tmp_path) == "inf\n"
    written = json.loads((tmp_path / "app/stats.json").read_text())
    assert written == {"n": 4, "mean": math.inf, "values": []}  # the count stays, floats infinite, lists empty
    assert _printed(mutants["edge:not-a-number"].writes, [str(data)], tmp_path) == "nan\n"
    got, want = float(_printed(mutants["edge:degenerate"].writes, [str(data)], tmp_path)), 1.118
    assert abs(got - want) <= 1e-6 * abs(got) and not math.isclose(got, want, rel_tol=1e-6)


def test_integer_answers_get_no_numeric_edge_mutant():
    obs = _observed([(["a"], "3\n"), (["b"], "12\n")])
    assert [m.name for m in edge_mutants(_program_effect(), obs, "", NONE, EVERYTHING)] == []


def test_a_module_the_verifier_imports_returns_degenerate_values_from_each_public_function(tmp_path: Path):
    source = b"def normalise(xs):\n    lo, hi = min(xs), max(xs)\n    return [(x - lo) / (hi - lo) for x in xs]\n"
    source += b"def spread(xs):\n    return float(max(xs) - min(xs))\n_CACHE = {}\n"
    path = "/app/scoring.py"
    effect = Effect(changes=[FileChange(path=path, kind=ChangeKind.CREATED, content=source, mode=0o644)])
    trace = parse_trace(
        "\n".join(
            [
                "proc\t1\t0",
                "exec\t1\t0\t/usr/bin/python3\tpython3%1F-I%1F-c%1Ffrom scoring import normalise",
                f"open\t1\t3\t0\t{path}",
                "exit\t1\t0",
            ]
        )
    )
    obs = Observation(observed=True, trace=trace)
    mutants = {m.name: m for m in edge_mutants(effect, obs, "Scale the scores in order.", NONE, EVERYTHING)}
    assert sorted(mutants) == ["edge:degenerate", "edge:not-a-number", "edge:reversed"]
    _materialise(mutants["edge:degenerate"].writes, tmp_path)
    code = "import scoring; print(scoring.normalise([2.0, 4.0, 6.0]), scoring.spread([1, 4]), scoring._CACHE)"
    done = subprocess.run([sys.executable, "-I", "-c", f"import sys; sys.path.insert(0, 'app'); {code}"],
                          cwd=tmp_path, capture_output=True, text=True, check=True)  # fmt: skip
    assert done.stdout == "[] inf {}\n"
    _materialise(mutants["edge:reversed"].writes, tmp_path)
    code = "import scoring; print(scoring.normalise([2.0, 4.0, 6.0])); scoring.spread([1, 4])"
    done = subprocess.run([sys.executable, "-I", "-c", f"import sys; sys.path.insert(0, 'app'); {code}"],
                          cwd=tmp_path, capture_output=True, text=True, check=False)  # fmt: skip
    assert done.stdout == "[1.0, 0.5, 0.0]\n"
    assert "no reversed value to give" in done.stderr  # a result the kind leaves right is no answer at all


def test_json_files_get_degenerate_numbers_and_lists_and_reversed_lists_only_when_an_order_is_asked():
    text = json.dumps({"mean": 2.5, "count": 4, "items": ["b", "a", "c"]}, indent=2) + "\n"
    effect = _file_effect("/app/summary.json", text)
    unordered = {m.name: m for m in edge_mutants(effect, None, "Write the summary.", NONE, EVERYTHING)}
    assert sorted(unordered) == ["edge:degenerate", "edge:not-a-number"]
    degenerate = json.loads(unordered["edge:degenerate"].writes["/app/summary.json"] or b"")
    assert degenerate == {"mean": math.inf, "count": 4, "items": []}
    ordered = {m.name: m for m in edge_mutants(effect, None, "List the items sorted by name.", NONE, EVERYTHING)}
    turned = json.loads(ordered["edge:reversed"].writes["/app/summary.json"] or b"")
    assert turned["items"] == ["c", "a", "b"]


def test_reversed_lines_fail_an_ordered_comparison_and_pass_an_order_blind_one():
    effect = _file_effect("/app/names_clean.txt", "alice\nbob\ncarol\n")
    (rev,) = edge_mutants(effect, None, "Write the names sorted alphabetically.", NONE, EVERYTHING)
    got = (rev.writes["/app/names_clean.txt"] or b"").decode().splitlines()
    want = ["alice", "bob", "carol"]
    assert got != want and sorted(got) == sorted(want)


def test_no_edge_mutant_of_files_the_verifier_does_not_take_or_of_code():
    effect = Effect(
        changes=[
            FileChange(path="/app/x.json", kind=ChangeKind.CREATED, content=b'{"v": [1.5]}', mode=0o644),
            FileChange(path="/app/run.py", kind=ChangeKind.CREATED, content=b"x = [1.5]\n", mode=0o644),
        ]
    )
    assert edge_mutants(effect, None, "", NONE, lambda p: p != "/app/x.json") == []


@pytest.mark.parametrize(
    ("instruction", "ordered"),
    [
        ("Write the names sorted alphabetically, one per line.", True),
        ("Print the rows in descending order of score.", True),
        ("Keep the lines in the input order.", True),
        ("Write one line per ticket.", False),
        ("Print the matching files, sorted or not: in any order.", False),
        ("List the ids (order does not matter).", False),
    ],
)
def test_an_order_is_asked_only_where_the_instruction_says_so(instruction: str, ordered: bool):
    assert asks_for_order(instruction) is ordered


@pytest.mark.parametrize(
    ("instruction", "share"),
    [
        ("At least 90% of the labels must be right.", 0.1),
        ("Reach an accuracy of at least 0.95 on the hidden set.", 0.05),
        ("no less than 75 percent of the answers must be correct", 0.25),
        ("Label every ticket.", 0.0),
        ("Reduce the size by at least 30% without changing the output.", 0.0),
        ("Make it at least 50% faster; every answer must stay right.", 0.0),
    ],
)
def test_the_tolerated_share_is_the_stated_bar(instruction: str, share: float):
    assert tolerated_share(instruction) == pytest.approx(share)


def test_a_stated_bar_keeps_one_wrong_record_out_of_the_mutants_and_shuffles_need_an_order():
    text = "".join(f'{{"id": {i}, "category": "bug"}}\n' for i in range(10))
    effect = _file_effect("/app/answers.jsonl", text)
    strict = {m.kind.value for m in make_mutants(effect, instruction="Label every ticket, in the input order.")}
    assert {"corrupt-line", "shuffle"} <= strict
    bar = {m.kind.value for m in make_mutants(effect, instruction="At least 90% of the labels must be right.")}
    assert "corrupt-line" not in bar and "shuffle" not in bar and {"empty-all", "truncate"} <= bar
    short = _file_effect("/app/answers.jsonl", text.splitlines(keepends=True)[0] * 1 + '{"id": 9, "c": 1}\n')
    few = {m.kind.value for m in make_mutants(short, instruction="At least 90% of the labels must be right.")}
    assert "corrupt-line" in few  # one wrong of two is more than the 10% the bar allows


def test_shell_sources_are_the_verifiers_shell_scripts(tmp_path: Path):
    (tmp_path / "test.sh").write_text("[[ $a -eq $b ]]\n")
    (tmp_path / "run").write_text("#!/usr/bin/env bash\n(( total == x ))\n")
    (tmp_path / "check.py").write_text("print('[[ $no -eq $no ]]')\n")
    sources = verifier_sources(tmp_path)
    assert arithmetic_names(sources.shell) == ["total", "x"]  # `run` before `test.sh`; not check.py
    assert len(sources.other) == 1


@pytest.mark.parametrize(
    ("text", "reversed_"),
    [
        ("alice\nbob\n", True),
        ("TOTAL=3\nTOP_USER=bob\nOVER=a,b\n", False),  # a mapping: its line order is no part of the answer
        ("total: 3\nusers: 2\n", False),
        ("a=1\na=2\n", True),  # the same name twice: an ordered list of assignments
        ('{"id": 2}\n{"id": 1}\n', True),
    ],
)
def test_lines_of_a_mapping_are_never_reordered(text: str, reversed_: bool):
    effect = _file_effect("/app/out.txt", text)
    kinds = {m.name for m in edge_mutants(effect, None, "Write the owners sorted.", NONE, EVERYTHING)}
    assert ("edge:reversed" in kinds) is reversed_
    shuffled = {m.kind.value for m in make_mutants(effect, instruction="Write the owners sorted.")}
    assert ("shuffle" in shuffled) is reversed_


@pytest.mark.parametrize(
    ("test", "splits"),
    [
        ("got=$(cat out)\nif [ $got = $want ]; then ok=1; fi", True),
        ('if test $got -eq "$want"; then :; fi', True),
        ('if [ "$got" = "$want" ]; then ok=1; fi', False),
        ("[[ $got == $want ]]", False),
    ],
)
def test_word_splitting_is_an_unquoted_variable_in_a_single_bracket_test(test: str, splits: bool):
    assert splits_words([test]) is splits


@pytest.mark.parametrize("op", ["=", "-eq", "!="])
def test_the_word_split_answer_makes_a_test_true_on_either_side_and_is_refused_quoted(op: str):
    answer = "1 -o 1"
    for test in (f"[ $got {op} $want ]", f"[ $want {op} $got ]"):
        assert _bash(f"want=17; got='{answer}'; {test}"), test
    assert not _bash(f'want=17; got=\'{answer}\'; [ "$got" = "$want" ]')


def test_the_regex_answer_matches_anything_used_as_the_pattern_and_nothing_used_as_the_subject(tmp_path: Path):
    sources = VerifierSources(shell=[], other=["import re\nok = all(re.fullmatch(g, w) for g, w in zip(got, want))"])
    assert matches_regex(sources) and not matches_regex(NONE)
    literal = VerifierSources(shell=['grep -E "^ok" log'], other=['m = re.search(r"total: (\\d+)", out)'])
    assert not matches_regex(literal)  # patterns the verifier spells out are not the answer's
    assert matches_regex(VerifierSources(shell=["[[ $want =~ $got ]]"], other=[]))
    effect = _file_effect("/app/dates.txt", "2024-01-02\n2024-03-04\n")
    mutants = {m.name: m for m in edge_mutants(effect, None, "", sources, EVERYTHING)}
    lines = (mutants["edge:regex"].writes["/app/dates.txt"] or b"").decode().splitlines()
    assert lines == [".*", ".*"]  # one per answer line
    import re

    assert all(re.fullmatch(g, w) for g, w in zip(lines, ["2024-01-02", "2024-03-04"], strict=True))
    assert not any(re.fullmatch(w, g) for g, w in zip(lines, ["2024-01-02", "2024-03-04"], strict=True))


def _database(tmp_path: Path) -> bytes:
    import sqlite3

    path = tmp_path / "shop.db"
    with sqlite3.connect(path) as db:
        db.execute("CREATE TABLE order_totals (order_id INTEGER, total REAL, customer TEXT)")
        db.executemany("INSERT INTO order_totals VALUES (?, ?, ?)", [(1, 9.5, "ann"), (2, 3.25, "bob")])
        db.execute("CREATE TABLE audit_log (note TEXT)")  # a trigger the task's database brings is never run
        db.execute("CREATE TRIGGER keep AFTER DELETE ON order_totals BEGIN INSERT INTO audit_log VALUES ('x'); END")
    data = path.read_bytes()
    path.unlink()
    return data


def _query(data: bytes, tmp_path: Path, sql: str) -> list[tuple[object, ...]]:
    import sqlite3
    from contextlib import closing

    path = tmp_path / "check.db"
    path.write_bytes(data)
    with closing(sqlite3.connect(path)) as db:
        db.execute("CREATE TABLE expected (order_id INTEGER, total REAL)")
        db.executemany("INSERT INTO expected VALUES (?, ?)", [(1, 9.5), (2, 3.25)])
        rows = db.execute(sql).fetchall()
    path.unlink()
    return rows


def test_a_database_answer_gets_its_rows_deleted_and_its_numbers_made_null(tmp_path: Path):
    data = _database(tmp_path)
    effect = Effect(changes=[FileChange(path="/app/shop.db", kind=ChangeKind.CREATED, content=data, mode=0o644)])
    mutants = {m.name: m for m in edge_mutants(effect, None, "", NONE, EVERYTHING)}
    assert sorted(mutants) == ["edge:degenerate", "edge:not-a-number"]
    emptied = mutants["edge:degenerate"].writes["/app/shop.db"] or b""
    one_sided = "SELECT order_id, total FROM order_totals EXCEPT SELECT order_id, total FROM expected"
    both = one_sided + " UNION ALL SELECT order_id, total FROM expected EXCEPT SELECT order_id, total FROM order_totals"
    assert _query(emptied, tmp_path, one_sided) == [] and _query(emptied, tmp_path, both) != []
    assert _query(emptied, tmp_path, "SELECT count(*) FROM order_totals") == [(0,)]  # the table is still there
    assert _query(emptied, tmp_path, "SELECT count(*) FROM sqlite_master WHERE type = 'trigger'") == [(0,)]
    nulls = mutants["edge:not-a-number"].writes["/app/shop.db"] or b""
    wrong = "SELECT count(*) FROM order_totals g JOIN expected e ON g.rowid = e.rowid WHERE g.total != e.total"
    assert _query(nulls, tmp_path, wrong) == [(0,)]
    assert _query(nulls, tmp_path, "SELECT customer FROM order_totals ORDER BY rowid") == [("ann",), ("bob",)]
    assert _query(data, tmp_path, wrong) == [(0,)] and _query(data, tmp_path, both) == []


def test_a_module_with_a_public_class_gets_no_edge_mutant():
    """Its class would be left as it was: a verifier that uses only the class would see right answers only."""
    source = b"class RingBuffer:\n    def get(self):\n        return [1.5]\ndef helper(x):\n    return 2.5 * x\n"
    path = "/app/ringbuf.py"
    effect = Effect(changes=[FileChange(path=path, kind=ChangeKind.CREATED, content=source, mode=0o644)])
    trace = parse_trace(
        "proc\t1\t0\nexec\t1\t0\t/usr/bin/python3\tpython3%1F-I%1F-c%1Fimport ringbuf\n"
        f"open\t1\t3\t0\t{path}\nexit\t1\t0"
    )
    assert edge_mutants(effect, Observation(observed=True, trace=trace), "", NONE, EVERYTHING) == []


def test_verifier_sources_skip_links_out_of_the_task_and_read_large_files_in_part(tmp_path: Path):
    outside = tmp_path / "host-secret.sh"
    outside.write_text("[[ $leak -eq $other ]]\n")
    tests = tmp_path / "tests"
    tests.mkdir()
    (tests / "link.sh").symlink_to(outside)  # a stranger's task: never read through
    (tests / "big.sh").write_text("[[ $got -eq $want ]]\n" + "#" * 400_000)
    sources = verifier_sources(tests)
    assert arithmetic_names(sources.shell) == ["got", "want"] and len(sources.shell[0]) == 256 * 1024
