"""Derived values of the attention backend the H3 hook picks and probes: where T comes from,
the device capability as sglang prints it, the backend config's parse, and the error the
launcher's backend probe raises on this platform (catalog M11).
"""

from __future__ import annotations

from h3doctor.engine.derivations.common import ATTENTION_BACKEND_CONFIG_ERROR
from h3doctor.engine.derivations.registry import derives

TYPE_CHECKING = False  # typing is not imported at run time (start-up: record.py)
if TYPE_CHECKING:
    from typing import Any

# M11: get_attn_backend(128, bf16, selected=T, packed_varlen) in the H3 hook (minimax_h3.py:322-330),
# by platform (platforms/cuda.py:133-565, 818-846; rocm.py:102-196; npu.py:110-175; mps.py:90-101).
CUDA_NO_RESOLVER = ("aiter_sage", "laser_attn", "block_sparse_attn", "rain_fusion_attn", "no_attention")
SPARGE_CAPS = (80, 86, 87, 89, 90)
VSA_H3_CAPS = (80, 90, 100, 103)
HYBRID_CAPS = (80, 86, 89, 90, 100, 103, 120)
SUBBLOCK_CAPS = (90, 100, 120)


def _capability_text(hw: Any) -> str | None:
    """DeviceCapability.as_version_str(), "unknown" where the platform reports none."""
    return hw.compute_capability or "unknown"


def _transformer_backend_source(a: dict[str, Any]) -> str | None:
    """Where resolve_transformer_attention_backend's T comes from (minimax_h3.py:102-123)."""
    if (a.get("component_attention_backends") or {}).get("transformer"):
        return "override"
    if a.get("attention_backend") is not None:
        return "global"
    return None


def _packed(t: str) -> str:
    return f"Attention backend '{t}' does not implement packed varlen attention"


def _probe_error(t: str | None, valid: bool, hw: Any, facts: dict[str, Any] | None = None) -> tuple[str | None, bool]:
    """(the error the launcher's backend probe raises, or None; whether it depends on an unknown cc).
    `facts`: the target release's attention-backend facts (releases.attention_backend_facts)."""
    if t is None or not valid or (facts and t not in facts["names"]):
        return None, False  # a name the release lacks fails before the probe (M4, or the component map)
    platform = hw.platform
    if platform == "cuda":
        if t in CUDA_NO_RESOLVER:
            return "Invalid attention backend for cuda", False
        if t == "aiter":
            # cuda.py:101 resolves to backends.aiter without a check; importing it needs AMD's `aiter`
            # package, and pkgutil.resolve_name turns the ImportError into this (recorded through sglang)
            return ("AttributeError: module 'sglang.multimodal_gen.runtime.layers.attention.backends' "
                    "has no attribute 'aiter'"), False
        if t in ("fa2", "sliding_tile_attn", "video_sparse_attn", "vmoba_attn", "sla_attn", "sage_sla_attn",
                 "sparse_video_gen_2_attn"):
            return _packed(t), False
        if t not in ("sparge_attn", "video_sparse_attn_h3", "hybrid_window_attn_h3", "subblock_sparse_attn",
                     "cube_sparse_attn"):
            return None, False
        cc = hw.cc_int
        if cc is None:
            return None, True
        found = hw.compute_capability
        blackwell_fa_missing = hw.cc_major in (10, 12) and hw.flash_attn is False
        if t == "sparge_attn":
            if cc not in SPARGE_CAPS:
                return f"SpargeAttention supports CUDA compute capabilities 8.0, 8.6, 8.7, 8.9, and 9.0; found {found}.", False
            return _packed(t), False
        vsa = (facts or {}).get("vsa_h3")
        if t == "video_sparse_attn_h3" and cc not in (vsa["capabilities"] if vsa else VSA_H3_CAPS):
            if vsa:
                return vsa["message"].format(found=found), False
            return ("VSA-H3 (video_sparse_attn_h3) needs compute capability 8.0 (A100), 9.0 (Hopper), 10.0 "
                    f"(B200 / GB200) or 10.3 (B300 / GB300); this device reports {found}."), False
        if t == "hybrid_window_attn_h3":
            if cc not in HYBRID_CAPS:
                return ("hybrid_window_attn_h3 (VDN-H3) needs compute capability 8.0 / 8.6 / 8.9 (Ampere, Ada), 9.0 "
                        "(Hopper), 10.0 (B200 / GB200), 10.3 (B300 / GB300) or 12.0 (RTX PRO 6000 Blackwell); this "
                        f"device reports {found}."), False
            if blackwell_fa_missing:
                return "RuntimeError: hybrid_window_attn_h3 requires FlashAttention for its dense legs", False
        subblock = (facts or {}).get("subblock")
        if t == "subblock_sparse_attn" and cc not in (subblock["capabilities"] if subblock else SUBBLOCK_CAPS):
            if subblock:
                return subblock["message"].format(found=found), False
            return f"SubBlock sparse attention needs compute capability 9.0, 10.0, or 12.0; this device reports {found}.", False
        if t == "cube_sparse_attn" and blackwell_fa_missing:
            return "RuntimeError: cube sparse attention requires FlashAttention for H3's dense paths", False
        return None, False
    if platform == "rocm":
        if t in ("fa", "torch_sdpa", "aiter"):
            return None, False
        if t == "aiter_sage":
            return _packed(t), False
        if t in ("sliding_tile_attn", "sage_attn"):
            return f"{t.upper()} is not supported on rocm.", False
        return f"Invalid attention backend for rocm: {t}", False
    if platform == "npu" and t in ("block_sparse_attn", "rain_fusion_attn"):
        return _packed(t), False
    return None, False  # MPS and CPU resolve every backend to torch_sdpa


@derives("attention_backend_config_error", "subblock_compute_mode", "capability_text", "transformer_backend_source",
         reads=(ATTENTION_BACKEND_CONFIG_ERROR,))
def attention_backend_inputs(r: Any, hw: Any, ctx: dict[str, Any]) -> dict[str, Any]:
    a = r.args
    abc = a.get("attention_backend_config") if isinstance(a.get("attention_backend_config"), dict) else {}
    return {
        "derived.attention_backend_config_error": ctx.get(ATTENTION_BACKEND_CONFIG_ERROR),
        "derived.subblock_compute_mode": str(abc.get("compute_mode", "bf16")),
        "derived.capability_text": _capability_text(hw),
        "derived.transformer_backend_source": _transformer_backend_source(a),
    }


@derives("m11_probe_error", "m11_needs_cc", "m11_probe_message", reads=("derived.transformer_backend_valid",),
         fallback={"m11_probe_error": None, "m11_needs_cc": False, "m11_probe_message": None})
def attention_backend_probe(r: Any, hw: Any, ctx: dict[str, Any]) -> dict[str, Any]:
    t, valid = r.transformer_backend()
    valid = ctx.get("derived.transformer_backend_valid", valid)  # core's: knows the release's backend names
    probe, needs_cc = _probe_error(t, valid, hw, r.backend_facts)
    return {
        "derived.m11_probe_error": probe,
        "derived.m11_needs_cc": needs_cc,
        "derived.m11_probe_message": probe or (
            f"whether {t} resolves depends on the GPU's compute capability" if needs_cc else None
        ),
    }
