"""Derived values for the launch rules: catalog stages D, P, F, A, V and M (see derivations/__init__.py).

Each value models a piece of sglang 0.5.23 state that a rule needs and the core context does not
carry, computed the way sglang computes it (file:line next to each). Checks stay in `rules/`;
these functions only describe what sglang would see. They never raise: a value sglang would
crash on with an unrelated exception is reported as that exception's text, or left out.
"""

from __future__ import annotations

import functools
import json
import os
from typing import Any, Callable

from h3doctor.sglang.flagtable import DEFAULT_SGLANG_VERSION
from h3doctor.sglang.residency import (
    COMPONENT_OFFLOAD,
    LAYERWISE_OFFLOAD,
    SNAPSHOT_OFFLOAD,
    canonical_mode,
)
from h3doctor.sglang.releases import enum_values
from h3doctor.sglang.resolve import ATTENTION_BACKENDS

ATTENTION_ROLES = ("cross", "self")  # configs/attention_roles.py:15-17
RETIRED_ARGS = {  # server_args.py:3814-3825, in sglang's order
    "decoder_tp": "decoder_sp for decoder/VAE parallel decode",
    "warmup": "warmup_mode=request or warmup_mode=off",
    "server_warmup": "warmup_mode=server or warmup_mode=off",
}
WEIGHT_SUFFIXES = (".safetensors", ".gguf", ".bin", ".pt", ".pth", ".ckpt")  # runtime/weights/source.py:20
PERFORMANCE_MODES = ("manual", "auto", "speed", "memory")  # server_args/auto_tune.py:627-636
WARMUP_MODES = ("off", "request", "server")  # server_args.py:1560-1565
RESIDENCY_POLICIES = ("leading", "strided")  # server_args.py:3970-3980
RESIDENCY_LIFETIMES = ("forward", "permanent")  # server_args.py:3995-4004
ROLE_ALIASES = {"denoising": "denoiser"}  # runtime/disaggregation/roles.py:6
ROLES = ("monolithic", "encoder", "prompt_encoder", "image_encoder", "denoiser", "decoder", "server")
MAX_SCHEDULER_RPC_TIMEOUT_S = 2_147_483  # server_args.py:106
TRUE_WORDS = {"1", "true", "yes", "y", "t", "on"}  # runtime/utils/common.py:296-301 (get_bool_env_var)
FALSE_WORDS = {"false", "0", "no", "n", "f", "off"}
# attention_backend_config keys the H3 code reads as booleans (minimax_h3_vdn.py:50-54).
ABC_BOOLEAN_KEYS = ("vdn_h3_dense_smoke",)


def _is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


_FAILED: list[str] = []  # derivations that raised during the current derive() call


def _safe(fn: Callable[..., Any], *args: Any, default: Any = None) -> Any:
    """Run one derivation; a value of an unexpected type (a --config surprise) yields the default.
    The failure is not silent: derive() reports it, and rule H3D991 says what could not be checked."""
    try:
        return fn(*args)
    except Exception as exc:  # noqa: BLE001 - a derivation must never break the check
        _FAILED.append(f"{fn.__name__.lstrip('_')}: {type(exc).__name__}: {exc}")
        return default


def _first(*checks: Callable[[], str | None]) -> str | None:
    for check in checks:
        message = check()
        if message:
            return message
    return None


# -- stage F: --config (server_args.py:3714-3718, 3814-3844) --------------------------------

def _config_removed_message(r: Any) -> str | None:
    """A8: from_dict rejects retired keys (server_args.py:3814-3825). The command line cannot set
    these dests, so a retired key among the explicit ones came from the --config file."""
    removed = [k for k in RETIRED_ARGS if k in r.explicit]
    if not removed:
        return None
    return "Removed server argument(s): " + "; ".join(f"{k} -> {RETIRED_ARGS[k]}" for k in removed)


@functools.lru_cache(maxsize=None)
def _store_boolean_dests(version: str) -> frozenset[str]:
    from h3doctor.sglang.flagtable import load_flag_table

    return frozenset(a.dest for a in load_flag_table(version).actions if a.action == "store_boolean")


def _string_false_config_keys(r: Any, version: str) -> list[str]:
    """StoreBoolean fields (of the target release's parser) whose effective value is a string
    meaning false. The command line always yields a bool for these, so a string is a --config
    value sglang did not convert."""
    booleans = _store_boolean_dests(version)
    return sorted(
        k for k in r.explicit
        if k in booleans and isinstance(r.a.get(k), str) and r.a[k].strip().lower() in FALSE_WORDS
    )


# -- stage A ---------------------------------------------------------------------------------

def _conditioning_cache_invalid(a: dict[str, Any]) -> bool:
    """server_args.py:2136-2139: not 0 <= x < inf (NaN included)."""
    value = a.get("conditioning_cache_max_size_mb")
    try:
        return not (0 <= value < float("inf"))
    except TypeError:
        return False


def _weight_override_component(component: str, base_names: tuple[str, ...]) -> bool:
    """sglang 0.5.19's supports_weight_file_override (server_args.py:1791-1796): a DiT, image-encoder
    or VAE base name (a trailing _<digits> stripped), or a text encoder by its name."""
    prefix, sep, suffix = component.rpartition("_")
    base = prefix if sep and suffix.isdigit() else component
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


def _disagg_role_error(a: dict[str, Any], config_class: str | None, roles: tuple[str, ...] = ROLES) -> str | None:
    """RoleType.from_string, then _validate_disagg_capability (server_args.py:2225-2228, 3906-3917);
    `roles`: the release's RoleType values."""
    raw = a.get("disagg_role")
    if raw is None:
        return None
    text = str(raw)
    value = ROLE_ALIASES.get(text.lower(), text.lower())
    if value not in roles:
        return f"Invalid role: {text}. Must be one of: {', '.join(roles)}"
    if value == "monolithic":
        return None
    return f"{config_class} only supports monolithic deployment; disaggregation role {value!r} is not supported"


def _visible_gpus(hw: Any, env: dict[str, Any]) -> int:
    """Devices torch sees: the hardware's count, narrowed by CUDA_VISIBLE_DEVICES when given
    (the CUDA runtime stops at the first entry it cannot parse)."""
    count = hw.gpu_count or 0
    visible = env.get("CUDA_VISIBLE_DEVICES")
    if visible is None:
        return count
    n = 0
    for item in str(visible).split(","):
        item = item.strip()
        if not (item.startswith(("GPU-", "MIG-")) or item.isdigit()):
            break
        n += 1
    return min(n, count)


def _auto_tuner_error(r: Any, hw: Any) -> tuple[str | None, str | None, bool]:
    """B8 (auto_tune.py:627-636) then B9 (auto_tune.py:918-932 -> platforms/cuda.py:699).

    Returns (kind, message, unknown): unknown when B9 depends on a GPU count the hardware facts lack.
    """
    if r.events.get("performance_mode_error") is not None:
        raw = r.events["performance_mode_error"]
        return "B8", f"Invalid performance_mode={raw!r}. Expected one of {PERFORMANCE_MODES}.", False
    a = r.a
    if hw.platform != "cuda" or a.get("performance_mode") != "auto":
        return None, None, False
    try:
        end = int(a.get("base_gpu_id") or 0) + max(1, int(a.get("num_gpus") or 1))
    except (TypeError, ValueError):
        return None, None, False
    if hw.gpu_count is None:
        return None, None, True
    if end > _visible_gpus(hw, r.env):
        return "B9", "AssertionError: Invalid device id", False
    return None, None, False


def _warmup_error(a: dict[str, Any]) -> tuple[str | None, str | None]:
    """_adjust_warmup (server_args.py:1560-1567)."""
    mode = a.get("warmup_mode")
    if mode is not None and mode not in WARMUP_MODES:
        return "mode", f"Invalid --warmup-mode {mode!r}; expected one of {WARMUP_MODES}."
    frames = a.get("warmup_num_frames")
    try:
        if frames is not None and frames <= 0:
            return "frames", "--warmup-num-frames must be a positive integer."
    except TypeError:
        return None, None
    return None, None


def _strict_ports_duplicate(a: dict[str, Any], per_replica: bool = True) -> str | None:
    """_adjust_network_ports under --strict-ports (server_args.py:1610-1633). `per_replica`: one
    scheduler port per data-parallel replica, named Scheduler[i] (0.5.18+); sglang 0.5.17 checks a
    single port named Scheduler (its server_args.py:964-987), which rule H3D133 reads."""
    if not a.get("strict_ports"):
        return None
    needs_http = bool(a.get("enable_metrics")) or str(a.get("disagg_role") or "monolithic").lower() in ("monolithic", "server")
    requested: list[tuple[Any, str]] = []
    if needs_http:
        requested.append((a.get("port"), "HTTP"))
    try:
        if per_replica:
            replicas = range(int(a.get("dp_size") or 1))
            requested += [(int(a.get("scheduler_port")) + i, f"Scheduler[{i}]") for i in replicas]
        else:
            requested.append((int(a.get("scheduler_port")), "Scheduler"))
    except (TypeError, ValueError):
        return None
    if a.get("master_port") is not None:
        requested.append((a.get("master_port"), "Master"))
    seen: dict[Any, str] = {}
    for port, name in requested:
        if port in seen:
            return f"{name} port {port} duplicates {seen[port]} port and --strict-ports is enabled."
        seen[port] = name
    return None


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


# -- stage V ---------------------------------------------------------------------------------

def _bad_timeout(value: Any, upper: int | None) -> bool:
    if value is None:
        return False
    if not _is_int(value):
        return True
    return value < (1 if upper else 0) or (upper is not None and value > upper)


def _text_encoder_precisions_count(r: Any) -> int | None:
    """PipelineConfig.check_pipeline_config (configs/pipeline_configs/base.py:1200-1204)."""
    if "text_encoder_precisions" not in r.explicit:
        return None
    value = r.a.get("text_encoder_precisions")
    if value is None:
        return None
    try:
        return len(value)
    except TypeError:
        return None


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


def _has_layerwise(a: dict[str, Any]) -> bool:
    """ServerArgs.has_layerwise_offload_components (server_args.py:1975-1983)."""
    residency = a.get("component_residency") or {}
    return bool(a.get("dit_layerwise_offload") or a.get("layerwise_offload_components")
                or LAYERWISE_OFFLOAD in residency.values())


def _component_direct_gpu_error(r: Any, hw: Any) -> tuple[str | None, str | None]:
    """_validate_direct_gpu_weight_loading, per component (server_args.py:4084-4092)."""
    for component, enabled in (r.a.get("component_direct_gpu_weight_loading") or {}).items():
        if enabled is not True:
            continue
        name = str(component).strip().replace("-", "_")
        if hw.platform != "cuda":
            return "--component-direct-gpu-weight-loading requires CUDA", name
        if r.res.mode(name) in (COMPONENT_OFFLOAD, SNAPSHOT_OFFLOAD, LAYERWISE_OFFLOAD):
            return f"--component-direct-gpu-weight-loading requires {name!r} to be resident", name
    return None, None


def _hsdp_error(a: dict[str, Any]) -> str | None:
    g = a.get("num_gpus")
    for name in ("hsdp_replicate_dim", "hsdp_shard_dim"):
        h = a.get(name)
        if not (_is_int(g) and _is_int(h)):
            continue
        if h == 0:
            return "ZeroDivisionError: integer modulo by zero"
        if h > g or g % h != 0:
            return f"num_gpus ({g}) must be >= and divisible by {name} ({h})"
    return None


def _dp_size_error(a: dict[str, Any]) -> str | None:
    """C24/C25 (server_args.py:4147-4154). dp 0 divides by zero before the natural-number check."""
    dp, g = a.get("dp_size"), a.get("num_gpus")
    if not (_is_int(dp) and _is_int(g)) or dp >= 1:
        return None
    if dp == 0:
        return "ZeroDivisionError: integer modulo by zero"
    if g % dp != 0:
        return None  # C24 fires first with this dp_size
    return "--dp-size must be a natural number"


def _batching_error(a: dict[str, Any]) -> str | None:
    """_validate_batching (server_args.py:4201-4207)."""
    if a.get("batching_mode") != "dynamic":
        return "batching_mode must be one of: dynamic"
    try:
        if a.get("batching_max_size") < 1:
            return "batching_max_size must be >= 1"
        if a.get("batching_delay_ms") < 0:
            return "batching_delay_ms must be >= 0"
    except TypeError:
        return None
    return None


def _bcg_buckets_invalid(a: dict[str, Any]) -> bool:
    """_validate_breakable_cuda_graph (server_args.py:799-805)."""
    buckets = a.get("bcg_text_buckets")
    if not a.get("enable_breakable_cuda_graph") or buckets is None:
        return False
    try:
        return not any(int(b) > 0 for b in buckets)
    except (TypeError, ValueError):
        return False


def _bcg_model_refs(a: dict[str, Any]) -> list[str]:
    """_normalized_bcg_model_refs of --model-id and --model-path (server_args.py:167-178 in 0.5.17,
    the same through 0.5.23): what sglang matches against its BCG-validated model ids (the ids
    themselves are rule data, with the releases that disable BCG for other models)."""
    refs: set[str] = set()
    for ref in (a.get("model_id"), a.get("model_path")):
        if not ref:
            continue
        normalized = str(ref).strip().rstrip("/").lower()
        refs |= {normalized, os.path.basename(normalized)}
        if "models--" in normalized:
            refs.add(normalized.split("models--", 1)[1].split("/", 1)[0].replace("--", "/"))
    return sorted(refs)


# -- stage M ---------------------------------------------------------------------------------

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


# M11: get_attn_backend(128, bf16, selected=T, packed_varlen) in the H3 hook (minimax_h3.py:322-330),
# by platform (platforms/cuda.py:133-565, 818-846; rocm.py:102-196; npu.py:110-175; mps.py:90-101).
CUDA_NO_RESOLVER = ("aiter_sage", "laser_attn", "block_sparse_attn", "rain_fusion_attn", "no_attention")
SPARGE_CAPS = (80, 86, 87, 89, 90)
VSA_H3_CAPS = (80, 90, 100, 103)
HYBRID_CAPS = (80, 86, 89, 90, 100, 103, 120)
SUBBLOCK_CAPS = (90, 100, 120)


def _packed(t: str) -> str:
    return f"Attention backend '{t}' does not implement packed varlen attention"


def _m11_probe(t: str | None, valid: bool, hw: Any, facts: dict[str, Any] | None = None) -> tuple[str | None, bool]:
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


def _numa_node_count(a: dict[str, Any]) -> int | None:
    """C21 takes len(numa_node) (server_args.py:4121); a --config scalar raises TypeError there too."""
    numa = a.get("numa_node")
    return None if numa is None else len(numa)


def derive(r: Any, hw: Any, ctx: dict[str, Any]) -> dict[str, Any]:
    _FAILED.clear()
    a = r.a
    out: dict[str, Any] = {}

    # F
    out["derived.config_removed_message"] = _config_removed_message(r)
    version = str(ctx.get("release.table") or DEFAULT_SGLANG_VERSION)
    out["derived.config_string_false_keys"] = _safe(_string_false_config_keys, r, version, default=[])

    # A
    out["derived.conditioning_cache_invalid"] = _conditioning_cache_invalid(a)
    release = getattr(r, "release", None)  # release-keyed enumerations (flagdata/enums.json)
    aliases = dict(enum_values("QUANTIZATION_METHOD_ALIASES", release) or ()) if release else {}
    override_names = enum_values("WEIGHT_FILE_OVERRIDE_COMPONENTS", release) if release else None
    out["derived.component_map_error"] = _safe(_component_map_error, a, aliases, override_names)
    roles = (enum_values("RoleType", release) if release else None) or ROLES
    out["derived.disagg_role_error"] = _safe(_disagg_role_error, a, r.family.config_class, roles)
    residency = a.get("component_residency") or {}
    out["derived.residency_modes"] = sorted(set(residency.values()))  # every mode --component-residency names
    out["derived.snapshot_offload_selected"] = SNAPSHOT_OFFLOAD in residency.values()
    out["derived.dit_snapshot_offload"] = canonical_mode("transformer", residency) == SNAPSHOT_OFFLOAD
    visible = out["derived.visible_gpus"] = _visible_gpus(hw, r.env)
    base = a.get("base_gpu_id") if _is_int(a.get("base_gpu_id")) else 0
    # B9's fix: the most GPUs that fit from base_gpu_id (or from GPU 0 when base_gpu_id is past them)
    out["derived.fit_base_gpu_id"] = 0 if base >= visible else base
    out["derived.fit_num_gpus"] = max(1, visible - out["derived.fit_base_gpu_id"])
    kind, message, unknown = _safe(_auto_tuner_error, r, hw, default=(None, None, False))
    out["derived.auto_tuner_error_kind"] = kind
    out["derived.auto_tuner_error"] = message
    out["derived.auto_tuner_needs_gpu_count"] = unknown
    out["derived.auto_tuner_message"] = message or (
        "in auto mode sglang queries the free memory of every GPU in [base_gpu_id, base_gpu_id + num_gpus)"
        if unknown else None
    )
    kind, message = _safe(_warmup_error, a, default=(None, None))
    out["derived.warmup_error_kind"] = kind
    out["derived.warmup_error"] = message
    out["derived.strict_ports_duplicate"] = _safe(_strict_ports_duplicate, a)
    out["derived.strict_ports_duplicate_one_scheduler"] = _safe(_strict_ports_duplicate, a, False)
    if r.events.get("component_backend_map_error"):  # the whole map is parsed before any entry
        kind, message, key = "B14", r.events["component_backend_map_error"], None
    else:  # resolve.py keeps invalid names as typed; re-check its entries in sglang's order
        backends = (enum_values("AttentionBackendEnum", release) if release else None) or ATTENTION_BACKENDS
        attention_roles = enum_values("AttentionRole", release) if release else ATTENTION_ROLES
        kind, message, key = _safe(_component_backend_error, a.get("component_attention_backends"), backends,
                                   attention_roles, default=(None, None, None))
    out["derived.component_backend_error_kind"] = kind
    out["derived.component_backend_error"] = message
    out["derived.component_backend_bad_key"] = key
    out["derived.attention_backend_config_error"] = r.events.get("attention_backend_config_error")
    abc = a.get("attention_backend_config") if isinstance(a.get("attention_backend_config"), dict) else {}

    # V
    out["derived.scheduler_rpc_timeout_invalid"] = _bad_timeout(a.get("scheduler_rpc_timeout"), MAX_SCHEDULER_RPC_TIMEOUT_S)
    out["derived.http_graceful_shutdown_timeout_invalid"] = _bad_timeout(a.get("http_graceful_shutdown_timeout"), None)
    out["derived.text_encoder_precisions_count"] = _safe(_text_encoder_precisions_count, r)
    out["derived.diffusers_residency_error"] = _safe(_diffusers_residency_error, a)
    kind, message = _safe(_layerwise_tuning_error, a, default=(None, None))
    out["derived.layerwise_tuning_error_kind"] = kind
    out["derived.layerwise_tuning_error"] = message
    out["derived.cache_dit_enabled"] = str(r.env.get("SGLANG_CACHE_DIT_ENABLED", "false")).strip().lower() in TRUE_WORDS
    out["derived.has_layerwise_offload_components"] = _has_layerwise(a)
    out["derived.direct_gpu_fsdp_tp_error"] = (
        "--direct-gpu-weight-loading does not support FSDP inference" if a.get("use_fsdp_inference")
        else "--direct-gpu-weight-loading requires --tp-size 1"
    )
    message, component = _safe(_component_direct_gpu_error, r, hw, default=(None, None))
    out["derived.component_direct_gpu_error"] = message
    out["derived.component_direct_gpu_bad"] = component
    nnodes = a.get("nnodes")
    out["derived.local_num_gpus"] = a["num_gpus"] // nnodes if _is_int(nnodes) and nnodes > 0 and _is_int(a.get("num_gpus")) else None
    out["derived.numa_node_count"] = _safe(_numa_node_count, a)
    out["derived.hsdp_error"] = _safe(_hsdp_error, a)
    out["derived.dp_size_error"] = _dp_size_error(a)
    out["derived.batching_error"] = _safe(_batching_error, a)
    out["derived.bcg_buckets_invalid"] = _bcg_buckets_invalid(a)
    out["derived.bcg_model_refs"] = _safe(_bcg_model_refs, a, default=[])

    # M
    out["derived.subblock_compute_mode"] = str(abc.get("compute_mode", "bf16"))
    out["derived.capability_text"] = _capability_text(hw)
    out["derived.transformer_backend_source"] = _transformer_backend_source(a)
    t, valid = r.transformer_backend()
    valid = ctx.get("derived.transformer_backend_valid", valid)  # core's: knows the release's backend names
    probe, needs_cc = _safe(_m11_probe, t, valid, hw, r.backend_facts, default=(None, False))
    out["derived.m11_probe_error"] = probe
    out["derived.m11_needs_cc"] = needs_cc
    out["derived.m11_probe_message"] = probe or (
        f"whether {t} resolves depends on the GPU's compute capability" if needs_cc else None
    )

    # h3doctor's own: boolean strings sglang reads as truthy
    false_keys = [k for k in ABC_BOOLEAN_KEYS if isinstance(abc.get(k), str) and abc[k].strip().lower() in FALSE_WORDS]
    out["derived.abc_string_false_keys"] = false_keys
    if false_keys:
        fixed = {k: (False if k in false_keys else v) for k, v in abc.items()}
        out["derived.abc_fixed_json"] = json.dumps(fixed)
    out["derived.string_false_keys"] = out["derived.config_string_false_keys"] + [
        f"attention_backend_config.{k}" for k in false_keys
    ]
    # Each of this node's num_gpus // nnodes workers binds GPU <its local rank> (launch_server.py:221-225,
    # gpu_worker.py:425); base_gpu_id offsets only the disaggregation roles' workers (launch_server.py:655),
    # which H3 refuses (every H3 config is monolithic-only). Past the visible devices a worker cannot start.
    nnodes = a.get("nnodes") if _is_int(a.get("nnodes")) and a.get("nnodes") > 0 else 1
    out["derived.local_gpus_needed"] = a.get("num_gpus") // nnodes if _is_int(a.get("num_gpus")) else None
    out["derived.derivation_errors"] = list(_FAILED)
    return out

