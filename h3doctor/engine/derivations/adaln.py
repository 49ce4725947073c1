"""Derived values of the H3 AdaLN plans (catalog R9): whether they are precomputed, the GPU plan
budget, and the plan widths the served tasks need.
"""

from __future__ import annotations

from h3doctor.engine.derivations.common import lower_text
from h3doctor.engine.derivations.registry import derives

TYPE_CHECKING = False  # typing is not imported at run time (start-up: record.py)
if TYPE_CHECKING:
    from typing import Any


ADALN_GPU_PLANS_DEFAULT = 64  # envs.py:46
# minimax_h3_adaln_cache.py:598: "t2va needs 2, fl2va 3, ref2va 4"; task_profiles.py: the FL2VA
# partition serves t2va and fl2va, Ref2VA serves ref2va, a hybrid merge serves all three.
PLAN_WIDTH_BY_TASK = {"t2va": 2, "fl2va": 3, "ref2va": 4}


def _int_env(env: dict[str, str], name: str, default: int) -> int | None:
    """envs._lazy_int: unset -> default; otherwise int(value) (None here when that raises)."""
    raw = env.get(name)
    if raw is None:
        return default
    try:
        return int(raw)
    except ValueError:
        return None


def _plan_width_needs(family: str | None, variant: Any) -> tuple[int, int]:
    """(narrowest, widest) AdaLN plan width the served tasks need (catalog R9)."""
    if family == "fh3":  # one t2va-distilled partition (minimax_h3.py:366)
        tasks = ("t2va",)
    elif family == "fh3o":  # one ref2va-distilled partition (minimax_h3.py:426)
        tasks = ("ref2va",)
    elif family == "vdn":  # one fl2va partition serving t2va and fl2va (minimax_h3_vdn.py:31)
        tasks = ("t2va", "fl2va")
    else:
        v = lower_text(variant) or "fl2va"
        tasks = {"fl2va": ("t2va", "fl2va"), "ref2va": ("ref2va",)}.get(v, ("t2va", "fl2va", "ref2va"))
    widths = [PLAN_WIDTH_BY_TASK[t] for t in tasks]
    return min(widths), max(widths)


@derives("adaln_precomputed", "adaln_cache_variant_ok", "adaln_cache_variant_fix", "adaln_gpu_plans",
         "request_sigma_intervals", "adaln_plan_width_need_min", "adaln_plan_width_need", reads=("intent.steps",))
def adaln_plans(r: Any, hw: Any, ctx: dict[str, Any]) -> dict[str, Any]:
    a = r.args
    variant = a.get("model_variant")
    norm_variant = lower_text(variant)
    case_variant = norm_variant if norm_variant in ("fl2va", "ref2va") else None
    # Up to 0.5.21 num_inference_steps counts sigma grid points (both ends), so a request runs
    # steps - 1 denoise forwards, each with its own AdaLN plan (release_metadata.py:161 in 0.5.20).
    steps = ctx.get("intent.steps")
    low, high = _plan_width_needs(r.family.key, variant)
    return {
        "derived.adaln_precomputed": a.get("minimax_h3_adaln_cache_path") is not None or bool(a.get("minimax_h3_adaln_online")),
        "derived.adaln_cache_variant_ok": variant in ("fl2va", "ref2va"),
        # The variant that keeps the weights the user already selects: None -> the FL2VA partition.
        "derived.adaln_cache_variant_fix": case_variant if variant is not None else "fl2va",
        "derived.adaln_gpu_plans": _int_env(r.env, "SGLANG_DIFFUSION_MINIMAX_H3_ADALN_GPU_PLANS", ADALN_GPU_PLANS_DEFAULT),
        "derived.request_sigma_intervals": steps - 1 if isinstance(steps, int) and not isinstance(steps, bool) else None,
        "derived.adaln_plan_width_need_min": low,
        "derived.adaln_plan_width_need": high,
    }
