"""The container's file tree as seen from the host, for the bwrap backend's fast file IO.

A sandbox's view is the host root read-only, assembled from pieces (`HostRoot`), plus writable
folders ("roots") each backed by the same path under one host folder (`fs`): the container's
`/app/x` is `<fs>/app/x`. `ContainerFS` maps container paths to host paths with symlinks
resolved *in container space*, so a link the sandbox planted (`/app/l -> /etc`, `-> ../../..`)
can never make a host-side read or write land outside the sandbox's own folders.

Secrets of the host's /etc (password hashes, ssh host keys, TLS private keys, sudoers, docker
and containerd configs: `MASKED`) are masked read-only, by /dev/null or an empty folder, both
inside the sandbox and for the host-side reads here. So are the pytest plugins the host Python's own
distributions register (`host_pytest_plugins`): an image has only the plugins its Dockerfile installs, and a
host plugin such as hypothesis's costs every pytest run here most of a second.

This is safe because no sandboxed process outlives an exec (each exec is its own pid namespace):
between execs nothing can swap a checked path for a link. Do not run put/get concurrently with
an exec of the same sandbox.
"""

from __future__ import annotations

import contextlib
import errno
import functools
import logging
import os
import posixpath
import shutil
import stat
import sys
import tempfile
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from qaflow.errors import SandboxError

log = logging.getLogger(__name__)

MAX_SYMLINKS = 40
SPECIAL = ("/", "/proc", "/dev")
"""Container paths that are never writable roots (the root itself is a read-only tmpfs)."""


MASKED = (
    "/etc/shadow",
    "/etc/shadow-",
    "/etc/gshadow",
    "/etc/gshadow-",
    "/etc/sudoers",
    "/etc/sudoers.d",
    "/etc/security/opasswd",
    "/etc/ssh",
    "/etc/ssl/private",
    "/etc/docker",
    "/etc/containerd",
    "/etc/credstore",
    "/etc/credstore.encrypted",
    "/etc/wireguard",
    "/etc/NetworkManager/system-connections",
    "/etc/letsencrypt",
    "/etc/kubernetes",
    "/etc/rancher",
)
"""Host paths under /etc that a sandbox sees empty: files as /dev/null, folders as an empty folder."""


def login_profile(python_bin: str) -> str:
    """A host file with the host's /etc/profile and then the stand-in Python's bin folder put back first on
    PATH, bound over /etc/profile: a login shell resets PATH there, and the Python a `python:3.x` image keeps
    in /usr/local/bin lives outside the standard folders here (made if missing or different)."""
    try:
        with open("/etc/profile", encoding="utf-8", errors="surrogateescape") as f:
            host = f.read()
    except OSError:
        host = ""
    quoted = python_bin.replace("'", "'\\''")
    text = (
        f"{host.rstrip()}\n\n# qaflow (bwrap): the stand-in Python stays first on PATH in a login shell\n"
        f"case \":$PATH:\" in *':{quoted}:'*) ;; *) PATH='{quoted}':\"$PATH\"; export PATH ;; esac\n"
    )
    path = os.path.join(tempfile.gettempdir(), f"qaflow-profile-{os.getuid()}")
    try:
        with open(path, encoding="utf-8", errors="surrogateescape") as f:
            if f.read() == text and os.lstat(path).st_uid == os.getuid():
                return path
    except OSError:
        pass
    fd, tmp = tempfile.mkstemp(dir=tempfile.gettempdir(), prefix=".qaflow-profile-")
    with os.fdopen(fd, "w", encoding="utf-8", errors="surrogateescape") as f:
        f.write(text)
    os.chmod(tmp, 0o444)
    os.replace(tmp, path)
    return path


def host_pytest_plugins(prefix: str) -> list[str]:
    """The `entry_points.txt` files, under the host Python's `prefix`, of distributions that register a pytest
    plugin (a `[pytest11]` section; pytest itself registers none): pytest would load each in every run."""
    found = []
    for pattern in (
        "lib/python3*/site-packages/*.dist-info/entry_points.txt",
        "lib/python3/dist-packages/*.dist-info/entry_points.txt",
    ):
        for entry_points in sorted(Path(prefix).glob(pattern)):
            try:
                text = entry_points.read_text(encoding="utf-8", errors="replace")
            except OSError:
                continue
            if any(line.strip() == "[pytest11]" for line in text.splitlines()):
                found.append(str(entry_points))
    return found


def empty_dir() -> str:
    """A host folder that is empty and owned by us (made if missing), the source of folder masks."""
    path = os.path.join(tempfile.gettempdir(), f"qaflow-empty-{os.getuid()}")
    with contextlib.suppress(FileExistsError):
        os.mkdir(path, 0o555)
    st = os.lstat(path)
    if not stat.S_ISDIR(st.st_mode) or st.st_uid != os.getuid() or os.listdir(path) or st.st_mode & 0o222:
        raise SandboxError(f"{path} is not an empty read-only folder of ours; remove it")
    return path


@dataclass(frozen=True)
class HostRoot:
    """The read-only pieces of the host root that every sandbox sees."""

    args: tuple[str, ...]
    """bwrap arguments mounting them (`--ro-bind`, `--symlink`)."""
    pieces: tuple[str, ...]
    """Container paths of those pieces (bound dirs and symlinks); each maps to the same host path."""
    python_bin: str | None
    """The host Python's bin folder when it lives outside /usr (put first on PATH)."""
    masks: tuple[tuple[str, str], ...] = ()
    """(container path, host source) of host files a sandbox sees replaced: the masked secrets (`MASKED`) and
    /etc/profile (`login_profile`); their --ro-binds are in `args`."""

    def ensure(self) -> None:
        """Re-make the empty folder that folder masks bind, and the login profile (a temp cleaner may have
        removed them)."""
        if any(os.path.basename(source).startswith("qaflow-empty-") for _, source in self.masks):
            empty_dir()
        if self.python_bin and any(path == "/etc/profile" for path, _ in self.masks):
            login_profile(self.python_bin)


@functools.cache
def host_root() -> HostRoot:
    """The host's /usr, /etc, /bin-style links or dirs, and the Python prefix (outside /usr)."""
    args: list[str] = []
    pieces: list[str] = []
    for name in ("/usr", "/etc"):
        if os.path.isdir(name):
            args += ["--ro-bind", name, name]
            pieces.append(name)
    for name in ("/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32"):
        if os.path.islink(name):
            args += ["--symlink", os.readlink(name), name]
            pieces.append(name)
        elif os.path.isdir(name):
            args += ["--ro-bind", name, name]
            pieces.append(name)
    python_bin = None
    prefix = posixpath.normpath(sys.base_prefix)
    if not any(prefix == p or prefix.startswith(p + "/") for p in pieces) and prefix != "/":
        real = os.path.realpath(prefix)
        args += ["--ro-bind", real, prefix]
        pieces.append(prefix)
        if real != prefix:
            args += ["--ro-bind", real, real]
            pieces.append(real)
        python_bin = prefix + "/bin"
    masks: list[tuple[str, str]] = []
    for path in MASKED:
        if not any(under(path, p) for p in pieces) or not os.path.lexists(path) or os.path.islink(path):
            continue
        source = empty_dir() if os.path.isdir(path) else "/dev/null"
        args += ["--ro-bind", source, path]
        masks.append((path, source))
    for path in host_pytest_plugins(prefix):
        if any(under(path, p) for p in pieces):
            args += ["--ro-bind", "/dev/null", path]
            masks.append((path, "/dev/null"))
    if python_bin and os.path.isfile("/etc/profile") and any(under("/etc/profile", p) for p in pieces):
        source = login_profile(python_bin)
        args += ["--ro-bind", source, "/etc/profile"]
        masks.append(("/etc/profile", source))
    return HostRoot(tuple(args), tuple(pieces), python_bin, tuple(masks))


def under(path: str, prefix: str) -> bool:
    return path == prefix or path.startswith(prefix.rstrip("/") + "/")


def check_container_path(path: str) -> str:
    """Normalize an absolute container path.

    Raises:
        SandboxError: for a relative path or one with a `..` component.
    """
    if not path.startswith("/"):
        raise SandboxError(f"container path {path!r} must be absolute")
    if ".." in path.split("/"):
        raise SandboxError(f"container path {path!r} must not contain '..'")
    return posixpath.normpath(path).replace("//", "/")


class ContainerFS:
    """Host-side access to one sandbox's tree: writable roots under `fs`, read-only host pieces."""

    def __init__(self, fs: Path, roots: list[str], host: HostRoot):
        self.fs = fs
        self.host = host
        self.roots: list[str] = []
        self._mounts: list[tuple[str, str, bool]] = []
        self.set_roots(roots)

    def set_roots(self, roots: list[str]) -> None:
        """Use these writable roots (nested ones are folded into their ancestor)."""
        minimal = sorted({r for r in roots if not any(o != r and under(r, o) for o in roots)})
        self.roots = minimal
        mounts = [(r, str(self.fs) + r, True) for r in minimal]
        mounts += [(p, p, False) for p in self.host.pieces]
        mounts += [(path, source, False) for path, source in self.host.masks]
        self._mounts = sorted(mounts, key=lambda m: len(m[0]), reverse=True)

    def bind_args(self) -> list[str]:
        """bwrap arguments for the host pieces and the writable roots, parents before children."""
        ordered: list[tuple[int, list[str]]] = []
        args = list(self.host.args)
        i = 0
        while i < len(args):
            ordered.append((args[i + 2].count("/"), args[i : i + 3]))
            i += 3
        for root in self.roots:
            ordered.append((root.count("/"), ["--bind", str(self.fs) + root, root]))
        ordered.sort(key=lambda item: item[0])
        return [word for _, words in ordered for word in words]

    def mount_of(self, path: str) -> tuple[str, str, bool] | None:
        """(container prefix, host prefix, writable) of the mount holding `path`, innermost first."""
        for mount in self._mounts:
            if under(path, mount[0]):
                return mount
        return None

    def host_path(self, path: str) -> tuple[Path, bool] | None:
        """(host path, writable) for a resolved container path, or None when the host cannot see it."""
        mount = self.mount_of(path)
        if mount is None:
            return None
        prefix, host_prefix, writable = mount
        return Path(host_prefix + path[len(prefix) :]), writable

    def root_conflict(self, path: str) -> str | None:
        """Why `path` cannot become a writable root (None when it can)."""
        if any(under(path, s) for s in SPECIAL[1:]) or path == "/":
            return f"{path} is a special path"
        mount = self.mount_of(path)
        if mount is not None and not mount[2]:
            return f"{path} lies in the host's read-only {mount[0]}"
        return None

    def is_writable(self, path: str) -> bool:
        mount = self.mount_of(path)
        return mount is not None and mount[2]

    def resolve(self, path: str, *, follow_last: bool = True) -> str:
        """The container path with every existing symlink followed (container semantics).

        Raises:
            SandboxError: for a bad path or a symlink loop.
        """
        todo = list(reversed(check_container_path(path).split("/")))
        resolved = "/"
        hops = 0
        while todo:
            name = todo.pop()
            if name in ("", "."):
                continue
            if name == "..":
                resolved = posixpath.dirname(resolved)
                continue
            candidate = posixpath.join(resolved, name)
            if follow_last or todo:
                mapped = self.host_path(candidate)
                if mapped is not None and os.path.islink(mapped[0]):
                    hops += 1
                    if hops > MAX_SYMLINKS:
                        raise SandboxError(f"too many levels of symbolic links in {path}")
                    target = os.readlink(mapped[0])
                    if target.startswith("/"):
                        resolved = "/"
                    todo.extend(reversed(target.split("/")))
                    continue
            resolved = candidate
        return resolved

    def writable_host(self, path: str, *, follow_last: bool = True) -> Path:
        """Host path of a container path that must be writable.

        Raises:
            SandboxError: when the path is not under a writable root of this sandbox.
        """
        resolved = self.resolve(path, follow_last=follow_last)
        mount = self.mount_of(resolved)
        if mount is None or not mount[2]:
            shown = path if resolved == path else f"{path} (-> {resolved})"
            raise SandboxError(f"{shown} is not writable in this sandbox (writable: {', '.join(self.roots)})")
        if not os.path.isdir(mount[1]):
            raise SandboxError(f"the sandbox folder {mount[1]} is gone (was the sandbox closed?)")
        return Path(mount[1] + resolved[len(mount[0]) :])

    def readable_host(self, path: str) -> Path:
        """Host path holding what the sandbox sees at `path` (writable roots and read-only pieces).

        Raises:
            SandboxError: when the host cannot see that path (/proc, /dev, the tmpfs root).
        """
        resolved = self.resolve(path)
        mapped = self.host_path(resolved)
        if mapped is None:
            raise SandboxError(f"{path} is not readable from outside the sandbox (only its files and host pieces)")
        return mapped[0]

    def clear(self, path: str) -> None:
        """Remove the container path `path` (a writable root is emptied instead: it is a mount).

        Links are removed, never followed; a path outside the writable folders is left alone
        (the sandbox cannot have written there).

        Raises:
            SandboxError: for a bad path, or when something cannot be removed.
        """
        resolved = self.resolve(path, follow_last=False)
        mount = self.mount_of(resolved)
        if mount is None or not mount[2]:
            return
        host = Path(mount[1] + resolved[len(mount[0]) :])
        try:
            if resolved == mount[0]:  # a root: empty it, keep the folder
                for entry in os.scandir(host):
                    _remove(Path(entry.path))
            elif os.path.lexists(host):
                _remove(host)
        except OSError as e:
            raise SandboxError(f"cannot remove {path}: {e}") from e

    def makedirs(self, path: str) -> Path:
        """Create the container folder `path` (and parents) under a writable root; returns its host path.

        Raises:
            SandboxError: when it is not writable or a file is in the way.
        """
        host = self.writable_host(path)
        try:
            os.makedirs(host, exist_ok=True)
        except (FileExistsError, NotADirectoryError) as e:
            raise SandboxError(f"cannot create folder {path}: a file is in the way") from e
        return host

    def write_bytes(self, path: str, data: bytes, mode: int = 0o644) -> None:
        """Write a file; a symlink at `path` is replaced, never followed.

        Raises:
            SandboxError: when the path is not writable or is a folder.
        """
        parent, name = posixpath.split(check_container_path(path))
        if not name:
            raise SandboxError(f"cannot write a file at {path}")
        target = self.makedirs(parent) / name
        _clear_link(target, path)
        flags = os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW | os.O_CLOEXEC
        try:
            fd = os.open(target, flags, mode)
        except IsADirectoryError as e:
            raise SandboxError(f"cannot write {path}: it is a folder") from e
        try:
            os.fchmod(fd, mode)
            view = memoryview(data)
            while view:
                view = view[os.write(fd, view) :]
        finally:
            os.close(fd)

    def copy_in(
        self,
        src: Path,
        path: str,
        *,
        chmod: int | None = None,
        skip: Callable[[Path], bool] | None = None,
    ) -> None:
        """Copy a host file to the file `path`, or a host folder's contents into the folder `path`.

        Modes and mtimes are kept (or set to `chmod`), and a folder `path` this creates gets the host
        folder's mode; symlinks are copied as links; links already
        at a destination are replaced, never followed. `skip(source)` leaves a source out.

        Raises:
            SandboxError: when `path` is not writable or a folder/file is in the way.
            OSError: when the host source cannot be read.
        """
        if src.is_dir():
            fresh = not os.path.lexists(self.writable_host(path))
            dest = self.makedirs(path)
            if fresh and chmod is None:
                dest.chmod(stat.S_IMODE(src.stat().st_mode))  # as docker's archive copy creates it
            self._copy_tree(src, dest, path, chmod, skip)
        else:
            st = src.stat()
            parent, name = posixpath.split(check_container_path(path))
            target = self.makedirs(parent) / name
            _copy_file(src, target, path, chmod if chmod is not None else stat.S_IMODE(st.st_mode), st)

    def _copy_tree(
        self, src: Path, dest: Path, shown: str, chmod: int | None, skip: Callable[[Path], bool] | None
    ) -> None:
        for entry in os.scandir(src):
            source = Path(entry.path)
            if skip is not None and skip(source):
                continue
            target = dest / entry.name
            where = f"{shown.rstrip('/')}/{entry.name}"
            st = entry.stat(follow_symlinks=False)
            if entry.is_symlink():
                _clear_link(target, where, replace_files=True)
                os.symlink(os.readlink(source), target)
            elif entry.is_dir(follow_symlinks=False):
                if os.path.islink(target) or (os.path.lexists(target) and not os.path.isdir(target)):
                    os.unlink(target)
                os.makedirs(target, exist_ok=True)
                self._copy_tree(source, target, where, chmod, skip)
                os.chmod(target, chmod if chmod is not None else stat.S_IMODE(st.st_mode))
            elif entry.is_file(follow_symlinks=False):
                _copy_file(source, target, where, chmod if chmod is not None else stat.S_IMODE(st.st_mode), st)
            else:
                raise SandboxError(f"cannot copy {source} into the sandbox: not a file, folder or symlink")

    def read_bytes(self, path: str) -> bytes:
        """Read a regular file as the sandbox sees it.

        Raises:
            FileNotFoundError: when it does not exist.
            IsADirectoryError: when it is a folder.
            SandboxError: when it is not a regular file or the host cannot see it.
        """
        host = self.readable_host(path)
        try:
            fd = os.open(host, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC)
        except FileNotFoundError as e:
            raise FileNotFoundError(errno.ENOENT, "no such file in the sandbox", path) from e
        except OSError as e:
            if e.errno == errno.ELOOP:
                raise FileNotFoundError(errno.ENOENT, "dangling symlink in the sandbox", path) from e
            raise
        with os.fdopen(fd, "rb") as fh:
            mode = os.fstat(fd).st_mode
            if stat.S_ISDIR(mode):
                raise IsADirectoryError(errno.EISDIR, "is a folder in the sandbox", path)
            if not stat.S_ISREG(mode):
                raise SandboxError(f"{path} is not a regular file")
            return fh.read()

    def copy_out(self, path: str, dest: Path) -> None:
        """Copy the folder `path` into the host folder `dest`.

        Links stay links, FIFOs and sockets are skipped (with a warning), setuid/setgid bits dropped.

        Raises:
            FileNotFoundError: when `path` does not exist.
            NotADirectoryError: when it is not a folder.
            SandboxError: when the host cannot see it.
        """
        host = self.readable_host(path)
        if not host.exists():
            raise FileNotFoundError(errno.ENOENT, "no such folder in the sandbox", path)
        if not host.is_dir():
            raise NotADirectoryError(errno.ENOTDIR, "not a folder in the sandbox", path)

        def specials(folder: str, names: list[str]) -> set[str]:
            out = set()
            for name in names:
                mode = os.lstat(os.path.join(folder, name)).st_mode
                if not (stat.S_ISREG(mode) or stat.S_ISDIR(mode) or stat.S_ISLNK(mode)):
                    log.warning("get_dir %s: skipped %s (not a file, folder or link)", path, name)
                    out.add(name)
            return out

        shutil.copytree(host, dest, symlinks=True, dirs_exist_ok=True, ignore=specials, copy_function=_copy_out_file)


def _copy_out_file(src: str, dst: str) -> None:
    """copy2 without setuid/setgid bits: sandboxed root can set them on its own files."""
    shutil.copy2(src, dst, follow_symlinks=False)
    mode = os.lstat(dst).st_mode
    if not stat.S_ISLNK(mode) and mode & (stat.S_ISUID | stat.S_ISGID):
        os.chmod(dst, stat.S_IMODE(mode) & ~(stat.S_ISUID | stat.S_ISGID))


def _remove(path: Path) -> None:
    """Remove a file, link or folder tree without following links (rmtree does not follow them)."""
    if path.is_dir() and not path.is_symlink():
        shutil.rmtree(path)
    else:
        path.unlink()


def _clear_link(target: Path, shown: str, *, replace_files: bool = False) -> None:
    """Remove a symlink (or, with replace_files, a file) at target; a folder there is an error."""
    if os.path.islink(target) or (replace_files and os.path.isfile(target)):
        os.unlink(target)
    elif replace_files and os.path.isdir(target):
        raise SandboxError(f"cannot write {shown}: a folder is in the way")


def _copy_file(src: Path, target: Path, shown: str, mode: int, st: os.stat_result) -> None:
    _clear_link(target, shown)
    if os.path.isdir(target):
        raise SandboxError(f"cannot write {shown}: a folder is in the way")
    if os.path.lexists(target) and not os.path.isfile(target):
        os.unlink(target)
    shutil.copyfile(src, target)
    os.chmod(target, mode)
    os.utime(target, ns=(st.st_atime_ns, st.st_mtime_ns))
