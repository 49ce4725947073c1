"""The derived values most rules share: the transformer backend T and what the DiT really runs,
per-component residency, and the parallel-layout products sglang's checks compute.
"""

from __future__ import annotations

from typing import Any

from h3doctor.sglang.releases import attention_backends
from h3doctor.sglang.residency import H3_COMPONENTS, LAYERWISE_OFFLOAD
from h3doctor.sglang.resolve import (
    H3_ATTENTION_HEADS,
    dit_runtime_backend,
    suggest_backend,
)


def derive(r: Any, hw: Any, ctx: dict[str, Any]) -> dict[str, Any]:
    a = r.a
    t, t_valid = r.transformer_backend()
    # the hook's AttentionBackendEnum[...] lookup of the global backend (catalog M4) knows only the
    # names of the target release: 0.5.18 has no video_sparse_attn_h3, for one
    known = attention_backends(ctx.get("release.table"))
    if t_valid and t is not None and known is not None and not (a.get("component_attention_backends") or {}).get("transformer"):
        t_valid = t in known
    suggestion = suggest_backend(a.get("attention_backend"))
    dp, tp = a.get("dp_size"), a.get("tp_size")
    cfg = a.get("cfg_parallel_degree") or 1
    cfg_on = bool(a.get("enable_cfg_parallel"))
    residency = {c: r.res.mode(c) for c in H3_COMPONENTS}
    runtime = dit_runtime_backend(t if t_valid else None, hw)
    return {
        "derived.config_class": r.family.config_class,
        "derived.transformer_backend": t,
        "derived.transformer_backend_valid": t_valid,
        "derived.dit_backend": runtime,
        "derived.fa_really_runs": dit_runtime_backend("fa", hw) == "fa" if hw.platform == "cuda" and hw.cc_major is not None else False,
        "derived.residency": residency,
        **{f"derived.residency_{c}": m for c, m in residency.items()},
        "derived.mps_layerwise_missing": [c for c in H3_COMPONENTS if residency[c] != LAYERWISE_OFFLOAD],
        "derived.dit_layerwise_selected": residency["transformer"] == LAYERWISE_OFFLOAD,
        "derived.dp_tp_cfg": dp * tp * (cfg if cfg_on else 1),
        "derived.cfg_factor_text": f" * {cfg}" if cfg_on else "",
        # resolution already turned unset degrees into 1; an explicit 0 stays 0, as in sglang's C28
        "derived.ring_x_ulysses": a.get("ring_degree") * a.get("ulysses_degree"),
        "derived.world_needed": dp * cfg * a.get("sp_degree") * tp,
        "derived.tp_local_heads": H3_ATTENTION_HEADS // tp if tp and H3_ATTENTION_HEADS % tp == 0 else None,
        "derived.transformer_backend_upper": str(a.get("attention_backend")).strip().upper(),
        # an f-string of AttentionBackendEnum prints name.lower() (platforms/interface.py:56-57)
        "derived.transformer_backend_enum": t if t else "None",
        "derived.attention_backend_suggestion": suggestion if known is None or suggestion in known else "fa",
        "derived.abc_vdn_dense_smoke": bool((a.get("attention_backend_config") or {}).get("vdn_h3_dense_smoke")),
    }
