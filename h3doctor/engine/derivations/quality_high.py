"""Derived values of `--quality high`'s audit (minimax_h3.py:132-227, catalog 2.H): the strict
4xH200 fl2va deployment it accepts, what differs from it, and which flag put the DiT in layerwise
offload.
"""

from __future__ import annotations

from h3doctor.engine.derivations.common import release_version
from h3doctor.engine.derivations.registry import derives
from h3doctor.sglang.releases import quality_high_audited
from h3doctor.sglang.residency import LAYERWISE_OFFLOAD, canonical_mode, normalize_layerwise

TYPE_CHECKING = False  # typing is not imported at run time (start-up: record.py)
if TYPE_CHECKING:
    from typing import Any


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


@derives("dit_layerwise_by_list", "dit_layerwise_by_flag", "dit_layerwise_by_residency", "quality_high_mismatches",
         "quality_levels", "quality_high_device_ok", "quality_workload",
         reads=("derived.dit_layerwise_selected", "release.version"))
def quality_high(r: Any, hw: Any, ctx: dict[str, Any]) -> dict[str, Any]:
    a, explicit = r.args, r.explicit
    version = release_version(ctx)
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
        "derived.quality_levels": list(r.release.quality_levels),
        "derived.quality_high_device_ok": device_ok,
        "derived.quality_workload": {
            "task": "t2va", "width": 1344, "height": 768, "fps": 24, "frame_count": 124,
            "num_inference_steps": 50, "flow_shift": 12.0, "audio_flow_shift": 3.0,
        },  # release_metadata.py:25-34
    }


@derives("quality_meant", reads=("derived.quality_levels", "intent.quality"))
def quality_meant(r: Any, hw: Any, ctx: dict[str, Any]) -> dict[str, Any]:
    """"; did you mean 'high'?" when the requested quality is one slip from a level this release
    accepts (`hihg`), else "": H3D705's fix names the level meant (spelling.nearest, bounded)."""
    from h3doctor.spelling import nearest

    wanted, levels = ctx.get("intent.quality"), ctx.get("derived.quality_levels") or []
    close = nearest(wanted, levels) if isinstance(wanted, str) and wanted not in levels else None
    return {"derived.quality_meant": f"; did you mean {close!r}?" if close else ""}
