"""The GPU catalog (`gpus.json`, data) and profiles named `<N>x<GPU>[-<MEM>GB]` for any count.

`4xH100`, `2xRTX5090`, `8xMI300X`, `1xM4-Max-64GB`: the GPU part matches a catalog key or alias
ignoring case, spaces, dashes and underscores. JSON, not YAML: resolving a target is on the
check's hot path.
"""

from __future__ import annotations

import functools
import json
import re
from dataclasses import dataclass
from typing import Any

from h3doctor.paths import package_dir

_NAME = re.compile(r"^\s*([0-9]+)\s*[xX×]\s*(.+?)\s*$")  # ASCII digits: `٤xH200` is no profile
_MEMORY_SUFFIX = re.compile(r"^(.*?)[-_ ]?([0-9]+(?:\.[0-9]+)?)\s*GB$", re.IGNORECASE)
MAX_COUNT = 64


@dataclass(frozen=True)
class Gpu:
    """One GPU model of the catalog (gpus.json): what a `<N>x<GPU>` profile name builds on."""
    key: str
    aliases: tuple[str, ...]
    device_name: str
    platform: str
    compute_capability: str | None
    memory_gib: float
    host_memory_gib: float | None
    max_count: int
    description: str
    free_fraction: float | None = None
    memory_configurable: bool = False


def _norm(name: str) -> str:
    return re.sub(r"[\s_\-]", "", name).lower()


@functools.lru_cache(maxsize=1)
def catalog() -> tuple[Gpu, ...]:
    raw = json.loads(package_dir("h3doctor.host").joinpath("gpus.json").read_text(encoding="utf-8"))
    return tuple(Gpu(
        key=g["key"], aliases=tuple(g.get("aliases", ())), device_name=g["device_name"], platform=g["platform"],
        compute_capability=g.get("compute_capability"), memory_gib=float(g["memory_gib"]),
        host_memory_gib=g.get("host_memory_gib"), max_count=int(g.get("max_count", 8)),
        description=g.get("description", ""), free_fraction=g.get("free_fraction"),
        memory_configurable=bool(g.get("memory_configurable", False)),
    ) for g in raw["gpus"])


@functools.lru_cache(maxsize=1)
def _index() -> dict[str, Gpu]:
    out: dict[str, Gpu] = {}
    for gpu in catalog():
        for name in (gpu.key, *gpu.aliases):
            out[_norm(name)] = gpu
    return out


def find_gpu(name: str) -> tuple[Gpu, float | None] | None:
    """The catalog GPU a name means, and a memory override (`M4-Max-64GB`) when it gives one."""
    gpu = _index().get(_norm(name))
    if gpu is not None:
        return gpu, None
    m = _MEMORY_SUFFIX.match(name.strip())
    if m:
        gpu = _index().get(_norm(m.group(1)))
        if gpu is not None and gpu.memory_configurable:
            return gpu, float(m.group(2))
    return None


def parse_profile_name(name: str) -> tuple[int, str] | None:
    m = _NAME.match(name)
    return (int(m.group(1)), m.group(2)) if m else None


class ProfileNameError(ValueError):
    """A `<N>x<GPU>` name the catalog cannot make into a profile (the message says why)."""


def catalog_profile(name: str, count: int | None = None) -> dict[str, Any] | None:
    """The profile mapping for `<N>x<GPU>` (or a bare `<GPU>` with `count`), or None if the name
    has neither form. Raises ProfileNameError for a known form with an unknown GPU or a bad count."""
    parsed = parse_profile_name(name)
    if parsed is not None:
        count, gpu_name = parsed
    elif count is not None:
        gpu_name = name
    else:
        return None
    found = find_gpu(gpu_name)
    if found is None:
        from h3doctor.spelling import nearest

        keys = [g.key for g in catalog()]
        close = nearest(gpu_name, keys)
        mean = f"; did you mean {close!r}?" if close else ""
        raise ProfileNameError(f"no GPU {gpu_name!r} in the catalog{mean}; known: {', '.join(keys)}")
    gpu, memory = found
    if count < 1 or count > min(gpu.max_count, MAX_COUNT):
        raise ProfileNameError(f"{gpu.key}: a host has 1 to {gpu.max_count} of them, not {count}")
    return profile_mapping(gpu, count, memory)


def profile_mapping(gpu: Gpu, count: int, memory: float | None = None) -> dict[str, Any]:
    memory = memory if memory is not None else gpu.memory_gib
    many = {1: "one", 2: "two", 4: "four", 8: "eight"}.get(count, str(count))
    data: dict[str, Any] = {
        "description": f"{many} {gpu.description}" if gpu.platform != "mps" else gpu.description.replace(
            f"{gpu.memory_gib:g} GB", f"{memory:g} GB"),
        "platform": gpu.platform,
        "device_name": gpu.device_name,
        "gpu_count": count,
        "gpu_memory_gib": memory,
        "ffmpeg": True,
    }
    if gpu.compute_capability:
        data["compute_capability"] = gpu.compute_capability
    if gpu.platform == "cuda":
        data["fa_kernel"] = True
        data.update(official_image(gpu.compute_capability))
    if gpu.platform == "mps":
        data["gpu_free_gib"] = round(memory * (gpu.free_fraction or 0.75), 1)
        data["host_memory_gib"] = memory
    elif gpu.host_memory_gib is not None:
        data["host_memory_gib"] = gpu.host_memory_gib
    data.update(ASSUMED_HOST)
    if data.get("host_memory_gib") is not None:
        data["shm_gib"] = round(data["host_memory_gib"] / 2, 1)
    return data


# What a catalog profile assumes of the host around its GPUs, as the built-in profiles do: a
# server (not a default Docker container) whose /dev/shm is tmpfs's default, half the RAM (so
# unknown where the RAM is), room on disk for the whole repository (~498 GB) on the disk that also
# holds sglang's host spill, a Hub token, and an ffmpeg with libx264 and aac. `h3doctor profiles`
# and the report's "assumed:" line say so.
def official_image(cc: str | None) -> dict[str, Any]:
    """What a CUDA profile assumes of its software (issue 29, kernels and driver): the release's
    official image (lmsysorg/sglang, CUDA 13 since v0.5.19-cu129, the last CUDA 12 tag; sglang
    0.5.23 pins torch 2.14.1 and sglang-kernel 0.4.10, built together), its sgl-kernel carrying
    the GPU's own sm_* code, and a driver that runs that image (NVIDIA's container toolkit refuses
    the image on an older one). The built-in profiles state the same in their files."""
    major, _, minor = (cc or "").partition(".")
    targets = {"sgl_kernel_sm": [f"sm_{major}{minor}"]} if cc else {}
    return {"driver_cuda": "13.0", "torch_cuda": "13.0", "torch_version": "2.14.1", "sgl_kernel_torch": "2.14", **targets}


ASSUMED_HOST = {"disk_free_gib": 1000, "spill_free_gib": 1000, "hf_token": True, "ffmpeg_encoders": True}
