#!/bin/bash
cat > /app/cfgcheck.py <<'PY'
KNOWN = {"name", "port", "replicas", "env"}


def validate(config: dict) -> list:
    problems = []
    if "name" not in config:
        problems.append("name: required")
    elif not isinstance(config["name"], str) or not config["name"]:
        problems.append("name: must be a non-empty string")
    if "port" not in config:
        problems.append("port: required")
    else:
        p = config["port"]
        if type(p) is not int or not 1 <= p <= 65535:
            problems.append("port: must be an int in 1..65535")
    if "replicas" in config:
        r = config["replicas"]
        if type(r) is not int or r < 1:
            problems.append("replicas: must be an int >= 1")
    if "env" in config:
        e = config["env"]
        if not isinstance(e, dict) or not all(isinstance(k, str) and isinstance(v, str) for k, v in e.items()):
            problems.append("env: must map strings to strings")
    problems += [f"{k}: unknown key" for k in sorted(set(config) - KNOWN)]
    return problems
PY
