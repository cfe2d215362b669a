"""Reference solution of a process-chained task (qaflow harden): plan first, the original solution under
a logging shim, then the report computed from the real final state.

Copied into the task's solution/ as `qaflow_process_solve.py`, beside `qaflow_workstate.py` and its
configuration `qaflow_process.json` (workdir, process folder, the plan's text, the original solve script).
The shim logs the original solution as one command, with the files it wrote and deleted.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import qaflow_workstate as ws  # noqa: E402


def main() -> int:
    with open(os.path.join(HERE, "qaflow_process.json"), encoding="utf-8") as fh:
        config = json.load(fh)
    workdir, folder = config["workdir"], config["folder"]
    process = os.path.join(workdir, folder)
    os.makedirs(process, exist_ok=True)
    plan = config["plan"].encode("utf-8")
    with open(os.path.join(process, "plan.md"), "wb") as fh:
        fh.write(plan)
    before = ws.snapshot(workdir, folder)
    started = time.time()
    script = os.path.join(HERE, config["original"])
    code = subprocess.call(["bash", script])
    after = ws.snapshot(workdir, folder)
    created, modified, deleted = ws.changes(before, after)
    entry = {
        "cmd": f"bash {script}",
        "ts": started,
        "files_written": sorted(created + modified),
        "files_deleted": deleted,
    }
    log = (json.dumps(entry, sort_keys=True) + "\n").encode("utf-8")
    with open(os.path.join(process, "exec.log"), "wb") as fh:
        fh.write(log)
    if code != 0:
        print(f"the original solution exited with {code}", file=sys.stderr)
        return code
    report = ws.build_report(workdir, before, after, plan, log)
    with open(os.path.join(process, "report.json"), "w", encoding="utf-8") as fh:
        json.dump(report, fh, indent=2, sort_keys=True)
        fh.write("\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
