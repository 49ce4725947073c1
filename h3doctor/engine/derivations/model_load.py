"""Derived values of what the worker and the loaders see (stages W and L): the weight partition
--model-variant selects, the text encoder and DiT checkpoints and their quantization, the model
dimensions a TP size must divide, and components that are named but never loaded or applied.
Every value cites the sglang code it models.
"""

from __future__ import annotations

import posixpath
import re

from h3doctor.engine.derivations.common import VDN_AUTO_MXFP8, lower_text
from h3doctor.engine.derivations.registry import derives
from h3doctor.sglang.residency import LAYERWISE_OFFLOAD, normalize_layerwise
from h3doctor.sglang.resolve import H3_PACKED_ALIGNMENT, H3_TP_DIMENSIONS, may_be_close

TYPE_CHECKING = False  # typing is not imported at run time (start-up: record.py)
if TYPE_CHECKING:
    from typing import Any


TP_DIMENSIONS = tuple(H3_TP_DIMENSIONS.items())  # in sglang's order and with sglang's names
PACKED_SEQUENCE_ALIGNMENT = H3_PACKED_ALIGNMENT
# runtime/layers/quantization/__init__.py:9-21; any other name fails with "Invalid quantization method"
QUANTIZATION_METHODS = ("auto-round", "fp8", "modelopt", "modelopt_fp8", "modelopt_fp4", "bitsandbytes", "modelslim",
                        "mxfp8", "mxfp4", "mxfp4_npu", "convrot_int8")
# Text encoder: minimax_h3_qwen3vl.py:219-231 needs hidden 5120 and >= 50 layers, i.e. the 32B.
H3_TEXT_ENCODER_SIZE_B = 32.0


def _subfolder_escapes(subfolder: Any) -> bool:
    """composed_pipeline_base.py:213-219 (os.path.normpath, then isabs / '..')."""
    if not isinstance(subfolder, str) or not subfolder:
        return False
    norm = posixpath.normpath(subfolder)
    return norm.startswith("/") or norm == ".." or norm.startswith("../")


def _variant_suggestion(variant: Any, variants: dict[str, str]) -> str | None:
    """The supported variant a rejected --model-variant most likely meant (None: drop the flag)."""
    key = lower_text(variant) or ""
    key = key.replace("-", "").replace("_", "")
    if key in ("t2va", "t2v", "text2va", "fl2v", "flf2va", "i2va"):
        return "fl2va"  # tasks served by the FL2VA partition
    if key in ("ref2v", "r2va", "reference"):
        return "ref2va"
    if not any(may_be_close(key, v, 0.6) for v in variants):
        return None  # difflib's answer too, without importing it (a clean check's path)
    import difflib

    close = difflib.get_close_matches(key, list(variants), n=1, cutoff=0.6)
    return close[0] if close else None


def _named_size_b(path: Any) -> float | None:
    """The parameter count a checkpoint name states (`Qwen3-VL-8B-Instruct` -> 8.0), if any.

    MoE names (`30B-A3B`) give the total; the first size in the name is taken.
    """
    if not isinstance(path, str):
        return None
    match = re.search(r"(?<![A-Za-z0-9.])(\d+(?:\.\d+)?)[Bb](?![A-Za-z0-9])", path.replace("_", "-"))
    return float(match.group(1)) if match else None


def _dit_quantization(a: dict[str, Any]) -> str | None:
    """The runtime quant config the DiT loader builds from flags alone (transformer_load_utils.py:1031).

    VDN's none/bf16 -> None and Blackwell mxfp8 rewrite already happened in the resolver. A
    quantized --transformer-weights-path is invisible here (its markers are inside the file).
    """
    q = a.get("quantization")
    return q if q in QUANTIZATION_METHODS else None


@derives("model_variant_blank", "model_variant_unsupported", "model_variant_suggestion", "model_variant_subfolder",
         "hybrid_without_merged_weights", "variant_subfolder_conflict", "model_subfolder_escapes")
def model_variant(r: Any, hw: Any, ctx: dict[str, Any]) -> dict[str, Any]:
    a = r.args
    variant = a.get("model_variant")
    subfolder = a.get("model_subfolder")
    norm_variant = lower_text(variant)
    # --model-variant -> weight partition, as this release's pipeline maps it (case-insensitive)
    variants = r.release.model_variants
    return {
        "derived.model_variant_blank": variant is not None and not norm_variant,
        "derived.model_variant_unsupported": bool(norm_variant) and norm_variant not in variants,
        "derived.model_variant_suggestion": _variant_suggestion(variant, variants),
        "derived.model_variant_subfolder": variants.get(norm_variant or ""),
        "derived.hybrid_without_merged_weights": norm_variant == "hybrid" and not (
            (a.get("component_weights_paths") or {}).get("transformer") or a.get("transformer_weights_path")
        ),
        "derived.variant_subfolder_conflict": (
            norm_variant in variants
            and isinstance(subfolder, str)
            and subfolder.strip().lower() != variants[norm_variant].lower()
        ),
        # With a valid --model-variant the pipeline replaces model_subfolder (minimax_h3_pipeline.py:117).
        "derived.model_subfolder_escapes": variant is None and _subfolder_escapes(subfolder),
    }


@derives("text_encoder_needs_projection", "text_encoder_online_quantization")
def text_encoder_load(r: Any, hw: Any, ctx: dict[str, Any]) -> dict[str, Any]:
    a = r.args
    paths = a.get("component_paths") or {}
    encoder = paths.get("text_encoder")
    size = _named_size_b(encoder)
    te_quant = lower_text((a.get("component_quantizations") or {}).get("text_encoder"))
    return {
        "derived.text_encoder_needs_projection": (
            None if encoder is None or "conditioning_projection" in paths
            else ("yes" if size is not None and size < H3_TEXT_ENCODER_SIZE_B
                  else "no" if size == H3_TEXT_ENCODER_SIZE_B else "unknown")
        ),
        "derived.text_encoder_online_quantization": te_quant if te_quant in ("fp8", "convrot_int8", "mxfp4") else None,
    }


@derives("checkpoint_variant_mismatch", "checkpoint_variant_first_mismatch", "model_variant_for_load",
         "dit_quantization", "vdn_implicit_mxfp8", reads=(VDN_AUTO_MXFP8,))
def dit_load(r: Any, hw: Any, ctx: dict[str, Any]) -> dict[str, Any]:
    a = r.args
    weights = a.get("transformer_weights_path")
    selected = str(a.get("model_variant") or "fl2va")
    checkpoint_variant = None
    if isinstance(weights, str) and weights.lower().endswith((".safetensors", ".gguf")):
        marks = {v for v in ("fl2va", "ref2va") if v in weights.lower()}
        if len(marks) == 1 and selected.strip().lower() != "hybrid" and selected.lower() not in marks:
            checkpoint_variant = marks.pop()
    # sglang 0.5.19's loader (minimax_h3_weights.py:84-98) takes the first of fl2va/ref2va the
    # name holds, so a name holding both mismatches any other variant (rule H3D550).
    first_mark = None
    if isinstance(weights, str) and weights.lower().endswith((".safetensors", ".gguf")):
        first_mark = next((v for v in ("fl2va", "ref2va") if v in weights.lower()), None)
    return {
        "derived.checkpoint_variant_mismatch": checkpoint_variant,
        "derived.checkpoint_variant_first_mismatch": first_mark if first_mark not in (None, selected.lower()) else None,
        "derived.model_variant_for_load": selected,
        "derived.dit_quantization": _dit_quantization(a),
        "derived.vdn_implicit_mxfp8": bool(ctx.get(VDN_AUTO_MXFP8)) and "quantization" not in r.explicit,
    }


@derives("tp_bad_dimension", "tp_bad_dimension_value", "h3_packed_alignment")
def tp_dimensions(r: Any, hw: Any, ctx: dict[str, Any]) -> dict[str, Any]:
    tp = r.args.get("tp_size") or 1
    bad = next(((n, v) for n, v in TP_DIMENSIONS if v % tp), None) if isinstance(tp, int) and tp > 0 else None
    return {
        "derived.tp_bad_dimension": bad[0] if bad else None,
        "derived.tp_bad_dimension_value": bad[1] if bad else None,
        "derived.h3_packed_alignment": PACKED_SEQUENCE_ALIGNMENT,
    }


@derives("transformer_role_overrides", "layerwise_unsupported_components")
def components_never_applied(r: Any, hw: Any, ctx: dict[str, Any]) -> dict[str, Any]:
    a, explicit = r.args, r.explicit
    # L24: the H3 pipeline also loads `processor` and `tokenizer` (minimax_h3_pipeline.py:45-56),
    # which are not layerwise-offloadable modules; selecting one explicitly fails after the download
    # (layerwise_offload.py:3566-3575). Other unknown names are simply never loaded.
    chosen = set(normalize_layerwise(a.get("layerwise_offload_components")) or ()) if "layerwise_offload_components" in explicit else set()
    chosen |= {c for c, mode in (a.get("component_residency") or {}).items() if mode == LAYERWISE_OFFLOAD}
    return {
        # L25 (derived in the catalog): a role-qualified transformer override is never applied, because
        # the H3 DiT picks its attention lazily and records no per-role selection at load (selector.py:223)
        "derived.transformer_role_overrides": sorted(
            f"{k}={v}" for k, v in (a.get("component_attention_backends") or {}).items()
            if str(k).startswith("transformer.")
        ),
        "derived.layerwise_unsupported_components": sorted(chosen & {"processor", "tokenizer"}),
    }
