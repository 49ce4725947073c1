"""Derived values of where components live: the residency modes --component-residency names,
layerwise-offload tuning, the diffusers backend's pipeline-wide residency and Cache-DiT beside
layerwise offload.
"""

from __future__ import annotations

from h3doctor.engine.derivations.registry import derives
from h3doctor.sglang.residency import (
    LAYERWISE_OFFLOAD,
    SNAPSHOT_OFFLOAD,
    canonical_mode,
)

TYPE_CHECKING = False  # typing is not imported at run time (start-up: record.py)
if TYPE_CHECKING:
    from typing import Any

RESIDENCY_POLICIES = ("leading", "strided")  # server_args.py:3970-3980
RESIDENCY_LIFETIMES = ("forward", "permanent")  # server_args.py:3995-4004


def _diffusers_residency_error(a: dict[str, Any]) -> str | None:
    """resolve_diffusers_pipeline_offload (component_residency.py:144-165)."""
    if str(a.get("backend") or "auto").lower() != "diffusers":
        return None
    assignments = a.get("component_residency")
    if assignments is None:
        return None
    modes = list(assignments.values())
    if LAYERWISE_OFFLOAD in modes:
        return "--component-residency layerwise-offload requires the native SGLang backend"
    if SNAPSHOT_OFFLOAD in modes:
        return "--component-residency snapshot-offload requires the native SGLang backend"
    if len(assignments) == 1 and "all" in assignments:
        return None
    return ("The diffusers backend supports only pipeline-wide residency; use "
            "--component-residency all=resident or all=component-offload")


def _layerwise_tuning_error(a: dict[str, Any]) -> tuple[str | None, str | None]:
    """_validate_offload, C6 then C7 (server_args.py:3949-4004)."""
    try:
        if a.get("dit_layerwise_resident_layers") is not None and a["dit_layerwise_resident_layers"] < 0:
            return "resident_layers", "dit_layerwise_resident_layers must be non-negative"
    except TypeError:
        pass
    # A release whose ServerArgs has no such field (policy before 0.5.18, lifetime before 0.5.21:
    # its flag table has no dest for it) has no such check either.
    policy = a.get("dit_layerwise_residency_policy")
    if "dit_layerwise_residency_policy" in a and policy not in RESIDENCY_POLICIES:
        return "policy", f"Invalid --dit-layerwise-residency-policy {policy!r}; expected one of {RESIDENCY_POLICIES}."
    lifetime = a.get("dit_layerwise_residency_lifetime")
    if "dit_layerwise_residency_lifetime" in a and lifetime not in RESIDENCY_LIFETIMES:
        return "lifetime", f"Invalid --dit-layerwise-residency-lifetime {lifetime!r}; expected one of {RESIDENCY_LIFETIMES}."
    return None, None


def _offload_size_overflow(a: dict[str, Any]) -> bool:
    """_validate_offload (server_args.py:3932-3958) truncates a prefetch size above 1 and a
    resident-layer count from 1 on that are not whole with int(math.floor(v)), the prefetch size
    first, the count after refusing a negative one: for +inf (not whole) floor raises OverflowError."""
    def infinite(value: Any) -> bool:
        return isinstance(value, float) and value == float("inf")

    return infinite(a.get("dit_offload_prefetch_size")) or infinite(a.get("dit_layerwise_resident_layers"))


@derives("offload_size_overflow", fallback={"offload_size_overflow": False})
def offload_size_overflow(r: Any, hw: Any, ctx: dict[str, Any]) -> dict[str, Any]:
    return {"derived.offload_size_overflow": _offload_size_overflow(r.args)}


def _has_layerwise(a: dict[str, Any]) -> bool:
    """ServerArgs.has_layerwise_offload_components (server_args.py:1975-1983)."""
    residency = a.get("component_residency") or {}
    return bool(a.get("dit_layerwise_offload") or a.get("layerwise_offload_components")
                or LAYERWISE_OFFLOAD in residency.values())


@derives("residency_modes", "snapshot_offload_selected", "dit_snapshot_offload")
def residency_modes(r: Any, hw: Any, ctx: dict[str, Any]) -> dict[str, Any]:
    residency = r.args.get("component_residency") or {}
    return {
        "derived.residency_modes": sorted(set(residency.values())),  # every mode --component-residency names
        "derived.snapshot_offload_selected": SNAPSHOT_OFFLOAD in residency.values(),
        "derived.dit_snapshot_offload": canonical_mode("transformer", residency) == SNAPSHOT_OFFLOAD,
    }


@derives("diffusers_residency_error", fallback={"diffusers_residency_error": None})
def diffusers_residency_error(r: Any, hw: Any, ctx: dict[str, Any]) -> dict[str, Any]:
    return {"derived.diffusers_residency_error": _diffusers_residency_error(r.args)}


@derives("layerwise_tuning_error_kind", "layerwise_tuning_error",
         fallback={"layerwise_tuning_error_kind": None, "layerwise_tuning_error": None})
def layerwise_tuning_error(r: Any, hw: Any, ctx: dict[str, Any]) -> dict[str, Any]:
    kind, message = _layerwise_tuning_error(r.args)
    return {"derived.layerwise_tuning_error_kind": kind, "derived.layerwise_tuning_error": message}


@derives("cache_dit_enabled", "has_layerwise_offload_components")
def layerwise_with_cache_dit(r: Any, hw: Any, ctx: dict[str, Any]) -> dict[str, Any]:
    return {"derived.cache_dit_enabled": r.cache_dit, "derived.has_layerwise_offload_components": _has_layerwise(r.args)}
