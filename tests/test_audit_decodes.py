"""Answers shipped encoded in the image (`qaflow.audit.exploits.decodes`): which traced commands decode, what the
replay plans, and audits on bwrap of generated tasks: the answer packed in a tarball or base64 beside the
workspace is `leak`; a task whose instruction asks for the unpacking, and one whose reference solution decodes
data to compute from it, are accepted."""

from __future__ import annotations

import json
import shlex
from pathlib import Path

import pytest
from typer.testing import CliRunner

from qaflow.audit.exploits.decodes import (
    DECODE_COPY,
    REFED,
    decode_steps,
    is_decoding,
    plan_decode_copy,
    reads_stdin,
)
from qaflow.audit.observation import DecodeStep, Observation
from qaflow.audit.observer_files import BASH_ENV_FILE, SEP
from qaflow.cli import app
from qaflow.trial.effects import ChangeKind, Effect, FileChange
from tests.conftest import require_backend
from tests.taskfactory import write_task

DECODING = [
    "openssl enc -d -aes-256-cbc -pbkdf2 -pass pass:tb-secret -in /app/.oracle/solution.enc -out /tmp/p.tar",
    "gpg --batch --passphrase x -d /app/a.gpg",
    "base64 -d /app/a.b64",
    "base64 --decode /app/a.b64",
    "xxd -r -p /app/a.hex",
    "tar -xzf /app/p.tgz -C /app/.oracle",
    "tar xf /app/p.tar",
    "tar --extract --file=/app/p.tar",
    "gzip -dc /app/a.gz",
    "xz -d /app/a.xz",
    "zcat /app/a.gz",
    "unzip -o /app/a.zip -d /app",
    "7z x /app/a.7z",
]
NOT_DECODING = [
    "openssl enc -aes-256-cbc -in /app/a -out /app/a.enc",
    "base64 /app/a",
    "tar -czf /app/p.tgz /app/files",
    "tar -tf /app/p.tar",
    "gzip /app/a",
    "xxd /app/a",
    "cat /app/a.gz",
    "7z a /app/a.7z /app/a",
]


@pytest.mark.parametrize("command", DECODING)
def test_decoding_commands_are_recognised(command: str):
    assert is_decoding(shlex.split(command))


@pytest.mark.parametrize("command", NOT_DECODING)
def test_encoding_listing_and_reading_are_not_decoding(command: str):
    assert not is_decoding(shlex.split(command))


def _line(command: str, source: str = "/solution/solve.sh", cwd: str = "/app") -> str:
    return f"+{SEP}{source}{SEP}{cwd}{SEP} {command}"


def test_decode_steps_keep_order_folder_and_absolute_inputs_but_not_the_observers_lines():
    logs = {
        "sh.7.trace": "\n".join(
            [
                _line("mkdir -p /app/.oracle"),
                _line("PW=x openssl enc -d -pass pass:x -in .oracle/solution.enc -out /tmp/p.tar"),
                _line("tar -xf /tmp/p.tar -C /app/.oracle"),
                _line(". /root/.bashrc", source=BASH_ENV_FILE),
                _line("cp /app/.oracle/files/a.txt /app/a.txt"),
            ]
        ),
        "py.7.jsonl": "{}",
    }
    steps = decode_steps(logs)
    assert [s.command.split()[0] for s in steps] == ["PW=x", "tar"]
    assert steps[0].inputs == ["/app/.oracle/solution.enc", "/tmp/p.tar"] and steps[0].cwd == "/app"
    assert steps[1].inputs == ["/tmp/p.tar", "/app/.oracle"]


PIPE_FED = [
    "tar -xz -C /app/.oracle",
    "tar x",
    "tar -xzf - -C /app",
    "openssl enc -d -aes-256-cbc -pass pass:x",
    "base64 -d",
    "gzip -d",
    "xxd -r -p",
    "zcat -",
]
FILE_FED = [c for c in DECODING if not c.startswith("gpg")]


@pytest.mark.parametrize("command", PIPE_FED + FILE_FED)
def test_a_decoder_that_names_no_file_reads_a_pipe(command: str):
    assert reads_stdin(shlex.split(command)) == (command in PIPE_FED)


def test_a_pipeline_traced_in_either_order_replays_its_file_step_first_and_feeds_the_next():
    pipeline = [
        _line("openssl enc -d -aes-256-cbc -pbkdf2 -pass pass:p -in /app/.oracle/solution.enc"),
        _line("tar -xz -C /app/.oracle/payload"),
    ]
    for lines in (pipeline, pipeline[::-1]):
        steps = decode_steps({"sh.3.trace": "\n".join([*lines, _line("gunzip -c /app/.oracle/b.gz")])})
        assert [(s.command.split()[0], s.stdin) for s in steps] == [
            ("openssl", False),
            ("tar", True),
            ("gunzip", False),
        ]
    obs = Observation(observed=True, oracle_decodes=steps, oracle_reads=["/app/.oracle/solution.enc"])
    exploit = plan_decode_copy(obs, _effect({"/app/a.txt": b"Ada\n"}), "Write the first programmer's name.")
    assert exploit is not None
    assert [p.command for p in exploit.plants[:2]] == [
        "(cd /app && openssl enc -d -aes-256-cbc -pbkdf2 -pass pass:p -in /app/.oracle/solution.enc"
        " > /tmp/.qaflow-decoded-0)",
        "(cd /app && mkdir -p /app/.oracle/payload; for c in /tmp/.qaflow-decoded-0; do"
        ' [ -s "$c" ] && tar -xz -C /app/.oracle/payload < "$c" > /tmp/.qaflow-decoded-1'
        " && : > /tmp/.qaflow-decoded-1.done && break; done)",
    ]
    # a step that names a file comes after the pipe-fed one: if no earlier step fed it, every step's output
    # is tried again once all ran (the newest first)
    (again,) = [p.command or "" for p in exploit.plants if p.why.startswith(REFED)]
    assert again.startswith("[ -e /tmp/.qaflow-decoded-1.done ] || (cd /app && mkdir -p /app/.oracle/payload; ")
    assert "for c in /tmp/.qaflow-decoded-2 /tmp/.qaflow-decoded-0; do" in again


def _effect(files: dict[str, bytes]) -> Effect:
    return Effect(
        changes=[FileChange(path=p, kind=ChangeKind.CREATED, content=c, file_type="file") for p, c in files.items()],
        method="find",
    )


SHIPPED = DecodeStep(command="tar -xzf /app/.oracle/p.tgz -C /app/.oracle", inputs=["/app/.oracle/p.tgz"])


def test_the_replay_is_planned_only_for_a_file_the_image_ships_that_the_instruction_does_not_name():
    effect = _effect({"/app/.oracle/files/a.txt": b"Ada\n", "/app/a.txt": b"Ada\n"})
    obs = Observation(observed=True, oracle_decodes=[SHIPPED], oracle_reads=["/app/.oracle/p.tgz"])
    exploit = plan_decode_copy(obs, effect, "Write the first programmer's name to /app/a.txt.")
    assert exploit is not None and exploit.name == DECODE_COPY
    replay = "(cd / && mkdir -p /app/.oracle; tar -xzf /app/.oracle/p.tgz -C /app/.oracle > /tmp/.qaflow-decoded-0)"
    assert exploit.plants[0].command == replay
    (target,) = [p for p in exploit.plants if p.path == "/app/a.txt"]
    assert "/app/.oracle/files/a.txt" in (target.command or "")
    # the decoding is the task, or needs what only the reference solution has, or reads nothing shipped
    asked = ("Unpack /app/.oracle/p.tgz into /app.", "Extract the name from the archive.", "Decrypt it.", "Restore it.")
    for instruction in asked:
        assert plan_decode_copy(obs, effect, instruction) is None
    secret = DecodeStep(command="gpg -d /solution/key /app/a.gpg", inputs=["/solution/key", "/app/a.gpg"])
    assert plan_decode_copy(obs.model_copy(update={"oracle_decodes": [SHIPPED, secret]}), effect, "Write it.") is None
    made = DecodeStep(command="tar -xf /tmp/built.tar", inputs=["/tmp/built.tar"])
    effect_made = _effect({"/tmp/built.tar": b"x", "/app/a.txt": b"Ada\n"})
    assert plan_decode_copy(obs.model_copy(update={"oracle_decodes": [made]}), effect_made, "Write it.") is None


INSTRUCTION = "Write the name of the first programmer to /app/out.txt, on one line.\n"
VERIFIER = (
    "#!/bin/bash\nmkdir -p /logs/verifier\n"
    'if [ "$(cat /app/out.txt 2>/dev/null)" = "Ada Lovelace" ]; then echo 1; else echo 0; fi'
    " > /logs/verifier/reward.txt\n"
)
PACKED = (
    "FROM python:3.11-slim\nWORKDIR /app\n"
    "RUN mkdir -p /app/.oracle/files && echo 'Ada Lovelace' > /app/.oracle/files/answer.txt && "
    "tar -czf /app/.oracle/payload.tgz -C /app/.oracle files && rm -r /app/.oracle/files\n"
)
UNPACK = (
    "#!/bin/bash\nset -e\ntar -xzf /app/.oracle/payload.tgz -C /app/.oracle\n"
    "cp /app/.oracle/files/answer.txt /app/out.txt\n"
)
ENCODED = (
    "FROM python:3.11-slim\nWORKDIR /app\nRUN mkdir -p /app/.oracle && echo QWRhIExvdmVsYWNlCg== > /app/.oracle/a.b64\n"
)
PIPED = (
    "FROM python:3.11-slim\nWORKDIR /app\n"
    "RUN mkdir -p /app/.oracle/files && echo 'Ada Lovelace' > /app/.oracle/files/answer.txt && "
    "tar -cz -C /app/.oracle files | base64 > /app/.oracle/p.b64 && rm -r /app/.oracle/files\n"
)
NUMBERS = "FROM python:3.11-slim\nWORKDIR /app\nRUN mkdir -p /app/data && seq 1 10 | gzip > /app/data/numbers.gz\n"
SUM_VERIFIER = (
    "#!/bin/bash\nmkdir -p /logs/verifier\n"
    'if [ "$(cat /app/out.txt 2>/dev/null)" = 55 ]; then echo 1; else echo 0; fi > /logs/verifier/reward.txt\n'
)


@pytest.mark.bwrap
def test_an_answer_packed_or_encoded_in_the_image_is_a_leak_and_decoding_work_is_not(tmp_path: Path):
    require_backend("bwrap")
    pool = tmp_path / "pool"
    write_task(pool, "packed", test_sh=VERIFIER, solve_sh=UNPACK, dockerfile=PACKED, instruction=INSTRUCTION)
    decode = "#!/bin/bash\nbase64 -d /app/.oracle/a.b64 > /app/out.txt\n"
    write_task(pool, "encoded", test_sh=VERIFIER, solve_sh=decode, dockerfile=ENCODED, instruction=INSTRUCTION)
    asked = "Unpack /app/.oracle/payload.tgz and write the name in its answer.txt to /app/out.txt.\n"
    write_task(pool, "asked", test_sh=VERIFIER, solve_sh=UNPACK, dockerfile=PACKED, instruction=asked)
    piped = (
        "#!/bin/bash\nset -e\nbase64 -d /app/.oracle/p.b64 | tar -xz -C /app/.oracle\n"
        "cp /app/.oracle/files/answer.txt /app/out.txt\n"
    )
    write_task(pool, "piped", test_sh=VERIFIER, solve_sh=piped, dockerfile=PIPED, instruction=INSTRUCTION)
    total = "#!/bin/bash\nzcat /app/data/numbers.gz | awk '{s += $1} END {print s}' > /app/out.txt\n"
    summed = "Write the sum of the numbers the image keeps for you to /app/out.txt.\n"
    write_task(pool, "summed", test_sh=SUM_VERIFIER, solve_sh=total, dockerfile=NUMBERS, instruction=summed)
    report = tmp_path / "audit.json"
    args = ["audit", str(pool), "--backend", "bwrap", "--repeats", "1", "--json", str(report)]
    out = CliRunner().invoke(app, [*args, "--offline", "--network", "none"])
    assert out.exit_code == 0, out.output
    audits = {Path(a["path"]).name: a for a in json.loads(report.read_text())["tasks"]}
    errors = {n: sorted(f["code"] for f in a["findings"] if f["severity"] == "error") for n, a in audits.items()}
    assert errors == {"packed": ["leak"], "encoded": ["leak"], "piped": ["leak"], "asked": [], "summed": []}, errors
    for name in ("packed", "encoded", "piped"):
        (leak,) = [f for f in audits[name]["findings"] if f["code"] == "leak"]
        assert leak["evidence"]["exploits"][0]["exploit"] == DECODE_COPY
        assert "--agent exploit:decode-copy" in leak["evidence"]["exploits"][0]["reproduce"]
    # the sum's reference solution decodes shipped data too: replayed, it recovers no answer
    assert audits["summed"]["probes"]["observe"]["exploits"][DECODE_COPY]["reward"] == 0.0
    assert DECODE_COPY not in audits["asked"]["probes"]["observe"].get("exploits", {})
