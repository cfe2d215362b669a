"""Whether a task's build needs network: a `RUN` step that downloads, or an `ADD` of a URL (docs/security.md).

Harbor builds every environment with network. qaflow gives a build network only where a step names a
download tool (package managers, language installers, `curl`/`wget`, `git clone`) or `ADD`s a URL, or the
task declares `public` network; any other build runs without it, and one that then fails is built again
with network (`SandboxSpec.build_network_guessed`), so a download the pattern misses costs a retry, never a
correct task.
"""

from __future__ import annotations

import re
from pathlib import Path

from qaflow.errors import UnsupportedError
from qaflow.sandbox.dockerfile import parse

_DOWNLOADS = re.compile(
    r"(?<![\w.-])(apt-get|apt|aptitude|apk|yum|dnf|microdnf|zypper|pacman|pip3?(\.\d+)?|pipx|uv|uvx|poetry|"
    r"conda|mamba|micromamba|npm|npx|yarn|pnpm|bun|deno|gem|bundle|cargo|rustup|go|curl|wget|git|svn|hg|"
    r"easy_install|cpan|cpanm|composer|mvn|gradle|sbt|dotnet|nuget|R|Rscript|julia|opam|stack|cabal|nix|"
    r"brew|snap|add-apt-repository|gpg|apt-key|ensurepip|get-pip\.py|install\.sh|aria2c|rsync|scp|ssh|ftp)"
    r"(?![\w.-])"
)
_URL = re.compile(r"\b(https?|ftp|git)://")


def build_network_need(dockerfile: Path) -> str | None:
    """The first Dockerfile line that needs network at build time (a `RUN` naming a download tool, an
    `ADD` of a URL), as `line N: text`; None when none does, or the file cannot be read (the build says why)."""
    try:
        instructions = parse(dockerfile.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, UnsupportedError):
        return None
    for ins in instructions:
        if (ins.keyword == "RUN" and (_DOWNLOADS.search(ins.args) or _URL.search(ins.args))) or (
            ins.keyword == "ADD" and _URL.search(ins.args)
        ):
            text = f"{ins.keyword} {ins.args}"
            return f"line {ins.line}: {text if len(text) <= 120 else text[:117] + '...'}"
    return None
