"""Derived values for the runtime rules (see derivations/__init__.py).

These model state sglang computes in the worker (stage W), while loading components (L) and at
the first request (R): values rule conditions cannot read straight from `args.*` because sglang
normalises, defaults or combines them first. Every value cites the sglang 0.5.23 code it models.
"""

from __future__ import annotations

import difflib
import posixpath
import re
from typing import Any

from h3doctor.engine.derivations.registry import derives
from h3doctor.sglang.residency import (
    LAYERWISE_OFFLOAD,
    canonical_mode,
    normalize_layerwise,
)
from h3doctor.sglang.flagtable import DEFAULT_SGLANG_VERSION
from h3doctor.sglang.releases import model_variants, quality_high_audited, quality_levels
from h3doctor.sglang.resolve import H3_PACKED_ALIGNMENT, H3_TP_DIMENSIONS


TP_DIMENSIONS = tuple(H3_TP_DIMENSIONS.items())  # in sglang's order and with sglang's names
PACKED_SEQUENCE_ALIGNMENT = H3_PACKED_ALIGNMENT

ADALN_GPU_PLANS_DEFAULT = 64  # envs.py:46
# minimax_h3_adaln_cache.py:598: "t2va needs 2, fl2va 3, ref2va 4"; task_profiles.py: the FL2VA
# partition serves t2va and fl2va, Ref2VA serves ref2va, a hybrid merge serves all three.
PLAN_WIDTH_BY_TASK = {"t2va": 2, "fl2va": 3, "ref2va": 4}

# runtime/layers/quantization/__init__.py:9-21; any other name fails with "Invalid quantization method"
QUANTIZATION_METHODS = ("auto-round", "fp8", "modelopt", "modelopt_fp8", "modelopt_fp4", "bitsandbytes", "modelslim",
                        "mxfp8", "mxfp4", "mxfp4_npu", "convrot_int8")

# Text encoder: minimax_h3_qwen3vl.py:219-231 needs hidden 5120 and >= 50 layers, i.e. the 32B.
H3_TEXT_ENCODER_SIZE_B = 32.0


def _lower(value: Any) -> str | None:
    return value.strip().lower() if isinstance(value, str) else None


def _subfolder_escapes(subfolder: Any) -> bool:
    """composed_pipeline_base.py:213-219 (os.path.normpath, then isabs / '..')."""
    if not isinstance(subfolder, str) or not subfolder:
        return False
    norm = posixpath.normpath(subfolder)
    return norm.startswith("/") or norm == ".." or norm.startswith("../")


def _variant_suggestion(variant: Any, variants: dict[str, str]) -> str | None:
    """The supported variant a rejected --model-variant most likely meant (None: drop the flag)."""
    key = _lower(variant) or ""
    key = key.replace("-", "").replace("_", "")
    if key in ("t2va", "t2v", "text2va", "fl2v", "flf2va", "i2va"):
        return "fl2va"  # tasks served by the FL2VA partition
    if key in ("ref2v", "r2va", "reference"):
        return "ref2va"
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


def _int_env(env: dict[str, str], name: str, default: int) -> int | None:
    """envs._lazy_int: unset -> default; otherwise int(value) (None here when that raises)."""
    raw = env.get(name)
    if raw is None:
        return default
    try:
        return int(raw)
    except ValueError:
        return None


def _float_or_none(value: Any) -> float | None:
    try:
        return float(value)
    except (TypeError, ValueError):
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
        v = _lower(variant) or "fl2va"
        tasks = {"fl2va": ("t2va", "fl2va"), "ref2va": ("ref2va",)}.get(v, ("t2va", "fl2va", "ref2va"))
    widths = [PLAN_WIDTH_BY_TASK[t] for t in tasks]
    return min(widths), max(widths)


def _dit_quantization(a: dict[str, Any]) -> str | None:
    """The runtime quant config the DiT loader builds from flags alone (transformer_load_utils.py:1031).

    VDN's none/bf16 -> None and Blackwell mxfp8 rewrite already happened in the resolver. A
    quantized --transformer-weights-path is invisible here (its markers are inside the file).
    """
    q = a.get("quantization")
    return q if q in QUANTIZATION_METHODS else None


class _SetRepr:
    """A set as sglang's f-string shows it (Python orders str sets by a salted hash; pick one)."""

    def __init__(self, items: tuple[Any, ...]):
        self.items = items

    def __repr__(self) -> str:
        return "{" + ", ".join(repr(i) for i in self.items) + "}"


def _quality_high_audit(r: Any, hw: Any, dit_layerwise: bool, version: str) -> tuple[dict[str, Any], bool | None]:
    """minimax_h3.py:132-227: the strict 4xH200 fl2va deployment (catalog 2.H); older releases
    audit fewer server args (flagdata/runtime-facts.json)."""
    a = r.args
    backend = a.get("attention_backend")
    backend = str(backend).strip().lower() if backend is not None else None
    te_quant = (a.get("component_quantizations") or {}).get("text_encoder")
    actual = {
        "attention_backend": backend,
        "backend": str(getattr(a.get("backend"), "value", a.get("backend")) or "auto").lower(),
        "component_attention_backends": dict(a.get("component_attention_backends") or {}),
        "enable_breakable_cuda_graph": a.get("enable_breakable_cuda_graph") or False,
        "enable_torch_compile": a.get("enable_torch_compile") or False,
        "is_dit_layerwise_offload_selected": dit_layerwise,
        "lora_path": a.get("lora_path"),
        "model_variant": str(a.get("model_variant") or "fl2va").lower(),
        "num_gpus": a.get("num_gpus"),
        "performance_mode": a.get("performance_mode"),
        "quantization": a.get("quantization"),
        "transformer_weights_path": a.get("transformer_weights_path"),
        "text_encoder_quantization": te_quant,
        "regional_compile": a.get("regional_compile") or False,
        "ring_degree": a.get("ring_degree"),
        "sp_degree": a.get("sp_degree"),
        "tp_size": a.get("tp_size"),
        "ulysses_degree": a.get("ulysses_degree"),
        "use_fsdp_inference": a.get("use_fsdp_inference") or False,
    }
    expected: dict[str, Any] = {
        "attention_backend": _SetRepr((None, "fa")),
        "backend": _SetRepr(("auto", "sglang")),
        "component_attention_backends": {},
        "enable_breakable_cuda_graph": False,
        "enable_torch_compile": False,
        "is_dit_layerwise_offload_selected": False,
        "lora_path": None,
        "model_variant": "fl2va",
        "num_gpus": 4,
        "performance_mode": "speed",
        "quantization": None,
        "transformer_weights_path": None,
        "text_encoder_quantization": None,
        "regional_compile": False,
        "ring_degree": 1,
        "sp_degree": 4,
        "tp_size": 1,
        "ulysses_degree": 4,
        "use_fsdp_inference": False,
    }
    mismatches: dict[str, Any] = {}
    for name, wanted in expected.items():
        if not quality_high_audited(version, name):
            continue
        got = actual[name]
        bad = got not in wanted.items if isinstance(wanted, _SetRepr) else got != wanted
        if bad:
            mismatches[name] = {"expected": wanted, "actual": got}
    # The device: CUDA, "H200" in GPU 0's NVML name, capability 9.0; 4 GPUs are needed to pass.
    name, cc = hw.device_name, hw.cc_int
    if hw.platform != "cuda":
        platform_class = {"mps": "MpsPlatform", "cpu": "CpuPlatform", "rocm": "RocmPlatform", "xpu": "XPUPlatform",
                          "npu": "NPUPlatform", "musa": "MusaPlatform"}.get(hw.platform, hw.platform)
        device_ok: bool | None = False
        mismatches["device"] = {"expected": "NVIDIA H200 (compute capability 9.0)",
                                "actual": f"{platform_class} (compute capability {cc})"}
    elif (name is not None and "H200" not in name.upper()) or (cc is not None and cc != 90):
        device_ok = False
        mismatches["device"] = {"expected": "NVIDIA H200 (compute capability 9.0)",
                                "actual": f"{name} (compute capability {cc})"}
    elif name is None or cc is None:
        device_ok = None
    else:
        device_ok = (hw.gpu_count or 0) >= 4
    return mismatches, device_ok


def _version(ctx: dict[str, Any]) -> str:
    return ctx.get("release.version") or DEFAULT_SGLANG_VERSION


# -- W: the worker, before the download ------------------------------------------------------

@derives("model_variant_blank", "model_variant_unsupported", "model_variant_suggestion", "model_variant_subfolder",
         "hybrid_without_merged_weights", "variant_subfolder_conflict", "model_subfolder_escapes")
def model_variant(r: Any, hw: Any, ctx: dict[str, Any]) -> dict[str, Any]:
    a = r.args
    variant = a.get("model_variant")
    subfolder = a.get("model_subfolder")
    norm_variant = _lower(variant)
    # --model-variant -> weight partition, as this release's pipeline maps it (case-insensitive)
    variants = model_variants(_version(ctx))
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


# -- L: component loading, after the download ------------------------------------------------

@derives("text_encoder_needs_projection", "text_encoder_online_quantization")
def text_encoder_load(r: Any, hw: Any, ctx: dict[str, Any]) -> dict[str, Any]:
    a = r.args
    paths = a.get("component_paths") or {}
    encoder = paths.get("text_encoder")
    size = _named_size_b(encoder)
    te_quant = _lower((a.get("component_quantizations") or {}).get("text_encoder"))
    return {
        "derived.text_encoder_needs_projection": (
            None if encoder is None or "conditioning_projection" in paths
            else ("yes" if size is not None and size < H3_TEXT_ENCODER_SIZE_B
                  else "no" if size == H3_TEXT_ENCODER_SIZE_B else "unknown")
        ),
        "derived.text_encoder_online_quantization": te_quant if te_quant in ("fp8", "convrot_int8", "mxfp4") else None,
    }


@derives("checkpoint_variant_mismatch", "checkpoint_variant_first_mismatch", "model_variant_for_load",
         "dit_quantization", "vdn_implicit_mxfp8")
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
        "derived.vdn_implicit_mxfp8": bool(r.events.get("vdn_auto_mxfp8")) and "quantization" not in r.explicit,
    }


@derives("adaln_precomputed", "adaln_cache_variant_ok", "adaln_cache_variant_fix", "adaln_gpu_plans",
         "request_sigma_intervals", "adaln_plan_width_need_min", "adaln_plan_width_need")
def adaln_plans(r: Any, hw: Any, ctx: dict[str, Any]) -> dict[str, Any]:
    a = r.args
    variant = a.get("model_variant")
    norm_variant = _lower(variant)
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


@derives("tp_bad_dimension", "tp_bad_dimension_value", "h3_packed_alignment")
def tp_dimensions(r: Any, hw: Any, ctx: dict[str, Any]) -> dict[str, Any]:
    tp = r.args.get("tp_size") or 1
    bad = next(((n, v) for n, v in TP_DIMENSIONS if v % tp), None) if isinstance(tp, int) and tp > 0 else None
    return {
        "derived.tp_bad_dimension": bad[0] if bad else None,
        "derived.tp_bad_dimension_value": bad[1] if bad else None,
        "derived.h3_packed_alignment": PACKED_SEQUENCE_ALIGNMENT,
    }


# -- R: first forward and request admission ----------------------------------------------------

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


@derives("dit_layerwise_by_list", "dit_layerwise_by_flag", "dit_layerwise_by_residency", "quality_high_mismatches",
         "quality_levels", "quality_high_device_ok", "quality_workload")
def quality_high(r: Any, hw: Any, ctx: dict[str, Any]) -> dict[str, Any]:
    a, explicit = r.args, r.explicit
    version = _version(ctx)
    mismatches, device_ok = _quality_high_audit(r, hw, bool(ctx.get("derived.dit_layerwise_selected")), version)
    # Which of the user's own flags put the DiT in layerwise offload (what the 2.H fix removes).
    listed = normalize_layerwise(a.get("layerwise_offload_components")) if "layerwise_offload_components" in explicit else None
    return {
        "derived.dit_layerwise_by_list": bool(listed) and any(c in ("dit", "transformer", "all") for c in listed),
        "derived.dit_layerwise_by_flag": "dit_layerwise_offload" in explicit and bool(a.get("dit_layerwise_offload")),
        "derived.dit_layerwise_by_residency": (
            canonical_mode("transformer", a.get("component_residency")) == LAYERWISE_OFFLOAD
        ),
        "derived.quality_high_mismatches": mismatches,
        "derived.quality_levels": list(quality_levels(version)),
        "derived.quality_high_device_ok": device_ok,
        "derived.quality_workload": {
            "task": "t2va", "width": 1344, "height": 768, "fps": 24, "frame_count": 124,
            "num_inference_steps": 50, "flow_shift": 12.0, "audio_flow_shift": 3.0,
        },  # release_metadata.py:25-34
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
