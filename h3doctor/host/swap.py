"""The swap sglang's auto-tuner counts on a device that shares host memory (0.5.20 on,
`server_args/auto_tune.py`; rule H3D419): `psutil.swap_memory().total`, which psutil reads from
/proc/meminfo's SwapTotal, set to 0 when /sys/fs/cgroup/memory.swap.max reads "0".

Each reader returns `(value, source, reason)`; None is "unknown". Paths are joined under `root`
("/" on a real run) so the tests hand a faked /proc and /sys/fs/cgroup; files are read bounded
through host/system.py's reader (a FIFO planted there is refused, never waited on).
"""

from __future__ import annotations

import os

from h3doctor.digits import is_digits
from h3doctor.host.system import read_small, sglang_reads

_MEMINFO_CAP = 64 * 1024  # /proc/meminfo is ~1.5 KiB; anything past this is not the kernel's file
ROOT_SWAP_MAX = "sys/fs/cgroup/memory.swap.max"


def swap_total(root: str = "/") -> tuple[int | None, str, str]:
    """(SwapTotal in bytes, source, reason), as psutil.swap_memory().total reads it on Linux."""
    source = "/proc/meminfo SwapTotal"
    text = read_small(os.path.join(root, "proc/meminfo"), _MEMINFO_CAP)
    if text is None or len(text) >= _MEMINFO_CAP:
        return None, source, "/proc/meminfo unreadable (not a regular file, missing or too long)"
    for line in text.splitlines():
        key, _, rest = line.partition(":")
        if key.strip() == "SwapTotal":
            words = rest.split()
            # the kernel writes "SwapTotal:  8388604 kB"; psutil multiplies by 1024 the same way
            if len(words) == 2 and is_digits(words[0]) and len(words[0]) <= 20 and words[1] == "kB":
                return int(words[0]) * 1024, source, f"{words[0]} kB"
            return None, source, "SwapTotal is not '<number> kB'"
    return None, source, "no SwapTotal line"


def cgroup_swap_off(root: str = "/") -> tuple[bool | None, str, str]:
    """(swap off for this process?, source, reason) as sglang decides it: /sys/fs/cgroup/memory.swap.max
    (the mount's own file, as sglang opens it) reads "0". A file that cannot be opened, or any other
    value ("max", a number), leaves the host's swap counted (sglang's `except OSError: pass`). A
    FIFO, a device or a file longer than a cgroup value is unknown: h3doctor does not wait on it."""
    return sglang_reads(root, ROOT_SWAP_MAX, "0", False, "sglang counts the host's swap")


def swap_facts(root: str = "/") -> dict[str, object]:
    """The probe's observations of both (host/probe.py system_facts)."""
    total, total_source, total_reason = swap_total(root)
    off, off_source, off_reason = cgroup_swap_off(root)
    return {"swap_total": total, "swap_total_source": total_source, "swap_total_reason": total_reason,
            "cgroup_swap_off": off, "cgroup_swap_off_source": off_source, "cgroup_swap_off_reason": off_reason}
