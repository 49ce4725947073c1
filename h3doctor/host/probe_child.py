"""The probe's child process: the only place h3doctor imports torch (and NVML, amdsmi).

Run as `python -P .../probe_child.py` (by path, from an empty directory: `probe.run_child`). It
walks sglang 0.5.23's platform detection
(multimodal_gen/runtime/platforms/__init__.py: SGLANG_DIFFUSION_PLATFORM_OVERRIDE, then the
built-in probes in the order mps, xpu, rocm, cuda, npu, musa, cpu) and then reads the device
facts of the platform it found. It writes JSON lines on stdout, flushed one at a time:

    {"begin": "<step>"}              before anything that may hang (CUDA init, NVML, ...)
    {"step": "<name>", "data": {..}} an observation
    {"done": true}                   the end

so that the parent, which kills this process at its timeout, still has every observation made
before the hang and knows which step hung. Observations are raw; `h3doctor.host.probe` turns them
into facts. `next_step` and `detect_platform` are pure and shared by both processes.

Only the standard library is imported at module level: the parent imports this module too.
"""

from __future__ import annotations

import json
import os
import sys
from typing import Any, Callable

DETECTION_ORDER = ("mps", "xpu", "rocm", "cuda", "npu", "musa", "cpu")
BUILTIN_PLATFORMS = frozenset(DETECTION_ORDER)
PROTOCOL = 1
GIB = float(1 << 30)


# -- pure logic, shared with the parent -------------------------------------------------------

def override_of(env: dict[str, str]) -> str:
    """SGLANG_DIFFUSION_PLATFORM_OVERRIDE as sglang reads it: stripped; built-in names are case-insensitive."""
    return (env.get("SGLANG_DIFFUSION_PLATFORM_OVERRIDE") or "").strip()


def _torch_ok(obs: dict[str, Any]) -> bool:
    return bool(obs.get("torch", {}).get("ok"))


def detector(name: str, obs: dict[str, Any]) -> tuple[bool | None, str, str | None]:
    """One of sglang's built-in platform probes over the observations.

    Returns (verdict, why, missing step): verdict None means the step that decides it has not
    been observed (yet, or ever: it hung or the child died).
    """
    if name == "cpu":
        return True, "CPU is sglang's fallback platform", None
    if name in ("mps", "xpu", "npu") and "torch" not in obs:
        return None, "", "torch"
    if name in ("mps", "xpu", "npu") and not _torch_ok(obs):
        return False, f"torch does not import ({obs['torch'].get('error')}), so sglang's {name.upper()} probe fails", None
    if name in ("mps", "xpu", "npu", "rocm", "musa"):
        step = {"rocm": "amdsmi", "musa": "musa"}.get(name, name)
        if step not in obs:
            return None, "", step
        o = obs[step]
        if o.get("error"):
            return False, f"{_DETECTOR_TEXT[name]}: {o['error']}", None
        detail = o.get("why") or ("available" if o.get("available") else "not available")
        return bool(o.get("available")), f"{_DETECTOR_TEXT[name]}: {detail}", None
    # cuda (platforms/__init__.py cuda_platform_plugin)
    if "nvml" not in obs:
        return None, "", "nvml"
    nvml = obs["nvml"]
    if nvml.get("ok"):
        count = nvml.get("count", 0)
        return count > 0, f"NVML reports {count} NVIDIA GPU(s) (sglang's CUDA probe)", None
    if nvml.get("error_class") and "nvml" not in nvml["error_class"].lower():
        return None, (f"sglang's CUDA probe would raise {nvml['error_class']}: {nvml.get('error')} "
                      "(not an NVML error, so sglang re-raises it and does not start)"), None
    procfs = obs.get("nvidia_procfs", {})
    if procfs.get("jetson"):
        return True, "NVML is unavailable but this is a Jetson (sglang assumes CUDA)", None
    if nvml.get("missing") and procfs.get("gpus"):
        n = len(procfs["gpus"])
        return True, (f"the NVIDIA driver lists {n} GPU(s) in /proc/driver/nvidia/gpus, so sglang's NVML probe "
                      "would find them (NVML bindings, nvidia-ml-py, are not installed here)"), None
    if "torch" not in obs:
        return None, "", "torch"
    if not _torch_ok(obs):
        return False, "NVML finds no GPU and torch does not import", None
    if "torch_cuda" not in obs:
        return None, "", "torch_cuda"
    tc = obs["torch_cuda"]
    if tc.get("error"):
        return False, f"NVML unavailable and torch.cuda failed: {tc['error']}", None
    hip = obs["torch"].get("hip")
    found = hip is None and tc.get("available") and tc.get("count", 0) > 0
    nvml_note = "nvidia-ml-py is not installed here" if nvml.get("missing") else f"NVML unavailable ({nvml.get('error')})"
    if hip is not None:
        return False, f"{nvml_note}; torch is a ROCm (HIP {hip}) build, which sglang's CUDA probe ignores", None
    return bool(found), (f"{nvml_note}; torch.cuda reports {tc.get('count', 0)} device(s)"
                         f"{'' if tc.get('available') else ' (CUDA not available)'}"), None


_DETECTOR_TEXT = {
    "mps": "torch.backends.mps.is_available()",
    "xpu": "torch.xpu.is_available() and a device",
    "npu": "torch.npu.is_available()",
    "rocm": "amdsmi processor handles (sglang's ROCm probe)",
    "musa": "pymtml device count (sglang's MUSA probe)",
}


def detect_platform(obs: dict[str, Any], env: dict[str, str]) -> tuple[str | None, str, str | None]:
    """(platform, why, step still needed). platform None with a step: observe that step first;
    platform None without one: sglang's choice cannot be known (the why says why)."""
    selected = override_of(env)
    if selected:
        if selected.lower() in BUILTIN_PLATFORMS:
            return selected.lower(), f"SGLANG_DIFFUSION_PLATFORM_OVERRIDE={selected}", None
        plugins = obs.get("plugins", [])
        if selected in plugins:
            return None, (f"SGLANG_DIFFUSION_PLATFORM_OVERRIDE={selected} selects the out-of-tree platform plugin "
                          f"{selected!r}; h3doctor models only sglang's built-in platforms"), None
        available = ", ".join(repr(p) for p in plugins) or "none"
        return None, (f"sglang would refuse to start: Unsupported SGLANG_DIFFUSION_PLATFORM_OVERRIDE={selected!r}; "
                      f"entry point not found in group 'sglang.multimodal_gen.platforms' (available: {available})"), None
    declined = []
    for name in DETECTION_ORDER:
        verdict, why, missing = detector(name, obs)
        if verdict is None:
            return None, why, missing
        if verdict:
            if declined:
                why += " (before it, sglang found no " + ", ".join(declined) + ")"
            return name, why, None
        declined.append(name.upper() if name != "rocm" else "ROCm")
    raise AssertionError("cpu always matches")


def device_steps(platform: str | None) -> tuple[str, ...]:
    """What to read once the platform is known."""
    return {
        "cuda": ("nvml", "torch", "torch_cuda", "cuda_devices"),
        "rocm": ("torch", "torch_cuda", "cuda_devices"),
        "mps": ("torch", "mps"),
        "xpu": ("torch", "xpu"),
        "npu": ("torch", "npu"),
        "musa": ("musa",),
        "cpu": ("torch",),
    }.get(platform or "", ())


def next_step(obs: dict[str, Any], env: dict[str, str]) -> str | None:
    platform, _why, missing = detect_platform(obs, env)
    if missing:
        return missing
    for step in device_steps(platform):
        if step not in obs:
            return step
    return None


def parse_visible(value: str | None) -> list[str] | None:
    """CUDA_VISIBLE_DEVICES entries (None: unset, all devices visible)."""
    if value is None:
        return None
    return [e.strip() for e in value.split(",")] if value.strip() else []


# -- the collectors (child side) ---------------------------------------------------------------

_OUT = sys.stdout


def _emit(obj: dict[str, Any]) -> None:
    _OUT.write(json.dumps(obj, default=str) + "\n")
    _OUT.flush()


def _err(exc: BaseException) -> str:
    return f"{type(exc).__name__}: {exc}"[:500]


class Collector:
    def __init__(self, env: dict[str, str]):
        self.env = env
        self.obs: dict[str, Any] = {}
        self.torch: Any = None

    def begin(self, what: str) -> None:
        _emit({"begin": what})

    def record(self, step: str, data: Any) -> None:
        self.obs[step] = data
        _emit({"step": step, "data": data})

    def run(self) -> None:
        self.plugins()
        self.nvidia_procfs()
        steps: dict[str, Callable[[], None]] = {
            "torch": self.import_torch, "mps": self.mps, "xpu": self.xpu, "npu": self.npu,
            "amdsmi": self.amdsmi, "musa": self.musa, "nvml": self.nvml,
            "torch_cuda": self.torch_cuda, "cuda_devices": self.cuda_devices,
        }
        while (step := next_step(self.obs, self.env)) is not None:
            steps[step]()
        _emit({"done": True})

    # each collector records exactly its own step, whatever happens
    def plugins(self) -> None:
        try:
            from importlib.metadata import entry_points

            names = sorted({e.name for e in entry_points(group="sglang.multimodal_gen.platforms")})
        except Exception:  # pragma: no cover - broken metadata
            names = []
        self.record("plugins", names)

    def nvidia_procfs(self) -> None:
        data: dict[str, Any] = {"gpus": [], "jetson": os.path.isfile("/etc/nv_tegra_release")
                                or os.path.exists("/sys/class/tegra-firmware")}
        root = "/proc/driver/nvidia/gpus"
        try:
            for bus in sorted(os.listdir(root)):
                model = None
                try:
                    with open(os.path.join(root, bus, "information"), encoding="utf-8", errors="replace") as fh:
                        for line in fh:
                            if line.startswith("Model:"):
                                model = line.split(":", 1)[1].strip()
                except OSError:
                    pass
                data["gpus"].append({"bus_id": bus, "model": model})
        except OSError:
            pass
        self.record("nvidia_procfs", data)

    def import_torch(self) -> None:
        self.begin("import torch")
        try:
            import torch

            self.torch = torch
            version = getattr(torch, "version", None)
            self.record("torch", {"ok": True, "version": str(getattr(torch, "__version__", "?")),
                                  "cuda": getattr(version, "cuda", None), "hip": getattr(version, "hip", None)})
        except BaseException as exc:  # an ImportError, or a crash inside torch's __init__
            self.record("torch", {"ok": False, "error": _err(exc)})

    def mps(self) -> None:
        torch = self.torch
        self.begin("torch.backends.mps.is_available()")
        data: dict[str, Any] = {}
        try:
            data["available"] = bool(torch.backends.mps.is_available())
        except Exception as exc:
            self.record("mps", {"error": _err(exc)})
            return
        if data["available"]:
            self.begin("torch.mps.recommended_max_memory()")
            try:
                data["recommended_max_memory"] = int(torch.mps.recommended_max_memory())
            except Exception as exc:
                data["recommended_max_memory_error"] = _err(exc)
            data["chip"] = _sysctl("machdep.cpu.brand_string")
        self.record("mps", data)

    def xpu(self) -> None:
        torch = self.torch
        self.begin("torch.xpu.is_available()")
        try:
            available = hasattr(torch, "xpu") and bool(torch.xpu.is_available())
            count = int(torch.xpu.device_count()) if available else 0
            data: dict[str, Any] = {"available": available and count > 0, "count": count}
            if count:
                data["name"] = _try(lambda: str(torch.xpu.get_device_name(0)))
                data["total_memory"] = _try(lambda: int(torch.xpu.get_device_properties(0).total_memory))
            self.record("xpu", data)
        except Exception as exc:
            self.record("xpu", {"error": _err(exc)})

    def npu(self) -> None:
        torch = self.torch
        self.begin("torch.npu.is_available()")
        try:
            available = bool(torch.npu.is_available())
            data: dict[str, Any] = {"available": available}
            if available:
                data["count"] = _try(lambda: int(torch.npu.device_count()))
                data["name"] = _try(lambda: str(torch.npu.get_device_name(0)))
            self.record("npu", data)
        except Exception as exc:
            self.record("npu", {"error": _err(exc) if not isinstance(exc, AttributeError) else "torch has no npu module (torch_npu not loaded)"})

    def _library_count(self, step: str, module_name: str, init: str, count: str, shutdown: str, unit: str,
                       report_missing: bool = False) -> None:
        """Initialise a vendor management library, count its devices, shut it down (sglang's probes)."""
        self.begin(f"{module_name}.{init}()")
        try:
            module = __import__(module_name)
            getattr(module, init)()
            try:
                found = getattr(module, count)()
                n = len(found) if isinstance(found, (list, tuple)) else int(found)
            finally:
                getattr(module, shutdown)()
            self.record(step, {"available": n > 0, "count": n, "why": f"{n} {unit}(s)"})
        except Exception as exc:
            data = {"available": False, "why": f"unavailable ({_err(exc)})"}
            if report_missing:
                data["missing"] = isinstance(exc, ImportError)
            self.record(step, data)

    def amdsmi(self) -> None:
        self._library_count("amdsmi", "amdsmi", "amdsmi_init", "amdsmi_get_processor_handles", "amdsmi_shut_down",
                            "processor", report_missing=True)

    def musa(self) -> None:
        self._library_count("musa", "pymtml", "mtmlLibraryInit", "mtmlLibraryCountDevice", "mtmlLibraryShutDown",
                            "device")

    def nvml(self) -> None:
        try:
            import pynvml
        except ImportError as exc:
            self.record("nvml", {"ok": False, "missing": True, "error": _err(exc)})
            return
        self.begin("pynvml.nvmlInit()")
        try:
            pynvml.nvmlInit()
        except Exception as exc:
            self.record("nvml", {"ok": False, "error_class": type(exc).__name__, "error": _err(exc)})
            return
        data: dict[str, Any] = {"ok": True, "devices": []}
        try:
            data["driver"] = _text(_try(pynvml.nvmlSystemGetDriverVersion))
            # the CUDA the driver supports (12040 is 12.4): NVML answers it from the driver, no CUDA init
            # (looked up inside _try: an old nvidia-ml-py without it must not cost the device list)
            data["cuda_driver"] = _try(lambda: pynvml.nvmlSystemGetCudaDriverVersion())
            data["count"] = int(pynvml.nvmlDeviceGetCount())
            for i in range(data["count"]):
                self.begin(f"NVML device {i}")
                handle = pynvml.nvmlDeviceGetHandleByIndex(i)
                dev: dict[str, Any] = {"index": i, "name": _text(_try(lambda: pynvml.nvmlDeviceGetName(handle))),
                                       "uuid": _text(_try(lambda: pynvml.nvmlDeviceGetUUID(handle)))}
                cc = _try(lambda: pynvml.nvmlDeviceGetCudaComputeCapability(handle))
                dev["cc"] = f"{cc[0]}.{cc[1]}" if cc else None
                try:
                    mem = pynvml.nvmlDeviceGetMemoryInfo(handle)
                    dev["total"], dev["free"] = int(mem.total), int(mem.free)
                except Exception as exc:
                    dev["memory_error"] = _err(exc)
                data["devices"].append(dev)
        except Exception as exc:
            data["error"] = _err(exc)
        finally:
            _try(pynvml.nvmlShutdown)
        self.record("nvml", data)

    def torch_cuda(self) -> None:
        torch = self.torch
        if torch is None:
            self.record("torch_cuda", {"error": "torch does not import"})
            return
        self.begin("torch.cuda.is_available()")
        try:
            available = bool(torch.cuda.is_available())
            count = 0
            if available:
                self.begin("torch.cuda.device_count()")
                count = int(torch.cuda.device_count())
            self.record("torch_cuda", {"available": available, "count": count})
        except Exception as exc:
            self.record("torch_cuda", {"error": _err(exc)})

    def cuda_devices(self) -> None:
        torch = self.torch
        devices: list[dict[str, Any]] = []
        count = self.obs.get("torch_cuda", {}).get("count", 0) if torch is not None else 0
        # one line per device, so a hang on device 3 keeps devices 0-2
        for i in range(count):
            dev: dict[str, Any] = {"index": i}
            try:
                self.begin(f"torch.cuda.get_device_properties({i})")
                props = torch.cuda.get_device_properties(i)
                dev["name"] = str(torch.cuda.get_device_name(i))
                major, minor = torch.cuda.get_device_capability(i)
                dev["cc"] = f"{major}.{minor}"
                dev["total"] = int(props.total_memory)
                dev["integrated"] = bool(getattr(props, "is_integrated", False))
                arch = getattr(props, "gcnArchName", None)
                if arch:
                    dev["arch"] = str(arch)
                self.begin(f"torch.cuda.mem_get_info({i})")
                free, _total = torch.cuda.mem_get_info(i)
                dev["free"] = int(free)
            except Exception as exc:
                dev["error"] = _err(exc)
            _emit({"step": "cuda_device", "data": dev})
            devices.append(dev)
        self.record("cuda_devices", devices)


def _try(fn: Callable[[], Any]) -> Any:
    try:
        return fn()
    except Exception:
        return None


def _text(value: Any) -> Any:
    return value.decode("utf-8", "replace") if isinstance(value, bytes) else value


def _sysctl(name: str) -> str | None:
    import subprocess

    try:
        # by its absolute path: a PATH entry is never where a program this child runs comes from
        out = subprocess.run(["/usr/sbin/sysctl", "-n", name], capture_output=True, text=True, timeout=3, check=False)
        return out.stdout.strip() or None
    except (OSError, subprocess.SubprocessError):
        return None


def main() -> None:
    global _OUT
    # Our protocol gets a private copy of stdout; whatever torch or a driver library prints
    # (to Python's stdout or straight to fd 1) goes to stderr instead.
    _OUT = os.fdopen(os.dup(1), "w", encoding="utf-8")
    sys.stdout.flush()
    os.dup2(2, 1)
    _emit({"protocol": PROTOCOL, "python": sys.executable, "pid": os.getpid()})
    Collector(dict(os.environ)).run()


if __name__ == "__main__":
    # Python 3.10 has no -P: the script's own directory (this package's, never the user's) leads
    # sys.path; drop it so no module in it can stand in for one torch imports.
    _here = os.path.dirname(os.path.abspath(__file__))
    sys.path[:] = [p for p in sys.path if os.path.abspath(p or ".") != _here]
    main()
