"""Plain reruns of the verifier on the final state a trial left: the cheap evidence of a verifier that
decides by chance (a random input, hash order, the clock), seconds where a new trial takes a sandbox
and the whole solution."""

from __future__ import annotations

import time

from qaflow.models.trial import TrialResult
from qaflow.reward import RewardError, in_range, reward_from_file
from qaflow.sandbox.base import SAVE_PATH, SHELL, Sandbox
from qaflow.trial.phases import VerifierPlan

RERUN_BUDGET_S = 20.0
"""Verifier reruns stop once they have taken this long together (a slow verifier gets fewer)."""

_RERUNS = (
    SAVE_PATH
    + r"""
n=$1; budget=$2; i=0; start=$(date +%s); qbash=$(command -v bash) || exit 0
while [ "$i" -lt "$n" ] && [ $(($(date +%s) - start)) -lt "$budget" ]; do
  rm -rf /logs/verifier && mkdir -p /logs/verifier || exit 0
  PATH=$_qpath "$qbash" /tests/test.sh >/dev/null 2>&1 </dev/null
  for f in reward.json reward.txt; do
    if [ -f "/logs/verifier/$f" ] && [ ! -L "/logs/verifier/$f" ]; then
      printf '\036%s\037' "$f"; head -c 65536 "/logs/verifier/$f"; break
    fi
  done
  printf '\035\n'; i=$((i+1))
done
"""
)


def rerun_verifier(box: Sandbox, plan: VerifierPlan, count: int, *, verifier_s: float) -> list[bool]:
    """Whether the verifier gives full reward, run up to `count` more times, untraced, on the final
    state left in `box` (one exec; /logs/verifier emptied before each run), as many as fit in
    `RERUN_BUDGET_S` given that one run took `verifier_s`.

    Only a sign: a verifier may change the state it checks, so the audit confirms a disagreement with
    more trials before it says `flaky`."""
    count = min(count, int(RERUN_BUDGET_S // max(verifier_s, 0.05)))
    if count < 1:
        return []
    ex = box.exec(
        [SHELL, "-c", _RERUNS, "reruns", str(count), str(int(RERUN_BUDGET_S))],
        timeout=RERUN_BUDGET_S + plan.timeout_sec,
        env=plan.env,
        user=plan.user,
        kill_strays_after=True,
    )
    outcomes = []
    for chunk in ex.stdout.split("\035")[:count]:
        if "\036" not in chunk:
            outcomes.append(False)
            continue
        name, _, text = chunk.split("\036", 1)[1].partition("\037")
        try:
            outcomes.append(in_range(reward_from_file((name, text))).full)
        except RewardError:
            outcomes.append(False)
    return outcomes[: ex.stdout.count("\035")]


def rerun_after(box: Sandbox, plan: VerifierPlan, count: int, result: TrialResult) -> list[bool]:
    """`rerun_verifier` after the verifier run `result` timed, its time kept as `result.timings["reruns"]`."""
    t0 = time.perf_counter()
    outcomes = rerun_verifier(box, plan, count, verifier_s=result.timings.get("verifier", RERUN_BUDGET_S))
    result.timings["reruns"] = time.perf_counter() - t0
    return outcomes
