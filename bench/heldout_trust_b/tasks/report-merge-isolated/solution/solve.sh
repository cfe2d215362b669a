#!/bin/bash
cat > /app/merge.py <<'PY'
"""Merging of per-region metrics reports."""


def merge_reports(a: dict, b: dict) -> dict:
    services: dict = {}
    for report in (a, b):
        for name, metrics in report.get("services", {}).items():
            into = services.setdefault(name, {})
            for metric, value in metrics.items():
                into[metric] = into.get(metric, 0) + value
    regions = sorted(set(a.get("regions", [])) | set(b.get("regions", [])))
    return {"services": services, "regions": regions}
PY
