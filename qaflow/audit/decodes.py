"""Answers shipped encoded in the image, found by running: the `decode-copy` exploit.

The observe probe traces the reference solution's shell. A decoding step among its commands (decryption by
`openssl ... -d` or `gpg -d`, `base64 -d`, `xxd -r`, decompression, archive extraction) that reads a
task-owned file the image ships and the instruction never names is how the answer reaches the workspace when
it ships in the image encrypted or packed (Terminal-Bench's aider adapter ships every reference solution as
`/app/.oracle/solution.enc` under a public default password). The proof is one trial: on the untouched
environment, as the agent, those decoding steps run as the reference solution ran them (the traced words, in
its folder; what a step prints is kept in a file), then each output the oracle wrote that now differs from
what it wrote is replaced by a file that equals it (one the replay made, or the oracle made beside it), then
the real verifier runs. Full reward where the nop gets none is `leak`: the answer is in the image, and the
reference solution's own steps recover it without doing the task.

Not tried where the instruction is about decoding (it names the encoded file, or speaks of decrypting,
passwords, archives to unpack): there the decoding is the task. A step that names no file to decode read a pipe
(`openssl ... | tar x`: the trace shows the pipeline's commands apart, in any order): it is replayed after the
step that names a file and fed what that step printed. Blind spots: a decoder run from Python, a pipe fed by a
command that is not a decoder (`cat f | tar x`), and a key the reference solution reads from its own folder
(`/solution`, which the agent never sees: not replayed).
"""

from __future__ import annotations

import posixpath
import re
import shlex
from collections.abc import Iterable, Sequence

from qaflow.audit.answers import named_in
from qaflow.audit.effects import ChangeKind, Effect
from qaflow.audit.exploits import Exploit, Plant
from qaflow.audit.observation import TRACE_LINE, DecodeStep, Observation
from qaflow.audit.observer_files import BASH_ENV_FILE
from qaflow.audit.probe_run import ProbeRun
from qaflow.models.audit import AuditFinding
from qaflow.models.records import FindingCode

DECODE_COPY = "decode-copy"
MAX_DECODE_STEPS = 8
MAX_TARGETS = 16
CAPTURE = "/tmp/.qaflow-decoded-{}"
"""Where the replay keeps what decoding step N printed (a step that wrote to a redirect in the solution)."""

REPLAYED = "the reference solution's decoding step, replayed as the agent"
REFED = "the reference solution's pipe-fed decoding step, fed again from every step once all ran"

ABOUT_DECODING = re.compile(
    r"\b(decrypt\w*|encrypt\w*|decod\w*|encod\w*|password\w*|passphrase\w*|\w*cipher\w*|unpack\w*|extract\w*|"
    r"decompress\w*|compress\w*|unzip\w*|zip|gzip\w*|tar|archive\w*|tarball\w*|crack\w*|restor\w*|backup\w*|"
    r"base64|hex)\b",
    re.IGNORECASE,
)
"""An instruction with these words asks for the decoding itself."""

_ALWAYS = frozenset(
    ["gunzip", "zcat", "unxz", "xzcat", "bunzip2", "bzcat", "unzstd", "zstdcat", "unzip", "uncompress", "lzcat"]
)
_WITH_D = frozenset(["gzip", "xz", "bzip2", "zstd", "lzma"])


def is_decoding(words: Sequence[str]) -> bool:
    """Whether a command line decrypts, decodes, decompresses or unpacks."""
    if not words:
        return False
    program, args = posixpath.basename(words[0]), list(words[1:])
    flags = set(args)
    short = "".join(a[1:] for a in args if a.startswith("-") and not a.startswith("--"))
    if program == "openssl":
        return "-d" in flags or "-decrypt" in flags
    if program in ("gpg", "gpg2"):
        return bool({"-d", "--decrypt"} & flags)
    if program in ("base64", "base32", "basenc"):
        return bool({"-d", "--decode", "-D"} & flags)
    if program == "xxd":
        return "-r" in flags or "-revert" in flags
    if program in _ALWAYS:
        return True
    if program in _WITH_D:
        return "d" in short or bool({"--decompress", "--uncompress"} & flags)
    if program == "tar":
        first = args[0] if args else ""
        return "--extract" in flags or "x" in short or (bool(first) and not first.startswith("-") and "x" in first)
    if program in ("7z", "7za", "7zr"):
        return bool(args) and args[0] in ("x", "e")
    return False


def reads_stdin(words: Sequence[str]) -> bool:
    """Whether a decoding command line names no file to decode, so it decodes what a pipe feeds it."""
    program, args = posixpath.basename(words[0]), list(words[1:])
    if program == "tar":
        first = args[0] if args and not args[0].startswith("-") else ""
        bundled = [a for a in args if a[:1] == "-" and a[1:2] != "-"]
        named = "f" in first or any("f" in a for a in bundled) or any(a.split("=")[0] == "--file" for a in args)
        return not named or "-" in args
    if program == "openssl":
        return "-in" not in args
    if program in ("7z", "7za", "7zr", "unzip", "gpg", "gpg2"):
        return False  # they take the file as an operand after options with values: assume one is named
    operands = [a for a in args if not a.startswith("-") or a == "-"]
    return not operands or operands == ["-"]


def _tar_folder(words: Sequence[str]) -> str | None:
    """The folder a `tar` command extracts into (`-C DIR`, `--directory[=]DIR`), if it names one."""
    for i, arg in enumerate(words):
        if arg in ("-C", "--directory") and i + 1 < len(words):
            return words[i + 1]
        if arg.startswith("--directory="):
            return arg.split("=", 1)[1]
    return None


def decode_steps(logs: dict[str, str]) -> list[DecodeStep]:
    """The decoding commands in the observer's shell traces of one run, in the order each shell ran them."""
    steps: list[DecodeStep] = []
    for name in sorted(logs):
        if not name.startswith("sh."):
            continue
        for line in logs[name].splitlines():
            m = TRACE_LINE.match(line)
            if not m or m.group(1) == BASH_ENV_FILE:
                continue
            _source, cwd, command = m.groups()
            try:
                words = shlex.split(command)
            except ValueError:
                continue
            while words and re.match(r"^[A-Za-z_][A-Za-z0-9_]*=", words[0]):
                words = words[1:]
            if not is_decoding(words):
                continue
            inputs = [posixpath.normpath(posixpath.join(cwd or "/", p)) for p in _paths(words[1:])]
            step = DecodeStep(
                command=command, cwd=cwd or "/", inputs=list(dict.fromkeys(inputs)), stdin=reads_stdin(words)
            )
            steps.append(step)
    return _feeders_first(steps)[:MAX_DECODE_STEPS]


def _feeders_first(steps: list[DecodeStep]) -> list[DecodeStep]:
    """The steps, with pipe-fed ones that nothing before them could feed moved after the next step that names a
    file: the commands of a pipeline trace in either order (each runs in its own process)."""
    out: list[DecodeStep] = []
    waiting: list[DecodeStep] = []
    for step in steps:
        if step.stdin and not out:
            waiting.append(step)
            continue
        out.append(step)
        if not step.stdin:
            out += waiting
            waiting = []
    return out + waiting


def _paths(args: Iterable[str]) -> list[str]:
    found = []
    for arg in args:
        for part in arg.split("=", 1)[-1:]:
            if part.startswith(("/", "./", "../")) or ("/" in part and not part.startswith("-")):
                found.append(part)
    return found


def plan_decode_copy(observation: Observation, effect: Effect | None, instruction: str) -> Exploit | None:
    """The replay of the reference solution's decoding steps and the copies onto its outputs, or None where
    no step decodes a file the image ships, the instruction is about decoding, or a step needs `/solution`."""
    if effect is None or not effect.ok or not observation.oracle_decodes or ABOUT_DECODING.search(instruction):
        return None
    changed = {c.path for c in effect.changes}
    steps = observation.oracle_decodes[:MAX_DECODE_STEPS]
    if any(p.startswith(("/solution/", "/tests/")) for s in steps for p in s.inputs):
        return None
    shipped = [
        p
        for s in steps
        for p in s.inputs
        if p not in changed and p in observation.oracle_reads and not named_in(p, instruction)
    ]
    if not shipped:
        return None
    digests = effect.output_digests()
    created = {c.path for c in effect.changes if c.kind is ChangeKind.CREATED}
    by_digest: dict[str, list[str]] = {}
    for path, digest in sorted(digests.items()):
        by_digest.setdefault(digest, []).append(path)
    captures = [CAPTURE.format(i) for i in range(len(steps))]
    plants = [
        Plant(
            path=captures[i],
            content="",
            why=f"{REPLAYED}: {s.command}",
            command=_replay(s, captures[i], captures[:i]),
        )
        for i, s in enumerate(steps)
    ]
    # a pipeline traced in the other order after an unrelated step: fed again, from every step, once all ran
    for i, s in enumerate(steps):
        if s.stdin and any(not later.stdin for later in steps[i + 1 :]):
            others = [c for c in captures if c != captures[i]]
            command = f"[ -e {captures[i]}.done ] || {_replay(s, captures[i], others)}"
            plants.append(Plant(path=captures[i], content="", why=f"{REFED}: {s.command}", command=command))

    def twins_of(path: str) -> list[str]:
        return [p for p in by_digest[digests[path]] if p != path and p in created]

    # outputs with a twin the oracle made (the decoded copy beside the answer) first
    targets = sorted((p for p in digests if not p.startswith("/tmp/")), key=lambda p: (not twins_of(p), p))
    for path in targets[:MAX_TARGETS]:
        twins = twins_of(path)
        candidates = " ".join(shlex.quote(c) for c in [*twins, *captures])
        want, q = digests[path], shlex.quote(path)
        command = (
            f'[ "$(sha256sum < {q} 2>/dev/null | cut -c1-64)" = {want} ] || for f in {candidates}; do '
            f'if [ -f "$f" ] && [ "$(sha256sum < "$f" | cut -c1-64)" = {want} ]; then cat "$f" > {q}; break; fi; done'
        )
        why = "an output of the reference solution, replaced by a decoded file equal to it"
        plants.append(Plant(path=path, content="", why=why, command=command))
    return Exploit(name=DECODE_COPY, plants=plants)


def _replay(step: DecodeStep, capture: str, earlier: list[str]) -> str:
    """The shell command that replays `step` in its folder, keeping what it prints in `capture`; a pipe-fed
    step is fed what an earlier step printed (the latest that it decodes without an error)."""
    try:
        folder = _tar_folder(shlex.split(step.command))
    except ValueError:
        folder = None
    prepare = f"mkdir -p {shlex.quote(folder)}; " if folder else ""
    run = f"cd {shlex.quote(step.cwd)} && {prepare}"
    if not step.stdin:
        return f"({run}{step.command} > {capture})"  # dash drops the redirect of `(...) > f` inside `{ }`
    if not earlier:
        return f"({run}{step.command} < /dev/null > {capture})"
    feeds = " ".join(reversed(earlier))
    decode = f'{step.command} < "$c" > {capture} && : > {capture}.done && break'
    return f'({run}for c in {feeds}; do [ -s "$c" ] && {decode}; done)'


def judge_decode_copy(nop: Sequence[ProbeRun], run: ProbeRun, exploit: Exploit, task: str) -> list[AuditFinding]:
    """`leak` when the replayed decoding and the copies get full reward and the nop does not."""
    if not run.full or (nop and all(r.full for r in nop)):
        return []
    steps = [p.why.split(": ", 1)[-1] for p in exploit.plants if p.why.startswith(f"{REPLAYED}: ")]
    return [
        AuditFinding(
            code=FindingCode.LEAK,
            message=(
                "the answer ships in the image, encoded: the reference solution's own decoding steps "
                f"({'; '.join(steps[:2])}), run as the agent on the untouched environment, recover it, and copying "
                "it onto the outputs gets full reward without doing the task. Keep the reference solution in "
                "solution/ (never in the image), or derive the answer there"
            ),
            evidence={
                "decoding_steps": steps,
                "exploits": [exploit.proof(task, run.brief())],
            },
        )
    ]
