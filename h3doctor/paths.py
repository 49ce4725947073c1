"""Where h3doctor keeps its caches (validated rules, probe results), and how it writes files."""

from __future__ import annotations

import functools
import os
import sys
from collections.abc import Mapping

from h3doctor.digits import is_digits

TYPE_CHECKING = False  # pathlib is not imported on the check's path (start-up: benchmarks/README.md)
if TYPE_CHECKING:
    from pathlib import Path


def package_path(package: str, *names: str) -> str:
    """The directory of one of h3doctor's own packages, where its data files are shipped, or a
    file in it (`names`), as text: the check's path reads its data without importing pathlib.

    importlib.resources would be the general tool, but on the check's hot path (the shell hook
    runs one check per launch) its import costs ~10 ms and each files() call more; h3doctor is
    always installed as plain files (a wheel unpacked by pip, or an editable checkout), where
    files() returns exactly this directory. The data packages are not imported for it either: a
    package's directory is its dotted name under h3doctor's own."""
    if package != "h3doctor" and not package.startswith("h3doctor."):
        raise ValueError(f"not an h3doctor package: {package!r}")
    return os.path.join(_HERE, *package.split(".")[1:], *names)


_HERE = os.path.dirname(os.path.abspath(__file__))  # the h3doctor package's directory


def package_dir(package: str) -> Path:
    """`package_path(package)` as a Path."""
    from pathlib import Path

    return Path(package_path(package))


def package_names(package: str) -> list[str]:
    """The names of the files shipped in one of h3doctor's packages."""
    return os.listdir(package_path(package))


def read_package_text(package: str, name: str) -> str:
    """A data file h3doctor ships (UTF-8): h3doctor's own, never a file someone else wrote."""
    return read_shipped_text(package_path(package, name))


def read_shipped_text(path: str | Path) -> str:
    """A file h3doctor ships, by its path (UTF-8)."""
    with open(path, encoding="utf-8") as fh:
        return fh.read()


def path_text(text: str) -> str:
    """`str(Path(text))` without pathlib: repeated and trailing slashes and `.` parts dropped
    (a leading `//` kept, as POSIX allows)."""
    lead = "//" if text.startswith("//") and not text.startswith("///") else "/" if text.startswith("/") else ""
    return lead + "/".join(p for p in text.split("/") if p and p != ".") or "."


def installed_versions(names: tuple[str, ...]) -> dict[str, str | None]:
    """The installed version of each distribution, from its dist-info (or egg-info) directory on
    sys.path, as importlib.metadata finds it (first entry wins, names compared normalized), without
    importing importlib.metadata: that import alone costs ~35 ms, on the path of every check (the
    installed sglang) and of every cached probe (torch, NVML, amdsmi)."""
    index = _dist_index(tuple(sys.path))
    return {n: index.get(_norm_dist(n)) for n in names}


def _norm_dist(name: str) -> str:
    import re

    return re.sub(r"[-_.]+", "_", name).lower()


@functools.lru_cache(maxsize=4)
def _dist_index(path: tuple[str, ...]) -> dict[str, str]:
    """Every distribution on this sys.path -> its version (first entry wins): one walk per process."""
    import os

    found: dict[str, str] = {}
    for entry in path:
        try:
            listing = os.listdir(entry or ".")
        except OSError:
            continue
        for item in listing:
            for suffix in (".dist-info", ".egg-info"):
                if item.endswith(suffix):
                    dist, _, version = item[: -len(suffix)].partition("-")
                    key = _norm_dist(dist)
                    if key not in found and is_digits(version[:1]):
                        found[key] = version
    return found


def cache_dir(env: Mapping[str, str]) -> str:
    """$H3DOCTOR_CACHE_DIR, else the platform's user cache directory for h3doctor."""
    override = env.get("H3DOCTOR_CACHE_DIR")
    if override:
        return path_text(override) if sys.platform != "win32" else override
    return user_cache_dir()


def user_cache_dir() -> str:
    """Where platformdirs' `user_cache_dir("h3doctor")` points (tests/house/test_reliability.py compares
    the two), without importing platformdirs: its import pulls tempfile and random in, ~8 ms on the
    path of every check (the rules cache) and every hook launch. XDG_CACHE_HOME counts only as an
    absolute path, as the XDG specification and platformdirs have it (on macOS as well)."""
    if sys.platform == "win32":  # platformdirs asks the shell for this folder; the variable holds the same
        from pathlib import Path

        local = os.environ.get("LOCALAPPDATA") or str(Path.home() / "AppData" / "Local")
        return str(Path(local) / "h3doctor" / "h3doctor" / "Cache")
    xdg = os.environ.get("XDG_CACHE_HOME", "")
    if os.path.isabs(xdg):  # honoured on macOS too
        return path_text(os.path.join(xdg, "h3doctor"))
    home = os.path.expanduser("~")  # Path.home(): $HOME, else the password database
    if home == "~":
        raise RuntimeError("Could not determine home directory.")
    if sys.platform == "darwin":
        return path_text(os.path.join(home, "Library", "Caches", "h3doctor"))
    return path_text(os.path.join(home, ".cache", "h3doctor"))


_UNTRUSTED_SAID: set[str] = set()


def trusted_cache_dir(env: Mapping[str, str], *, create: bool = True) -> str | None:
    """The cache directory if h3doctor may trust what it finds there, else None (said once per
    directory on stderr; the check then runs uncached).

    Whoever can write the directory can plant entries (a forged probe, rules rewritten with a
    matching content hash) or links, so it must be a directory owned by this user and not
    writable by group or others. h3doctor creates it 0700."""
    import stat

    directory = cache_dir(env)
    try:
        if create and not os.path.lexists(directory):
            os.makedirs(directory, mode=0o700, exist_ok=True)
            os.chmod(directory, 0o700)
        info = os.stat(directory)
    except (OSError, ValueError):
        return None  # cannot be created or read: no cache, nothing to say
    problem = None
    if not stat.S_ISDIR(info.st_mode):
        problem = "it is not a directory"
    elif hasattr(os, "geteuid") and info.st_uid != os.geteuid():
        problem = "it is owned by another user"
    elif hasattr(os, "geteuid") and info.st_mode & (stat.S_IWGRP | stat.S_IWOTH):
        problem = "group or others can write it"
    if problem is None:
        return directory
    key = str(directory)
    if key not in _UNTRUSTED_SAID:
        _UNTRUSTED_SAID.add(key)
        from h3doctor.shellwords import safe_text

        shown = safe_text(key)[:200]
        try:
            sys.stderr.write(f"h3doctor: not using the cache directory {shown}: {problem} (checking without a cache)\n")
        except (OSError, ValueError, AttributeError):
            pass
    return None


def read_cache_entry(directory: str | Path, name: str, *, max_bytes: int, what: str) -> str:
    """One entry of a trusted cache directory: a regular file, its last component not a link,
    opened without waiting (safeload.read_bounded, follow=False). LoadError otherwise."""
    from h3doctor.safeload import read_bounded

    return read_bounded(os.path.join(directory, name), max_bytes=max_bytes, what=what, follow=False)


def write_cache_entry(directory: str | Path, name: str, text: str) -> None:
    """Put one cache entry in place (`replace_file`, 0600): a link planted under its name is
    replaced, its target is never opened or written; a FIFO is replaced, never waited on."""
    replace_file(directory, name, text, mode=0o600)


def replace_file(directory: str | Path, name: str, text: str, *, mode: int, before_rename=None) -> None:
    """A new file (`mode`) in `directory`, renamed over `name`: the rename replaces whatever has
    the name (a file, a link, a FIFO) without opening it, and a reader never sees half a file.
    `before_rename()`, when given, runs once the new file is written, right before the rename,
    and may raise to stop it. OSError propagates; the temporary file is removed."""
    _write_and_rename(os.fspath(directory), name, text, mode, durable=False, before_rename=before_rename)


def _write_and_rename(directory: str, name: str, text: str, mode: int, *, durable: bool, before_rename=None) -> None:
    """`text` into a new temporary file in `directory` (`mode`; flushed to disk when `durable`),
    renamed over `name`; the temporary file is removed on any failure."""
    import tempfile

    fd, tmp = tempfile.mkstemp(prefix=f".{name}.", suffix=".tmp", dir=directory)
    try:
        with os.fdopen(fd, "w", encoding="utf-8", newline="") as fh:
            fh.write(text)
            if durable:
                fh.flush()
                os.fsync(fh.fileno())
        os.chmod(tmp, mode)
        if before_rename is not None:
            before_rename()
        os.replace(tmp, os.path.join(directory, name))
    except BaseException:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise


def write_atomic(path: Path, text: str, *, follow: bool = True) -> None:
    """Write through a temporary file in the same directory and os.replace it into place, so a
    reader never sees half a file (a full disk, a crash, two runs at once). A symlink is written
    through (its target is replaced, not the link); a device or a pipe (`/dev/full`,
    `/dev/stdout`) is written into, never replaced; the file keeps its permissions. OSError
    propagates; the temporary file is removed.

    `follow=False` is for a name inside a tree someone else wrote (lint's `--output-file` in a
    checkout): a link there is refused, never written through (a pull request can commit
    `h3doctor.sarif -> ~/.bashrc`), and so is anything but a regular file (a FIFO would block the
    open); the new file is created fresh (mkstemp's O_EXCL) and renamed over the name."""
    import errno
    import stat
    from pathlib import Path

    target = Path(os.path.realpath(path)) if follow else Path(path)
    try:
        info = os.stat(target) if follow else os.lstat(target)
    except FileNotFoundError:
        info = None
    if info is not None and stat.S_ISLNK(info.st_mode):
        raise OSError(errno.ELOOP, "it is a symbolic link (not written through)", str(path))
    if info is not None and stat.S_ISDIR(info.st_mode):
        raise IsADirectoryError(21, "Is a directory", str(path))
    if info is not None and not follow and not stat.S_ISREG(info.st_mode):
        raise OSError(errno.EINVAL, "it is not a regular file (not written into)", str(path))
    if info is not None and not stat.S_ISREG(info.st_mode):
        with open(target, "w", encoding="utf-8", newline="") as fh:
            fh.write(text)
        return
    if info is not None:
        mode = stat.S_IMODE(info.st_mode)
    else:
        umask = os.umask(0)
        os.umask(umask)
        mode = 0o666 & ~umask
    target.parent.mkdir(parents=True, exist_ok=True)
    _write_and_rename(str(target.parent), target.name, text, mode, durable=True)
