"""From probe runs to findings: a pure function, so every rule is testable without a sandbox.

Rules (N repeats each of nop and oracle):
- the environment does not come up in any oracle run (a healthcheck, or a step's setup.sh, failed:
  trial error `setup_failed`): `build_failed`, and nothing else is judged;
- a failed nop or oracle run is `infra_error` (never `broken_solution` or `false_rejection`) only
  on evidence that the sandbox, not the task, made it fail (`infra.classify`): a withheld network
  (a name that does not resolve, an unreachable network, a refused connection or a TLS failure to
  an outside host; never a task's own server on localhost), a failed install step (apt, pip, uv,
  npm, a `curl | sh` installer), or a failed sandbox (trial error of kind `sandbox` or
  `unsupported`, the sandbox died under a command, the backend could not keep what the agent left
  running for the verifier). A `command not found` alone is no evidence; the finding names the
  line and its kind;
- oracle agent phase fails (non-zero exit or timeout) in every run: `broken_solution`;
- oracle never gets full reward although it ran cleanly: `false_rejection` (timeouts included);
- nop gets full reward in every run: `false_pass`;
- nop or oracle outcomes disagree across repeats: `flaky`, with the observed pass rate;
- the verifier leaves no reward on a failing run (nop or a mutant): `reward_tamper`;
- a process the verifier no longer owned wrote the reward (trial error `reward_forged`, any probe): `reward_tamper`
  naming the writer's command line; such runs are left out of the other rules (they say nothing of the verifier);
- a planted reward survives a verifier run that should fail (tamper probe): `reward_tamper`;
- a mutant (wrong solution derived from the oracle's effect) gets full reward while the oracle
  does: `weak_verifier`, also next to `false_pass` (a verifier can pass the untouched
  environment and still reject every mutant, so the two are independent evidence).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any

from qaflow.audit.exploits import Exploit
from qaflow.audit.infra import InfraEvidence, classify
from qaflow.audit.probe_run import ProbeRun
from qaflow.models.audit import AuditFinding
from qaflow.models.probe_key import ProbeKind, name_of
from qaflow.models.records import FindingCode, Severity

REWARD_FORGED = "reward_forged"
"""`ErrorKind.REWARD_FORGED`: a process test.sh no longer owned wrote the reward (`qaflow.trial.guard`)."""
SETUP_FAILED = "setup_failed"
"""`ErrorKind.SETUP`: the environment did not come up (a healthcheck or a step's setup.sh failed)."""


def _infra_of(run: ProbeRun) -> dict[str, Any] | None:
    """The evidence that `run` failed because of the sandbox: from the trial's error, else from the
    failed solution phase, else from the verifier phase."""
    if run.full:
        return None
    phases = [
        ("trial", classify("", error_kind=run.error_kind, error=run.error or "", verifier_note=run.verifier_note)),
        ("solution", classify(run.agent_output) if run.agent_failed else None),
        ("verifier", classify(run.verifier_output, error=run.error or "")),
    ]
    for phase, evidence in phases:
        if evidence is not None:
            found = {"probe": run.probe, "attempt": run.attempt, "phase": phase, **_fields(evidence)}
            return {k: v for k, v in found.items() if v is not None}
    return None


def _fields(evidence: InfraEvidence) -> dict[str, Any]:
    return {"kind": evidence.kind, "line": evidence.match, "why": evidence.why, "then": evidence.then}


def _infra_message(first: dict[str, Any]) -> str:
    where = "the trial" if first["phase"] == "trial" else f"the {first['probe']} run's {first['phase']}"
    shown = f"{first['kind']} evidence: {first['line']!r}"
    if first["kind"] == "network":
        return (
            f"{where} failed because the sandbox withheld the network: {first['why']} ({shown}); install what the "
            "task needs in the image at build time, or declare network access if the task really needs it"
        )
    if first["kind"] == "install_failed":
        then = f", then {first['then']!r}" if "then" in first else ""
        return (
            f"{where} failed at an install step: {first['why']} ({shown}{then}); install it in the image at "
            "build time, where the build may have network"
        )
    return (
        f"{where} failed because of the sandbox, not the task: {first['why']} ({shown}); unless that line says "
        "what to do, rerun it and check the backend (`qaflow sandbox doctor`)"
    )


def _rate(runs: Sequence[ProbeRun]) -> float:
    return sum(r.full for r in runs) / len(runs) if runs else 0.0


def judge(
    nop: Sequence[ProbeRun],
    oracle: Sequence[ProbeRun],
    tamper: ProbeRun | None = None,
    mutants: Sequence[ProbeRun] = (),
) -> list[AuditFinding]:
    """Long on purpose: the verdict rules as one ordered decision table, so their precedence reads top to bottom."""
    if oracle and all(r.error_kind == SETUP_FAILED for r in oracle):
        run = oracle[0]
        return [
            AuditFinding(
                code=FindingCode.BUILD_FAILED,
                message=(
                    f"the environment did not come up in any run ({run.error}): fix its healthcheck, or what it "
                    "waits for (the image's ENTRYPOINT services), so the agent can start"
                ),
                evidence={"runs": len(oracle), "first": run.brief()},
            )
        ]
    findings: list[AuditFinding] = []
    forged = [r for r in [*nop, *oracle, *mutants, *([tamper] if tamper else [])] if r.error_kind == REWARD_FORGED]
    if forged:
        findings.append(_forged(forged))
        nop, oracle = [r for r in nop if r not in forged], [r for r in oracle if r not in forged]
        mutants = [r for r in mutants if r not in forged]
    infra = [e for e in (_infra_of(r) for r in [*oracle, *nop]) if e is not None]
    infra_probes = {e["probe"] for e in infra}
    if infra:
        first = infra[0]
        findings.append(
            AuditFinding(
                code=FindingCode.INFRA_ERROR,
                message=_infra_message(first),
                evidence={"kind": first["kind"], "line": first["line"], "phase": first["phase"], "runs": infra[:6]},
            )
        )
    clean_oracle = [r for r in oracle if r.probe not in infra_probes]
    full_oracle = sum(r.full for r in oracle)
    # a run the sandbox failed says nothing of the verifier: runs disagree only among the others
    judged_oracle = [r for r in oracle if _infra_of(r) is None]
    judged_nop = [r for r in nop if _infra_of(r) is None]

    if 0 < sum(r.full for r in judged_oracle) < len(judged_oracle):
        findings.append(_flaky("oracle", judged_oracle))
    elif clean_oracle and full_oracle == 0:
        broken = [r for r in clean_oracle if r.agent_failed]
        if len(broken) == len(clean_oracle):
            run = broken[0]
            why = "timed out" if run.agent_timed_out else f"exited {run.agent_exit}"
            findings.append(
                AuditFinding(
                    code=FindingCode.BROKEN_SOLUTION,
                    message=f"solution/solve.sh {why} in every run; fix the reference solution so it completes cleanly",
                    evidence={"runs": len(broken), "agent_output_tail": run.agent_output[-1200:], "first": run.brief()},
                )
            )
        elif "oracle" not in infra_probes:
            run = next(r for r in clean_oracle if not r.agent_failed)
            if run.verifier_timed_out:
                what = "the verifier timed out"
            elif run.error:
                what = f"the verifier failed: {run.error}"
            else:
                what = f"the verifier gave reward {run.reward}"
            findings.append(
                AuditFinding(
                    code=FindingCode.FALSE_REJECTION,
                    message=(
                        f"the reference solution ran cleanly but {what}; the verifier rejects a correct solution "
                        "(or the solution is wrong): make tests and solution agree with the instruction"
                    ),
                    evidence={"runs": len(clean_oracle), "first": run.brief()},
                )
            )

    nop_passes = bool(judged_nop) and all(r.full for r in judged_nop)
    if 0 < sum(r.full for r in judged_nop) < len(judged_nop):
        findings.append(_flaky("nop", judged_nop))
    elif nop_passes:
        findings.append(
            AuditFinding(
                code=FindingCode.FALSE_PASS,
                message=(
                    "the verifier gives full reward to the untouched environment (nop agent): it does not check "
                    "the work the instruction asks for"
                ),
                evidence={"runs": len(nop), "first": nop[0].brief()},
            )
        )

    silent = [r for r in [*nop, *mutants] if r.reward_missing and r.probe not in infra_probes]
    if silent:
        findings.append(
            AuditFinding(
                code=FindingCode.REWARD_TAMPER,
                message=(
                    "the verifier exits without writing any reward on a failing run; a reward file planted by the "
                    "agent would stand in a harness that does not clear /logs/verifier: always write 0 on failure"
                ),
                evidence={"runs": [r.brief() for r in silent[:3]]},
            )
        )
    elif tamper is not None and tamper.full and not nop_passes:
        findings.append(
            AuditFinding(
                code=FindingCode.REWARD_TAMPER,
                message=(
                    "a full reward planted by the agent (in /logs/verifier, or in a file the verifier copies there) "
                    "survived the verifier: write the reward unconditionally, from checks the agent cannot write"
                ),
                evidence={"tamper": tamper.brief()},
            )
        )

    oracle_sound = bool(oracle) and full_oracle == len(oracle)
    passing = [m for m in mutants if m.full]
    if passing and oracle_sound:
        findings.append(
            AuditFinding(
                code=FindingCode.WEAK_VERIFIER,
                message=(
                    f"{len(passing)} of {len(mutants)} wrong solutions derived from the oracle got full reward "
                    f"(e.g. {name_of(passing[0].probe, ProbeKind.MUTANT)}): "
                    "the verifier does not check the content of what the task asks for"
                ),
                evidence={
                    "passing_mutants": [name_of(m.probe, ProbeKind.MUTANT) for m in passing],
                    "descriptions": {m.probe: m.description for m in passing[:8]},
                    "mutants_run": len(mutants),
                },
            )
        )
    return findings


def _forged(runs: Sequence[ProbeRun]) -> AuditFinding:
    run = runs[0]
    return AuditFinding(
        code=FindingCode.REWARD_TAMPER,
        message=(
            f"in the {run.probe} run, {run.error}: code the verifier ran left a process behind that wrote the reward; "
            "keep the verifier from running or importing files the agent can write"
        ),
        evidence={"runs": [r.brief() for r in runs[:3]], "probes": sorted({r.probe for r in runs})},
    )


def _flaky(probe: str, runs: Sequence[ProbeRun]) -> AuditFinding:
    rate = _rate(runs)
    return AuditFinding(
        code=FindingCode.FLAKY,
        severity=Severity.ERROR,
        message=(
            f"the {probe} runs disagree: full reward in {sum(r.full for r in runs)} of {len(runs)} runs "
            f"({rate:.0%}); make the verifier and solution deterministic (seeds, ordering, timing)"
        ),
        evidence={"probe": probe, "pass_rate": rate, "rewards": [r.reward for r in runs]},
    )


EXPLOIT_REMEDIES = {
    "": (
        "the verifier runs or loads files the agent can write; keep what it runs under tests/, and run pytest so it "
        "cannot load agent files (rootdir and inifile under /tests, -p no:cacheprovider, from a folder the agent "
        "cannot write)"
    ),
    "replay": (
        "the verifier's verdict can be replayed from files the agent can create or change (the plants listed: a "
        "program found first on PATH or a script of the agent's it runs, a file its shell sources, a module its "
        "Python finds first, a file it appends to, scratch files it writes where the agent can put links); run "
        "programs by absolute path with a PATH and PYTHONPATH of folders the agent cannot write, `python3 -I`, "
        "run only the verifier's own copies of helpers, and keep scratch files in a fresh `mktemp -d`"
    ),
    "replay-code": (
        "the verifier runs what the agent's program outputs as code (an `eval` of what it prints, a summary file its "
        "shell sources); parse the output as data (`ast.literal_eval`, `json.loads`, a `case` on each line) instead"
    ),
    "replay-sibling": (
        "the verifier sends the agent's program to read inputs from a folder that also holds the expected outputs "
        "(`cases/3.in` beside `3.out`); give it a copy of the inputs alone, in a folder of its own"
    ),
    "replay-truth": (
        "the verifier follows a link from the work's file to its own expected file and compares that file with "
        "itself; refuse links (`[ -L ]`, `os.path.islink`, `realpath` under the work's folder) or keep only a digest "
        "of the expected output in the verifier"
    ),
    "exit-at-import": (
        "the verifier imports the agent's module into the process whose exit status it rewards; reward the "
        "tests' own results instead (pytest's junit report: at least one test passed, none failed or errored)"
    ),
    "path-shim": (
        "the verifier runs a program by name along a PATH whose first folders the agent can create programs in; "
        "run it by its absolute path, or set PATH in test.sh to folders the agent cannot write"
    ),
    "shell-startup": (
        "a shell of the verifier reads start-up files in the agent's home (a login or interactive bash, or a "
        "`source` of them); run it as a plain non-login shell (`bash -c`, no -l/-i) that sources nothing the "
        "agent can write"
    ),
    "expected-rewrite": (
        "the verifier compares the work with expected values the agent can rewrite; keep them under tests/ (the "
        "verifier's own files) or derive them there"
    ),
}
"""What to do about each exploit that won (by name; "" for those that run or load agent files)."""


def judge_exploits(
    nop: Sequence[ProbeRun], runs: Sequence[ProbeRun], exploits: Sequence[Exploit], task: str
) -> list[AuditFinding]:
    """One `reward_tamper` for the exploits that got full reward on the untouched environment (none when
    the untouched environment passes as is: that is `false_pass`, already reported), and one for exploit
    runs whose reward a process the verifier no longer owned wrote (`reward_forged`)."""
    forged = [r for r in runs if r.error_kind == REWARD_FORGED]
    found = [_forged(forged)] if forged else []
    if nop and all(r.full for r in nop):
        return found
    won = [(e, r) for e, r in zip(exploits, runs, strict=True) if r.full]
    if not won:
        return found
    first = won[0][0]
    files = [p.path for p in first.plants]
    shown = ", ".join(files[:4]) + (" …" if len(files) > 4 else "")
    return [
        *found,
        AuditFinding(
            code=FindingCode.REWARD_TAMPER,
            message=(
                f"exploit {' and '.join(e.name for e, _ in won)} got full reward on the untouched environment "
                f"(e.g. writing {shown}: {first.plants[0].why}): "
                + "; ".join(dict.fromkeys(EXPLOIT_REMEDIES.get(e.name, EXPLOIT_REMEDIES[""]) for e, _ in won))
            ),
            evidence={
                "exploits": [
                    {
                        "exploit": e.name,
                        "files": [p.path for p in e.plants],
                        "why": {p.path: p.why for p in e.plants},
                        "plants": e.model_dump(mode="json")["plants"],
                        "reproduce": e.reproduction(task),
                        "run": r.brief(),
                    }
                    for e, r in won
                ],
                "tried": [e.name for e in exploits],
            },
        ),
    ]


_EFFECT_LOST = re.compile(r"could not list the sandbox|timed out|sandbox died|paused from outside")
"""How an effect recording the sandbox failed reads (`qaflow.trial.effects`), not one the task's own files broke."""


def effect_lost(oracle: Sequence[ProbeRun]) -> list[AuditFinding]:
    """`infra_error` when a clean oracle run's effect could not be recorded because its sandbox failed (a
    paused, killed or stalled container): the probes built on that effect (mutants, code mutants, the
    battery's effect-based probes) did not run, so the task is never `accepted` on what is left. The run is
    tried again by the next audit."""
    errors = [r.effect.error for r in oracle if r.full and r.effect is not None and r.effect.error]
    lost = [e for e in errors if _EFFECT_LOST.search(e)]
    if not lost:
        return []
    error = lost[0]
    return [
        AuditFinding(
            code=FindingCode.INFRA_ERROR,
            message=(
                f"the oracle's effect could not be recorded ({error}): the probes that need it (mutants, code "
                "mutants, effect-based exploits) did not run; rerun the audit"
            ),
            evidence={"kind": "sandbox", "line": error, "phase": "effect", "not_run": ["mutants", "code mutants"]},
        )
    ]
