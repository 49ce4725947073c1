"""Hardware as facts: what sglang's platform layer would report, from a profile or a live probe (probe.py).

Rules never look at where a fact came from; they read the fields of `HardwareFacts`. A value
of None means *unknown*, and rules that need it report "cannot verify" instead of passing.
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field
from importlib import resources
from pathlib import Path
from typing import Any

from h3doctor.errors import UsageError

PLATFORMS = ("cuda", "rocm", "mps", "cpu", "xpu", "npu", "musa")
MAX_PROFILE_BYTES = 1 << 20

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
}


@dataclass(frozen=True)
class HardwareFacts:
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
    source: str = "profile"
    description: str = ""
    sources: dict[str, str] = field(default_factory=dict)

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
        data = asdict(self)
        data["cc_major"] = self.cc_major
        data["cc_int"] = self.cc_int
        return data


def builtin_profile_names() -> list[str]:
    return sorted(
        p.name.removesuffix(".json")
        for p in resources.files("h3doctor.profiles").iterdir()
        if p.name.endswith(".json")
    )


def _read_profile_text(name_or_path: str) -> tuple[str, str]:
    # built-in profiles are JSON so that a check on one never imports a YAML parser
    builtin = resources.files("h3doctor.profiles").joinpath(f"{name_or_path}.json")
    if "/" not in name_or_path and builtin.is_file():
        return builtin.read_text(encoding="utf-8"), f"builtin:{name_or_path}.json"
    path = Path(name_or_path)
    if not path.is_file():
        names = ", ".join(builtin_profile_names())
        raise UsageError(f"no such hardware profile {name_or_path!r}; built-in profiles: {names}")
    if path.stat().st_size > MAX_PROFILE_BYTES:
        raise UsageError("profile file is larger than 1 MiB", location=str(path))
    try:
        return path.read_text(encoding="utf-8"), str(path)
    except (OSError, UnicodeDecodeError) as exc:
        raise UsageError(f"cannot read profile: {exc}", location=str(path)) from None


def profile_mapping(name_or_path: str) -> tuple[dict[str, Any], str]:
    """The raw mapping of a built-in profile or a profile file, and where it came from."""
    text, origin = _read_profile_text(name_or_path)
    return _parse_profile(text, origin), origin


def load_profile(name_or_path: str) -> HardwareFacts:
    """A built-in profile name (e.g. `4xH200`) or a YAML/JSON profile file."""
    data, origin = profile_mapping(name_or_path)
    return facts_from_mapping(data, origin)


def _parse_profile(text: str, origin: str) -> dict[str, Any]:
    if origin.endswith(".json"):
        try:
            data = json.loads(text)
        except ValueError as exc:
            line = getattr(exc, "lineno", None)
            raise UsageError(f"malformed profile: {exc}", location=f"{origin}:{line}" if line else origin) from None
    else:
        import yaml

        try:
            data = yaml.safe_load(text)
        except yaml.YAMLError as exc:
            mark = getattr(exc, "problem_mark", None)
            where = f"{origin}:{mark.line + 1}" if mark is not None else origin
            raise UsageError(f"malformed profile: {getattr(exc, 'problem', None) or exc}", location=where) from None
    if not isinstance(data, dict):
        raise UsageError("a profile must be a mapping of fact names to values", location=origin)
    return data


def facts_from_mapping(data: dict[str, Any], origin: str) -> HardwareFacts:
    unknown = sorted(set(data) - set(_PROFILE_KEYS) - {"name", "sources", "source"})
    if unknown:
        raise UsageError(
            f"unknown profile key(s): {', '.join(unknown)}; known: {', '.join(sorted(_PROFILE_KEYS))}",
            location=origin,
        )
    for key, types in _PROFILE_KEYS.items():
        value = data.get(key)
        if key in data and not isinstance(value, types) or (isinstance(value, bool) and bool not in types):
            expected = " or ".join("null" if t is type(None) else t.__name__ for t in types)
            raise UsageError(f"profile key {key!r} must be {expected}, got {value!r}", location=origin)
    platform = data.get("platform")
    if platform not in PLATFORMS:
        raise UsageError(f"profile 'platform' must be one of {', '.join(PLATFORMS)}, got {platform!r}", location=origin)
    cc = data.get("compute_capability")
    if cc is not None and not _valid_cc(cc):
        raise UsageError(f"profile 'compute_capability' must look like \"9.0\", got {cc!r}", location=origin)
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
        source=origin,
        description=data.get("description", ""),
        sources={k: origin for k in data},
    )


def _valid_cc(cc: str) -> bool:
    major, dot, minor = cc.partition(".")
    return bool(dot) and major.isdigit() and minor.isdigit()


def apply_platform_override(facts: HardwareFacts, env: dict[str, str]) -> HardwareFacts:
    """SGLANG_DIFFUSION_PLATFORM_OVERRIDE wins over detection (catalog 3.2 step 1)."""
    override = (env.get("SGLANG_DIFFUSION_PLATFORM_OVERRIDE") or "").strip().lower()
    if not override or override == facts.platform or override not in PLATFORMS:
        return facts
    from dataclasses import replace

    return replace(facts, platform=override, source=f"{facts.source} + SGLANG_DIFFUSION_PLATFORM_OVERRIDE")
