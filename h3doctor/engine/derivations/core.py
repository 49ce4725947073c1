"""The derived values most rules share: the transformer backend T and what the DiT really runs,
per-component residency, and the parallel-layout products sglang's checks compute. They run
first: later derivations read them.
"""

from __future__ import annotations

from h3doctor.engine.derivations.registry import derives
from h3doctor.sglang.residency import H3_COMPONENTS, LAYERWISE_OFFLOAD
from h3doctor.sglang.resolve import (
    H3_ATTENTION_HEADS,
    dit_runtime_backend,
    suggest_backend,
)

TYPE_CHECKING = False  # typing is not imported at run time (start-up: record.py)
if TYPE_CHECKING:
    from typing import Any


@derives("config_class", "transformer_backend", "transformer_backend_valid", "dit_backend", "fa_really_runs",
         "transformer_backend_upper", "transformer_backend_enum", "attention_backend_suggestion",
         "abc_vdn_dense_smoke")
def transformer_backend(r: Any, hw: Any, ctx: dict[str, Any]) -> dict[str, Any]:
    a = r.args
    t, t_valid = r.transformer_backend()
    # the hook's AttentionBackendEnum[...] lookup of the global backend (catalog M4) knows only the
    # names of the target release: 0.5.18 has no video_sparse_attn_h3, for one
    known = r.release.attention_backends
    if t_valid and t is not None and known is not None and not (a.get("component_attention_backends") or {}).get("transformer"):
        t_valid = t in known
    suggestion = suggest_backend(a.get("attention_backend"))
    return {
        "derived.config_class": r.family.config_class,
        "derived.transformer_backend": t,
        "derived.transformer_backend_valid": t_valid,
        "derived.dit_backend": dit_runtime_backend(t if t_valid else None, hw),
        "derived.fa_really_runs": dit_runtime_backend("fa", hw) == "fa" if hw.platform == "cuda" and hw.cc_major is not None else False,
        "derived.transformer_backend_upper": str(a.get("attention_backend")).strip().upper(),
        # an f-string of AttentionBackendEnum prints name.lower() (platforms/interface.py:56-57)
        "derived.transformer_backend_enum": t if t else "None",
        "derived.attention_backend_suggestion": suggestion if known is None or suggestion in known else "fa",
        "derived.abc_vdn_dense_smoke": bool((a.get("attention_backend_config") or {}).get("vdn_h3_dense_smoke")),
    }


@derives("residency", "residency_transformer", "mps_layerwise_missing", "dit_layerwise_selected")
def residency(r: Any, hw: Any, ctx: dict[str, Any]) -> dict[str, Any]:
    modes = {c: r.res.mode(c) for c in H3_COMPONENTS}
    return {
        "derived.residency": modes,
        "derived.residency_transformer": modes["transformer"],
        "derived.mps_layerwise_missing": [c for c in H3_COMPONENTS if modes[c] != LAYERWISE_OFFLOAD],
        "derived.dit_layerwise_selected": modes["transformer"] == LAYERWISE_OFFLOAD,
    }


@derives("dp_tp_cfg", "cfg_factor_text", "ring_x_ulysses", "world_needed", "tp_local_heads",
         points_at={"dp_tp_cfg": ("tp_size", "dp_size"), "ring_x_ulysses": ("ulysses_degree", "ring_degree")})
def parallel_layout(r: Any, hw: Any, ctx: dict[str, Any]) -> dict[str, Any]:
    a = r.args
    dp, tp = a.get("dp_size"), a.get("tp_size")
    cfg = a.get("cfg_parallel_degree") or 1
    cfg_on = bool(a.get("enable_cfg_parallel"))
    return {
        "derived.dp_tp_cfg": dp * tp * (cfg if cfg_on else 1),
        "derived.cfg_factor_text": f" * {cfg}" if cfg_on else "",
        # resolution already turned unset degrees into 1; an explicit 0 stays 0, as in sglang's C28
        "derived.ring_x_ulysses": a.get("ring_degree") * a.get("ulysses_degree"),
        "derived.world_needed": dp * cfg * a.get("sp_degree") * tp,
        "derived.tp_local_heads": H3_ATTENTION_HEADS // tp if tp and H3_ATTENTION_HEADS % tp == 0 else None,
    }
