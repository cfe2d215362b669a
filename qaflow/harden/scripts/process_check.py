"""Consistency checks of a process-chained task (qaflow harden): plan -> log -> report -> final state.

Copied into the task's tests/ as `qaflow_process_check.py`, beside `qaflow_workstate.py` and its
configuration `qaflow_process.json` (workdir, process folder, the initial state's manifest). Prints
{"passed": bool, "checks": {name: "ok" or the reason}} and exits 0 only when every check passes:

- folder: the process folder holds exactly plan.md, exec.log and report.json, as regular files;
- plan: plan.md is non-empty UTF-8 text;
- plan_first: plan.md was written (ctime) no later than any file created or modified, and names
  every changed or deleted path (relative to the workdir), or a folder holding it written with "/";
- log: exec.log is JSON lines {"cmd", "ts", "files_written", "files_deleted"}, timestamps never
  decrease, the first is not before plan.md was written, none is in the future;
- log_replay: replayed in order, the log accounts for exactly the changed state: every created or
  modified file was last written, every deleted file last deleted, every file last written exists
  and every file last deleted is gone;
- report: report.json has exactly the documented keys and types;
- report_state: its files, deleted paths and counts equal the real changes (hashes, sizes, lines);
- report_binds: its plan and log hashes and log entry count match plan.md and exec.log.
"""

from __future__ import annotations

import json
import math
import os
import posixpath
import sys
import time
from collections.abc import Callable
from typing import Any

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import qaflow_workstate as ws  # noqa: E402

PLAN, LOG, REPORT = "plan.md", "exec.log", "report.json"
ENTRY_KEYS = frozenset({"cmd", "ts", "files_written", "files_deleted"})
SHOWN = 5


class Failed(Exception):
    """A check did not pass; the message says why."""


def listed(paths: list[str]) -> str:
    more = f" and {len(paths) - SHOWN} more" if len(paths) > SHOWN else ""
    return ", ".join(paths[:SHOWN]) + more


class Checker:
    def __init__(self, config: dict[str, Any]):
        self.workdir = config["workdir"].rstrip("/") or "/"
        self.folder = config["folder"]
        self.manifest: dict[str, str] = config["manifest"]
        self.tolerance = float(config.get("tolerance_s", 1.0))
        self.process = os.path.join(self.workdir, self.folder)
        self.final = ws.snapshot(self.workdir, self.folder)
        self.created, self.modified, self.deleted = ws.changes(self.manifest, self.final)
        self.results: dict[str, str] = {}

    # -- the three files ----------------------------------------------------------------------

    def read(self, name: str) -> bytes:
        path = os.path.join(self.process, name)
        if os.path.islink(path) or not os.path.isfile(path):
            raise Failed(f"needs {self.folder}/{name}, which is missing or not a regular file")
        with open(path, "rb") as fh:
            return fh.read()

    def plan_ctime(self) -> float:
        self.read(PLAN)
        return os.lstat(os.path.join(self.process, PLAN)).st_ctime

    def plan_text(self) -> str:
        try:
            return self.read(PLAN).decode("utf-8")
        except UnicodeDecodeError as e:
            raise Failed(f"{self.folder}/{PLAN} is not UTF-8 text ({e.reason})") from e

    def rel(self, raw: Any, where: str) -> str | None:
        """A logged path relative to the workdir; None for a path outside it (not part of the state)."""
        if not isinstance(raw, str) or not raw.strip():
            raise Failed(f"{where}: {raw!r} is not a path")
        path = posixpath.normpath(raw)
        if path.startswith("/"):
            if not path.startswith(self.workdir.rstrip("/") + "/"):
                return None
            path = path[len(self.workdir.rstrip("/")) + 1 :]
        if path == ".." or path.startswith("../"):
            raise Failed(f"{where}: {raw!r} leaves the workdir")
        return None if ws.skipped(path, self.folder) else path

    def entries(self) -> list[dict[str, Any]]:
        try:
            text = self.read(LOG).decode("utf-8")
        except UnicodeDecodeError as e:
            raise Failed(f"{self.folder}/{LOG} is not UTF-8 text ({e.reason})") from e
        out = []
        for n, line in enumerate(text.splitlines(), 1):
            if not line.strip():
                continue
            where = f"{self.folder}/{LOG} line {n}"
            try:
                entry = json.loads(line)
            except ValueError as e:
                raise Failed(f"{where} is not JSON ({e})") from e
            if not isinstance(entry, dict):
                raise Failed(f"{where} is not a JSON object")
            extra = sorted(set(entry) - ENTRY_KEYS)
            if extra or not {"cmd", "ts", "files_written"} <= set(entry):
                raise Failed(f"{where}: keys must be cmd, ts, files_written and optionally files_deleted")
            if not isinstance(entry["cmd"], str) or not entry["cmd"].strip():
                raise Failed(f"{where}: cmd must be the command that was run")
            ts = entry["ts"]
            if isinstance(ts, bool) or not isinstance(ts, (int, float)) or not math.isfinite(ts):
                raise Failed(f"{where}: ts must be a unix time in seconds")
            for key in ("files_written", "files_deleted"):
                value = entry.get(key, [])
                if not isinstance(value, list):
                    raise Failed(f"{where}: {key} must be a list of paths")
                entry[key] = [p for p in (self.rel(v, where) for v in value) if p is not None]
            if set(entry["files_written"]) & set(entry["files_deleted"]):
                raise Failed(f"{where}: a path is both written and deleted")
            out.append(entry)
        if not out:
            raise Failed(f"{self.folder}/{LOG} has no entries")
        return out

    def report(self) -> dict[str, Any]:
        try:
            report = json.loads(self.read(REPORT).decode("utf-8"))
        except (UnicodeDecodeError, ValueError) as e:
            raise Failed(f"{self.folder}/{REPORT} is not JSON ({e})") from e
        if not isinstance(report, dict) or sorted(report) != sorted(ws.REPORT_KEYS):
            raise Failed(f"{self.folder}/{REPORT} must be an object with exactly the keys {', '.join(ws.REPORT_KEYS)}")
        return report

    # -- the checks ---------------------------------------------------------------------------

    def check_folder(self) -> None:
        if not os.path.isdir(self.process) or os.path.islink(self.process):
            raise Failed(f"{self.workdir}/{self.folder}/ is missing")
        found = sorted(os.listdir(self.process))
        if found != sorted([PLAN, LOG, REPORT]):
            raise Failed(f"{self.folder}/ must hold exactly {PLAN}, {LOG} and {REPORT}; it holds {found}")
        for name in found:
            self.read(name)

    def check_plan(self) -> None:
        if not self.plan_text().strip():
            raise Failed(f"{self.folder}/{PLAN} is empty")

    def check_plan_first(self) -> None:
        written = self.plan_ctime()
        late = [
            p for p in self.created + self.modified
            if os.lstat(os.path.join(self.workdir, p)).st_ctime < written
        ]  # fmt: skip
        if late:
            raise Failed(f"{self.folder}/{PLAN} was written after the work on {listed(late)}")
        text = self.plan_text()

        def named(rel: str) -> bool:
            parts = rel.split("/")
            return rel in text or any("/".join(parts[:i]) + "/" in text for i in range(1, len(parts)))

        unplanned = [p for p in self.created + self.modified + self.deleted if not named(p)]
        if unplanned:
            raise Failed(f"{self.folder}/{PLAN} does not name {listed(unplanned)}")

    def check_log(self) -> None:
        entries = self.entries()
        stamps = [float(e["ts"]) for e in entries]
        if any(stamps[i + 1] < stamps[i] for i in range(len(stamps) - 1)):
            raise Failed(f"{self.folder}/{LOG}: timestamps decrease")
        if stamps[0] < self.plan_ctime() - self.tolerance:
            raise Failed(f"{self.folder}/{LOG}: the first command is logged before {PLAN} was written")
        if stamps[-1] > time.time() + self.tolerance:
            raise Failed(f"{self.folder}/{LOG}: a timestamp lies in the future")

    def check_log_replay(self) -> None:
        last: dict[str, str] = {}
        for entry in self.entries():
            for path in entry["files_written"]:
                last[path] = "written"
            for path in entry["files_deleted"]:
                last[path] = "deleted"
        problems = []
        unlogged = [p for p in self.created + self.modified if last.get(p) != "written"]
        if unlogged:
            problems.append(f"changed but not last written by a logged command: {listed(unlogged)}")
        undeleted = [p for p in self.deleted if last.get(p) != "deleted"]
        if undeleted:
            problems.append(f"deleted but not logged as deleted: {listed(undeleted)}")
        missing = sorted(p for p, a in last.items() if a == "written" and p not in self.final)
        if missing:
            problems.append(f"logged as written but absent: {listed(missing)}")
        present = sorted(p for p, a in last.items() if a == "deleted" and p in self.final)
        if present:
            problems.append(f"logged as deleted but present: {listed(present)}")
        if problems:
            raise Failed(f"{self.folder}/{LOG} does not match the final state: " + "; ".join(problems))

    def check_report(self) -> None:
        report = self.report()
        files = report["files"]
        if not isinstance(files, list) or not all(
            isinstance(f, dict) and sorted(f) == sorted(ws.FILE_KEYS) for f in files
        ):
            raise Failed(f"{REPORT}: files must be a list of objects with exactly {', '.join(ws.FILE_KEYS)}")
        if not isinstance(report["deleted"], list) or not all(isinstance(p, str) for p in report["deleted"]):
            raise Failed(f"{REPORT}: deleted must be a list of paths")
        if not isinstance(report["counts"], dict) or sorted(report["counts"]) != ["created", "deleted", "modified"]:
            raise Failed(f"{REPORT}: counts must be an object with exactly created, modified and deleted")

    def expected(self) -> dict[str, Any]:
        return ws.build_report(self.workdir, self.manifest, self.final, self.read(PLAN), self.read(LOG))

    def check_report_state(self) -> None:
        self.check_report()
        report, want = self.report(), self.expected()
        claimed = {f["path"]: f for f in report["files"] if isinstance(f.get("path"), str)}
        if len(claimed) != len(report["files"]):
            raise Failed(f"{REPORT}: every file must be listed once, by its path")
        real = {f["path"]: f for f in want["files"]}
        absent = sorted(set(claimed) - set(real))
        if absent:
            raise Failed(f"{REPORT} claims changes the final state does not show: {listed(absent)}")
        unreported = sorted(set(real) - set(claimed))
        if unreported:
            raise Failed(f"{REPORT} leaves out changed files: {listed(unreported)}")
        wrong = [f"{p} ({k})" for p, f in sorted(real.items()) for k in ws.FILE_KEYS if claimed[p].get(k) != f[k]]
        if wrong:
            raise Failed(f"{REPORT} disagrees with the final state on {listed(wrong)}")
        if sorted(report["deleted"]) != want["deleted"] or len(set(report["deleted"])) != len(report["deleted"]):
            raise Failed(f"{REPORT}: deleted must list exactly {want['deleted']}")
        if report["counts"] != want["counts"]:
            raise Failed(f"{REPORT}: counts must be {want['counts']}")

    def check_report_binds(self) -> None:
        report, want = self.report(), self.expected()
        wrong = [k for k in ("plan_sha256", "log_sha256", "log_entries") if report[k] != want[k]]
        if wrong:
            raise Failed(f"{REPORT}: {', '.join(wrong)} do not match {PLAN} and {LOG}")

    def run(self) -> bool:
        checks: list[tuple[str, Callable[[], None]]] = [
            ("folder", self.check_folder),
            ("plan", self.check_plan),
            ("plan_first", self.check_plan_first),
            ("log", self.check_log),
            ("log_replay", self.check_log_replay),
            ("report", self.check_report),
            ("report_state", self.check_report_state),
            ("report_binds", self.check_report_binds),
        ]
        for name, check in checks:
            try:
                check()
                self.results[name] = "ok"
            except Failed as e:
                self.results[name] = str(e)
            except Exception as e:  # a crash of a check is its failure, never a pass
                self.results[name] = f"could not check: {type(e).__name__}: {e}"
        return all(v == "ok" for v in self.results.values())


def main() -> int:
    with open(os.path.join(HERE, "qaflow_process.json"), encoding="utf-8") as fh:
        checker = Checker(json.load(fh))
    passed = checker.run()
    print(json.dumps({"passed": passed, "checks": checker.results}, indent=1))
    for name, outcome in checker.results.items():
        if outcome != "ok":
            print(f"process check {name} failed: {outcome}", file=sys.stderr)
    return 0 if passed else 1


if __name__ == "__main__":
    sys.exit(main())
