"""The effective configuration of an H3 launch, resolved in the order sglang 0.5.23 resolves it.

Catalog 1.2 step 5 and 1.4, section 3; sglang's `ServerArgs._adjust_parameters`
(server_args.py:680-708) and `ServerArgsAutoTuner` (auto_tune.py). Where sglang would raise
during resolution we record the event (for a rule to report) and carry on, so one run can
find every problem. The result is a flat mapping that rule conditions read.
"""

from __future__ import annotations

import functools
import os

from h3doctor.digits import is_digits
from h3doctor.errors import UsageError
from h3doctor.facts import HardwareFacts
from h3doctor.safeload import LimitExceeded, excerpt, load_json, resolve_named
from h3doctor.sglang.configfile import read_json_or_yaml
from h3doctor.sglang.families import Family
from h3doctor.sglang.releases import NEWEST, Release
from h3doctor.sglang.residency import (
    LAYERWISE_OFFLOAD,
    MODES,
    Residency,
    ResidencyError,
    normalize_component_residency,
    normalize_cpu_offload,
    normalize_layerwise,
)

TYPE_CHECKING = False  # typing is not imported at run time (start-up: record.py)
if TYPE_CHECKING:
    from typing import Any

ATTENTION_BACKENDS = (
    "fa2", "fa", "sliding_tile_attn", "torch_sdpa", "torch_cudnn_sdpa", "dynamic_cudnn_sdpa", "sage_attn",
    "sage_attn_3", "sparge_attn", "video_sparse_attn", "video_sparse_attn_h3", "hybrid_window_attn_h3",
    "sparse_video_gen_2_attn", "vmoba_attn", "aiter", "aiter_sage", "sla_attn", "sage_sla_attn", "laser_attn",
    "block_sparse_attn", "rain_fusion_attn", "sol_attn", "subblock_sparse_attn", "cube_sparse_attn",
    "fp8_fa_sm120", "no_attention",
)  # platforms/interface.py:28-54
RING_CAPABLE = ("fa", "sage_attn")  # server_args.py:109
VSA_H3_CAPABILITIES = {80, 90, 100, 103}  # platforms/cuda.py:272
KEEP_RESIDENT_MIN_AVAILABLE_GIB = 120.0  # minimax_h3.py:84-96 deployment config
LOW_MEMORY_TOTAL_GIB = 30.0  # server_args.py:1054
H3_ATTENTION_HEADS = 56
H3_PACKED_ALIGNMENT = 64
H3_TP_DIMENSIONS = {  # dits/minimax_h3.py:2152-2163: the base arch's dimensions TP must divide, in order
    "num_attention_heads": 56, "hidden_size": 5376, "ffn_hidden_size": 14336, "time_embed_hidden_size": 5376,
    "adaln_out_features": 96768, "final_adaln_out_features": 10752, "video_patch_output_dim": 96,
    "audio_patch_output_dim": 32,
}


# What people type for a backend -> the enum name they meant (for fixes of M4)
BACKEND_ALIASES = {"fa3": "fa", "fa4": "fa", "flash": "fa", "flash_attn": "fa", "flashattention": "fa",
                    "flash_attention": "fa", "sage": "sage_attn", "sdpa": "torch_sdpa", "torch": "torch_sdpa",
                    "xformers": "torch_sdpa", "cudnn_sdpa": "torch_cudnn_sdpa", "cudnn": "torch_cudnn_sdpa"}


def suggest_backend(name: Any) -> str:
    """The valid backend a mistyped --attention-backend most likely meant (default: fa)."""
    key = str(name).strip().lower().replace("-", "_")
    # a launch with no --attention-backend asks for "none" on every evaluation: the answers for
    # short words are kept (least recently used, bounded), a long hostile value is never kept
    return _suggest(key) if len(key) <= 64 else _suggest.__wrapped__(key)


@functools.lru_cache(maxsize=512)
def _suggest(key: str) -> str:
    if key in BACKEND_ALIASES:
        return BACKEND_ALIASES[key]
    if key in ATTENTION_BACKENDS:
        return key
    if not any(may_be_close(key, b, 0.8) for b in ATTENTION_BACKENDS):
        return "fa"  # what difflib answers too: no backend passes its own first test (a clean check's path)
    import difflib

    close = difflib.get_close_matches(key, ATTENTION_BACKENDS, n=1, cutoff=0.8)
    return close[0] if close else "fa"


def may_be_close(word: str, other: str, cutoff: float) -> bool:
    """difflib's SequenceMatcher.quick_ratio() >= cutoff: an upper bound of ratio() (the letters the
    two share, counted with repeats), so False means get_close_matches cannot return `other`."""
    left = {c: word.count(c) for c in set(word)}
    shared = sum(min(n, other.count(c)) for c, n in left.items())
    return 2.0 * shared / (len(word) + len(other) or 1) >= cutoff


def _enum_name(name: Any) -> str | None:
    """AttentionBackendEnum[str(x).strip().upper()], or None for KeyError (catalog M4)."""
    key = str(name).strip().upper()
    return key.lower() if key.lower() in ATTENTION_BACKENDS else None


def _normalize_component_backend(name: Any) -> str | None:
    """server_args.py:1330-1345: case-insensitive; fa3/fa4 -> fa; cudnn_sdpa -> torch_cudnn_sdpa."""
    if not isinstance(name, str):
        return None
    n = name.strip().lower()
    n = {"fa3": "fa", "fa4": "fa", "cudnn_sdpa": "torch_cudnn_sdpa"}.get(n, n)
    return n if n in ATTENTION_BACKENDS else None


def parse_component_backend_map(value: Any) -> tuple[dict[str, str], str | None]:
    """`--component-attention-backends` as a dict, or the B14 error text."""
    if value is None or value == {}:
        return {}, None
    if isinstance(value, dict):
        return {str(k).replace("-", "_"): v for k, v in value.items()}, None
    text = ",".join(value) if isinstance(value, list) else str(value)
    text = text.strip()
    if text.startswith("{"):
        try:
            loaded = _inline_json(text, "--component-attention-backends")
            return {str(k).replace("-", "_"): v for k, v in loaded.items()}, None
        except LimitExceeded:
            raise
        except (UsageError, AttributeError):
            return {}, "component_attention_backends must use component=backend entries"
    out: dict[str, str] = {}
    for part in text.split(","):  # sglang splits on commas only (server_args.py:1453)
        part = part.strip()
        if not part:
            continue
        if "=" not in part:
            return out, "component_attention_backends must use component=backend entries"
        key, backend = part.split("=", 1)
        if not key.strip():
            return out, "Component attention backend key must not be empty"
        out[key.strip().replace("-", "_")] = backend.strip()
    return out, None


def _inline_json(text: str, flag: str) -> Any:
    """json.loads as sglang calls it (NaN accepted), depth-capped: a LimitExceeded (usage
    error) beyond h3doctor's limit, any other UsageError where json.loads raises."""
    return load_json(text, origin=flag, finite=False)


def parse_attention_backend_config(value: Any) -> tuple[dict[str, Any], str | None]:
    """server_args.py:2096-2133: a file, JSON, or k=v pairs (B15 on failure)."""
    if value is None or value == "" or value == {}:
        return {}, None
    if isinstance(value, dict):
        return value, None
    text = str(value)
    if os.path.isfile(resolve_named(text)) and text.endswith((".json", ".yaml", ".yml")):  # a file first (server_args.py:2102)
        try:
            loaded = read_json_or_yaml(text, what="attention backend config file")
        except ValueError as exc:
            return {}, f"Could not parse attention backend config: {excerpt(text, 200)} ({exc})"
        return (loaded if isinstance(loaded, dict) else {}), None
    try:
        loaded = _inline_json(text, "--attention-backend-config")
        if isinstance(loaded, dict):
            return loaded, None
    except LimitExceeded:
        raise
    except UsageError:
        pass
    out: dict[str, Any] = {}
    try:
        for pair in text.split(","):
            k, v = pair.split("=", 1)
            v = v.strip()
            if v.lower() in ("true", "false"):
                out[k.strip()] = v.lower() == "true"
            elif is_digits(v.replace(".", "", 1)):
                out[k.strip()] = float(v) if "." in v else int(v)
            else:
                out[k.strip()] = v
    except ValueError:
        return {}, f"Could not parse attention backend config: {excerpt(text, 200)}"
    return out, None


# Every event the adjust phase records (`Resolver.events`, read by rules as `events.<name>`), and
# `resolution_error`: the check's own record of a value the adjust arithmetic chokes on. Rule
# loading refuses an `events.*` path not named here.
EVENTS = (
    "attention_backend_config_error", "auto_layerwise", "component_backend_invalid", "component_backend_map_error",
    "component_residency_error", "cpu_offload_components_error", "fh3_default_vsa", "kv_gather_conflict",
    "low_device_memory", "mps_num_gpus", "mps_residency_mode", "parallel_zero_division", "performance_mode_error",
    "requested_attention_backend", "resolution_error", "ring_auto_fa", "ring_backend_not_capable", "sp_zero_division",
    "vdn_auto_mxfp8", "vdn_default_backend",
)


class Resolver:
    """Runs sglang's adjust phase over a dict of ServerArgs fields."""

    def __init__(self, args: dict[str, Any], explicit: set[str], family: Family, hw: HardwareFacts, env: dict[str, str],
                 release: Release | None = None):
        self.args = args
        self.release = release or NEWEST  # the check's release: its release-keyed data is read from it
        # what the target release knows of attention backends (None: the newest model's behaviour)
        self.backend_facts = self.release.attention_backend_facts
        self.explicit = explicit
        self.family = family
        self.hw = hw
        self.env = env
        self.events: dict[str, Any] = {}  # errors sglang raises while resolving (rule inputs)
        self.notes: list[str] = []
        self.res = Residency(args, explicit, hw.platform)

    # -- facts -------------------------------------------------------------------------
    @property
    def cuda(self) -> bool:
        return self.hw.platform == "cuda"

    @property
    def cpu(self) -> bool:
        return self.hw.platform == "cpu"

    def min_free_gib(self) -> float | None:
        if self.cpu:
            return None
        return self.hw.gpu_free_gib

    @property
    def cache_dit(self) -> bool:
        # runtime/utils/common.py:296-308 (get_bool_env_var)
        return str(self.env.get("SGLANG_CACHE_DIT_ENABLED", "")).strip().lower() in ("1", "true", "yes", "y", "t", "on")

    # -- steps, in _adjust_parameters order ---------------------------------------------
    def run(self) -> None:
        self._normalize_residency()
        self._normalize_cpu_offload()
        self._performance_mode()
        if self.args["performance_mode"] != "manual":
            self._adjust_offload()
            self._auto_default_layerwise()
            self._auto_residency_after_offload()
            self._replace_cpu_offload_with_layerwise()
        if self.args.get("enable_breakable_cuda_graph") is None:
            # server_args.py:830-833: the default is on only for pipelines that opt in, and H3*
            # list none (bcg_default_pipeline_class_names is empty)
            self.args["enable_breakable_cuda_graph"] = False
        self._warmup()
        self._parallelism()
        self._attention_backend()
        self._platform_specific()
        self._layerwise_groups()
        self._finalize_auto_flags()
        self._model_hook_mutations()

    def _normalize_residency(self) -> None:
        try:
            modes = self.release.enum("COMPONENT_RESIDENCY_MODES")
            self.args["component_residency"] = normalize_component_residency(self.args.get("component_residency"), modes or MODES)
        except ResidencyError as exc:
            self.events["component_residency_error"] = str(exc)
            self.args["component_residency"] = None

    def _normalize_cpu_offload(self) -> None:
        try:
            self.args["cpu_offload_components"] = normalize_cpu_offload(self.args.get("cpu_offload_components"))
        except ResidencyError as exc:
            self.events["cpu_offload_components_error"] = str(exc)
            self.args["cpu_offload_components"] = None
        if self.args["cpu_offload_components"] is None and "cpu_offload_components" in self.explicit:
            self.args["cpu_offload_components"] = []

    def _performance_mode(self) -> None:
        raw = self.args.get("performance_mode")
        if raw is not None and not isinstance(raw, str):  # auto_tune.py:629: (mode or "auto").lower()
            raise AttributeError(f"'{type(raw).__name__}' object has no attribute 'lower'")
        mode = str(raw or "auto").lower()
        if mode not in ("manual", "auto", "speed", "memory"):
            self.events["performance_mode_error"] = raw
            mode = "auto"
        self.args["performance_mode"] = mode
        if self.cpu:
            return
        if mode == "speed":
            # H3* do not enable compile in speed mode and never auto-enable FSDP (minimax_h3.py:84-96).
            self._set_gpu_resident_defaults(use_fsdp=False)
        elif mode == "memory":
            if bool(self.args.get("use_fsdp_inference")):
                self._set_gpu_resident_defaults(use_fsdp=True)
                if self.args.get("layerwise_offload_components") is None and self.cuda:
                    self.args["layerwise_offload_components"] = self._default_layerwise_components() or None
                return
            self.args["use_fsdp_inference"] = False
            if self.cuda:
                if self.args.get("layerwise_offload_components") is None:
                    self.args["layerwise_offload_components"] = self._default_layerwise_components() or None
                self._setdefault("dit_cpu_offload", True)
                self._setdefault("text_encoder_cpu_offload", False)
                self._setdefault("image_encoder_cpu_offload", False)
            else:
                for name in ("dit_cpu_offload", "text_encoder_cpu_offload", "image_encoder_cpu_offload"):
                    self._setdefault(name, True)
                self._setdefault("use_fsdp_inference", False)

    def _setdefault(self, name: str, value: Any) -> None:
        if self.args.get(name) is None:
            self.args[name] = value

    def _set_gpu_resident_defaults(self, *, use_fsdp: bool) -> None:
        self._setdefault("use_fsdp_inference", use_fsdp)
        for name in ("dit_cpu_offload", "dit_layerwise_offload", "text_encoder_cpu_offload", "image_encoder_cpu_offload"):
            self._setdefault(name, False)

    def _adjust_offload(self) -> None:
        """server_args.py:1025-1077 (video generation branch)."""
        if self.cpu:
            return
        if (  # server_args.py:1042-1052: FSDP shards only resident components, so keep the DiT resident
            bool(self.args.get("use_fsdp_inference"))
            and (self.args.get("num_gpus") or 1) > 1
            and (self.args.get("dp_size") or 1) == 1
            and self.args.get("dit_cpu_offload") is None
            and self.args.get("transformer_weights_path") is None
        ):
            self.args["dit_cpu_offload"] = False
        total = self.hw.gpu_memory_gib
        self.events["low_device_memory"] = total is not None and total < LOW_MEMORY_TOTAL_GIB
        for name in ("dit_cpu_offload", "text_encoder_cpu_offload", "image_encoder_cpu_offload"):
            self._setdefault(name, True)

    def _keep_resident(self) -> bool:
        free = self.min_free_gib()
        return free is not None and free >= KEEP_RESIDENT_MIN_AVAILABLE_GIB

    def _default_layerwise_components(self) -> list[str]:
        """auto_tune.py:704-728: unset placement -> default layerwise groups (+ the DiT)."""
        if "layerwise_offload_components" in self.explicit or self.args.get("dit_layerwise_offload") is True:
            return []
        components = [c for c in ("text_encoder", "image_encoder", "vae") if self.res.explicit_mode(c) is None]
        if self.args["performance_mode"] == "auto" and not self.cpu and self._keep_resident():
            components = [c for c in components if c not in ("dit", "text_encoder", "vae")]
        if (  # auto_tune.py:766-781 (_should_auto_enable_dit_layerwise_offload)
            not self.cpu
            and self.args.get("dmd_denoising_steps") is None  # a DMD schedule keeps the DiT out (:769)
            and not self.cache_dit
            and not bool(self.args.get("use_fsdp_inference"))
            and self.res.explicit_mode("transformer") is None
            and self.args["performance_mode"] in self.release.dit_layerwise_offload_modes
        ):
            components.insert(0, "dit")
        return components

    def _auto_default_layerwise(self) -> None:
        if self.args["performance_mode"] != "auto" or not self.cuda:
            return
        if self.args.get("layerwise_offload_components") is not None or self.args.get("dit_layerwise_offload") is True:
            return
        components = self._default_layerwise_components()
        if components:
            self.args["layerwise_offload_components"] = components
            self.events["auto_layerwise"] = list(components)

    def _auto_residency_after_offload(self) -> None:
        """auto_tune.py:231-327: >= 120 GiB free on the least-free GPU keeps dit/text/vae resident."""
        if self.args["performance_mode"] != "auto" or self.cpu or not self._keep_resident():
            return
        keep = {"dit", "text_encoder", "vae"}
        lw = self.args.get("layerwise_offload_components")
        if lw is not None and "layerwise_offload_components" not in self.explicit:
            self.args["layerwise_offload_components"] = [c for c in lw if c not in keep] or None
        explicit_lw = normalize_layerwise(lw) if "layerwise_offload_components" in self.explicit else None
        explicit_dit_lw = bool("dit_layerwise_offload" in self.explicit and self.args.get("dit_layerwise_offload")) or bool(
            explicit_lw and ("dit" in explicit_lw or "all" in explicit_lw)
        )
        if (
            self.args.get("dit_cpu_offload")
            and self.res.explicit_mode("transformer") is None
            and "dit_cpu_offload" not in self.explicit
            and "dit_layerwise_offload" not in self.explicit
            and not explicit_dit_lw
        ):
            self.args["dit_cpu_offload"] = False
        if self.args.get("text_encoder_cpu_offload") and self.res.explicit_mode("text_encoder") is None:
            self.args["text_encoder_cpu_offload"] = False
        if self.args.get("vae_cpu_offload") and self.res.explicit_mode("vae") is None:
            self.args["vae_cpu_offload"] = False

    def _replace_cpu_offload_with_layerwise(self) -> None:
        """auto_tune.py:470-511."""
        if (
            not self.cuda
            or self.cache_dit
            or bool(self.args.get("use_fsdp_inference"))
            or self.args.get("layerwise_offload_components") is not None
            or self.args.get("dit_layerwise_offload") is True
        ):
            return
        components = ["dit"] if self.args.get("dit_layerwise_offload") else []
        changed = False
        for group, flag in (("text_encoder", "text_encoder_cpu_offload"), ("image_encoder", "image_encoder_cpu_offload"), ("vae", "vae_cpu_offload")):
            if self.args.get(flag) and self.res.explicit_mode(group) is None:
                components.append(group)
                changed = True
        if changed:
            self.args["layerwise_offload_components"] = components

    def _warmup(self) -> None:
        """server_args.py:1560-1600 (the mode's validity is rule H3D110's business)."""
        a = self.args
        if a.get("enable_torch_compile") and a.get("warmup_mode") is None:
            a["warmup_mode"] = "server"
        if (a.get("warmup_resolutions") is not None or a.get("warmup_num_frames") is not None) and a.get("warmup_mode") in (None, "off"):
            a["warmup_mode"] = "request"
        monolithic = str(a.get("disagg_role") or "monolithic") == "monolithic"
        if a.get("enable_breakable_cuda_graph") and monolithic and not a.get("comfyui_mode"):
            a["warmup_mode"] = "server"  # BCG captures its graphs during the server warmup
        if not monolithic and a.get("warmup_mode") == "server":
            a["warmup_mode"] = "request"
        if a.get("warmup_mode") is None:
            a["warmup_mode"] = "off"

    def _parallelism(self) -> None:
        """server_args.py:1660-1790 (catalog 1.4). H3* never auto-enable CFG parallel."""
        a = self.args
        if a.get("tp_size") is None:
            a["tp_size"] = 1
        if a.get("num_gpus") == 0 and not self.cpu:
            # sp_degree = 0 // n, then C22's num_gpus % sp_degree divides by zero (server_args.py:4127)
            self.events["sp_zero_division"] = "ZeroDivisionError: integer modulo by zero"
        if a.get("dp_size") == 0 or a["tp_size"] == 0:
            # num_gpus % (dp * tp) in the adjust phase (server_args.py:1729) or num_gpus % dp_size in
            # validation (4147) divides by zero before any friendlier check
            self.events["parallel_zero_division"] = "ZeroDivisionError: integer modulo by zero"
        if self.cpu and a["tp_size"] > 1:
            a["num_gpus"] = a["tp_size"]
        if a.get("hsdp_shard_dim") is None:
            a["hsdp_shard_dim"] = a["num_gpus"]
        cfg_degree = a.get("cfg_parallel_degree")
        if cfg_degree is not None:
            if cfg_degree == 1:
                a["enable_cfg_parallel"] = False
            elif cfg_degree > 1:
                a["enable_cfg_parallel"] = True
        elif a.get("enable_cfg_parallel") is None:
            a["enable_cfg_parallel"] = False
        if a.get("cfg_parallel_degree") is None:
            a["cfg_parallel_degree"] = 2 if a["enable_cfg_parallel"] else 1
        if a.get("sp_degree") is None:
            group = a.get("dp_size", 1) * a["tp_size"]
            if a["enable_cfg_parallel"]:
                group *= a["cfg_parallel_degree"]
            # Python's floor division, negative degrees included (sp = 1 // -1 = -1), as sglang computes it
            a["sp_degree"] = a["num_gpus"] // group if group and a["num_gpus"] % group == 0 else 1
        if a.get("ulysses_degree") is None and a.get("ring_degree") is None and a.get("kv_gather_degree") is None and a["sp_degree"] != 1:
            if a["sp_degree"] == 2:
                a["kv_gather_degree"] = 2
                a["sp_split_auto"] = True
            else:
                a["ulysses_degree"] = a["sp_degree"]
        if a.get("kv_gather_degree") is None:
            a["kv_gather_degree"] = 1
        if a["kv_gather_degree"] > 1 and ((a.get("ulysses_degree") or 1) != 1 or (a.get("ring_degree") or 1) != 1):
            self.events["kv_gather_conflict"] = True
        if a.get("ulysses_degree") is None:
            a["ulysses_degree"] = 1
        if a.get("ring_degree") is None:
            a["ring_degree"] = 1
        if a["kv_gather_degree"] > 1:
            a["ulysses_degree"] = a["kv_gather_degree"]

    def _attention_backend(self) -> None:
        """server_args.py:1209-1327."""
        a = self.args
        if a.get("attention_backend") in ("fa3", "fa4"):
            a["attention_backend"] = "fa"
        backends, error = parse_component_backend_map(a.get("component_attention_backends"))
        if error:
            self.events["component_backend_map_error"] = error
        invalid = [f"{k}={v}" for k, v in backends.items() if _normalize_component_backend(v) is None]
        if invalid:
            self.events["component_backend_invalid"] = invalid
        a["component_attention_backends"] = {
            k: (_normalize_component_backend(v) or v) for k, v in backends.items()
        }
        config, error = parse_attention_backend_config(a.get("attention_backend_config"))
        if error:
            self.events["attention_backend_config_error"] = error
        a["attention_backend_config"] = config
        diffusers = str(a.get("backend") or "auto").lower() == "diffusers"
        if not diffusers and a.get("attention_backend") == "laser_attn" and "text_encoder" not in a["component_attention_backends"]:
            a["component_attention_backends"]["text_encoder"] = "torch_sdpa"
        self.events["requested_attention_backend"] = a.get("attention_backend")
        if a["ring_degree"] > 1:
            if a.get("attention_backend") is not None and a["attention_backend"] not in RING_CAPABLE:
                self.events["ring_backend_not_capable"] = a["attention_backend"]
            if a.get("attention_backend") is None:
                a["attention_backend"] = "fa"
                self.events["ring_auto_fa"] = True
        if a.get("attention_backend") is None and not diffusers and self.hw.platform == "rocm":
            a["attention_backend"] = "aiter"

    def _platform_specific(self) -> None:
        if self.hw.platform != "mps":
            return
        if self.args["num_gpus"] != 1:
            self.events["mps_num_gpus"] = self.args["num_gpus"]
        modes = (self.args.get("component_residency") or {}).values()
        if any(m not in ("resident", LAYERWISE_OFFLOAD) for m in modes):
            self.events["mps_residency_mode"] = True
        self.args["use_fsdp_inference"] = False
        if self.release.mps_clears_offload:  # up to 0.5.18 every component is resident on MPS
            self.args.update(dit_layerwise_offload=False, layerwise_offload_components=None, dit_cpu_offload=False,
                             text_encoder_cpu_offload=False, image_encoder_cpu_offload=False, vae_cpu_offload=False,
                             cpu_offload_components=None)

    def _layerwise_groups(self) -> None:
        """server_args.py:2022-2090."""
        selected = normalize_layerwise(self.args.get("layerwise_offload_components"))
        if self.args.get("dit_layerwise_offload"):
            if selected is None:
                selected = ["dit"]
            elif "dit" not in selected:
                selected = ["dit", *selected]
        self.args["layerwise_offload_components"] = selected
        chosen = set(selected or ())
        every = "all" in chosen
        for group, flag in (("text_encoder", "text_encoder_cpu_offload"), ("image_encoder", "image_encoder_cpu_offload"), ("vae", "vae_cpu_offload")):
            if (every or group in chosen) and self.args.get(flag) is not False:
                self.args[flag] = False

    def _finalize_auto_flags(self) -> None:
        if self.args["performance_mode"] == "manual":
            return
        for name in ("use_fsdp_inference", "dit_cpu_offload", "dit_layerwise_offload", "text_encoder_cpu_offload", "image_encoder_cpu_offload"):
            self._setdefault(name, False)

    # -- model hook (stage M) mutations and the transformer backend T ---------------------
    def transformer_backend(self) -> tuple[str | None, bool]:
        """resolve_transformer_attention_backend (minimax_h3.py:102-123): (T, valid)."""
        override = self.args["component_attention_backends"].get("transformer")
        if override:
            return _normalize_component_backend(override), True
        backend = self.args.get("attention_backend")
        if backend is None:
            return None, True
        name = _enum_name(backend)
        return (name, True) if name else (str(backend), False)

    def _model_hook_mutations(self) -> None:
        a = self.args
        key = self.family.key
        if key == "vdn":
            q = str(a.get("quantization") or "").lower()
            if q in ("none", "bf16"):
                a["quantization"] = None
            elif self.cuda and self.hw.cc_major in (10, 12) and q in ("", "fp8"):
                a["quantization"] = "mxfp8"
                self.events["vdn_auto_mxfp8"] = True
            if a.get("attention_backend") is None and not a["component_attention_backends"].get("transformer"):
                a["attention_backend"] = "hybrid_window_attn_h3"
                self.events["vdn_default_backend"] = True
        facts = self.backend_facts
        if key in ("fh3", "fh3o") and (facts is None or "fasth3_default_vsa_h3" in facts):  # from 0.5.22
            vsa_caps = facts["vsa_h3"]["capabilities"] if facts else VSA_H3_CAPABILITIES
            t, valid = self.transformer_backend()
            if (
                t is None
                and valid
                and not a["component_attention_backends"].get("transformer")  # an invalid override is not "unset"
                and self.cuda
                and self.hw.cc_int in vsa_caps
                and not bool(a.get("enable_torch_compile"))
                and not bool(a.get("enable_breakable_cuda_graph"))
                and int(a.get("ring_degree") or 1) <= 1
            ):
                a["component_attention_backends"]["transformer"] = "video_sparse_attn_h3"
                self.events["fh3_default_vsa"] = True


def dit_runtime_backend(t: str | None, hw: HardwareFacts) -> str | None:
    """The backend the DiT really runs at its first forward (catalog 3.2 and the M11 table)."""
    if hw.platform in ("mps", "cpu"):
        return "torch_sdpa"
    if hw.platform == "rocm":
        return "torch_sdpa" if t in (None, "fa") else t
    if hw.platform != "cuda":
        return "torch_sdpa" if t is None else t
    major = hw.cc_major
    if major is None:
        return None
    if t is None:
        if major == 12 or major < 8 or hw.flash_attn is False:
            return "torch_sdpa"
        if major == 10:
            return "dynamic_cudnn_sdpa"
        return "fa"
    if t == "fa":
        if major == 12 or major < 8 or hw.flash_attn is False:
            return "torch_sdpa"
        return "fa"
    if t == "fp8_fa_sm120" and hw.cc_int != 120:
        return "torch_cudnn_sdpa"
    return t
