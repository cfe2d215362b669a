"""Answers left in `.git` history inside the image (`qaflow.audit.git_history`).

The comparison runs on real repositories made with the host's git; the audit of the labelled
fixture (the fix is the project's first commit) and its control (history without the fix) runs
under docker and bwrap."""

from __future__ import annotations

import hashlib
import subprocess
from pathlib import Path

import pytest

from qaflow.audit.git_history import MIN_ANSWER_BYTES, answers_in, git_findings, mentions_git
from tests.audit_runs import LABELLED_AUDIT_TIMEOUT_S, audit_fixtures

GOOD = "def wrap(text, width):\n    return [text[i : i + width] for i in range(0, len(text), width)]\n"
BAD = "def wrap(text, width):\n    return [text]\n"


def _sha(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()


def _repo(root: Path, *commits: dict[str, str]) -> Path:
    """A repository at root/.git with one commit per mapping (path -> text) applied in order."""
    root.mkdir(parents=True)
    git = ["git", "-C", str(root), "-c", "user.email=a@b", "-c", "user.name=t"]
    subprocess.run([*git, "init", "-q"], check=True)
    for i, files in enumerate(commits):
        for rel, text in files.items():
            (root / rel).parent.mkdir(parents=True, exist_ok=True)
            (root / rel).write_text(text)
        subprocess.run([*git, "add", "-A"], check=True)
        subprocess.run([*git, "commit", "-qm", f"c{i}"], check=True)
    return root / ".git"


def _leaks(git_dir: Path, outputs: dict[str, str]):
    return answers_in(git_dir, {p: _sha(t) for p, t in outputs.items()}, worktree="/app", shown="/app/.git")


def test_an_output_equal_to_an_earlier_commit_is_found(tmp_path: Path):
    git_dir = _repo(tmp_path / "r", {"wrap.py": GOOD}, {"wrap.py": BAD})
    (leak,) = _leaks(git_dir, {"/app/wrap.py": GOOD})
    assert (leak.output, leak.history_path, leak.at_head, leak.git_dir) == (
        "/app/wrap.py",
        "wrap.py",
        False,
        "/app/.git",
    )
    (finding,) = git_findings([leak])
    assert finding.code.value == "leak" and "/app/wrap.py" in finding.message
    assert finding.evidence["git"][0]["blob"] == leak.blob


def test_the_current_commits_version_of_the_output_is_found(tmp_path: Path):
    git_dir = _repo(tmp_path / "r", {"wrap.py": GOOD})  # the image's working tree was broken after the commit
    (leak,) = _leaks(git_dir, {"/app/wrap.py": GOOD})
    assert leak.at_head


def test_history_without_the_answer_or_a_current_file_elsewhere_is_not(tmp_path: Path):
    git_dir = _repo(tmp_path / "r", {"wrap.py": BAD, "template/wrap.py": GOOD}, {"README": "x\n"})
    assert _leaks(git_dir, {"/app/wrap.py": GOOD}) == []  # GOOD is a current file at another path: handed over
    assert _leaks(git_dir, {"/app/other.py": "not in the history at all, long enough to count as an answer\n"}) == []


def test_short_contents_count_only_at_the_outputs_own_path(tmp_path: Path):
    short = "42\n"
    assert len(short) < MIN_ANSWER_BYTES
    git_dir = _repo(tmp_path / "r", {"answer.txt": short, "n.txt": "7\n"}, {"answer.txt": "0\n", "n.txt": "8\n"})
    assert [leak.output for leak in _leaks(git_dir, {"/app/answer.txt": short})] == ["/app/answer.txt"]
    assert _leaks(git_dir, {"/app/result.txt": "7\n"}) == []  # a short value that was once some other file


def test_a_dangling_blob_is_found_without_a_history_path(tmp_path: Path):
    git_dir = _repo(tmp_path / "r", {"wrap.py": BAD})
    blob = tmp_path / "good.py"
    blob.write_text(GOOD)
    subprocess.run(["git", f"--git-dir={git_dir}", "hash-object", "-w", str(blob)], check=True, capture_output=True)
    (leak,) = _leaks(git_dir, {"/app/wrap.py": GOOD})
    assert leak.history_path is None and not leak.at_head


def test_mentions_git():
    assert mentions_git("Recover the deleted file from the Git history.")
    assert not mentions_git("Write /app/digits.txt (legit input).")


@pytest.mark.timeout(LABELLED_AUDIT_TIMEOUT_S)  # it may run the session's labelled audit
def test_audit_finds_the_fix_in_the_images_history_and_spares_the_control(backend: str, tmp_path: Path):
    audits = audit_fixtures(["fix-word-wrap", "fix-title-case"], backend, tmp_path).audits
    assert audits["fix-title-case"]["findings"] == []
    (finding,) = audits["fix-word-wrap"]["findings"]
    (leak,) = finding["evidence"]["git"]
    assert (finding["code"], leak["output"], leak["git_dir"], leak["history_path"]) == (
        "leak",
        "/app/wordwrap.py",
        "/app/.git",
        "wordwrap.py",
    )
