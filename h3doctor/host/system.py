"""The host around the GPUs, read from files: the cgroup's memory cap, /dev/shm, free disk.

Each reader returns `(value, source, reason)`; a value of None is "unknown" and its reason says
why. Every path is joined under `root` ("/" on a real run) so the tests can hand a faked
`/sys/fs/cgroup`, `/proc/self/cgroup` and mount points. Files are read with a size cap
(safeload.read_head): a hostile or odd /sys (a bind mount, a FIFO) cannot hang or flood a check.
"""

from __future__ import annotations

import os
import stat

from h3doctor.digits import is_digits
from h3doctor.errors import H3DoctorError
from h3doctor.safeload import read_head

_SMALL = 4096  # a cgroup value file holds one number
_CGROUP_LIST = 64 * 1024  # /proc/self/cgroup: one line per hierarchy
# sglang's host_memory_budget.py (0.5.19-0.5.23): the v2 mount first, then v1's memory controller;
# in each, this process's cgroup directory and its ancestors, the tightest cap winning
CGROUP_MOUNTS = (
    ("sys/fs/cgroup", "memory.max", "memory.current", "cgroup v2"),
    ("sys/fs/cgroup/memory", "memory.limit_in_bytes", "memory.usage_in_bytes", "cgroup v1"),
)
# an unlimited v1 cgroup reports a number near 2**63 instead of "max" (sglang: _UNLIMITED_ABOVE)
UNLIMITED_ABOVE = 1 << 62


def read_small(path: str, limit: int = _SMALL) -> str | None:
    try:
        return read_head(path, max_bytes=limit, what="a host file").decode("ascii", "replace")
    except (H3DoctorError, OSError, ValueError):
        return None


def _read_int(path: str) -> int | None:
    text = read_small(path)
    if text is None:
        return None
    text = text.strip()
    return int(text) if is_digits(text) else None


def _own_cgroup(root: str) -> str:
    """The cgroup path /proc/self/cgroup names for the memory hierarchy (v2's empty controller field)."""
    text = read_small(os.path.join(root, "proc/self/cgroup"), _CGROUP_LIST) or ""
    for line in text.splitlines():
        parts = line.split(":", 2)
        if len(parts) == 3 and (not parts[1] or "memory" in parts[1].split(",")):
            return parts[2]
    return ""


def _cgroup_dirs(root: str, mount: str) -> list[str]:
    """This process's cgroup directory under `mount` and each ancestor up to the mount. Inside a
    container the mount is already the container's own cgroup, so the path /proc names is tried
    with ever shorter prefixes cut off until a directory exists (as sglang does)."""
    top = os.path.join(root, mount)
    if not os.path.isdir(top):
        return []
    parts = [p for p in _own_cgroup(root).split("/") if p and p not in (".", "..")]
    leaf = top
    for start in range(len(parts)):
        candidate = os.path.join(top, *parts[start:])
        if os.path.isdir(candidate):
            leaf = candidate
            break
    dirs = [leaf]
    while dirs[-1] != top and len(dirs) <= len(parts):
        dirs.append(os.path.dirname(dirs[-1]))
    return dirs


def cgroup_memory(root: str = "/") -> tuple[int | None, int | None, str, str]:
    """(cap in bytes, usage in bytes, source, reason): the tightest memory cap of this process's
    cgroup, v2 before v1. No cap found is (None, None, ..., "no cgroup memory limit") with the
    reason saying so; no cgroup mount at all says that instead."""
    mounted = False
    for mount, limit_name, usage_name, label in CGROUP_MOUNTS:
        dirs = _cgroup_dirs(root, mount)
        mounted = mounted or bool(dirs)
        tightest: tuple[int, int | None, str] | None = None
        for directory in dirs:
            limit = _read_int(os.path.join(directory, limit_name))
            if limit is None or limit >= UNLIMITED_ABOVE or (tightest and limit >= tightest[0]):
                continue
            tightest = (limit, _read_int(os.path.join(directory, usage_name)), os.path.join(directory, limit_name))
        if tightest is not None:
            where = "/" + os.path.relpath(tightest[2], root)
            return tightest[0], tightest[1], f"{label} {where}", "the container's memory cap"
    if not mounted:
        return None, None, "/sys/fs/cgroup", "no cgroup memory controller mounted"
    return None, None, "/sys/fs/cgroup", "no cgroup memory limit"


ROOT_MEMORY_MAX = "sys/fs/cgroup/memory.max"


def root_memory_max_unlimited(root: str = "/") -> tuple[bool | None, str, str]:
    """(no limit?, source, reason) as sglang's auto_tune.py (0.5.20+) decides "this process has no
    cgroup memory limit" for a device that shares host memory: the mount's own
    /sys/fs/cgroup/memory.max (not this process's chain) reads "max", or cannot be opened at all
    (sglang catches OSError as no limit). A file sglang would block on or that is no cgroup value
    (a FIFO, a flood) is unknown: h3doctor does not wait on it, so it cannot say what sglang reads."""
    return sglang_reads(root, ROOT_MEMORY_MAX, "max", True, "sglang counts that as no limit")


def sglang_reads(root: str, rel: str, wanted: str, unopened: bool, means: str) -> tuple[bool | None, str, str]:
    """(whether the cgroup file at `rel` under `root` reads `wanted`, source, reason), as sglang
    decides it (auto_tune.py: the file's stripped text compared with `wanted`): where its open fails (no
    file, a directory) sglang's `except OSError` gives `unopened`, which `means` says in words. A
    file sglang would block on (a FIFO, a device) or that is longer than a cgroup value is unknown:
    h3doctor does not wait on it, so it cannot say what sglang reads."""
    path, source = os.path.join(root, rel), "/" + rel
    try:
        directory = stat.S_ISDIR(os.stat(path).st_mode)
    except (OSError, ValueError):
        return unopened, source, f"cannot be opened: {means}"
    if directory:
        return unopened, source, f"a directory: sglang's open fails, and {means}"
    text = read_small(path)  # None for a FIFO or a device: read_head refuses it rather than wait
    if text is None or len(text) >= _SMALL:
        return None, source, "not a cgroup value file h3doctor reads (not regular, unreadable or too long)"
    value = text.strip()
    return value == wanted, source, f"reads {value[:40]!r}"


def filesystem(path: str) -> tuple[int | None, int | None, str, str]:
    """(size in bytes, free in bytes, the path measured, reason) of the filesystem holding `path`
    or, when `path` does not exist yet, its nearest existing parent (where it would be created)."""
    probe = os.path.abspath(path)
    while not os.path.exists(probe) and os.path.dirname(probe) != probe:
        probe = os.path.dirname(probe)
    try:
        st = os.statvfs(probe)
    except (OSError, ValueError) as exc:
        return None, None, probe, f"statvfs failed: {exc.strerror if isinstance(exc, OSError) else exc}"
    return st.f_blocks * st.f_frsize, st.f_bavail * st.f_frsize, probe, "statvfs"


def shm(root: str = "/") -> tuple[int | None, int | None, str, str]:
    """/dev/shm's size and free bytes; unknown when there is no /dev/shm (not the root's: a
    missing one must not measure the disk under it)."""
    path = os.path.join(root, "dev/shm")
    if not os.path.isdir(path):
        return None, None, "/dev/shm", "no /dev/shm"
    size, free, _where, reason = filesystem(path)
    return size, free, "statvfs /dev/shm", reason


def hf_hub_cache(env: dict[str, str]) -> str:
    """Where huggingface_hub downloads a model: HF_HUB_CACHE, else HF_HOME/hub, else
    XDG_CACHE_HOME/huggingface/hub, else ~/.cache/huggingface/hub (huggingface_hub constants)."""
    if env.get("HF_HUB_CACHE"):
        return os.path.expanduser(env["HF_HUB_CACHE"])
    if env.get("HF_HOME"):
        return os.path.join(os.path.expanduser(env["HF_HOME"]), "hub")
    base = env.get("XDG_CACHE_HOME") or os.path.join(env.get("HOME") or os.path.expanduser("~"), ".cache")
    return os.path.join(os.path.expanduser(base), "huggingface", "hub")
