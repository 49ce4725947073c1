"""Derived values for ServerArgs' own validation that a plain comparison of `args.*` cannot
express: the warmup, port, timeout, batching, breakable-CUDA-graph and disaggregation checks, in
the form sglang computes them (file:line next to each).
"""

from __future__ import annotations

import os

from h3doctor.engine.derivations.common import is_int
from h3doctor.engine.derivations.registry import derives

TYPE_CHECKING = False  # typing is not imported at run time (start-up: record.py)
if TYPE_CHECKING:
    from typing import Any

WARMUP_MODES = ("off", "request", "server")  # server_args.py:1560-1565
ROLE_ALIASES = {"denoising": "denoiser"}  # runtime/disaggregation/roles.py:6
ROLES = ("monolithic", "encoder", "prompt_encoder", "image_encoder", "denoiser", "decoder", "server")
MAX_SCHEDULER_RPC_TIMEOUT_S = 2_147_483  # server_args.py:106


def _conditioning_cache_invalid(a: dict[str, Any]) -> bool:
    """server_args.py:2136-2139: not 0 <= x < inf (NaN included)."""
    value = a.get("conditioning_cache_max_size_mb")
    try:
        return not (0 <= value < float("inf"))
    except TypeError:
        return False


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
    single port named Scheduler (its server_args.py:964-987), which rule H3D133 reads.

    sglang lists HTTP, Scheduler[0..dp-1] (consecutive from the scheduler port), Master, and stops
    at the first port already listed. The scheduler ports are told apart by arithmetic, not listed:
    --dp-size can be any integer."""
    if not a.get("strict_ports"):
        return None
    needs_http = bool(a.get("enable_metrics")) or str(a.get("disagg_role") or "monolithic").lower() in ("monolithic", "server")
    try:
        first = int(a.get("scheduler_port"))
        count = max(int(a.get("dp_size") or 1), 0) if per_replica else 1
    except (TypeError, ValueError):
        return None
    http = a.get("port") if needs_http else None

    def scheduler_index(port: Any) -> int | None:
        if not is_int(port) or not 0 <= port - first < count:
            return None
        return port - first

    def scheduler_name(i: int) -> str:
        return f"Scheduler[{i}]" if per_replica else "Scheduler"

    if needs_http and (i := scheduler_index(http)) is not None:
        return f"{scheduler_name(i)} port {http} duplicates HTTP port and --strict-ports is enabled."
    master = a.get("master_port")
    if master is not None:
        if needs_http and master == http:
            return f"Master port {master} duplicates HTTP port and --strict-ports is enabled."
        if (i := scheduler_index(master)) is not None:
            return f"Master port {master} duplicates {scheduler_name(i)} port and --strict-ports is enabled."
    return None


def _bad_timeout(value: Any, upper: int | None) -> bool:
    if value is None:
        return False
    if not is_int(value):
        return True
    return value < (1 if upper else 0) or (upper is not None and value > upper)


def _text_encoder_precisions_count(r: Any) -> int | None:
    """PipelineConfig.check_pipeline_config (configs/pipeline_configs/base.py:1200-1204)."""
    if "text_encoder_precisions" not in r.explicit:
        return None
    value = r.args.get("text_encoder_precisions")
    if value is None:
        return None
    try:
        return len(value)
    except TypeError:
        return None


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


@derives("conditioning_cache_invalid")
def conditioning_cache_invalid(r: Any, hw: Any, ctx: dict[str, Any]) -> dict[str, Any]:
    return {"derived.conditioning_cache_invalid": _conditioning_cache_invalid(r.args)}


@derives("disagg_role_error", fallback={"disagg_role_error": None})
def disagg_role_error(r: Any, hw: Any, ctx: dict[str, Any]) -> dict[str, Any]:
    roles = r.release.enum("RoleType") or ROLES
    return {"derived.disagg_role_error": _disagg_role_error(r.args, r.family.config_class, roles)}


@derives("warmup_error_kind", "warmup_error", fallback={"warmup_error_kind": None, "warmup_error": None})
def warmup_error(r: Any, hw: Any, ctx: dict[str, Any]) -> dict[str, Any]:
    kind, message = _warmup_error(r.args)
    return {"derived.warmup_error_kind": kind, "derived.warmup_error": message}


@derives("strict_ports_duplicate", "strict_ports_duplicate_one_scheduler",
         fallback={"strict_ports_duplicate": None, "strict_ports_duplicate_one_scheduler": None})
def strict_ports_duplicate(r: Any, hw: Any, ctx: dict[str, Any]) -> dict[str, Any]:
    return {"derived.strict_ports_duplicate": _strict_ports_duplicate(r.args),
            "derived.strict_ports_duplicate_one_scheduler": _strict_ports_duplicate(r.args, False)}


@derives("scheduler_rpc_timeout_invalid", "http_graceful_shutdown_timeout_invalid")
def timeouts_invalid(r: Any, hw: Any, ctx: dict[str, Any]) -> dict[str, Any]:
    a = r.args
    return {
        "derived.scheduler_rpc_timeout_invalid": _bad_timeout(a.get("scheduler_rpc_timeout"), MAX_SCHEDULER_RPC_TIMEOUT_S),
        "derived.http_graceful_shutdown_timeout_invalid": _bad_timeout(a.get("http_graceful_shutdown_timeout"), None),
    }


@derives("text_encoder_precisions_count", fallback={"text_encoder_precisions_count": None})
def text_encoder_precisions_count(r: Any, hw: Any, ctx: dict[str, Any]) -> dict[str, Any]:
    return {"derived.text_encoder_precisions_count": _text_encoder_precisions_count(r)}


@derives("batching_error", fallback={"batching_error": None})
def batching_error(r: Any, hw: Any, ctx: dict[str, Any]) -> dict[str, Any]:
    return {"derived.batching_error": _batching_error(r.args)}


@derives("bcg_buckets_invalid")
def bcg_buckets_invalid(r: Any, hw: Any, ctx: dict[str, Any]) -> dict[str, Any]:
    return {"derived.bcg_buckets_invalid": _bcg_buckets_invalid(r.args)}


@derives("bcg_model_refs", fallback={"bcg_model_refs": []})
def bcg_model_refs(r: Any, hw: Any, ctx: dict[str, Any]) -> dict[str, Any]:
    return {"derived.bcg_model_refs": _bcg_model_refs(r.args)}
