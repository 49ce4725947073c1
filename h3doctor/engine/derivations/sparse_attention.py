"""Derived values of the sparse attention backends' configuration as the first forward reads it
(stage R): cube sparse attention's required keys, VSA's sparsity and mode.
"""

from __future__ import annotations

from h3doctor.engine.derivations.registry import derives

TYPE_CHECKING = False  # typing is not imported at run time (start-up: record.py)
if TYPE_CHECKING:
    from typing import Any


def _float_or_none(value: Any) -> float | None:
    try:
        return float(value)
    except (TypeError, ValueError):
        return None


@derives("cube_requested", "cube_config_missing", "vsa_sparsity", "vsa_sparsity_out_of_range", "vsa_mode",
         "vsa_mode_invalid")
def sparse_attention_config(r: Any, hw: Any, ctx: dict[str, Any]) -> dict[str, Any]:
    a = r.args
    abc = a.get("attention_backend_config") or {}
    cab = a.get("component_attention_backends") or {}
    # denoising.py:359-366 reads the server args, not the resolved runtime backend.
    cube_name = str(cab.get("transformer", a.get("attention_backend"))).lower()
    sparsity = _float_or_none(abc.get("VSA_sparsity", abc.get("sparsity")))
    mode = abc.get("vsa_mode")
    return {
        "derived.cube_requested": cube_name == "cube_sparse_attn",
        "derived.cube_config_missing": not abc.get("local_cube_size") or not abc.get("topk_ratio_list"),
        "derived.vsa_sparsity": sparsity,
        "derived.vsa_sparsity_out_of_range": sparsity is not None and not 0.0 <= sparsity < 1.0,
        "derived.vsa_mode": None if mode is None else str(mode),
        "derived.vsa_mode_invalid": mode is not None and str(mode) not in ("exempt", "compete"),
    }
