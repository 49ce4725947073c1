"""The probe cache: the child's observations, keyed by everything cheap that can change them.

Only what the child process observes (torch, NVML, amdsmi, CUDA init) is cached; package and
PATH facts are re-read on every run in the parent, because that costs milliseconds. The key is
the interpreter, torch's installed version (package metadata, never an import), the NVIDIA /
AMD driver version where the kernel exposes it in a file, the boot id, and the environment
variables that change what sglang and torch see. Free device memory changes without any of
these changing, so an entry also expires after `max_age` seconds (H3DOCTOR_PROBE_CACHE_TTL,
default 600), and the facts read from it say how old they are.

Files live in platformdirs' user cache dir (or $H3DOCTOR_CACHE_DIR), one per key, newest 16 kept.
"""

from __future__ import annotations

import hashlib
import json
import os
import sys
import time
from pathlib import Path
from typing import Any

from h3doctor import __version__
from h3doctor.host.probe_child import PROTOCOL
from h3doctor.paths import cache_dir

CACHE_FORMAT = 1
DEFAULT_MAX_AGE_S = 600.0
KEEP_FILES = 16
KEY_ENV = (
    "SGLANG_DIFFUSION_PLATFORM_OVERRIDE",
    "CUDA_VISIBLE_DEVICES",
    "CUDA_DEVICE_ORDER",
    "NVIDIA_VISIBLE_DEVICES",
    "HIP_VISIBLE_DEVICES",
    "ROCR_VISIBLE_DEVICES",
    "ZE_AFFINITY_MASK",
    "ASCEND_RT_VISIBLE_DEVICES",
    "MUSA_VISIBLE_DEVICES",
    "PYTORCH_NVML_BASED_CUDA_CHECK",
    "PYTHONPATH",
    "LD_LIBRARY_PATH",
)
KEY_DISTRIBUTIONS = ("torch", "nvidia-ml-py", "amdsmi")


def max_age(env: dict[str, str]) -> float:
    try:
        return float(env.get("H3DOCTOR_PROBE_CACHE_TTL") or DEFAULT_MAX_AGE_S)
    except ValueError:
        return DEFAULT_MAX_AGE_S


def _read_first_line(path: str) -> str | None:
    try:
        with open(path, encoding="utf-8", errors="replace") as fh:
            return fh.readline().strip() or None
    except OSError:
        return None


def driver_version() -> str | None:
    """The GPU driver's version where a file says it (no NVML, no CUDA init)."""
    nvidia = _read_first_line("/proc/driver/nvidia/version")
    if nvidia:
        return nvidia
    amd = _read_first_line("/sys/module/amdgpu/version")
    if amd:
        return f"amdgpu {amd}"
    if sys.platform == "darwin":
        import platform

        return f"macOS {platform.mac_ver()[0]}"
    return None


def dist_version(name: str) -> str | None:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version(name)
    except PackageNotFoundError:
        return None


def key_parts(env: dict[str, str]) -> dict[str, Any]:
    return {
        "format": [CACHE_FORMAT, PROTOCOL, __version__],
        "python": sys.executable,
        "distributions": {name: dist_version(name) for name in KEY_DISTRIBUTIONS},
        "driver": driver_version(),
        "boot_id": _read_first_line("/proc/sys/kernel/random/boot_id"),
        "env": {name: env.get(name) for name in KEY_ENV},
    }


def _digest(parts: dict[str, Any]) -> str:
    return hashlib.sha256(json.dumps(parts, sort_keys=True).encode()).hexdigest()[:20]


def path_for(env: dict[str, str], parts: dict[str, Any]) -> Path:
    return cache_dir(env) / f"probe-{_digest(parts)}.json"


def load(env: dict[str, str], parts: dict[str, Any], now: float | None = None) -> tuple[dict[str, Any] | None, str]:
    """(entry, why): the entry for this key if it is there, readable and fresh."""
    path = path_for(env, parts)
    try:
        entry = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        return None, "no cached probe for this key"
    except (OSError, ValueError) as exc:
        return None, f"unreadable cache file ({type(exc).__name__})"
    if not isinstance(entry, dict) or entry.get("key") != parts or not isinstance(entry.get("observations"), dict):
        return None, "cache file does not match this key"
    age = (time.time() if now is None else now) - float(entry.get("created", 0))
    limit = max_age(env)
    if age < 0 or age > limit:
        return None, f"cached probe is {age:.0f} s old (limit {limit:.0f} s)"
    entry["age_s"] = age
    entry["path"] = str(path)
    return entry, "cached"


def store(env: dict[str, str], parts: dict[str, Any], observations: dict[str, Any], run: dict[str, Any]) -> str | None:
    """Write atomically; a cache that cannot be written is not an error."""
    path = path_for(env, parts)
    entry = {"key": parts, "created": time.time(), "observations": observations, "run": run}
    import tempfile

    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(prefix=".probe-", suffix=".tmp", dir=path.parent)
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            json.dump(entry, fh)
        os.replace(tmp, path)
        _prune(path.parent)
        return str(path)
    except OSError:
        return None


def _prune(folder: Path) -> None:
    try:
        files = sorted(folder.glob("probe-*.json"), key=lambda p: p.stat().st_mtime, reverse=True)
        for old in files[KEEP_FILES:]:
            old.unlink(missing_ok=True)
    except OSError:
        pass
