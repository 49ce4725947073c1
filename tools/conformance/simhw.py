"""Simulated hardware for running sglang's real argument code on a machine without a GPU.

Runs inside the throwaway sglang venv (see README.md). `install(profile)` must be called
*before* anything imports `sglang.multimodal_gen.runtime.platforms`: sglang modules bind
`current_platform` at import time, so the simulation has to be in place when the platform is
first resolved. One process therefore simulates one hardware profile.

What is simulated, and at which level (everything else is sglang's own code):

* CUDA profiles: the NVML functions of sglang's vendored `third_party.pynvml` (device count,
  handles, compute capability, name, memory, UUID, P2P) and the `torch.cuda` functions that
  sglang's platform layer calls (`is_available`, `device_count`, `current_device`,
  `get_device_capability`, `get_device_name`, `get_device_properties`, `mem_get_info`,
  `empty_cache`, `synchronize`, `set_device`). `torch.version.cuda` is set to None: that keeps
  `sglang.srt.utils.is_cuda()` (torch.cuda.is_available() and torch.version.cuda) false, so
  the LLM-runtime modules that the diffusion code imports take their non-CUDA import branch
  instead of importing `sgl_kernel` (a CUDA-only package that cannot be installed here). The
  diffusion platform layer does not read it. sglang then runs
  its *real* platform detection (`_select_current_platform`: mps -> xpu -> rocm -> cuda ...),
  picks `NvmlCudaPlatform` (as on a real NVIDIA host) and every `current_platform.*` call
  (is_cuda, get_device_capability, get_device_name, get_device_total_memory,
  get_available_gpu_memory, device_shares_host_memory, is_blackwell, is_hopper, is_sm120,
  has_device_capability, ...) runs sglang's own code over these facts.
* MPS profiles: `torch.backends.mps.is_available() -> True` (so detection picks
  `MpsPlatform`), `torch.mps.empty_cache/synchronize` are no-ops, and `psutil.virtual_memory`
  reports the profile's unified memory (MpsPlatform reads total/available memory from it).
* CPU profile: nothing but `psutil.virtual_memory` (CPU detection is the natural fallback).
* Every profile: `psutil.virtual_memory` reports the profile's host memory, so host-memory
  heuristics do not depend on the recording machine.

Invalid device ids behave like torch: `get_device_properties(i)` for i >= device count raises
`AssertionError("Invalid device id")` (catalog B9).
"""

from __future__ import annotations

import importlib.abc
import importlib.machinery
import sys
import types
from collections import namedtuple
from typing import Any

GIB = 1 << 30

# psutil.virtual_memory() result shape (the fields sglang reads)
_VMem = namedtuple("svmem", "total available percent used free")


def _vmem(total_gib: float, available_gib: float) -> _VMem:
    total = int(total_gib * GIB)
    avail = int(available_gib * GIB)
    used = total - avail
    return _VMem(total, avail, round(100.0 * used / total, 1) if total else 0.0, used, avail)


class SimulationError(RuntimeError):
    """The simulation itself is broken (not an sglang verdict)."""


def _cc(profile: dict[str, Any]) -> tuple[int, int]:
    cc = profile.get("compute_capability")
    if not cc:
        raise SimulationError(f"CUDA profile {profile.get('name')!r} has no compute_capability")
    major, _, minor = str(cc).partition(".")
    return int(major), int(minor or 0)


def _replace(owner: Any, name: str, fn) -> None:
    """Replace owner.name by fn, keeping `__wrapped__` (torch._dynamo reads it from some of
    these functions when it is imported)."""
    orig = getattr(owner, name)
    fn.__wrapped__ = getattr(orig, "__wrapped__", orig)
    fn.__name__ = getattr(orig, "__name__", name)
    setattr(owner, name, fn)


def install(profile: dict[str, Any]) -> dict[str, Any]:
    """Patch torch / NVML / psutil for `profile` (a built-in h3doctor profile mapping).

    Returns a description of what was patched (written into the goldens' header)."""
    if "sglang.multimodal_gen.runtime.platforms" in sys.modules or PYNVML in sys.modules:
        raise SimulationError("install() must run before sglang's platform module is imported")

    import psutil
    import torch

    platform = profile["platform"]
    count = int(profile.get("gpu_count", 0 if platform == "cpu" else 1))
    total_gib = profile.get("gpu_memory_gib")
    free_gib = profile.get("gpu_free_gib", total_gib)
    host_gib = profile.get("host_memory_gib") or 64
    patched: list[str] = []

    if platform == "mps":
        mem_total = total_gib or host_gib
        mem_free = free_gib if free_gib is not None else mem_total
        psutil.virtual_memory = lambda: _vmem(mem_total, mem_free)
    else:
        psutil.virtual_memory = lambda: _vmem(host_gib, host_gib)
    patched.append("psutil.virtual_memory")

    if platform == "mps":
        _replace(torch.backends.mps, "is_available", lambda: True)
        _replace(torch.mps, "empty_cache", lambda: None)
        _replace(torch.mps, "synchronize", lambda: None)
        patched += ["torch.backends.mps.is_available", "torch.mps.empty_cache", "torch.mps.synchronize"]
    elif platform == "cuda":
        _install_cuda(profile, count, total_gib, free_gib, torch)
        patched += ["torch.cuda.{is_available,device_count,current_device,get_device_capability,"
                    "get_device_name,get_device_properties,mem_get_info,empty_cache,synchronize,set_device}",
                    "torch.version.cuda=None",
                    "sglang.multimodal_gen.third_party.pynvml.{nvmlInit,nvmlShutdown,nvmlDeviceGetCount,"
                    "nvmlDeviceGetHandleByIndex,nvmlDeviceGetCudaComputeCapability,nvmlDeviceGetName,"
                    "nvmlDeviceGetMemoryInfo,nvmlDeviceGetUUID,nvmlDeviceGetP2PStatus}"]
    elif platform != "cpu":
        raise SimulationError(f"platform {platform!r} is not simulated (built-in profiles use cuda/mps/cpu)")
    return {"platform": platform, "patched": patched}


def _install_cuda(profile, count, total_gib, free_gib, torch) -> None:
    if count < 1:
        raise SimulationError("a CUDA profile needs gpu_count >= 1")
    if total_gib is None:
        raise SimulationError("a CUDA profile needs gpu_memory_gib")
    major, minor = _cc(profile)
    name = profile.get("device_name") or "NVIDIA GPU"
    total = int(total_gib * GIB)
    free = int((free_gib if free_gib is not None else total_gib) * GIB)
    integrated = bool(profile.get("shares_host_memory", False))

    def index(device=None) -> int:
        if device is None:
            return 0
        if isinstance(device, torch.device):
            return 0 if device.index is None else device.index
        if isinstance(device, str):
            return torch.device(device).index or 0
        return int(device)

    def check(device=None) -> int:
        i = index(device)
        if i < 0 or i >= count:
            raise AssertionError("Invalid device id")
        return i

    props = types.SimpleNamespace(
        name=name, major=major, minor=minor, total_memory=total, is_integrated=integrated,
        multi_processor_count=132, L2_cache_size=50 << 20, uuid="GPU-sim",
    )

    cuda = torch.cuda
    _replace(cuda, "is_available", lambda: True)
    _replace(cuda, "device_count", lambda: count)
    _replace(cuda, "current_device", lambda: 0)
    _replace(cuda, "get_device_capability", lambda device=None: (check(device), (major, minor))[1])
    _replace(cuda, "get_device_name", lambda device=None: (check(device), name)[1])
    _replace(cuda, "get_device_properties", lambda device=None: (check(device), props)[1])
    _replace(cuda, "mem_get_info", lambda device=None: (check(device), (free, total))[1])
    _replace(cuda, "empty_cache", lambda: None)
    _replace(cuda, "synchronize", lambda device=None: None)
    _replace(cuda, "set_device", lambda device: None)
    torch.version.cuda = None  # see the module docstring: hides CUDA from sglang.srt only

    # sglang's vendored NVML bindings are patched when they are first imported (by a
    # sys.meta_path hook), not imported here: in 0.5.17-0.5.20 `sglang.multimodal_gen`'s
    # __init__ imports the whole diffusion runtime (DiffGenerator -> launch_server -> ...),
    # so importing `third_party.pynvml` from here would resolve the platform before NVML is
    # simulated. Patching at import time works whatever imports it first, in every release.
    Mem = namedtuple("c_nvmlMemory_t", "total free used")

    def patch(pynvml) -> None:
        def handle(i):
            i = int(i)
            if i < 0 or i >= count:
                raise pynvml.NVMLError(pynvml.NVML_ERROR_INVALID_ARGUMENT)
            return ("sim-gpu", i)

        pynvml.nvmlInit = lambda *a, **k: None
        pynvml.nvmlShutdown = lambda *a, **k: None
        pynvml.nvmlDeviceGetCount = lambda: count
        pynvml.nvmlDeviceGetHandleByIndex = handle
        pynvml.nvmlDeviceGetCudaComputeCapability = lambda h: (major, minor)
        pynvml.nvmlDeviceGetName = lambda h: name
        pynvml.nvmlDeviceGetMemoryInfo = lambda h, version=None: Mem(total, free, total - free)
        pynvml.nvmlDeviceGetUUID = lambda h: f"GPU-sim-{h[1]}"
        pynvml.nvmlDeviceGetP2PStatus = lambda a, b, i: pynvml.NVML_P2P_STATUS_OK

    sys.meta_path.insert(0, _PatchOnImport(PYNVML, patch))


PYNVML = "sglang.multimodal_gen.third_party.pynvml"
PATCHED_ON_IMPORT: set[str] = set()


class _PatchOnImport(importlib.abc.MetaPathFinder):
    """Finds module `name` with the normal path finder and runs `patch(module)` right after
    the module's own code has run, before anything else can use it."""

    def __init__(self, name: str, patch) -> None:
        self.name, self.patch = name, patch

    def find_spec(self, fullname, path, target=None):
        if fullname != self.name:
            return None
        spec = importlib.machinery.PathFinder.find_spec(fullname, path, target)
        if spec is None or spec.loader is None:
            return spec
        loader, patch = spec.loader, self.patch
        orig_exec = loader.exec_module

        def exec_module(module):
            orig_exec(module)
            patch(module)
            PATCHED_ON_IMPORT.add(fullname)

        loader.exec_module = exec_module
        return spec


def check_platform(profile: dict[str, Any]) -> dict[str, Any]:
    """Resolve sglang's current_platform and confirm it matches the profile; returns facts."""
    from sglang.multimodal_gen.runtime.platforms import current_platform as p

    facts = {
        "class": type(p).__name__,
        "is_cuda": p.is_cuda(), "is_mps": p.is_mps(), "is_cpu": p.is_cpu(), "is_rocm": p.is_rocm(),
    }
    try:
        cap = p.get_device_capability()
    except NotImplementedError:  # MpsPlatform up to 0.5.18
        cap = None
    facts["capability"] = cap.as_version_str() if cap is not None else None
    try:
        facts["total_memory_gib"] = round(p.get_device_total_memory() / GIB, 1)
    except Exception as exc:  # noqa: BLE001
        facts["total_memory_gib"] = f"<{type(exc).__name__}>"
    # device_shares_host_memory is new in 0.5.20 (older releases have no integrated-GPU rule)
    shares = getattr(p, "device_shares_host_memory", None)
    facts["shares_host_memory"] = shares() if shares is not None else None
    want = profile["platform"]
    if want == "cuda" and PYNVML not in PATCHED_ON_IMPORT:
        raise SimulationError(f"{PYNVML} was not imported through the simulation hook")
    ok = {"cuda": facts["is_cuda"], "mps": facts["is_mps"], "cpu": facts["is_cpu"]}.get(want, False)
    if not ok:
        raise SimulationError(f"sglang resolved {facts['class']} for a {want} profile")
    if want == "cuda" and facts["capability"] != profile["compute_capability"]:
        raise SimulationError(f"sglang sees capability {facts['capability']}, profile says "
                              f"{profile['compute_capability']}")
    return facts
