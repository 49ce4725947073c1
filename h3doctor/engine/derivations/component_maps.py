"""Derived values of the per-component maps ServerArgs validates entry by entry: weight paths,
quantizations, attention backends and direct-GPU weight loading, checked in sglang's order.
"""

from __future__ import annotations

import json
import os

from h3doctor.digits import is_digits
from h3doctor.engine.derivations.common import COMPONENT_BACKEND_MAP_ERROR
from h3doctor.engine.derivations.registry import derives
from h3doctor.sglang.residency import COMPONENT_OFFLOAD, LAYERWISE_OFFLOAD, SNAPSHOT_OFFLOAD
from h3doctor.sglang.resolve import ATTENTION_BACKENDS

TYPE_CHECKING = False  # typing is not imported at run time (start-up: record.py)
if TYPE_CHECKING:
    from typing import Any, Callable

ATTENTION_ROLES = ("cross", "self")  # configs/attention_roles.py:15-17
WEIGHT_SUFFIXES = (".safetensors", ".gguf", ".bin", ".pt", ".pth", ".ckpt")  # runtime/weights/source.py:20


def _first(*checks: Callable[[], str | None]) -> str | None:
    for check in checks:
        message = check()
        if message:
            return message
    return None


def _weight_override_component(component: str, base_names: tuple[str, ...]) -> bool:
    """sglang 0.5.19's supports_weight_file_override (server_args.py:1791-1796): a DiT, image-encoder
    or VAE base name (a trailing _<digits> stripped), or a text encoder by its name."""
    prefix, sep, suffix = component.rpartition("_")
    base = prefix if sep and is_digits(suffix) else component
    return base in base_names or component.startswith("text_encoder") or component.endswith("text_encoder")


def _component_map_error(a: dict[str, Any], aliases: dict[str, str] | None = None,
                         override_names: tuple[str, ...] | None = None) -> str | None:
    """ServerArgs.__post_init__ component maps, in sglang's order (server_args.py:2149-2222).
    `aliases`: the release's deprecated quantization names, mapped before the comparison (0.5.22);
    `override_names`: the components whose weight file moves (0.5.19; None: every component)."""
    def weights() -> str | None:
        existing = dict(a.get("component_weights_paths") or {})
        for component, path in (a.get("component_paths") or {}).items():
            if not isinstance(path, str) or os.path.isdir(os.path.expanduser(path)):
                continue
            if override_names is not None and not _weight_override_component(str(component), override_names):
                continue
            if not path.split("?", 1)[0].lower().endswith(WEIGHT_SUFFIXES):
                continue
            if existing.get(component) is not None and existing[component] != path:
                return f"Conflicting weight overrides for component {component!r}: {existing[component]!r} and {path!r}"
            existing[component] = path
        return None

    def direct() -> str | None:
        for component, enabled in (a.get("component_direct_gpu_weight_loading") or {}).items():
            if not str(component).strip().replace("-", "_") or not isinstance(enabled, bool):
                return "Component direct GPU loading entries require a component and a boolean value"
        return None

    quantized: dict[str, str] = {}

    def quantizations() -> str | None:
        for component, method in (a.get("component_quantizations") or {}).items():
            component = str(component).strip().replace("-", "_")
            method = str(method).strip().lower()
            method = (aliases or {}).get(method, method)
            if not component or not method:
                return "Component quantization entries require a component and method"
            if quantized.get(component) not in (None, method):
                return f"Conflicting quantization overrides for {component!r}: {quantized[component]!r} and {method!r}"
            quantized[component] = method
        return None

    def ignored() -> str | None:
        names = []
        for component, layers in (a.get("component_quantization_ignored_layers") or {}).items():
            component = str(component).strip().replace("-", "_")
            layers = [layers] if isinstance(layers, str) else layers
            if (
                not component
                or not isinstance(layers, (list, tuple))
                or not all(isinstance(x, str) and x.strip() for x in layers)
            ):
                return "Component quantization ignored layers require a component and non-empty layer patterns"
            names.append(component)
        missing = sorted(set(names) - set(quantized))
        if missing:
            return f"Component quantization ignored layers require a matching quantization override for: {', '.join(missing)}"
        return None

    return _first(weights, direct, quantizations, ignored)


def _component_backend_error(value: Any, backends: tuple[str, ...] = ATTENTION_BACKENDS,
                             roles: tuple[str, ...] | None = ATTENTION_ROLES) -> tuple[str | None, str | None, str | None]:
    """_split_component_attention_backends (server_args.py:1427-1495): (kind, message, key).

    Each entry is checked in turn: key type, role suffix, empty component, then the backend name,
    so the first bad entry decides between B14 (malformed map) and B13 (bad backend name).
    `backends` is the release's AttentionBackendEnum; `roles` its AttentionRole values, None for a
    release before 0.5.22, whose _normalize_component_attention_backends reads a key with a dot
    as a plain component name.
    """
    if value is None or value == "" or value == {}:
        return None, None, None
    if isinstance(value, dict):
        raw = dict(value)
    elif isinstance(value, str):
        raw = None
        try:
            parsed = json.loads(value)
            if isinstance(parsed, dict):
                raw = parsed
        except ValueError:
            pass
        if raw is None:
            raw = {}
            for pair in value.split(","):
                pair = pair.strip()
                if not pair:
                    continue
                if "=" not in pair:
                    return "B14", "component_attention_backends must use component=backend entries", None
                key, backend = pair.split("=", 1)
                raw[key.strip()] = backend.strip()
    else:
        return "B14", "component_attention_backends must be a dict or a comma-separated component=backend string", None
    for key, backend in raw.items():
        if not isinstance(key, str):
            return "B14", "Component attention backend key must be a string", None
        stripped = key.strip()
        component, sep, role = stripped.rpartition(".")
        if not sep or roles is None:
            component = stripped
        elif role.strip().lower() not in roles:
            return "B14", (f"Invalid attention role '{role}' in component key '{stripped}'. "
                           f"Available roles are: {sorted(roles)}"), stripped
        if not component.strip().replace("-", "_"):
            return "B14", "Component attention backend key must not be empty", stripped
        if not isinstance(backend, str):
            return "B14", "Attention backend name must be a string", stripped
        name = backend.strip().lower()
        name = {"fa3": "fa", "fa4": "fa", "cudnn_sdpa": "torch_cudnn_sdpa"}.get(name, name)
        if name not in backends:
            return "B13", (f"Invalid attention backend '{backend}'. "
                           f"Available options are: {list(backends)}"), stripped
    return None, None, None


def _component_direct_gpu_error(r: Any, hw: Any) -> tuple[str | None, str | None]:
    """_validate_direct_gpu_weight_loading, per component (server_args.py:4084-4092)."""
    for component, enabled in (r.args.get("component_direct_gpu_weight_loading") or {}).items():
        if enabled is not True:
            continue
        name = str(component).strip().replace("-", "_")
        if hw.platform != "cuda":
            return "--component-direct-gpu-weight-loading requires CUDA", name
        if r.res.mode(name) in (COMPONENT_OFFLOAD, SNAPSHOT_OFFLOAD, LAYERWISE_OFFLOAD):
            return f"--component-direct-gpu-weight-loading requires {name!r} to be resident", name
    return None, None


@derives("component_map_error", fallback={"component_map_error": None})
def component_map_error(r: Any, hw: Any, ctx: dict[str, Any]) -> dict[str, Any]:
    release = r.release  # the check's Release: its release-keyed enumerations (flagdata/enums.json)
    aliases = dict(release.enum("QUANTIZATION_METHOD_ALIASES") or ())
    override_names = release.enum("WEIGHT_FILE_OVERRIDE_COMPONENTS")
    return {"derived.component_map_error": _component_map_error(r.args, aliases, override_names)}


@derives("component_backend_error_kind", "component_backend_error", "component_backend_bad_key",
         reads=(COMPONENT_BACKEND_MAP_ERROR,),
         fallback={"component_backend_error_kind": None, "component_backend_error": None,
                   "component_backend_bad_key": None})
def component_backend_error(r: Any, hw: Any, ctx: dict[str, Any]) -> dict[str, Any]:
    if ctx.get(COMPONENT_BACKEND_MAP_ERROR):  # the whole map is parsed before any entry
        kind, message, key = "B14", ctx[COMPONENT_BACKEND_MAP_ERROR], None
    else:  # resolve.py keeps invalid names as typed; re-check its entries in sglang's order
        release = r.release
        backends = release.enum("AttentionBackendEnum") or ATTENTION_BACKENDS
        attention_roles = release.enum("AttentionRole")
        kind, message, key = _component_backend_error(r.args.get("component_attention_backends"), backends,
                                                      attention_roles)
    return {"derived.component_backend_error_kind": kind, "derived.component_backend_error": message,
            "derived.component_backend_bad_key": key}


@derives("direct_gpu_fsdp_tp_error")
def direct_gpu_fsdp_tp_error(r: Any, hw: Any, ctx: dict[str, Any]) -> dict[str, Any]:
    return {"derived.direct_gpu_fsdp_tp_error": (
        "--direct-gpu-weight-loading does not support FSDP inference" if r.args.get("use_fsdp_inference")
        else "--direct-gpu-weight-loading requires --tp-size 1"
    )}


@derives("component_direct_gpu_error", "component_direct_gpu_bad",
         fallback={"component_direct_gpu_error": None, "component_direct_gpu_bad": None})
def component_direct_gpu_error(r: Any, hw: Any, ctx: dict[str, Any]) -> dict[str, Any]:
    message, component = _component_direct_gpu_error(r, hw)
    return {"derived.component_direct_gpu_error": message, "derived.component_direct_gpu_bad": component}
