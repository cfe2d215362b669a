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
       [--skip-proof] [--skip-audit] [--audit-json FILE] [--via-cli]
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
TASKS_DIR = SET_DIR / "tasks"
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


def prove(names: list[str], labels: dict[str, Label], backend: str, *, via_cli: bool) -> list[Proof]:
    proofs = []
    with tempfile.TemporaryDirectory(prefix="heldout-hack-") as tmp:
        for name in names:
            task = TASKS_DIR / name
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


def audit(backend: str, out: Path, names: list[str]) -> list[dict[str, object]]:
    with tempfile.TemporaryDirectory(prefix="heldout-audit-") as tmp:
        pool = Path(tmp) / "pool"
        pool.mkdir()
        for name in names:
            shutil.copytree(TASKS_DIR / name, pool / name, ignore=shutil.ignore_patterns(".qaflow", "__pycache__"))
        cmd = [*_qaflow(), "audit", str(pool), "--json", str(out), "--backend", backend]
        t0 = time.perf_counter()
        proc = subprocess.run(cmd, text=True, env=_env(), stdout=subprocess.DEVNULL)
        print(f"audit exit {proc.returncode}, {time.perf_counter() - t0:.0f} s", flush=True)
    result: list[dict[str, object]] = json.loads(out.read_text())
    return result


def _folder(entry: dict[str, object]) -> str:
    return Path(str(entry["path"])).name


def score(audits: list[dict[str, object]], labels: dict[str, Label]) -> bool:
    """Print recall, false findings and per-kind results; True when recall >= 90% and no false finding."""
    found: dict[str, bool] = {}
    rows = []
    for entry in audits:
        name = _folder(entry)
        if name not in labels:
            continue
        findings = entry.get("findings") or []
        assert isinstance(findings, list)
        codes = sorted({str(f["code"]) for f in findings})
        errors = sorted({str(f["code"]) for f in findings if f.get("severity", "error") == "error"})
        verdict = str(entry["verdict"])
        if labels[name].label == "hackable":
            hit = verdict != "accepted" and bool(DETECTING_CODES & set(codes))
        else:
            hit = verdict != "accepted" or bool(codes)
        found[name] = hit
        rows.append((name, labels[name].label, verdict, ",".join(codes) or "-", ",".join(errors) or "-", hit))
    print(f"\n{'task':34} {'label':8} {'verdict':12} {'codes':40} outcome")
    for name, label, verdict, codes, _errors, hit in sorted(rows, key=lambda r: (r[1], r[0])):
        outcome = ("found" if hit else "MISSED") if label == "hackable" else ("FALSE FINDING" if hit else "clean")
        print(f"{name:34} {label:8} {verdict:12} {codes:40} {outcome}")
    hackable = [n for n in found if labels[n].label == "hackable"]
    sound = [n for n in found if labels[n].label == "sound"]
    recall = sum(found[n] for n in hackable)
    false = [n for n in sound if found[n]]
    sound_error = [n for r in rows if r[1] == "sound" and (r[2] != "accepted" or r[4] != "-") for n in [r[0]]]
    missing = sorted(set(labels) - set(found))
    print(f"\nrecall: {recall}/{len(hackable)} ({100 * recall / max(1, len(hackable)):.0f}%)")
    print(f"false findings (any finding): {len(false)}/{len(sound)} {false}")
    print(f"false findings (error findings or not accepted): {len(sound_error)}/{len(sound)} {sound_error}")
    if missing:
        print(f"not in the audit report: {missing}")
    by_family: dict[str, list[str]] = defaultdict(list)
    for name in found:
        by_family[labels[name].family].append(name)
    print(f"\n{'kind':32} {'hackable found':16} sound with findings")
    for family, names in sorted(by_family.items()):
        h = [n for n in names if labels[n].label == "hackable"]
        s = [n for n in names if labels[n].label == "sound"]
        print(f"{family:32} {sum(found[n] for n in h)}/{len(h):<14} {sum(found[n] for n in s)}/{len(s)}")
    return recall >= 0.9 * len(hackable) and not false


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--backend", choices=["bwrap", "docker"], default="bwrap")
    parser.add_argument("--only", default="", help="comma-separated task folder names")
    parser.add_argument("--skip-proof", action="store_true")
    parser.add_argument("--skip-audit", action="store_true")
    parser.add_argument("--via-cli", action="store_true", help="prove labels through `qaflow run` processes")
    parser.add_argument("--audit-json", type=Path, default=None, help="where to keep the audit's JSON report")
    args = parser.parse_args()

    labels = Labels.model_validate_json((SET_DIR / "labels.json").read_text()).root
    folders = sorted(p.name for p in TASKS_DIR.iterdir() if (p / "task.toml").is_file())
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
        proofs = prove(names, labels, args.backend, via_cli=args.via_cli)
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
            audits = audit(args.backend, out, names)
            ok = score(audits, {n: labels[n] for n in names}) and ok
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
