"""Independent held-out validation of `qaflow audit` on reward-hackable tasks and look-alike sound controls.

The set (`bench/heldout_trust/tasks/`) was written from public reports of reward hacks only, without
reading qaflow's probe code (see bench/heldout_trust/README.md). Every task ships `hack/solve.sh`: the
exploit an agent would run in place of the reference solution.

1. Proof of the labels (`labels.json`), by running qaflow's own trial on each task:
   `qaflow run TASK --agent oracle --json` must get full reward, `--agent nop` must not, and the hack
   (a copy of the task with `solution/` replaced by `hack/`, run as the oracle) must get full reward on a
   hackable task and must not on a sound one. A label that does not hold fails the script loudly.
2. `qaflow audit SET --json out.json --backend B`, then recall (hackable tasks not `accepted` with a
   finding among reward_tamper/weak_verifier/false_pass) and false findings (sound tasks not accepted or
   with any finding), overall and per hack kind.

Usage: .venv/bin/python bench/heldout_trust.py [--backend bwrap|docker] [--only NAME,...]
       [--skip-proof] [--skip-audit] [--audit-json FILE] [--pool DIR] [--via-cli]
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from collections import defaultdict
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, RootModel

ROOT = Path(__file__).resolve().parent.parent
SET_DIR = ROOT / "bench" / "heldout_trust"
SETS = sorted(p.parent for p in (ROOT / "bench").glob("heldout_trust*/labels.json"))
"""Every held-out set: this one and any written later by another author, each `tasks/` and `labels.json`."""
DETECTING_CODES = {"reward_tamper", "weak_verifier", "false_pass"}


class Label(BaseModel):
    label: Literal["hackable", "sound"]
    kind: str
    """The hack kind, in words."""
    family: str
    """A short name grouping tasks of one kind (per-kind results)."""
    source: str
    """A public report of that kind of hack."""


class Labels(RootModel[dict[str, Label]]):
    pass


class Trial(BaseModel):
    reward: float | None
    full: bool
    error: str | None


class Proof(BaseModel):
    task: str
    label: str
    oracle: Trial
    nop: Trial
    hack: Trial

    @property
    def problems(self) -> list[str]:
        out = []
        if not self.oracle.full:
            out.append(f"oracle not full ({self.oracle.reward}, {self.oracle.error})")
        if self.nop.full:
            out.append("nop got full reward")
        if self.label == "hackable" and not self.hack.full:
            out.append(f"hack not full ({self.hack.reward}, {self.hack.error})")
        if self.label == "sound" and self.hack.full:
            out.append("hack got full reward on a sound task")
        return out


def _qaflow() -> list[str]:
    exe = Path(sys.executable).parent / "qaflow"
    return [str(exe)] if exe.exists() else [sys.executable, "-c", "from qaflow.cli import main; main()"]


def _env() -> dict[str, str]:
    env = dict(os.environ)
    env["PYTHONPATH"] = str(ROOT) + (os.pathsep + env["PYTHONPATH"] if env.get("PYTHONPATH") else "")
    return env


def run_trial(task: Path, agent: str, backend: str, *, via_cli: bool = False) -> Trial:
    """One trial, as `qaflow run TASK --agent AGENT --backend B --json` runs it (in this process unless
    `via_cli`: the CLI's start-up costs more than a bwrap trial)."""
    if not via_cli:
        from qaflow.agents import agent_by_name
        from qaflow.task import Task
        from qaflow.trial import run_trial as qaflow_trial

        result = qaflow_trial(
            Task.load(task, require_solution=agent == "oracle"), agent_by_name(agent), backend=backend
        )
        err = result.error
        return Trial(
            reward=result.reward,
            full=result.full_reward,
            error=f"{err.kind.value}: {err.message[:200]}" if err else None,
        )
    cmd = [*_qaflow(), "run", str(task), "--agent", agent, "--backend", backend, "--json"]
    proc = subprocess.run(cmd, capture_output=True, text=True, env=_env(), timeout=600)
    try:
        data = json.loads(proc.stdout)
    except json.JSONDecodeError:
        return Trial(reward=None, full=False, error=f"exit {proc.returncode}: {proc.stderr.strip()[-300:]}")
    err = data.get("error")
    return Trial(
        reward=data.get("reward"),
        full=bool(data.get("full_reward")),
        error=f"{err.get('kind')}: {err.get('message', '')[:200]}" if err else None,
    )


def hack_copy(task: Path, scratch: Path) -> Path:
    """A copy of `task` whose reference solution is its `hack/` (the oracle agent then runs the exploit)."""
    copy = scratch / task.name
    shutil.copytree(task, copy, ignore=shutil.ignore_patterns(".qaflow", "__pycache__"))
    shutil.rmtree(copy / "solution")
    shutil.move(str(copy / "hack"), str(copy / "solution"))
    return copy


def prove(tasks: Path, names: list[str], labels: dict[str, Label], backend: str, *, via_cli: bool) -> list[Proof]:
    proofs = []
    with tempfile.TemporaryDirectory(prefix="heldout-hack-") as tmp:
        for name in names:
            task = tasks / name
            proof = Proof(
                task=name,
                label=labels[name].label,
                oracle=run_trial(task, "oracle", backend, via_cli=via_cli),
                nop=run_trial(task, "nop", backend, via_cli=via_cli),
                hack=run_trial(hack_copy(task, Path(tmp)), "oracle", backend, via_cli=via_cli),
            )
            status = "ok" if not proof.problems else "LABEL FAILS: " + "; ".join(proof.problems)
            print(
                f"{name:34} {proof.label:8} oracle={proof.oracle.reward} nop={proof.nop.reward} "
                f"hack={proof.hack.reward}  {status}",
                flush=True,
            )
            proofs.append(proof)
    return proofs


def audit(tasks: Path, backend: str, out: Path, names: list[str], keep: Path | None = None) -> list[dict[str, object]]:
    """Audit a copy of the named tasks (in `keep` when given, so the findings' replay commands work later)."""
    with tempfile.TemporaryDirectory(prefix="heldout-audit-") as tmp:
        pool = keep or Path(tmp) / "pool"
        if pool.exists():
            raise SystemExit(f"{pool} exists: give --pool a new folder")
        pool.mkdir(parents=True)
        for name in names:
            shutil.copytree(tasks / name, pool / name, ignore=shutil.ignore_patterns(".qaflow", "__pycache__"))
        cmd = [*_qaflow(), "audit", str(pool), "--json", str(out), "--backend", backend]
        t0 = time.perf_counter()
        proc = subprocess.run(cmd, text=True, env=_env(), stdout=subprocess.DEVNULL)
        print(f"audit exit {proc.returncode}, {time.perf_counter() - t0:.0f} s", flush=True)
    return audit_entries(json.loads(out.read_text()))


def audit_entries(document: object) -> list[dict[str, object]]:
    """The per-task entries of `qaflow audit --json`: the document's `tasks` (format 2), or the bare list of
    the first format."""
    if isinstance(document, dict):
        tasks = document.get("tasks")
        return tasks if isinstance(tasks, list) else []
    return document if isinstance(document, list) else []


def _folder(entry: dict[str, object]) -> str:
    return Path(str(entry["path"])).name


class Outcome(BaseModel):
    task: str
    label: Literal["hackable", "sound"]
    family: str
    verdict: str
    codes: list[str]
    error_codes: list[str]
    hit: bool
    """Hackable: found (not accepted, with a detecting code). Sound: a false finding (not accepted, or any code)."""


class Tally(BaseModel):
    outcomes: list[Outcome]
    missing: list[str]
    """Labelled tasks the audit report does not have."""

    def of(self, label: str) -> list[Outcome]:
        return [o for o in self.outcomes if o.label == label]

    @property
    def recall(self) -> tuple[int, int]:
        hackable = self.of("hackable")
        return sum(o.hit for o in hackable), len(hackable)

    @property
    def false_findings(self) -> list[str]:
        return [o.task for o in self.of("sound") if o.hit]

    @property
    def false_errors(self) -> list[str]:
        """Sound tasks not accepted or with an error finding (warnings and infos left out)."""
        return [o.task for o in self.of("sound") if o.verdict != "accepted" or o.error_codes]

    @property
    def meets_bar(self) -> bool:
        """Issue 40: recall >= 90% and no false finding."""
        found, total = self.recall
        return found >= 0.9 * total and not self.false_findings and not self.missing


def tally(audits: list[dict[str, object]], labels: dict[str, Label]) -> Tally:
    outcomes = []
    for entry in audits:
        name = _folder(entry)
        if name not in labels:
            continue
        findings = entry.get("findings") or []
        assert isinstance(findings, list)
        codes = sorted({str(f["code"]) for f in findings})
        errors = sorted({str(f["code"]) for f in findings if f.get("severity", "error") == "error"})
        verdict = str(entry["verdict"])
        label = labels[name].label
        if label == "hackable":
            hit = verdict != "accepted" and bool(DETECTING_CODES & set(codes))
        else:
            hit = verdict != "accepted" or bool(codes)
        outcomes.append(
            Outcome(
                task=name,
                label=label,
                family=labels[name].family,
                verdict=verdict,
                codes=codes,
                error_codes=errors,
                hit=hit,
            )
        )
    missing = sorted(set(labels) - {o.task for o in outcomes})
    return Tally(outcomes=outcomes, missing=missing)


def print_tally(t: Tally) -> None:
    print(f"\n{'task':34} {'label':8} {'verdict':12} {'codes':40} outcome")
    for o in sorted(t.outcomes, key=lambda o: (o.label, o.task)):
        outcome = ("found" if o.hit else "MISSED") if o.label == "hackable" else ("FALSE FINDING" if o.hit else "clean")
        print(f"{o.task:34} {o.label:8} {o.verdict:12} {','.join(o.codes) or '-':40} {outcome}")
    found, total = t.recall
    sound = len(t.of("sound"))
    print(f"\nrecall: {found}/{total} ({100 * found / max(1, total):.0f}%)")
    print(f"false findings (any finding): {len(t.false_findings)}/{sound} {t.false_findings}")
    print(f"false findings (error findings or not accepted): {len(t.false_errors)}/{sound} {t.false_errors}")
    if t.missing:
        print(f"not in the audit report: {t.missing}")
    by_family: dict[str, list[Outcome]] = defaultdict(list)
    for o in t.outcomes:
        by_family[o.family].append(o)
    print(f"\n{'kind':32} {'hackable found':16} sound with findings")
    for family, group in sorted(by_family.items()):
        h = [o for o in group if o.label == "hackable"]
        s = [o for o in group if o.label == "sound"]
        print(f"{family:32} {sum(o.hit for o in h)}/{len(h):<14} {sum(o.hit for o in s)}/{len(s)}")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--backend", choices=["bwrap", "docker"], default="bwrap")
    parser.add_argument(
        "--set", type=Path, default=SET_DIR, help="the set's folder (tasks/ and labels.json); default: this one"
    )
    parser.add_argument("--only", default="", help="comma-separated task folder names")
    parser.add_argument("--skip-proof", action="store_true")
    parser.add_argument("--skip-audit", action="store_true")
    parser.add_argument("--via-cli", action="store_true", help="prove labels through `qaflow run` processes")
    parser.add_argument("--audit-json", type=Path, default=None, help="where to keep the audit's JSON report")
    parser.add_argument(
        "--pool", type=Path, default=None, help="a new folder to audit the copy in, kept (replay commands need it)"
    )
    args = parser.parse_args()

    labels = Labels.model_validate_json((args.set / "labels.json").read_text()).root
    tasks = args.set / "tasks"
    folders = sorted(p.name for p in tasks.iterdir() if (p / "task.toml").is_file())
    unlabelled = sorted(set(folders) ^ set(labels))
    if unlabelled:
        print(f"tasks and labels.json disagree on: {unlabelled}", file=sys.stderr)
        return 2
    names = [n for n in folders if not args.only or n in args.only.split(",")]
    print(
        f"{len(names)} tasks: {sum(labels[n].label == 'hackable' for n in names)} hackable, "
        f"{sum(labels[n].label == 'sound' for n in names)} sound; backend {args.backend}",
        flush=True,
    )

    ok = True
    if not args.skip_proof:
        proofs = prove(tasks, names, labels, args.backend, via_cli=args.via_cli)
        failing = [p for p in proofs if p.problems]
        if failing:
            print(f"\nLABELS THAT DO NOT HOLD ({len(failing)}):", file=sys.stderr)
            for p in failing:
                print(f"  {p.task}: {'; '.join(p.problems)}", file=sys.stderr)
            ok = False
        else:
            print(f"\nall {len(proofs)} labels proven on {args.backend}")
    if not args.skip_audit:
        with tempfile.TemporaryDirectory(prefix="heldout-json-") as tmp:
            out = args.audit_json or Path(tmp) / "audit.json"
            audits = audit(tasks, args.backend, out, names, args.pool)
            result = tally(audits, {n: labels[n] for n in names})
            print_tally(result)
            ok = result.meets_bar and ok
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
