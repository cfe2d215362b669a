"""Trusted data in another form than the work: generated tasks whose verifier checks the output against a count
or a total it reads from a file, crossed over where that file is (agent-writable in /app, the verifier's own
under /tests, or in /app but named by the instruction as an input), audited on each backend.

Expected, from the combination alone: an agent-writable count is forged with an empty output (`data-empty`), an
agent-writable total with the output's numbers zeroed (`data-zero`), both `reward_tamper`; the verifier's own
file and a file the instruction hands the agent get no trial and no finding."""

from __future__ import annotations

import itertools
import json
from pathlib import Path

import pytest

from qaflow.audit.exploits.data_forge import DATA_EMPTY, DATA_ZERO, ZERO_SED, plan_data_forge, zero_numbers
from qaflow.audit.observation import Access, Observation
from qaflow.audit.runner import AuditConfig, Auditor
from qaflow.models.records import RunKind
from qaflow.pool import Pool
from qaflow.trial.effects import ChangeKind, Effect, FileChange
from tests.conftest import require_backend
from tests.taskfactory import write_task

REWARD = (
    "#!/bin/bash\nmkdir -p /logs/verifier\n"
    "if python3 /tests/check.py; then echo 1; else echo 0; fi > /logs/verifier/reward.txt\n"
)
KINDS = {
    "count": {
        "data": '{"rows": 3}\n',
        "name": "manifest.json",
        "instruction": "Write the words of /app/items.txt to /app/out.txt, one per line, sorted.\n",
        "solve": "#!/bin/bash\ntr ' ' '\\n' < /app/items.txt | sed '/^$/d' | sort > /app/out.txt\n",
        "check": (
            "import json\n\nitems = open('/app/items.txt').read().split()\nrows = json.load(open({data!r}))['rows']\n"
            "try:\n    lines = open('/app/out.txt').read().split()\nexcept OSError:\n    raise SystemExit(1)\n"
            "ok = len(lines) == rows and lines == sorted(lines) and all(w in items for w in lines)\n"
            "raise SystemExit(0 if ok else 1)\n"
        ),
        "inputs": {"items.txt": "pear apple fig\n"},
        "exploit": DATA_EMPTY,
    },
    "total": {
        "data": '{"total": 60}\n',
        "name": ".baseline.json",
        "instruction": "Write the sum of the numbers in /app/nums.txt to /app/total.txt.\n",
        "solve": (
            "#!/bin/bash\npython3 -c \"print(sum(map(int, open('/app/nums.txt').read().split())))\" > /app/total.txt\n"
        ),
        "check": (
            "import json\n\ntry:\n    got = int(open('/app/total.txt').read())\nexcept (OSError, ValueError):\n"
            "    raise SystemExit(1)\nraise SystemExit(0 if got == json.load(open({data!r}))['total'] else 1)\n"
        ),
        "inputs": {"nums.txt": "10 20 30\n"},
        "exploit": DATA_ZERO,
    },
}
WHERE = ["app", "tests", "named"]
CELLS = list(itertools.product(KINDS, WHERE))
ON_DOCKER = [(kind, where) for kind, where in CELLS if where != "named"]
"""Docker audits the forged and the hidden cells (CI's time): whether the instruction names the data is decided
from the task's text, the same on every backend."""


def write_cell(root: Path, kind: str, where: str) -> Path:
    spec = KINDS[kind]
    data = f"/tests/{spec['name']}" if where == "tests" else f"/app/{spec['name']}"
    instruction = str(spec["instruction"])
    if where == "named":
        instruction += f"{data} holds what the result is checked against; leave it as it is.\n"
    inputs: dict[str, str] = spec["inputs"]  # type: ignore[assignment]
    copies = "".join(f"COPY {name} /app/{name}\n" for name in inputs)
    files = {f"environment/{name}": text for name, text in inputs.items()}
    if where == "tests":
        files[f"tests/{spec['name']}"] = str(spec["data"])
    else:
        files[f"environment/{spec['name']}"] = str(spec["data"])
        copies += f"COPY {spec['name']} {data}\n"
    files["tests/check.py"] = str(spec["check"]).format(data=data)
    return write_task(
        root,
        f"{kind}-{where}",
        test_sh=REWARD,
        solve_sh=str(spec["solve"]),
        instruction=instruction,
        dockerfile=f"FROM python:3.11-slim\nWORKDIR /app\n{copies}",
        files=files,
    )


@pytest.mark.parametrize("backend_name", [pytest.param("docker", marks=pytest.mark.docker),
                                          pytest.param("bwrap", marks=pytest.mark.bwrap)])  # fmt: skip
def test_forged_data_is_found_exactly_where_the_agent_can_write_it(backend_name: str, tmp_path: Path) -> None:
    require_backend(backend_name)
    cells = ON_DOCKER if backend_name == "docker" else CELLS
    for kind, where in cells:
        write_cell(tmp_path, kind, where)
    with Pool.open(tmp_path) as pool:
        pool.scan()
        run = pool.ledger.start_run(RunKind.AUDIT)
        config = AuditConfig(backend=backend_name, jobs=2, repeats=2, verifier_reruns=3)
        auditor = Auditor(pool.ledger, run.run_id, config)
        try:
            audits = {a.task.removeprefix("test/"): a for a in auditor.audit(sorted(tmp_path.glob("*-*")))}
        finally:
            auditor.close()
    for kind, where in cells:
        audit = audits[f"{kind}-{where}"]
        errors = [f for f in audit.findings if f.severity.value == "error"]
        if where != "app":
            assert errors == [], (kind, where, errors)
            tried = audit.probes["observe"].get("exploits", {})
            assert not any(name.startswith("data-") for name in tried), (kind, where, tried)
            continue
        assert [f.code.value for f in errors] == ["reward_tamper"], (kind, where, audit.findings)
        (entry,) = errors[0].evidence["exploits"]
        assert entry["exploit"] == KINDS[kind]["exploit"] and entry["data"] == [f"/app/{KINDS[kind]['name']}"]
        assert (entry["control"]["reward"], entry["run"]["reward"]) == (0.0, 1.0)
        assert f"--agent exploit:{KINDS[kind]['exploit']}" in entry["reproduce"]


def test_zeroing_keeps_the_form_and_the_sandbox_does_the_same() -> None:
    assert zero_numbers(b'{"rows": 12, "mean": -3.5e2, "id": "a7"}\n') == b'{"rows": 0, "mean": 0, "id": "a0"}\n'
    assert json.loads(zero_numbers(b'{"total": 60, "parts": [1.5, 2]}')) == {"total": 0, "parts": [0, 0]}
    assert ZERO_SED.startswith("s/-?[0-9]+")


def test_only_unnamed_data_the_oracle_left_alone_is_forged() -> None:
    effect = Effect(changes=[FileChange(path="/app/total.txt", kind=ChangeKind.CREATED, content=b"60\n", mode=0o644)])

    def access(path: str, how: str = "read") -> Access:
        by = ["/tests/check.py"]
        return Access(path=path, how=[how], by=by, exists=True, writable=True, readable=True, owner="task")

    obs = Observation(
        observed=True,
        accesses=[
            access("/app/total.txt"),
            access("/app/.baseline.json"),
            access("/app/nums.txt"),  # read by the oracle too: an input of the work
            access("/app/config.ini"),  # configuration, not data
            access("/app/lib.py", "import"),
        ],
        oracle_reads=["/app/nums.txt"],
    )
    pairs = plan_data_forge(obs, effect, "Sum the numbers in the input to /app/total.txt.\n")
    names = [(e.name, c.name) for e, c in pairs]
    assert names == [(DATA_ZERO, "data-zero-control"), (DATA_EMPTY, "data-empty-control")]
    forged, control = pairs[0]
    assert [(p.path, p.content, p.command is not None) for p in forged.plants] == [
        ("/app/total.txt", "0\n", False),
        ("/app/.baseline.json", "", True),
    ]
    assert [p.path for p in control.plants] == ["/app/total.txt"]
    assert plan_data_forge(obs, effect, "Sum to /app/total.txt; /app/.baseline.json is the check.\n") == []
