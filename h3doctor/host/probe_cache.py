"""The probe cache: the child's observations, keyed by everything cheap that can change them.

Only what the child process observes (torch, NVML, amdsmi, CUDA init) is cached; package and
PATH facts are re-read on every run in the parent, because that costs milliseconds. The key is
the interpreter, torch's installed version (package metadata, never an import), the NVIDIA /
AMD driver version where the kernel exposes it in a file, the boot id, and the environment
variables that change what sglang and torch see. Free device memory changes without any of
these changing, so an entry also expires after `max_age` seconds (H3DOCTOR_PROBE_CACHE_TTL,
default 600), and the facts read from it say how old they are.

Files live in the user cache dir (paths.cache_dir: platformdirs' location, or $H3DOCTOR_CACHE_DIR), one per key, newest 16 kept.
"""

from __future__ import annotations

import hashlib
import json
import math
import os
import sys
import time
from pathlib import Path
from typing import Any

from h3doctor import __version__
from h3doctor.host.probe_child import PROTOCOL
from h3doctor.paths import cache_dir, installed_versions, read_cache_entry, trusted_cache_dir, write_cache_entry
from h3doctor.safeload import excerpt

CACHE_FORMAT = 1
DEFAULT_MAX_AGE_S = 600.0
KEEP_FILES = 16
MAX_ENTRY_BYTES = 1 << 20
# what sglang's platform detection (and torch's device enumeration) reads: the only variables a
# launch's own environment may set for the probe child (host/probe.py), each traced there
PLATFORM_ENV = (
    "SGLANG_DIFFUSION_PLATFORM_OVERRIDE",
    "CUDA_VISIBLE_DEVICES",
    "CUDA_DEVICE_ORDER",
    "HIP_VISIBLE_DEVICES",
    "ROCR_VISIBLE_DEVICES",
    "ZE_AFFINITY_MASK",
    "ASCEND_RT_VISIBLE_DEVICES",
    "MUSA_VISIBLE_DEVICES",
    "PYTORCH_NVML_BASED_CUDA_CHECK",
)
# the key: those, plus what changes which GPUs and libraries the child's own environment finds
KEY_ENV = (*PLATFORM_ENV, "NVIDIA_VISIBLE_DEVICES", "PYTHONPATH", "LD_LIBRARY_PATH")
KEY_DISTRIBUTIONS = ("torch", "nvidia-ml-py", "amdsmi")


def max_age(env: dict[str, str]) -> float:
    try:
        value = float(env.get("H3DOCTOR_PROBE_CACHE_TTL") or DEFAULT_MAX_AGE_S)
    except ValueError:
        return DEFAULT_MAX_AGE_S
    return value if math.isfinite(value) and value >= 0 else DEFAULT_MAX_AGE_S


def _read_first_line(path: str) -> str | None:
    from h3doctor.errors import UsageError
    from h3doctor.safeload import read_bounded_bytes

    try:
        text = read_bounded_bytes(path, max_bytes=4096, what="kernel file").decode("utf-8", "replace")
    except UsageError:
        return None
    return text.partition("\n")[0].strip() or None


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


def key_parts(env: dict[str, str]) -> dict[str, Any]:
    return {
        "format": [CACHE_FORMAT, PROTOCOL, __version__],
        "python": sys.executable,
        "distributions": installed_versions(KEY_DISTRIBUTIONS),
        "driver": driver_version(),
        "boot_id": _read_first_line("/proc/sys/kernel/random/boot_id"),
        "env": {name: env.get(name) for name in KEY_ENV},
    }


def _digest(parts: dict[str, Any]) -> str:
    return hashlib.sha256(json.dumps(parts, sort_keys=True).encode()).hexdigest()[:20]


def entry_name(parts: dict[str, Any]) -> str:
    return f"probe-{_digest(parts)}.json"


def path_for(env: dict[str, str], parts: dict[str, Any]) -> Path:
    """Where the entry for this key lives (whether the directory is trusted is asked on use)."""
    return Path(cache_dir(env)) / entry_name(parts)


def load(env: dict[str, str], parts: dict[str, Any], now: float | None = None) -> tuple[dict[str, Any] | None, str]:
    """(entry, why): the entry for this key if it is there, readable, well-typed and fresh.

    Only a directory `paths.trusted_cache_dir` accepts is read, and even there the file is not
    trusted: anything off (a link, a FIFO, not JSON, another key, a field of the wrong type) is a
    miss, and the probe runs again."""
    from h3doctor.errors import UsageError
    from h3doctor.safeload import load_json

    folder = trusted_cache_dir(env)
    folder = Path(folder) if folder is not None else None
    if folder is None:
        return None, "no cache directory h3doctor can trust"
    path = folder / entry_name(parts)
    try:
        if not os.path.lexists(path):
            return None, "no cached probe for this key"
        text = read_cache_entry(folder, path.name, max_bytes=MAX_ENTRY_BYTES, what="probe cache")
        entry = load_json(text, origin=str(path))
    except (OSError, UsageError) as exc:
        return None, f"unreadable cache file ({excerpt(getattr(exc, 'message', type(exc).__name__), 80)})"
    if not isinstance(entry, dict) or entry.get("key") != parts:
        return None, "cache file does not match this key"
    problem = entry_problem(entry)
    if problem:
        return None, f"cache file is damaged ({problem}); probing again"
    age = (time.time() if now is None else now) - float(entry["created"])
    limit = max_age(env)
    if age < 0 or age > limit:
        return None, f"cached probe is {age:.0f} s old (limit {limit:.0f} s)"
    entry["age_s"] = age
    entry["path"] = str(path)
    return entry, "cached"


# What the child records (probe_child.py), field by field: a cached entry must match it.
_N = type(None)
_DEVICE = {"index": (int,), "name": (str, _N), "uuid": (str, _N), "cc": (str, _N), "total": (int,), "free": (int,),
           "integrated": (bool,), "arch": (str,), "error": (str,), "memory_error": (str,)}
_STEPS: dict[str, dict[str, Any]] = {
    "nvidia_procfs": {"gpus": [{"bus_id": (str,), "model": (str, _N)}], "jetson": (bool,)},
    "torch": {"ok": (bool,), "version": (str,), "cuda": (str, _N), "hip": (str, _N), "error": (str,)},
    "mps": {"available": (bool,), "recommended_max_memory": (int,), "recommended_max_memory_error": (str,),
            "chip": (str, _N), "error": (str,)},
    "xpu": {"available": (bool,), "count": (int,), "name": (str, _N), "total_memory": (int, _N), "error": (str,)},
    "npu": {"available": (bool,), "count": (int, _N), "name": (str, _N), "error": (str,)},
    "amdsmi": {"available": (bool,), "count": (int,), "why": (str,), "missing": (bool,)},
    "musa": {"available": (bool,), "count": (int,), "why": (str,), "missing": (bool,)},
    "nvml": {"ok": (bool,), "missing": (bool,), "error": (str,), "error_class": (str,), "driver": (str, _N),
             "cuda_driver": (int, _N), "count": (int,), "devices": [_DEVICE]},
    "torch_cuda": {"available": (bool,), "count": (int,), "error": (str,)},
}
_TOP = {"plugins": [(str,)], "cuda_devices": [_DEVICE], "cuda_devices_incomplete": (bool,)}


def entry_problem(entry: dict[str, Any]) -> str | None:
    """What is wrong with a cache entry's fields, or None."""
    created = entry.get("created")
    if not _is_number(created):
        return "'created' is not a number"
    run = entry.get("run")
    if not isinstance(run, dict) or not isinstance(run.get("outcome"), str) or not _is_number(run.get("elapsed_s", 0)):
        return "'run' is not a probe run"
    obs = entry.get("observations")
    if not isinstance(obs, dict):
        return "'observations' is not a mapping"
    for step, value in obs.items():
        spec = _STEPS.get(step) if step in _STEPS else _TOP.get(step)
        if spec is None:
            return f"unknown step {excerpt(step, 40)!r}"
        problem = _shape_problem(value, spec, step)
        if problem:
            return problem
    return None


def _is_number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)


def _shape_problem(value: Any, spec: Any, where: str) -> str | None:
    if isinstance(spec, tuple):  # scalar types; bool is not an int here
        ok = any(isinstance(value, t) and not (t is int and isinstance(value, bool)) for t in spec)
        return None if ok else f"{where} is {type(value).__name__}"
    if isinstance(spec, list):
        if not isinstance(value, list):
            return f"{where} is not a list"
        for i, item in enumerate(value):
            problem = _shape_problem(item, spec[0], f"{where}[{i}]")
            if problem:
                return problem
        return None
    if not isinstance(value, dict):
        return f"{where} is not a mapping"
    for key, item in value.items():
        if key not in spec:
            return f"{where}.{excerpt(key, 40)} is not a field the probe records"
        problem = _shape_problem(item, spec[key], f"{where}.{key}")
        if problem:
            return problem
    return None


def store(env: dict[str, str], parts: dict[str, Any], observations: dict[str, Any], run: dict[str, Any]) -> str | None:
    """Write atomically; a cache that cannot be written is not an error."""
    entry = {"key": parts, "created": time.time(), "observations": observations, "run": run}
    folder = trusted_cache_dir(env)
    folder = Path(folder) if folder is not None else None
    if folder is None:
        return None
    try:
        write_cache_entry(folder, entry_name(parts), json.dumps(entry))
        _prune(folder)
        return str(folder / entry_name(parts))
    except (OSError, ValueError):  # ValueError: a NUL byte in the cache path
        return None


def _prune(folder: Path) -> None:
    try:
        files = sorted(folder.glob("probe-*.json"), key=lambda p: p.lstat().st_mtime, reverse=True)
        for old in files[KEEP_FILES:]:
            old.unlink(missing_ok=True)
    except OSError:
        pass
