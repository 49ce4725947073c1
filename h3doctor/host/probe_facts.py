"""The probe's pure part: observations of the child process and of this process -> facts, one
report line per fact, and a reason for every fact that is unknown or does not apply.

No I/O here; the tests drive `build` with faked observations (see host/probe.py for where
the observations come from).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from h3doctor import __version__
from h3doctor.digits import is_digits
from h3doctor.facts import KERNEL_FACTS, SWAP_FACTS, HardwareFacts
from h3doctor.verified import NEWEST_VERIFIED
from h3doctor.host.doctor import label, said, why
from h3doctor.host.probe_child import GIB, detect_platform, override_of, parse_visible
from h3doctor.host.probe_host_lines import host_lines
from h3doctor.host.probe_stack_lines import stack_lines

SCHEMA_VERSION = 1
SUPPORTED_SGLANG = NEWEST_VERIFIED  # the release whose platform detection the probe child walks
FA_MODULE = "sglang.multimodal_gen.runtime.layers.attention.backends.flash_attn"
# flash_attn.py's only import outside torch, stdlib and the diffusion runtime (catalog 3.2)
FA_MODULE_DEPS = ("sglang.kernels.ops.attention.flash_attention",)
PROFILE_FACTS = ("platform", "device_name", "compute_capability", "gpu_count", "gpu_memory_gib", "gpu_free_gib",
                 "host_memory_gib", "flash_attn", "fa_kernel", "ffmpeg", "shares_host_memory",
                 "shm_gib", "disk_free_gib", "ffmpeg_encoders", "cgroup_memory_unlimited",
                 "hf_token", "spill_free_gib", "hf_cache_dir", *KERNEL_FACTS, *SWAP_FACTS)
# facts of this machine a saved profile leaves out: a profile describes a machine whose caches
# h3doctor does not read (facts.HardwareFacts.hf_cache_dir)
PROBE_ONLY_FACTS = ("hf_cache_dir",)
STATUSES = ("ok", "problem", "unknown", "n/a")




@dataclass
class Line:
    """One line of the doctor report: a fact, its status, why, and where it came from."""

    fact: str
    label: str
    value: Any
    status: str  # ok | problem | unknown | n/a
    reason: str
    source: str

    def as_dict(self) -> dict[str, Any]:
        """The line as the probe's JSON and text give it: its name and its value in the doctor's
        words (`says`; host/doctor.py), so `probe` and `doctor` speak one vocabulary."""
        says = said(self.fact, self.value, self.status)
        return {"fact": self.fact, "label": label(self.fact, self.label), "value": self.value, "says": says,
                "status": self.status, "reason": self.reason, "why": why(self.reason, says), "source": self.source}


@dataclass
class ProbeResult:
    facts: HardwareFacts
    lines: list[Line]
    details: dict[str, Any]
    run: dict[str, Any] = field(default_factory=dict)

    def line(self, fact: str) -> Line:
        return next(line for line in self.lines if line.fact == fact)

    @property
    def reasons(self) -> dict[str, str]:
        return {ln.fact: ln.reason for ln in self.lines if ln.fact in PROFILE_FACTS and ln.value is None}

    def as_dict(self) -> dict[str, Any]:
        facts = {k: getattr(self.facts, k) for k in PROFILE_FACTS}
        return {
            "schema_version": SCHEMA_VERSION,
            "kind": "h3doctor-probe",
            "h3doctor_version": __version__,
            "facts": facts,
            "checks": [ln.as_dict() for ln in self.lines],
            "reasons": self.reasons,
            "sources": {ln.fact: ln.source for ln in self.lines},
            "details": self.details,
            "probe": self.run,
        }


# -- the child process ----------------------------------------------------------------------


# -- observations + host facts -> facts and lines (pure) --------------------------------------

def _gib(value: Any) -> float | None:
    return None if value is None else round(float(value) / GIB, 2)


class _Builder:
    def __init__(self, obs: dict[str, Any], run: dict[str, Any], host: dict[str, Any], env: dict[str, str]):
        self.obs, self.run, self.host, self.env = obs, run, host, env
        self.lines: list[Line] = []
        self.values: dict[str, Any] = {}
        age = run.get("cache_age_s")
        self.child_note = f" (cached {age:.0f} s ago)" if age is not None else ""
        self.details: dict[str, Any] = {}

    def add(self, fact: str, label: str, value: Any, status: str, reason: str, source: str) -> None:
        assert status in STATUSES, status
        if fact in PROFILE_FACTS:
            self.values[fact] = value
        self.lines.append(Line(fact, label, value, status, reason, source))

    def child(self, source: str) -> str:
        return source + self.child_note

    def incomplete(self) -> str:
        """Why the child's facts may be missing."""
        if self.run.get("outcome") in (None, "ok"):
            return ""
        return self.run.get("detail") or f"the probe child {self.run.get('outcome')}"

    # ---------------------------------------------------------------------------------------
    def build(self) -> ProbeResult:
        platform, why, _missing = detect_platform(self.obs, self.env)
        if platform is None and _missing is not None:
            why = (self.incomplete() or "the probe did not run") + f"; sglang's choice depends on {_missing}"
        self.platform = platform
        self._platform_line(platform, why)
        devices, dev_source = self._devices(platform)
        self._device_lines(platform, devices, dev_source)
        self._host_line()
        self._flash_attn_line()
        self._fa_kernel_line(platform)
        self._ffmpeg_line(platform)
        host_lines(self)
        self._version_lines()
        stack_lines(self)
        facts = self._facts()
        return ProbeResult(facts, self.lines, self.details, self.run)

    def _platform_line(self, platform: str | None, why: str) -> None:
        torch = self.obs.get("torch") or {}
        self.details["platform_plugins"] = self.obs.get("plugins", [])
        self.details["platform_override"] = override_of(self.env) or None
        status, reason = ("ok", why) if platform else ("unknown", why)
        source = "SGLANG_DIFFUSION_PLATFORM_OVERRIDE" if override_of(self.env) else self.child(f"sglang {SUPPORTED_SGLANG} detection order (mps, xpu, rocm, cuda, npu, musa, cpu)")
        if platform == "cpu":
            reason = f"no accelerator: {why}"
        if platform == "cuda" and torch.get("ok") and torch.get("cuda") is None:
            status = "problem"
            reason = (f"{why}, but torch {torch.get('version')} is not a CUDA build: sglang selects CUDA "
                      "and then cannot use the GPUs; install a CUDA build of torch")
        if platform == "cuda" and not torch.get("ok") and "torch" in self.obs:
            status = "problem"
            reason = f"{why}, but torch does not import ({torch.get('error')}): sglang cannot run"
        amdsmi = self.obs.get("amdsmi") or {}
        if platform not in ("rocm", None) and torch.get("hip") and amdsmi.get("missing") and not override_of(self.env):
            status = "problem"
            reason = (f"torch is a ROCm build (HIP {torch['hip']}) but amdsmi does not import: sglang {SUPPORTED_SGLANG} "
                      f"detects ROCm only through amdsmi and selects {platform}; install amdsmi (ROCm's Python bindings)")
        plugins = self.obs.get("plugins") or []
        if plugins and not override_of(self.env) and status == "ok":
            status = "unknown"
            reason += (f"; out-of-tree platform plugin(s) {', '.join(plugins)} are installed and sglang asks them "
                       "first: h3doctor cannot run their activate()")
        self.add("platform", "platform", platform, status, reason, source)

    # -- devices --------------------------------------------------------------------------
    def _devices(self, platform: str | None) -> tuple[list[dict[str, Any]] | None, str]:
        """The selected devices (each: name, cc, total, free, integrated) and where they came from."""
        if platform in ("cuda", "rocm"):
            tc = self.obs.get("torch_cuda") or {}
            tdevs = self.obs.get("cuda_devices")
            hip = (self.obs.get("torch") or {}).get("hip")
            torch_usable = tc.get("available") and (hip is None) == (platform == "cuda")
            if torch_usable and tdevs is not None:
                devs = [dict(d) for d in tdevs]
                if self.obs.get("cuda_devices_incomplete"):
                    devs += [{"index": i, "error": self.incomplete()} for i in range(len(devs), tc.get("count", 0))]
                self._fill_from_nvml(devs)
                api = "torch.cuda (HIP)" if platform == "rocm" else "torch.cuda"
                return devs, self.child(f"{api} in the probe child, honouring {_visible_var(platform)}")
            if platform == "rocm":
                return None, ""
            nvml = self.obs.get("nvml") or {}
            if nvml.get("ok"):
                chosen, note = map_visible(self.env.get("CUDA_VISIBLE_DEVICES"), nvml.get("devices", []))
                self.details["visible_devices_note"] = note
                return chosen, self.child("NVML (pynvml) in the probe child, CUDA_VISIBLE_DEVICES applied by h3doctor")
            procfs = (self.obs.get("nvidia_procfs") or {}).get("gpus") or []
            if procfs:
                devs = [{"index": i, "name": g.get("model"), "uuid": None} for i, g in enumerate(procfs)]
                chosen, note = map_visible(self.env.get("CUDA_VISIBLE_DEVICES"), devs)
                self.details["visible_devices_note"] = note
                return chosen, self.child("/proc/driver/nvidia/gpus (no NVML bindings, torch CUDA unusable)")
            return None, ""
        return None, ""

    def _fill_from_nvml(self, devs: list[dict[str, Any]]) -> None:
        """After a hang in torch, keep what NVML already said about the same devices."""
        nvml = self.obs.get("nvml") or {}
        if not nvml.get("ok") or not any(d.get("error") for d in devs):
            return
        chosen, _ = map_visible(self.env.get("CUDA_VISIBLE_DEVICES"), nvml.get("devices", []))
        for d, n in zip(devs, chosen or []):
            if d.get("error"):
                for key in ("name", "cc", "total", "free"):
                    if d.get(key) is None and n.get(key) is not None:
                        d[key] = n[key]
                        d.setdefault("from_nvml", []).append(key)

    def _device_lines(self, platform: str | None, devices: list[dict[str, Any]] | None, source: str) -> None:
        if platform is None:
            why = "platform unknown: " + self.lines[0].reason
            for fact, label in (("gpu_count", "GPUs"), ("device_name", "device"), ("compute_capability", "compute capability"),
                                ("gpu_memory_gib", "GPU memory"), ("gpu_free_gib", "GPU free memory"),
                                ("shares_host_memory", "shared host memory")):
                self.add(fact, label, None, "unknown", why, "—")
            return
        if platform == "cpu":
            na = "the CPU platform has no GPU"
            self.add("gpu_count", "GPUs", 0, "ok", na, "sglang's CpuPlatform")
            for fact, label in (("device_name", "device"), ("compute_capability", "compute capability"),
                                ("gpu_memory_gib", "GPU memory"), ("gpu_free_gib", "GPU free memory")):
                self.add(fact, label, None, "n/a", na, "sglang's CpuPlatform")
            self.add("shares_host_memory", "shared host memory", False, "n/a", na, "sglang's CpuPlatform")
            return
        if platform == "mps":
            self._mps_lines()
            return
        if platform in ("cuda", "rocm"):
            self._gpu_lines(platform, devices, source)
            return
        self._other_lines(platform)

    def _gpu_lines(self, platform: str, devices: list[dict[str, Any]] | None, source: str) -> None:
        cvd = self.env.get("CUDA_VISIBLE_DEVICES")
        self.details["cuda_visible_devices"] = cvd
        self.details["devices"] = [_public_device(d) for d in devices or []]
        if devices is None:
            why = self.incomplete() or (
                "torch cannot see the GPUs (no CUDA/HIP device in torch.cuda) and there is no NVML fallback"
                if platform == "cuda" or (self.obs.get("torch_cuda") or {}).get("available") is not None
                else "the device query did not run")
            if platform == "rocm" and not (self.obs.get("torch") or {}).get("hip") and "torch" in self.obs:
                why = "torch is not a ROCm (HIP) build, so it cannot read the AMD GPUs"
            for fact, label in (("gpu_count", "GPUs"), ("device_name", "device"), ("compute_capability", "compute capability"),
                                ("gpu_memory_gib", "GPU memory"), ("gpu_free_gib", "GPU free memory"),
                                ("shares_host_memory", "shared host memory")):
                self.add(fact, label, None, "unknown", why, "—")
            return
        count = len(devices)
        where = f"CUDA_VISIBLE_DEVICES={cvd!r}" if cvd is not None else "CUDA_VISIBLE_DEVICES unset"
        if platform == "rocm":
            where = ", ".join(f"{k}={self.env[k]!r}" for k in ("HIP_VISIBLE_DEVICES", "ROCR_VISIBLE_DEVICES",
                                                                  "CUDA_VISIBLE_DEVICES") if k in self.env) or "all devices"
        note = self.details.get("visible_devices_note")
        if count == 0:
            status = "problem"
            reason = f"no visible GPU ({where})"
            if cvd is not None and not cvd.strip() and platform == "cuda":
                reason += ("; sglang raises 'CUDA_VISIBLE_DEVICES is set to empty string, which means GPU support "
                           "is disabled' (cuda.py device_id_to_physical_device_id)")
        else:
            status, reason = "ok", f"{count} visible ({where})" + (f"; {note}" if note and "unset" not in note else "")
        if platform == "cuda" and cvd and any(not is_digits(e) for e in (parse_visible(cvd) or [])):
            nvml_used = (self.obs.get("nvml") or {}).get("ok") or (self.obs.get("nvidia_procfs") or {}).get("gpus")
            if nvml_used:
                status = "problem"
                reason += (f"; sglang {SUPPORTED_SGLANG}'s NVML platform maps CUDA_VISIBLE_DEVICES with int(), so a UUID or MIG "
                           "entry raises ValueError at its first device query: use integer indices")
        self.add("gpu_count", "GPUs", count, status, reason, source)
        first = devices[0] if devices else {}
        errors = [d for d in devices if d.get("error")]
        err_why = (errors[0]["error"] if errors else "")
        names = [d.get("name") for d in devices]
        if not devices:
            for fact, label in (("device_name", "device"), ("compute_capability", "compute capability"),
                                ("gpu_memory_gib", "GPU memory"), ("gpu_free_gib", "GPU free memory"),
                                ("shares_host_memory", "shared host memory")):
                self.add(fact, label, None, "n/a", "no visible GPU", source)
            return
        name = first.get("name")
        if name is None:
            self.add("device_name", "device", None, "unknown", f"GPU 0's name could not be read: {err_why or 'not reported'}", source)
        elif len(set(names)) > 1:
            order = self.env.get("CUDA_DEVICE_ORDER")
            extra = "" if order == "PCI_BUS_ID" else "; sglang warns to set CUDA_DEVICE_ORDER=PCI_BUS_ID so indices mean the same to NVML and CUDA"
            self.add("device_name", "device", name, "unknown",
                     f"GPU 0 of different devices: {', '.join(str(n) for n in names)}{extra}", source)
        else:
            self.add("device_name", "device", name, "ok", f"GPU 0{' (all the same)' if count > 1 else ''}", source)
        cc = first.get("cc")
        if cc is None:
            self.add("compute_capability", "compute capability", None, "unknown",
                     f"GPU 0's capability could not be read: {err_why or 'not reported'}", source)
        else:
            ccs = sorted({d.get("cc") for d in devices if d.get("cc")})
            label = "GPU 0 (sglang reads the first visible device)" + (f"; devices report {', '.join(ccs)}" if len(ccs) > 1 else "")
            if platform == "rocm" and first.get("arch"):
                label += f"; {first['arch']}"
            self.add("compute_capability", "compute capability", cc, "ok", label, source)
        totals = [d.get("total") for d in devices]
        nvml_total = "NVML total (torch reports slightly less)" if any("total" in d.get("from_nvml", []) for d in devices) or "NVML" in source else ""
        if None in totals:
            self.add("gpu_memory_gib", "GPU memory", None, "unknown",
                     f"total memory of {totals.count(None)} device(s) unread: {err_why or 'not reported'}", source)
        else:
            low = min(totals)
            reason = "per device" + (f"; the smallest of {', '.join(str(_gib(t)) for t in totals)} GiB" if len(set(totals)) > 1 else "")
            self.add("gpu_memory_gib", "GPU memory", _gib(low), "ok", reason + (f"; {nvml_total}" if nvml_total else ""), source)
        integrated = [d.get("integrated") for d in devices]
        first_integrated = integrated[0]
        frees = []
        free_source = source
        for d in devices:
            if d.get("integrated"):
                frees.append(self.host.get("host_available"))
                free_source = f"{source}; host available memory for integrated GPUs ({self.host.get('host_memory_source')}), as sglang does"
            else:
                frees.append(d.get("free"))
        if None in frees:
            self.add("gpu_free_gib", "GPU free memory", None, "unknown",
                     f"free memory of {frees.count(None)} device(s) unread: {err_why or 'not reported'}", free_source)
        else:
            low = min(frees)
            idx = frees.index(low)
            via = " (NVML free, torch did not answer)" if any("free" in d.get("from_nvml", []) for d in devices) else ""
            self.add("gpu_free_gib", "GPU free memory", _gib(low), "ok",
                     f"least free over the {count} visible device(s) (GPU {idx}){via}; changes as other jobs run", free_source)
        if first_integrated is None:
            self.add("shares_host_memory", "shared host memory", None, "unknown",
                     "only torch's device properties say whether a GPU is integrated" +
                     (f" ({err_why or self.incomplete()})" if err_why or self.incomplete() else ""), source)
        else:
            self.add("shares_host_memory", "shared host memory", bool(first_integrated), "ok",
                     "integrated GPU (torch is_integrated)" if first_integrated else "discrete GPU memory (torch is_integrated false)", source)

    def _mps_lines(self) -> None:
        mps = self.obs.get("mps") or {}
        src = self.child("torch.backends.mps in the probe child")
        chip = mps.get("chip")
        self.add("gpu_count", "GPUs", 1, "ok", "MPS is one device", src)
        self.add("device_name", "device", chip or "Apple Silicon MPS",
                 "ok", "the chip (sysctl machdep.cpu.brand_string)" if chip else "sglang's MpsPlatform name (chip unread)",
                 "sysctl" if chip else src)
        self.add("compute_capability", "compute capability", None, "n/a", "MPS has no CUDA compute capability", src)
        total, avail = self.host.get("host_total"), self.host.get("host_available")
        msrc = f"{self.host.get('host_memory_source')}, as sglang's MpsPlatform reports it"
        self.add("gpu_memory_gib", "GPU memory", _gib(total), "ok" if total else "unknown",
                 "unified memory: sglang reports the host's total" if total else "host memory unread", msrc)
        self.add("gpu_free_gib", "GPU free memory", _gib(avail), "ok" if avail else "unknown",
                 "unified memory: sglang reports the host's available memory" if avail else "host available memory unread (install psutil)", msrc)
        self.add("shares_host_memory", "shared host memory", True, "ok", "Apple silicon unified memory", "sglang's MpsPlatform")
        ws = mps.get("recommended_max_memory")
        self.details["metal_working_set_gib"] = _gib(ws)
        self.add("metal_working_set_gib", "Metal working set", _gib(ws), "ok" if ws else "unknown",
                 "Metal's recommended maximum working set: the practical ceiling for MPS allocations"
                 if ws else f"unread: {mps.get('recommended_max_memory_error', 'not reported')}",
                 self.child("torch.mps.recommended_max_memory()"))

    def _other_lines(self, platform: str) -> None:
        o = self.obs.get(platform) or {}
        src = self.child(f"torch.{platform}" if platform != "musa" else "pymtml")
        count = o.get("count")
        self.add("gpu_count", "GPUs", count, "ok" if count is not None else "unknown",
                 "visible devices" if count is not None else (self.incomplete() or "not reported"), src)
        name = o.get("name")
        self.add("device_name", "device", name, "ok" if name else "unknown",
                 "device 0" if name else f"h3doctor does not read device names on {platform}", src)
        why = f"h3doctor reads only the device count and name on {platform}"
        self.add("compute_capability", "compute capability", None, "n/a", f"{platform} has no CUDA compute capability", src)
        total = o.get("total_memory")
        self.add("gpu_memory_gib", "GPU memory", _gib(total), "ok" if total else "unknown",
                 "device 0" if total else why, src)
        self.add("gpu_free_gib", "GPU free memory", None, "unknown", why, src)
        self.add("shares_host_memory", "shared host memory", None, "unknown", why, src)

    # -- host, packages, PATH ----------------------------------------------------------------
    def _host_line(self) -> None:
        total, cap = self.host.get("host_total"), self.host.get("cgroup_limit")
        self.details["cgroup_memory_limit_gib"] = _gib(cap)
        if cap is not None and (total is None or cap < total):
            # sglang (0.5.19+, host_memory_budget.py) plans against the cap, and the kernel kills there in any release
            self.add("host_memory_gib", "host memory", _gib(cap), "ok",
                     f"the cgroup's memory cap ({self.host.get('cgroup_reason')}), below the machine's "
                     f"{_gib(total)} GiB", self.host.get("cgroup_source", ""))
            return
        note = f"; {self.host['cgroup_reason']}" if self.host.get("cgroup_reason") else ""
        self.add("host_memory_gib", "host memory", _gib(total), "ok" if total else "unknown",
                 ("total RAM" if total else "unread") + note, self.host.get("host_memory_source", ""))

    def _flash_attn_line(self) -> None:
        h = self.host
        torch = self.obs.get("torch") or {}
        src = "importlib.util.find_spec (no import)"
        label = "FlashAttention available"
        if not h.get("sglang_spec"):
            self.add("flash_attn", label, None, "unknown",
                     f"sglang is not installed in this Python environment, so whether {FA_MODULE.rsplit('.', 1)[1]} imports "
                     f"cannot be checked (it does in a complete sglang {SUPPORTED_SGLANG} install with torch)", src)
        elif not h.get("fa_module"):
            self.add("flash_attn", label, False, "problem",
                     f"{FA_MODULE} is missing from the installed sglang: sglang falls back to torch_sdpa", src)
        elif h.get("fa_module_missing_deps"):
            self.add("flash_attn", label, False, "problem",
                     f"{FA_MODULE} imports {', '.join(h['fa_module_missing_deps'])}, which is missing: sglang falls back to torch_sdpa", src)
        elif not h.get("torch_spec") or (torch and torch.get("ok") is False):
            why = torch.get("error") if torch else "torch is not installed"
            self.add("flash_attn", label, False, "problem",
                     f"the flash_attn backend module imports torch, which does not import ({why})", src)
        else:
            self.add("flash_attn", label, True, "ok" if self.platform == "cuda" else "n/a",
                     "sglang's flash_attn backend module and its imports are installed; sglang decides FA by importing "
                     "it, not by finding a compiled kernel (catalog 3.2)"
                     + ("" if self.platform == "cuda" else f"; sglang does not use it on {self.platform or 'an unknown platform'}"), src)

    def _fa_kernel_line(self, platform: str | None) -> None:
        h = self.host
        label = "FA kernel package"
        src = "importlib.util.find_spec (no import)"
        cc = self.values.get("compute_capability")
        if platform != "cuda":
            status = "unknown" if platform is None else "n/a"
            self.add("fa_kernel", label, None, status,
                     "platform unknown" if platform is None else f"FlashAttention kernels load only on CUDA, not on {platform}", src)
            return
        if cc is None:
            self.add("fa_kernel", label, None, "unknown", "compute capability unknown: cannot tell FA3 from FA4", src)
            return
        major = int(cc.split(".")[0])
        if major < 8:
            self.add("fa_kernel", label, None, "n/a", f"cc {cc} < 8.0: sglang never selects FA (torch_sdpa)", src)
            return
        if major in (10, 12):
            present = bool(h.get("cutlass"))
            package = "cutlass (nvidia-cutlass-dsl), for the FA4 CuTe-DSL kernel"
            when = ("FA4 is used on Blackwell cc 10.x whenever the DiT runs FA (cuDNN SDPA's fallback too)" if major == 10
                    else "SM12x defaults to torch_sdpa; FA4 loads only with an explicit fa backend")
        elif h.get("use_sgl_fa3_kernel"):
            present = bool(h.get("sgl_kernel_flash_attn"))
            version = f" {h['sgl_kernel_version']}" if h.get("sgl_kernel_version") else ""
            package = f"sgl_kernel.flash_attn (sgl-kernel{version}), for FA3 (SGLANG_USE_SGL_FA3_KERNEL on, the default)"
            when = "loaded at the first attention call when the DiT runs FA"
        else:
            present = bool(h.get("kernels_hub") or h.get("sgl_kernel_flash_attn"))
            package = ("the `kernels` hub kernel kernels-community/sgl-flash-attn3 (SGLANG_USE_SGL_FA3_KERNEL off), "
                       "with sgl_kernel.flash_attn as the fallback")
            when = "fetched or loaded at the first attention call when the DiT runs FA"
        self.details["fa_kernel_package"] = package
        self.add("fa_kernel", label, present, "ok" if present else "problem",
                 f"{package} is {'installed' if present else 'not installed'}; {when}"
                 + ("" if present else " (catalog R11: ImportError at the first forward)"), src)

    def _ffmpeg_line(self, platform: str | None) -> None:
        ff, fp = self.host.get("ffmpeg_path"), self.host.get("ffprobe_path")
        self.details["ffmpeg_path"], self.details["ffprobe_path"] = ff, fp
        missing = [n for n, p in (("ffmpeg", ff), ("ffprobe", fp)) if not p]
        ok = not missing
        if ok:
            status, reason = "ok", f"{ff}, {fp}"
        elif platform == "rocm":
            status, reason = "n/a", f"missing {', '.join(missing)}; sglang skips its ffmpeg check on ROCm"
        else:
            status, reason = "problem", (f"missing on PATH: {', '.join(missing)}; MiniMax H3 workers refuse to start "
                                         "(catalog W3): install the ffmpeg system package")
        self.add("ffmpeg", "ffmpeg + ffprobe", ok, status, reason, "shutil.which on PATH")

    def _version_lines(self) -> None:
        h = self.host
        sv = h.get("sglang_version")
        self.details["sglang_version"] = sv
        if sv is None:
            self.add("sglang_version", "sglang", None, "unknown",
                     f"not installed in this Python environment (h3doctor checks against sglang {SUPPORTED_SGLANG})", "importlib.metadata")
        else:
            self.add("sglang_version", "sglang", sv, "ok" if sv == SUPPORTED_SGLANG else "unknown",
                     "installed" if sv == SUPPORTED_SGLANG else f"installed; h3doctor's rules model sglang {SUPPORTED_SGLANG}",
                     "importlib.metadata")
        torch = self.obs.get("torch") or {}
        tv = torch.get("version") or h.get("torch_version")
        self.details.update({"torch_version": tv, "torch_cuda_version": torch.get("cuda"), "torch_hip_version": torch.get("hip")})
        if torch.get("ok"):
            build = f"CUDA {torch['cuda']}" if torch.get("cuda") else f"HIP {torch['hip']}" if torch.get("hip") else "CPU-only build"
            self.add("torch_version", "torch", tv, "ok", build, self.child("torch.__version__, torch.version in the probe child"))
        elif torch:
            self.add("torch_version", "torch", h.get("torch_version"), "problem",
                     f"does not import: {torch.get('error')}", self.child("import torch in the probe child"))
        else:
            self.add("torch_version", "torch", h.get("torch_version"), "unknown",
                     self.incomplete() or "not imported", "importlib.metadata")
        nvml = self.obs.get("nvml") or {}
        driver = nvml.get("driver") or h.get("driver_file")
        self.details["driver_version"] = driver
        self.details["nvml"] = ("ok" if nvml.get("ok") else "not installed (nvidia-ml-py)" if nvml.get("missing")
                                else nvml.get("error"))
        if driver or self.platform in ("cuda", "rocm"):
            self.add("driver_version", "GPU driver", driver, "ok" if driver else "unknown",
                     "kernel driver" if driver else "not reported (no NVML, no /proc/driver file)",
                     "NVML" if nvml.get("driver") else "/proc/driver/nvidia/version or /sys/module/amdgpu/version")

    def _facts(self) -> HardwareFacts:
        v = self.values
        platform = v.get("platform")
        count = v.get("gpu_count")
        what = (f"{count}x {v.get('device_name')}" if count else "no GPU") if platform not in (None, "cpu") else (platform or "unknown platform")
        if platform not in (None, "cpu") and v.get("compute_capability"):
            what += f" (cc {v['compute_capability']})"
        cached = self.child_note.strip()
        sources = {}
        for ln in self.lines:
            if ln.fact in PROFILE_FACTS:
                sources[ln.fact] = ln.source if ln.value is not None else f"{ln.status}: {ln.reason}"
        return HardwareFacts(
            platform=platform,  # None only when sglang's choice is unknowable; `check` refuses that
            device_name=v.get("device_name"),
            compute_capability=v.get("compute_capability"),
            gpu_count=count,
            gpu_memory_gib=v.get("gpu_memory_gib"),
            gpu_free_gib=v.get("gpu_free_gib"),
            host_memory_gib=v.get("host_memory_gib"),
            flash_attn=v.get("flash_attn"),
            fa_kernel=v.get("fa_kernel"),
            ffmpeg=v.get("ffmpeg"),
            shares_host_memory=v.get("shares_host_memory"),
            shm_gib=v.get("shm_gib"),
            disk_free_gib=v.get("disk_free_gib"),
            ffmpeg_encoders=v.get("ffmpeg_encoders"),
            cgroup_memory_unlimited=v.get("cgroup_memory_unlimited"),
            hf_token=v.get("hf_token"),
            spill_free_gib=v.get("spill_free_gib"),
            hf_cache_dir=v.get("hf_cache_dir"),
            **{k: v.get(k) for k in KERNEL_FACTS},
            **{k: v.get(k) for k in SWAP_FACTS},
            source="probe" + (f" {cached}" if cached else ""),
            description=f"this host, probed: {what}",
            sources=sources,
        )


def _visible_var(platform: str) -> str:
    return "HIP/ROCR/CUDA_VISIBLE_DEVICES" if platform == "rocm" else "CUDA_VISIBLE_DEVICES"


def _public_device(d: dict[str, Any]) -> dict[str, Any]:
    out = {"index": d.get("index"), "name": d.get("name"), "compute_capability": d.get("cc"),
           "total_gib": _gib(d.get("total")), "free_gib": _gib(d.get("free")), "integrated": d.get("integrated")}
    for key in ("uuid", "arch", "error", "from_nvml"):
        if d.get(key):
            out[key] = d[key]
    return out


def map_visible(cvd: str | None, devices: list[dict[str, Any]]) -> tuple[list[dict[str, Any]] | None, str]:
    """CUDA_VISIBLE_DEVICES applied to NVML's devices the way the CUDA runtime applies it:
    indices or GPU-UUID prefixes, parsing stops at the first entry that names no new device."""
    entries = parse_visible(cvd)
    if entries is None:
        return list(devices), "CUDA_VISIBLE_DEVICES unset: all devices"
    chosen: list[dict[str, Any]] = []
    seen: set[int] = set()
    stopped = None
    for entry in entries:
        idx = None
        if is_digits(entry):
            idx = int(entry) if int(entry) < len(devices) else None
        elif entry.startswith("GPU-"):
            matches = [i for i, d in enumerate(devices) if str(d.get("uuid") or "").startswith(entry)]
            idx = matches[0] if len(matches) == 1 else None
        elif entry.startswith("MIG-"):
            return None, f"CUDA_VISIBLE_DEVICES names a MIG instance ({entry}); h3doctor cannot resolve it without torch"
        if idx is None or idx in seen:
            stopped = entry
            break
        seen.add(idx)
        chosen.append(devices[idx])
    note = f"CUDA ignores {stopped!r} and every entry after it" if stopped is not None else ""
    return chosen, note


def build(obs: dict[str, Any], run: dict[str, Any], host: dict[str, Any], env: dict[str, str]) -> ProbeResult:
    return _Builder(obs, run, host, env).build()
