"""Hardware as facts: what sglang's platform layer would report, from a profile (host/profiles.py) or a
live probe (host/probe.py).

Ground floor: the sglang model, the rule engine and the probe all read this type, so it imports
nothing but `errors` and `safeload`.

Rules never look at where a fact came from; they read the fields of `HardwareFacts`. A value
of None means *unknown*, and rules that need it report "cannot verify" instead of passing.
"""

from __future__ import annotations

from h3doctor.digits import is_digits
from h3doctor.errors import UsageError
from h3doctor.record import field, fields_of, record
from h3doctor.safeload import excerpt

TYPE_CHECKING = False  # typing is not imported at run time (start-up: record.py)
if TYPE_CHECKING:
    from typing import Any

PLATFORMS = ("cuda", "rocm", "mps", "cpu", "xpu", "npu", "musa")

_PROFILE_KEYS: dict[str, tuple[type, ...]] = {
    "description": (str,),
    "platform": (str,),
    "device_name": (str, type(None)),
    "compute_capability": (str, type(None)),
    "gpu_count": (int, type(None)),
    "gpu_memory_gib": (int, float, type(None)),
    "gpu_free_gib": (int, float, type(None)),
    "host_memory_gib": (int, float, type(None)),
    "flash_attn": (bool, type(None)),
    "fa_kernel": (bool, type(None)),
    "ffmpeg": (bool, type(None)),
    "shares_host_memory": (bool, type(None)),
    # host facts (issue 29): what a container or a small disk takes away from a launch
    "shm_gib": (int, float, type(None)),
    "disk_free_gib": (int, float, type(None)),
    "ffmpeg_encoders": (bool, type(None)),
    "cgroup_memory_unlimited": (bool, type(None)),
    # issue 29 items 1-2: a Hub token present, free space for sglang's host spill
    "hf_token": (bool, type(None)),
    "spill_free_gib": (int, float, type(None)),
    # issue 29, kernels and driver: versions as text ("12.4"), a kernel's targets as a list ("sm_90")
    "driver_cuda": (str, type(None)),
    "torch_cuda": (str, type(None)),
    "torch_version": (str, type(None)),
    "sgl_kernel_sm": (list, type(None)),
    "sgl_kernel_torch": (str, type(None)),
    "sage_sm": (list, type(None)),
    "sage_torch": (str, type(None)),
    "flash_attn_sm": (list, type(None)),
    "flash_attn_torch": (str, type(None)),
    "ffprobe_version": (str, type(None)),
    # issue 29, swap on a shared memory pool (H3D419): SwapTotal, and the cgroup's memory.swap.max reading "0"
    "swap_gib": (int, float, type(None)),
    "cgroup_swap_off": (bool, type(None)),
}
# the kernel/driver facts (issue 29): plain fields, each with its source in `sources`
KERNEL_FACTS = ("driver_cuda", "torch_cuda", "torch_version", "sgl_kernel_sm", "sgl_kernel_torch", "sage_sm",
                "sage_torch", "flash_attn_sm", "flash_attn_torch", "ffprobe_version")
_TARGET_LISTS = ("sgl_kernel_sm", "sage_sm", "flash_attn_sm")

# The host facts a profile states (`h3doctor profiles`, the report's "assumed:"), in that order; a
# profile that does not give one leaves it None: unknown, "cannot verify", never a default.
ASSUMED_FACTS = ("host_memory_gib", "shm_gib", "disk_free_gib", "ffmpeg", "ffmpeg_encoders", "flash_attn", "fa_kernel",
                 "hf_token", "spill_free_gib")
# ... and on CUDA the stack it runs (issue 29, kernels and driver): another platform has none of it
CUDA_ASSUMED = ("driver_cuda", "torch_cuda", "sgl_kernel_sm")
# ... and on a CUDA device that shares one memory pool with the host (GB10), what sglang's auto-tuner
# warns of there (H3D144, H3D419): a discrete GPU's machine is judged on none of them
SWAP_FACTS = ("swap_gib", "cgroup_swap_off")
SHARED_POOL_ASSUMED = ("cgroup_memory_unlimited", *SWAP_FACTS)


@record(frozen=True)
class HardwareFacts:
    """What h3doctor knows of the machine a launch runs on: from a profile, or the probe. None is
    "unknown" (rules then say they cannot verify)."""
    platform: str
    device_name: str | None = None
    compute_capability: str | None = None  # "9.0"; of the first visible GPU (catalog 2 `cc`)
    gpu_count: int | None = 0  # None only from a probe that could not count
    gpu_memory_gib: float | None = None  # total per device, as torch reports it
    gpu_free_gib: float | None = None  # least free over the selected devices
    host_memory_gib: float | None = None
    flash_attn: bool | None = None  # sglang's FlashAttention backend module imports (catalog 3.2)
    fa_kernel: bool | None = None  # the FA kernel package the first forward loads (catalog R11)
    ffmpeg: bool | None = None  # ffmpeg and ffprobe on PATH (catalog W3)
    shares_host_memory: bool | None = False  # integrated GPU / unified memory (catalog B5)
    shm_gib: float | None = None  # size of /dev/shm (Docker's default is 64 MiB)
    disk_free_gib: float | None = None  # free space under the Hugging Face cache the weights download to
    ffmpeg_encoders: bool | None = None  # the ffmpeg sglang encodes output with lists libx264 and aac
    # /sys/fs/cgroup/memory.max says "max" or cannot be opened, as sglang's auto_tune.py reads it (H3D144)
    cgroup_memory_unlimited: bool | None = None
    # a Hub token huggingface_hub would send (HF_TOKEN, HUGGING_FACE_HUB_TOKEN, the token file); never the token
    hf_token: bool | None = None
    # free space under SGLANG_DIFFUSION_HOST_SPILL_DIR (sglang's host spill, 0.5.20 on)
    spill_free_gib: float | None = None
    # the Hugging Face cache of the machine the launch runs on, read for what it already holds: the
    # probe's only (a profile describes another machine, whose cache h3doctor cannot see)
    hf_cache_dir: str | None = None
    source: str = "profile"
    description: str = ""
    sources: dict[str, str] = field(default_factory=dict)
    # variables the launch sets (recipe `env:`, `VAR=value` words) that the live probe did not
    # run with, because they can make Python or the loader run code (host/probe.py LAUNCH_ENV_APPLIED)
    probe_env_not_applied: tuple[str, ...] = ()
    # issue 29, kernels and driver (host/cuda_driver.py, host/kernel_wheels.py, docs/host-facts.md):
    # the CUDA the NVIDIA driver supports ("12.4"; "13.0+" is at least that), torch's CUDA and version
    driver_cuda: str | None = None
    torch_cuda: str | None = None
    torch_version: str | None = None
    # each kernel sglang loads: its library's targets ("sm_90", "compute_90") and the torch "X.Y" it was built for
    sgl_kernel_sm: tuple[str, ...] | None = None
    sgl_kernel_torch: str | None = None
    sage_sm: tuple[str, ...] | None = None
    sage_torch: str | None = None
    flash_attn_sm: tuple[str, ...] | None = None
    flash_attn_torch: str | None = None
    ffprobe_version: str | None = None  # `ffprobe -version`'s first line's version
    # a container launch (sglang/container_facts.py): the GPUs its line grants (None: all of the
    # host's, or not a container), and the runtime's refusal when the host has fewer (H3D148; ""
    # when it has them all, None when the host's count is not known)
    gpus_granted: int | None = None
    gpu_grant_error: str | None = None
    # issue 29, swap on a shared memory pool (H3D419; sglang's auto_tune.py, 0.5.20 on): /proc/meminfo
    # SwapTotal as psutil.swap_memory() reads it, and whether /sys/fs/cgroup/memory.swap.max reads "0"
    swap_gib: float | None = None
    cgroup_swap_off: bool | None = None

    @property
    def cc_major(self) -> int | None:
        if not self.compute_capability:
            return None
        return int(self.compute_capability.split(".")[0])

    @property
    def cc_int(self) -> int | None:
        """Capability as sglang's `to_int()`: 9.0 -> 90, 12.0 -> 120."""
        if not self.compute_capability:
            return None
        major, _, minor = self.compute_capability.partition(".")
        return int(major) * 10 + int(minor or 0)

    def as_dict(self) -> dict[str, Any]:
        # not dataclasses.asdict: its recursive deep copy is a measurable share of a check, and
        # the only container field (`sources`, str -> str) needs a shallow copy
        data = {name: getattr(self, name) for name in fields_of(self)}
        data["sources"] = dict(self.sources)
        data["probe_env_not_applied"] = list(self.probe_env_not_applied)
        for name in _TARGET_LISTS:  # JSON's lists, as the CLI writes them
            data[name] = None if data[name] is None else list(data[name])
        data["cc_major"] = self.cc_major
        data["cc_int"] = self.cc_int
        return data


def facts_from_mapping(data: dict[str, Any], origin: str) -> HardwareFacts:
    unknown = sorted((str(k) for k in set(data) - set(_PROFILE_KEYS) - {"name", "sources", "source"}), key=str)
    if unknown:
        shown = ", ".join(excerpt(k, 40) for k in unknown[:5]) + (f" and {len(unknown) - 5} more" if len(unknown) > 5 else "")
        raise UsageError(f"unknown profile key(s): {shown}; known: {', '.join(sorted(_PROFILE_KEYS))}", location=origin)
    for key, types in _PROFILE_KEYS.items():
        value = data.get(key)
        if key in data and not isinstance(value, types) or (isinstance(value, bool) and bool not in types):
            expected = " or ".join("null" if t is type(None) else t.__name__ for t in types)
            raise UsageError(f"profile key {key!r} must be {expected}, got {excerpt(value)}", location=origin)
    platform = data.get("platform")
    if platform not in PLATFORMS:
        raise UsageError(f"profile 'platform' must be one of {', '.join(PLATFORMS)}, got {excerpt(platform)}", location=origin)
    cc = data.get("compute_capability")
    if cc is not None and not _valid_cc(cc):
        raise UsageError(f"profile 'compute_capability' must look like \"9.0\", got {excerpt(cc)}", location=origin)
    count = data.get("gpu_count", 0 if platform == "cpu" else 1)
    memory = data.get("gpu_memory_gib")
    return HardwareFacts(
        platform=platform,
        device_name=data.get("device_name"),
        compute_capability=cc,
        gpu_count=count,
        gpu_memory_gib=memory,
        gpu_free_gib=data.get("gpu_free_gib", memory),
        host_memory_gib=data.get("host_memory_gib"),
        flash_attn=data.get("flash_attn", True if platform == "cuda" else False),
        fa_kernel=data.get("fa_kernel"),
        ffmpeg=data.get("ffmpeg"),
        shares_host_memory=data.get("shares_host_memory", platform == "mps"),
        shm_gib=data.get("shm_gib"),
        disk_free_gib=data.get("disk_free_gib"),
        ffmpeg_encoders=data.get("ffmpeg_encoders"),
        cgroup_memory_unlimited=data.get("cgroup_memory_unlimited"),
        hf_token=data.get("hf_token"),
        spill_free_gib=data.get("spill_free_gib"),
        **{k: data.get(k) for k in KERNEL_FACTS if k not in _TARGET_LISTS},
        **{k: data.get(k) for k in SWAP_FACTS},
        **{k: _targets(data.get(k), k, origin) for k in _TARGET_LISTS},
        source=origin,
        description=data.get("description", ""),
        sources={k: origin for k in data},
    )


def _targets(value: list | None, key: str, origin: str) -> tuple[str, ...] | None:
    """A kernel's targets as a profile lists them: "sm_90" (a cubin) or "compute_90" (PTX)."""
    if value is None:
        return None
    for item in value:
        kind, _, arch = str(item).partition("_") if isinstance(item, str) else ("", "", "")
        if kind not in ("sm", "compute") or not is_digits(arch) or len(arch) > 4:
            raise UsageError(f"profile key {key!r} lists targets such as \"sm_90\" or \"compute_90\", got {excerpt(item)}",
                             location=origin)
    return tuple(value)


def _valid_cc(cc: str) -> bool:
    major, dot, minor = cc.partition(".")
    return bool(dot) and is_digits(major) and is_digits(minor)


# `check --host-memory/--shm/--disk`: the option, the fact it sets for one check
OVERRIDE_OPTIONS = {"--host-memory": "host_memory_gib", "--shm": "shm_gib", "--disk": "disk_free_gib",
                    "--spill-disk": "spill_free_gib"}
_UNITS = {"k": 1 / (1 << 20), "m": 1 / 1024, "g": 1.0, "t": 1024.0}


def size_gib(text: str, option: str) -> float:
    """A size as `docker run --shm-size` writes it (`64m`, `16g`, `2t`; `GiB`/`GB` spelt out too,
    both read as binary): GiB. A bare number is GiB. Anything else is a usage error naming the option."""
    raw = text.strip().lower().removesuffix("ib").removesuffix("b")
    unit = raw[-1:] if raw[-1:] in _UNITS else "g"
    number = raw[:-1] if raw[-1:] in _UNITS else raw
    whole, _, frac = number.partition(".")
    if not (is_digits(whole) and (not frac or is_digits(frac))) or len(number) > 20:
        raise UsageError(f"{option} takes a size such as 64m, 16g or 2t (a bare number is GiB), not {excerpt(text)}")
    return round(float(number) * _UNITS[unit], 6)


def with_overrides(hw: HardwareFacts, sizes: dict[str, float]) -> HardwareFacts:
    """`hw` with the facts `--host-memory/--shm/--disk` give for this check, each sourced to its option."""
    from h3doctor.record import replace

    given = {OVERRIDE_OPTIONS[o]: v for o, v in sizes.items() if v is not None}
    if not given:
        return hw
    sources = {**hw.sources, **{OVERRIDE_OPTIONS[o]: o for o, v in sizes.items() if v is not None}}
    return replace(hw, **given, sources=sources)


def assumed(hw: HardwareFacts) -> dict[str, Any]:
    """The host facts a check stands on (ASSUMED_FACTS), None for each one unknown."""
    names = ASSUMED_FACTS + (CUDA_ASSUMED if hw.platform == "cuda" else ()) + (
        SHARED_POOL_ASSUMED if hw.platform == "cuda" and hw.shares_host_memory else ())
    return {name: list(value) if isinstance(value := getattr(hw, name), tuple) else value for name in names}


def assumed_sources(hw: HardwareFacts) -> dict[str, str | None]:
    """Where each of `assumed(hw)` comes from: the profile, the probe, an option, or the container
    line (`container: --shm-size 1g`, sglang/container_facts.py); None where nothing gave it."""
    return {name: hw.sources.get(name) for name in ASSUMED_FACTS}


def _mark(hw: HardwareFacts, name: str) -> str:
    """" (container)" after a fact the launch's container line gives, not the host's."""
    return " (container)" if hw.sources.get(name, "").startswith("container: ") else ""


# the report header's words for each host fact: sizes with their unit, then what is there (or not)
_SIZES = {"host_memory_gib": "RAM {} GiB", "shm_gib": "/dev/shm {} GiB", "disk_free_gib": "disk {} GiB free",
          "spill_free_gib": "spill {} GiB free"}
_SIZE_NAMES = {"host_memory_gib": "RAM", "shm_gib": "/dev/shm", "disk_free_gib": "free disk",
               "spill_free_gib": "free spill disk"}
_HAS = {"ffmpeg": "ffmpeg+ffprobe", "ffmpeg_encoders": "libx264+aac", "flash_attn": "FlashAttention",
        "fa_kernel": "FA kernel", "hf_token": "Hub token"}


def official_image(hw: HardwareFacts) -> bool:
    """Whether the CUDA stack is a built-in or catalog profile's: the release's official image (host/gpus.py)."""
    return hw.platform == "cuda" and hw.sources.get("torch_cuda", "").startswith(("builtin:", "catalog:"))


def assumed_line(hw: HardwareFacts, stack: bool = True) -> str:
    """The report header's "assumed:" line: each size, then the things present ("has …"), absent
    ("no …") and not known ("unknown: …"), so a whole host fits the hook's screen in two lines."""
    facts = assumed(hw)
    # a size not known is named among the unknowns ("unknown: RAM, …"), never "RAM unknown GiB"; a
    # fact the launch's container gives, not the host, is marked " (container)"
    sizes = [label.format(f"{facts[name]:g}") + _mark(hw, name) for name, label in _SIZES.items()
             if facts[name] is not None]
    unknown = [_SIZE_NAMES[name] + _mark(hw, name) for name in _SIZES if facts[name] is None]
    parts = [", ".join(sizes)] if sizes else []
    for lead, state in (("has ", True), ("no ", False), ("unknown: ", None)):
        named = (unknown if state is None else []) + [label + _mark(hw, name) for name, label in _HAS.items()
                                                      if facts[name] is state]
        if named:
            parts.append(lead + ", ".join(named))
    # the CUDA stack only where sglang runs CUDA; a report header names a profile's official image
    # in its title line instead (`stack=False`), to keep a blocked hook launch on one screen
    cuda = "; " + _cuda_part(hw) if hw.platform == "cuda" and stack else ""
    return "; ".join(parts) + cuda + _shared_pool_part(facts)


def _shared_pool_part(facts: dict[str, Any]) -> str:
    """On a device that shares host memory (only there does `assumed` name them), the cgroup limit and
    the swap sglang's auto-tuner warns of (H3D144, H3D419)."""
    if "swap_gib" not in facts:
        return ""
    limit = {True: "none", False: "set", None: "unknown"}[facts["cgroup_memory_unlimited"]]
    swap = "unknown" if facts["swap_gib"] is None else f"{facts['swap_gib']:g} GiB"
    off = {True: "0", False: "not 0", None: "unknown"}[facts["cgroup_swap_off"]]
    return f"; shared memory pool: cgroup memory limit {limit}, swap {swap}, cgroup memory.swap.max {off}"


def _cuda_part(hw: HardwareFacts) -> str:
    """The CUDA stack: torch's CUDA, the driver's, the sgl-kernel targets. A built-in profile's
    come from the release's official image (and a driver that runs it), said so."""
    def shown(value: Any) -> str:
        return "unknown" if value is None else ",".join(value) if isinstance(value, tuple) else str(value)

    image = "official image" if official_image(hw) else ""
    text = f"torch CUDA {shown(hw.torch_cuda)}, driver CUDA {shown(hw.driver_cuda)}, sgl-kernel {shown(hw.sgl_kernel_sm)}"
    return f"{image}: {text}" if image else text
