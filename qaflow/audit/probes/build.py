"""The build probe's finding: `build_failed`, or `infra_error` where the machine, not the task, failed it."""

from __future__ import annotations

from qaflow.audit.infra import classify, stand_in_sign
from qaflow.audit.work_items import BuildResult
from qaflow.models.audit import AuditFinding
from qaflow.models.records import FindingCode


def build_finding(build: BuildResult, backend: str, offline: bool) -> AuditFinding:
    """`build_failed`, or `infra_error` when the backend cannot build it (unsupported), this machine lacks a
    base image, the log shows the build failed for want of network (an `offline` run, or none to be had), or
    it failed on a stand-in image's userland."""
    log_tail, error = build.log_tail, build.error or ""
    message = f"environment/Dockerfile does not build on {backend}"
    stand_ins = build.stand_ins
    if build.base_unavailable:
        return AuditFinding(
            code=FindingCode.INFRA_ERROR,
            message=f"{message}: this machine lacks a base image: {error[:300]}",
            evidence={"base_unavailable": error, "backend": backend},
        )
    named = {"stand_ins": stand_ins} if stand_ins else {}
    if build.unsupported:
        return AuditFinding(
            code=FindingCode.INFRA_ERROR,
            message=f"{message}: {error[:300]}",
            evidence={"unsupported": error, "log_tail": log_tail, "backend": backend} | named,
        )
    sign = classify(log_tail)
    # offline, a failed install is for want of network even where the log shows no resolver error
    if sign is not None and (sign.kind == "network" or (offline and sign.kind == "install_failed")):
        why = " (an --offline run: builds have no network)" if offline else ""
        return AuditFinding(
            code=FindingCode.INFRA_ERROR,
            message=f"{message}{why}: {sign.why}: {sign.match}",
            evidence={"line": sign.match, "log_tail": log_tail, "backend": backend} | named,
        )
    userland = stand_in_sign(log_tail) if stand_ins else None
    if userland is not None:
        used = ", ".join(f"{a} -> {b}" for a, b in stand_ins.items())
        return AuditFinding(
            code=FindingCode.INFRA_ERROR,
            message=f"{message} on a stand-in image ({used}), not the image the task names: "
            f"{userland.why}: {userland.match}",
            evidence={
                "line": userland.match,
                "stand_ins": stand_ins,
                "log_tail": log_tail,
                "backend": backend,
            },
        )
    return AuditFinding(
        code=FindingCode.BUILD_FAILED,
        message=f"{message}: {error[:300]}",
        evidence={"log_tail": log_tail, "backend": backend} | named,
    )
