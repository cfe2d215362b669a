"""The files the observed verifier run loads from outside the task image (`qaflow.audit.observe`).

They are uploaded into the sandbox before the reference solution runs, at `OBSERVE_DIR`, read-only,
and reach the oracle's and then the verifier's processes through the environment only: `BASH_ENV`
makes every bash they start source `bashenv.sh`, which traces the commands it runs (xtrace to a log
fd, with the script and working directory of each command) and puts `py/` first on `PYTHONPATH`,
where the pytest plugin is an installed distribution's `pytest11` entry point (a Python that ignores
PYTHONPATH, `-I`, runs unobserved rather than failing to load a plugin named in the environment);
`py/sitecustomize.py` installs a `sys.addaudithook` hook in every Python they start (files opened,
code executed and who imported it, processes spawned, the interpreter's argv, sys.path and site
folders) and then loads the image's own sitecustomize, if any; the pytest plugin records the
rootdir, inifile, confcutdir, the conftest.py files loaded and the test files collected. Each
process appends JSON lines (or trace lines) to its own file under `log/`.
"""

from __future__ import annotations

OBSERVE_DIR = "/logs/.qaflow-observe"
LOG_DIR = f"{OBSERVE_DIR}/log"
PY_DIR = f"{OBSERVE_DIR}/py"
BASH_ENV_FILE = f"{OBSERVE_DIR}/bashenv.sh"
SEP = "\x1f"
"""Field separator of the shell trace lines (PS4)."""

BASH_ENV = r"""# qaflow observer: sourced by every bash the observed verifier starts (BASH_ENV)
if [ -z "${QAFLOW_OBSERVE_INIT-}" ]; then
  export QAFLOW_OBSERVE_INIT=1
  export PYTHONPATH="${QAFLOW_OBSERVE_PY}${PYTHONPATH:+:$PYTHONPATH}"
fi
if exec {QAFLOW_OBSERVE_FD}>>"${QAFLOW_OBSERVE_LOG}/sh.$$.trace"; then
  shopt -q login_shell && QAFLOW_LOGIN=login || QAFLOW_LOGIN=
  printf '#start\x1f%s\x1f%s\n' "$HOME" "$QAFLOW_LOGIN" >&"$QAFLOW_OBSERVE_FD"
  BASH_XTRACEFD=$QAFLOW_OBSERVE_FD
  PS4=$'+\x1f${BASH_SOURCE[0]-}\x1f${PWD}\x1f '
  set -x
fi 2>/dev/null
if [ -n "${QAFLOW_BASH_ENV_CHAIN-}" ]; then
  if [ -r "$QAFLOW_BASH_ENV_CHAIN" ]; then . "$QAFLOW_BASH_ENV_CHAIN"; else : startup "$QAFLOW_BASH_ENV_CHAIN"; fi
fi
"""

SITECUSTOMIZE = r'''"""qaflow observer (uploaded for one verifier run; not part of the task)."""
import os as _os
import sys as _sys


def _qaflow_observe():
    import json
    import threading

    log_dir = _os.environ.get("QAFLOW_OBSERVE_LOG")
    if not log_dir:
        return
    here = _os.path.dirname(_os.path.abspath(__file__))
    try:
        fh = open(_os.path.join(log_dir, "py.%d.jsonl" % _os.getpid()), "a", buffering=1,
                  encoding="utf-8", errors="surrogateescape")
    except OSError:
        return
    local = threading.local()
    seen = set()

    def emit(rec):
        line = json.dumps(rec, sort_keys=True, default=str)
        if line in seen:
            return
        seen.add(line)
        try:
            fh.write(line + "\n")
        except Exception:
            pass

    def caller():
        f = _sys._getframe(2)
        while f is not None and (f.f_code.co_filename.startswith("<frozen") or f.f_code.co_filename == __file__):
            f = f.f_back
        return None if f is None else f.f_code.co_filename

    def absp(p):
        try:
            return _os.path.abspath(_os.fsdecode(p))
        except Exception:
            return str(p)

    def hook(event, args):
        if getattr(local, "busy", False):
            return
        local.busy = True
        try:
            if event == "open":
                path, mode, flags = args
                if isinstance(path, (str, bytes)):
                    if isinstance(mode, str):
                        write = any(c in mode for c in "wax+")
                    else:
                        write = bool(isinstance(flags, int) and flags & 3)
                    emit({"k": "open", "p": absp(path), "w": write})
            elif event == "exec":
                name = getattr(args[0], "co_filename", "")
                if name and not name.startswith("<"):
                    emit({"k": "exec", "p": absp(name), "by": caller()})
            elif event in ("cpython.run_file", "cpython.run_module", "cpython.run_command"):
                if event == "cpython.run_file":
                    rec = {"p": absp(args[0])}
                elif event == "cpython.run_module":
                    rec = {"m": args[0]}
                else:
                    rec = {"p": "<string>"}
                rec.update({"k": "main", "path": [absp(p or ".") for p in _sys.path], "cwd": _os.getcwd()})
                emit(rec)
            elif event == "subprocess.Popen":
                exe, argv, cwd, _env = args
                argv = [argv] if isinstance(argv, (str, bytes)) else list(argv or [])
                emit({"k": "spawn", "exe": None if exe is None else _os.fsdecode(exe),
                      "argv": [_os.fsdecode(a) if isinstance(a, (str, bytes)) else str(a) for a in argv],
                      "cwd": absp(cwd) if cwd else _os.getcwd()})
            elif event in ("os.exec", "os.posix_spawn", "os.spawn"):
                path = args[1] if event == "os.spawn" else args[0]
                emit({"k": "spawn", "exe": absp(path), "argv": [], "cwd": _os.getcwd()})
            elif event == "os.system":
                emit({"k": "system", "cmd": _os.fsdecode(args[0]), "cwd": _os.getcwd()})
        except Exception:
            pass
        finally:
            local.busy = False

    try:
        import sysconfig
        keys = ("stdlib", "platstdlib", "purelib", "platlib")
        libs = sorted({v for k, v in sysconfig.get_paths().items() if k in keys})
    except Exception:
        libs = []
    try:
        import site
        sites = list(site.getsitepackages()) + [site.getusersitepackages()]
        usersite = site.getusersitepackages() if site.ENABLE_USER_SITE else None
    except Exception:
        sites, usersite = [], None
    emit({"k": "start", "argv": list(getattr(_sys, "orig_argv", _sys.argv)), "exe": _sys.executable,
          "cwd": _os.getcwd(), "libs": libs, "site": sites, "usersite": usersite, "prefix": _sys.prefix})
    _sys.addaudithook(hook)
    # the image's own sitecustomize, if any, still runs (and is recorded as a load)
    mine = _sys.modules.pop("sitecustomize", None)
    _sys.path[:] = [p for p in _sys.path if _os.path.abspath(p or ".") != here]
    try:
        import sitecustomize as theirs  # noqa: F401
        emit({"k": "sitecustomize", "p": absp(getattr(theirs, "__file__", "") or "")})
    except ImportError:
        _sys.modules["sitecustomize"] = mine
    _sys.path.append(here)


_qaflow_observe()
'''

PYTEST_PLUGIN = r'''"""qaflow observer: what pytest loads (uploaded for one verifier run; not part of the task)."""
import json
import os


def _emit(rec):
    d = os.environ.get("QAFLOW_OBSERVE_LOG")
    if not d:
        return
    try:
        with open(os.path.join(d, "pytest.%d.jsonl" % os.getpid()), "a", encoding="utf-8") as fh:
            fh.write(json.dumps(rec, default=str) + "\n")
    except OSError:
        pass


def pytest_configure(config):
    cut = getattr(config.pluginmanager, "_confcutdir", None)
    ini = getattr(config, "inipath", None)
    _emit({"k": "pytest", "rootdir": str(getattr(config, "rootpath", config.rootdir)),
           "inifile": str(ini) if ini else None, "args": [str(a) for a in config.args],
           "cwd": str(config.invocation_params.dir), "confcutdir": str(cut) if cut else None,
           "noconftest": bool(getattr(config.option, "noconftest", False))})


def pytest_plugin_registered(plugin, manager):
    f = getattr(plugin, "__file__", None)
    if f and os.path.basename(f) == "conftest.py":
        _emit({"k": "conftest", "p": os.path.abspath(f)})


def pytest_collection_finish(session):
    files = sorted({str(getattr(i, "path", None) or i.fspath) for i in session.items})
    _emit({"k": "collected", "files": files})
'''

PLUGIN_DIST = "py/qaflow_observe-1.0.dist-info"
FILES = {
    "bashenv.sh": BASH_ENV,
    "py/sitecustomize.py": SITECUSTOMIZE,
    "py/qaflow_observe_pytest.py": PYTEST_PLUGIN,
    f"{PLUGIN_DIST}/METADATA": "Metadata-Version: 2.1\nName: qaflow-observe\nVersion: 1.0\n",
    f"{PLUGIN_DIST}/entry_points.txt": "[pytest11]\nqaflow_observe = qaflow_observe_pytest\n",
}
"""Relative path under OBSERVE_DIR -> text."""


def verifier_env(image_bash_env: str = "") -> dict[str, str]:
    """The environment the observed verifier exec gets on top of its own. The observer takes `BASH_ENV`
    over; the file the image's own `BASH_ENV` names (conda and nvm images set it) is sourced after it, as
    bash would have, and traced as a start-up file."""
    env = {"BASH_ENV": BASH_ENV_FILE, "QAFLOW_OBSERVE_LOG": LOG_DIR, "QAFLOW_OBSERVE_PY": PY_DIR}
    return env | ({"QAFLOW_BASH_ENV_CHAIN": image_bash_env} if image_bash_env else {})
