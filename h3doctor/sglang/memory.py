"""Per-GPU and host memory of a resolved MiniMax-H3 launch: what sglang will place where, and when.

sglang checks none of this: a launch that cannot fit passes every launch check and then dies with
`torch.OutOfMemoryError` while loading (after the ~144 GB download) or at the startup warmup.
This module predicts those bytes from the resolved placement (`resolve.py`, `residency.py`), the
parallel layout and the hardware facts. The constants, each with its source, live in
`releasedata/<release>/memory.json`; the model and its expected error are in docs/memory.md and
are calibrated in tests/memory/ against published peaks.

Three figures per GPU come out of it:

* **load**: weights placed on the GPU at load, in sglang's load order (largest payload first:
  text encoder, DiT, video VAE, audio VAE), plus the CUDA context. Exact to ~1% given the
  checkpoint: over capacity means an OOM while loading.
* **live peak**: load + the largest stage's streamed/offloaded weights + live activations for the
  workload (the startup warmup shape for `serve`). Over capacity means an OOM at the warmup.
* **typical peak**: the same with the reserved-memory workspace measured on real runs (the
  allocator keeps more than the live need). Over capacity, or within the headroom margin, is
  "likely OOM".

Each figure is `None` where the model cannot tell (an uncalibrated family, a replaced checkpoint
of unknown size, an unknown GPU size or P2P topology that decides it): rules read None as
"cannot verify".

Each release has its own file. One calibrated on that release is exact; an older release's file
takes the calibrated release's byte sizes as lower bounds (the checkpoint is the same; a release
that holds more, e.g. a fp32 decoder or no text-encoder fold, only adds bytes) and says which
placements its own auto-tuner is verified to give (`MemoryModel.verified_placement`): the rest is
bounded by the smallest footprint any placement could have (`budget(..., lower_bound=True)`).
"""

from __future__ import annotations

import json
import math
from functools import lru_cache

from h3doctor.digits import is_digits
from h3doctor.facts import HardwareFacts
from h3doctor.paths import read_shipped_text
from h3doctor.record import field, record
from h3doctor.sglang import release_files

TYPE_CHECKING = False  # typing is not imported at run time (start-up: record.py)
if TYPE_CHECKING:
    from typing import Any

COMPONENTS = ("transformer", "text_encoder", "video_vae", "audio_vae")
QUANTIZED_DIT = ("fp8", "convrot_int8")  # the --quantization methods whose DiT bytes are modelled
LOAD_ORDER = ("text_encoder", "transformer", "video_vae", "audio_vae")  # component_loading_order.py:154-168
_KIB = 1 / (1 << 20)  # KiB in GiB


def _path(release: str) -> str:
    return release_files.path(release, "memory")


@lru_cache(maxsize=None)
def constants(release: str) -> dict[str, Any]:
    """The memory constants for `release`. A file naming a `base` release takes that release's
    constants, section by section, under its own values."""
    raw = json.loads(read_shipped_text(_path(release)))
    base = raw.get("base")
    if not base:
        return raw
    import copy

    merged = copy.deepcopy(constants(base))
    for section, values in raw.items():
        if isinstance(values, dict) and isinstance(merged.get(section), dict):
            merged[section] = {**merged[section], **values}
        else:
            merged[section] = values
    return merged


@record(frozen=True)
class MemoryModel:
    """How far h3doctor's memory model holds for one release (releasedata/<release>/memory.json)."""

    release: str
    exact: bool  # calibrated on this release; else every byte figure is a lower bound
    why_bound: str | None  # why the figures are bounds, for the report
    placement: dict[str, Any]  # performance mode -> the components its tuner verifiably places as modelled
    placement_flags: frozenset[str]  # typed flags (dests) under which no placement is verified

    def verified_placement(self, a: dict[str, Any], explicit: set[str]) -> frozenset[str]:
        """The components whose resolved placement this release's own auto-tuner is verified to
        give for this launch; every component on the calibrated release."""
        if self.exact:
            return frozenset(COMPONENTS)
        if explicit & self.placement_flags:
            return frozenset()
        entry = self.placement.get(str(a.get("performance_mode") or "auto"))
        return frozenset(entry["components"]) if entry else frozenset()


@lru_cache(maxsize=None)
def model_for(release: str) -> MemoryModel | None:
    """The memory model of `release`, or None when h3doctor records none for it."""
    if not release_files.has(release, "memory"):
        return None
    c = constants(release)
    bound = c.get("bound")
    return MemoryModel(
        release=release, exact=bound is None, why_bound=(bound or {}).get("why"),
        placement={k: v for k, v in (c.get("placement") or {}).items() if not k.startswith("_")},
        placement_flags=frozenset((bound or {}).get("placement_flags", ())),
    )


def _flat(section: dict[str, Any]) -> dict[str, Any]:
    return {k: v["value"] for k, v in section.items() if isinstance(v, dict) and "value" in v}


@lru_cache(maxsize=None)
def _values(release: str, section: str) -> dict[str, Any]:
    """One section's values for a release, flattened once (budget() reads them on every check).
    Callers must not mutate the mapping."""
    return _flat(constants(release)[section])


@record(frozen=True)
class Workload:
    """One forward's shape: the startup warmup for `serve`, or a request."""

    width: int
    height: int
    seconds: float
    what: str  # "startup warmup" | "request"

    def frames(self, fps: float) -> int:
        return max(1, round(self.seconds * fps))

    def rows(self, fps: float) -> int:
        """Packed rows per forward: video latents (17n+5 frames -> 5n+2 latent frames of
        (w/32)x(h/32) patches), audio (~80 per second) and text (~0.5 k)."""
        frames = self.frames(fps)
        n = max(0, math.ceil((frames - 5) / 17))
        patches = max(1, self.width // 32) * max(1, self.height // 32)
        return patches * (5 * n + 2) + int(80 * self.seconds) + 500


@record(frozen=True)
class Budget:
    """The memory model's answer for one resolved launch: per-GPU bytes at load and at the peak
    stage, and the host's share."""
    capacity_gib: float | None
    context_gib: float
    load_by_component: dict[str, float]  # GiB per GPU placed at load
    load_gib: float | None  # weights + context
    load_failing_component: str | None  # the first component, in load order, that crosses capacity
    stage_active_gib: dict[str, float]  # what each stage adds on top of the load (weights streamed in)
    peak_stage: str
    workload: Workload | None
    activations_live_gib: float | None  # live activations of the peak stage, with the safety margin
    live_margin_gib: float
    workspace_typical_gib: float | None
    peak_live_gib: float | None
    peak_typical_gib: float | None
    peak_weights_gib: float  # load + context + the largest stage's streamed weights: no activations at all
    host_layerwise_gib: float  # layerwise host copies sglang would like to pin, all ranks of the host
    host_spendable_gib: float | None
    fold: bool | None  # text-encoder folding (None: the P2P topology is unknown)
    uncertain: list[str] = field(default_factory=list)  # why a figure is only a bound
    # the workload is `serve`'s synthetic warmup, which sglang survives running out of memory:
    # one GPU per replica and no --warmup-resolutions (see warmup_fails_open)
    fails_open: bool = False
    # each layerwise component's layer stores on one rank, in the order sglang offers its pin budget
    # (DiT first): (component, stores, GiB per store); every rank of the host holds its own
    host_stores: tuple[tuple[str, int, float], ...] = ()
    ranks: int = 1

    def as_dict(self) -> dict[str, Any]:
        r = lambda v: None if v is None else round(v, 2)  # noqa: E731
        return {
            "capacity_gib": r(self.capacity_gib),
            "context_gib": r(self.context_gib),
            "load_by_component_gib": {k: r(v) for k, v in self.load_by_component.items()},
            "load_gib": r(self.load_gib),
            "load_failing_component": self.load_failing_component,
            "stage_active_gib": {k: r(v) for k, v in self.stage_active_gib.items()},
            "peak_stage": self.peak_stage,
            "workload": None if self.workload is None else {
                "width": self.workload.width, "height": self.workload.height, "seconds": self.workload.seconds,
                "what": self.workload.what},
            "activations_live_gib": r(self.activations_live_gib),
            "live_margin_gib": r(self.live_margin_gib),
            "workspace_typical_gib": r(self.workspace_typical_gib),
            "peak_live_gib": r(self.peak_live_gib),
            "peak_typical_gib": r(self.peak_typical_gib),
            "peak_weights_gib": r(self.peak_weights_gib),
            "warmup_fails_open": self.fails_open,
            "headroom_gib": r(None if self.capacity_gib is None or self.peak_typical_gib is None
                              else self.capacity_gib - self.peak_typical_gib),
            "host_layerwise_gib": r(self.host_layerwise_gib),
            "host_spendable_gib": r(self.host_spendable_gib),
            "text_encoder_folded": self.fold,
            "uncertain": list(self.uncertain),
        }


def _count(value: Any, n: int, *, prefetch: bool) -> int:
    """sglang's layer counts (server_args.layerwise_tuning_for): below 1.0 a fraction, else a count.
    Prefetch: a fraction p gives 1 + round(p(n-1)); resident: round(r*n)."""
    try:
        v = float(value or 0.0)
    except (TypeError, ValueError):
        v = 0.0
    if not math.isfinite(v) or v < 0:
        v = 0.0
    if v >= 1.0:
        return min(n, int(v))
    return 1 + round(v * (n - 1)) if prefetch else round(v * n)


def _component_map(value: Any) -> dict[str, str]:
    """`c=v,...` (--layerwise-prefetch-size / --layerwise-resident-layers / lifetimes)."""
    if isinstance(value, dict):
        return {str(k).replace("-", "_"): str(v) for k, v in value.items()}
    out: dict[str, str] = {}
    for part in str(value or "").split(","):
        if "=" in part:
            k, v = part.split("=", 1)
            out[k.strip().replace("-", "_")] = v.strip()
    return out


def _lookup(mapping: dict[str, str], component: str) -> str | None:
    aliases = {"transformer": ("transformer", "dit"), "video_vae": ("video_vae", "vae")}.get(component, (component,))
    for name in aliases:
        if name in mapping:
            return mapping[name]
    return None


def _p2p(hw: HardwareFacts, table: dict[str, Any]) -> bool | None:
    name = (hw.device_name or "").upper()
    if any(tag.upper() in name for tag in table["no"]):
        return False
    if any(tag.upper() in name for tag in table["yes"]):
        return True
    return None


def _fold_group(a: dict[str, Any], n: int, tp: int, hw: HardwareFacts, table: dict[str, Any]) -> tuple[int, bool | None]:
    """Text-encoder shard g (server_args.py:975-1019; encoders/base.py:63-168): folded over the
    replica's N GPUs when the encoder mode allows it, N divides 64 heads and 25600, and every GPU
    reaches every peer; otherwise the DiT's TP group. Returns (g, folded?) with folded None when
    only the unknown P2P topology decides."""
    mode = str(a.get("encoder_parallel") or "auto").lower()
    dp = int(a.get("dp_size") or 1)
    wants = mode == "fold" or (mode == "auto" and dp == 1 and n > tp)
    if not wants or n <= 1 or 64 % n or 25600 % n:
        return tp, False
    p2p = _p2p(hw, table)
    if p2p is False:
        return tp, False
    return n, (True if p2p else None)


def workload_for(a: dict[str, Any], entry: str, intent: dict[str, Any], c: dict[str, Any]) -> Workload | None:
    """The first forward: the request the user says they will make, else the `serve` startup
    warmup (`--warmup-resolutions` / `--warmup-num-frames`), else generate's default request."""
    warm = _flat(c["warmup"])
    fps = warm["fps"]
    res = intent.get("resolution")
    secs = intent.get("seconds")
    if res or secs:
        w, h = _parse_resolution(res) or (warm["width"], warm["height"])
        return Workload(w, h, float(secs or warm["seconds"]), "request")
    if entry == "serve":
        if str(a.get("warmup_mode") or "off") != "server":
            return None
        w, h = warm["width"], warm["height"]
        resolutions = a.get("warmup_resolutions")
        if resolutions:
            sizes = [s for s in (_parse_resolution(r) for r in (resolutions if isinstance(resolutions, list) else [resolutions])) if s]
            if sizes:
                w, h = max(sizes, key=lambda s: s[0] * s[1])
        seconds = warm["seconds"]
        frames = a.get("warmup_num_frames")
        if isinstance(frames, int) and frames > 0:
            seconds = frames / fps
        return Workload(w, h, seconds, "startup warmup")
    return Workload(warm["width"], warm["height"], warm["seconds"], "request")


def warmup_fails_open(a: dict[str, Any], wl: Workload | None) -> bool:
    """Whether sglang carries on when this startup warmup runs out of memory. `sglang serve`
    runs its synthetic warmup fail-open unless --warmup-resolutions is given
    (entrypoints/http_server.py:114-117): an OOM comes back as the warmup's error, is retried
    lighter (server_warmup.py, MAX_WARMUP_DEGRADE_ATTEMPTS) and then logged as "Synthetic server
    warmup failed; continuing startup". That holds on one GPU per replica only: a multi-rank
    forward that runs out of memory is fatal ("Multi-rank forward ran out of memory; restart the
    server.", managers/gpu_worker.py:840-852)."""
    if wl is None or wl.what != "startup warmup" or a.get("warmup_resolutions"):
        return False
    replica = max(1, int(a.get("num_gpus") or 1)) // max(1, int(a.get("dp_size") or 1))
    return replica <= 1


def _parse_resolution(value: Any) -> tuple[int, int] | None:
    text = str(value or "").lower().replace("*", "x")
    w, sep, h = text.partition("x")
    if sep and is_digits(w.strip()) and is_digits(h.strip()) and int(w) > 0 and int(h) > 0:
        return int(w), int(h)
    return None


def budget(a: dict[str, Any], residency: dict[str, str], family: str, hw: HardwareFacts, env: dict[str, Any],
           entry: str, intent: dict[str, Any], release: str, *, no_fold: bool = False,
           lower_bound: bool = False) -> Budget:
    """The memory budget per GPU of one resolved launch (`a`: sglang's resolved ServerArgs fields).
    `no_fold` forces the text encoder unfolded (the other case when the P2P topology is unknown).
    `lower_bound`: no figure may exceed what any release could hold for this placement: the text
    encoder folded wherever its shape allows, one streamed layer at a time, no CUDA context, no
    activations or workspace (for a release whose placement and constants are not calibrated)."""
    c = constants(release)
    w, ws, lw = _values(release, "weights_gib"), _values(release, "workspace"), _values(release, "layerwise")
    if lower_bound:
        ws = {k: 0.0 for k in ws}
    uncertain: list[str] = []
    num_gpus = max(1, int(a.get("num_gpus") or 1))
    dp = max(1, int(a.get("dp_size") or 1))
    n = max(1, num_gpus // dp)
    tp = max(1, int(a.get("tp_size") or 1))
    sp = max(1, int(a.get("ulysses_degree") or 1)) * max(1, int(a.get("ring_degree") or 1))
    fsdp = bool(a.get("use_fsdp_inference"))
    shard_dit = n if fsdp else tp
    if lower_bound:
        g, fold = (n, True) if n > 1 and not 64 % n and not 25600 % n else (tp, False)
    else:
        g, fold = (tp, False) if no_fold else _fold_group(a, n, tp, hw, c["p2p_fold"])

    # -- component sizes as sglang holds them ------------------------------------------
    quant = str(a.get("quantization") or "").lower()
    adaln_off_gpu = bool(a.get("minimax_h3_adaln_online")) or bool(a.get("minimax_h3_adaln_cache_path"))
    if quant in QUANTIZED_DIT:
        dit_total, block = w["dit_total_fp8"], w["dit_block_fp8"]
    elif adaln_off_gpu:
        dit_total, block = w["dit_total_no_adaln"], w["dit_block_no_adaln"]
    else:
        dit_total, block = w["dit_total"], w["dit_block"]
    if family in ("fh3", "fh3o"):
        dit_total += w["fasth3_gate_compress"]
    slab = 0.0
    if bool(a.get("minimax_h3_adaln_online")):
        plans = _int(env.get("SGLANG_DIFFUSION_MINIMAX_H3_ADALN_GPU_PLANS"), int(w["adaln_gpu_plans_default"]))
        slab = w["adaln_slab_per_plan_width"] * _int(a.get("minimax_h3_adaln_plan_width"), 4) * plans / w["adaln_gpu_plans_default"]
    if family in c["uncalibrated_families"]["value"]:
        uncertain.append(f"the {family} DiT's extra modules are not modelled (sized from its overlay config)")
    weights_override = (a.get("component_weights_paths") or {}).get("transformer") or a.get("transformer_weights_path")
    if weights_override:
        uncertain.append("the transformer weights are replaced (--transformer-weights-path): their size is taken as the base DiT's")
    if (a.get("component_paths") or {}).get("text_encoder"):
        uncertain.append("the text encoder is replaced (--component-paths.text_encoder): its size is taken as the base encoder's")
    vae_total = w["vae_total_fp32"] if (env.get("SGLANG_DIFFUSION_DISABLE_EARLY_VAE_DECODER_CAST") or a.get("disable_autocast")) else w["vae_total"]
    te_resident = w["te_layer"] * w["te_layers"] / g + w["te_embed"] + w["te_vision"]

    # -- layerwise knobs ----------------------------------------------------------------
    prefetch = _component_map(a.get("layerwise_prefetch_size"))
    resident_layers = _component_map(a.get("layerwise_resident_layers"))
    lifetimes = _component_map(a.get("layerwise_residency_lifetime"))
    factor = 1 if lower_bound else lw["window_factor"]  # a bound streams only the p layers it runs

    def knobs(component: str, n_layers: int) -> tuple[int, int, bool]:
        if component == "transformer":
            p = _count(a.get("dit_offload_prefetch_size"), n_layers, prefetch=True)
            r = _count(a.get("dit_layerwise_resident_layers"), n_layers, prefetch=False)
            permanent = str(a.get("dit_layerwise_residency_lifetime") or "forward") == "permanent"
        else:
            p = _count(_lookup(prefetch, component), n_layers, prefetch=True)
            r = _count(_lookup(resident_layers, component), n_layers, prefetch=False)
            permanent = (_lookup(lifetimes, component) or "forward") == "permanent"
        return p, r, permanent

    def layerwise(component: str, n_layers: int, layer: float, nonlayer: float, split: float = 1) -> tuple[float, float, float]:
        """(at load, in its stage, on the host) for a layerwise-offloaded text encoder or VAE: its
        resident layers are held for good (`permanent`) or only in its stage, where the prefetch
        window streams the others in; every layer lives on the host. `split`: the TP share."""
        p, r, permanent = knobs(component, n_layers)
        held = min(r, n_layers) * layer / split
        window = min(factor * p, n_layers - min(r, n_layers)) * layer / split
        return nonlayer + (held if permanent else 0.0), (0.0 if permanent else held) + window, n_layers * layer / split

    load: dict[str, float] = {}
    active: dict[str, float] = {"encode": 0.0, "denoise": 0.0, "decode": 0.0}
    host = 0.0
    stores: list[tuple[str, int, float]] = []
    mode = {comp: residency.get(comp, "resident") for comp in COMPONENTS}

    # DiT
    blocks = int(w["dit_blocks"])
    if mode["transformer"] == "resident":
        load["transformer"] = dit_total / shard_dit
        if fsdp:
            active["denoise"] = 2 * block  # two gathered blocks (reshard_after_forward, per block)
    elif mode["transformer"] == "layerwise-offload":
        p, r, permanent = knobs("transformer", blocks)
        held = min(r, blocks) * block / tp
        load["transformer"] = w["dit_other"] / tp + (held if permanent else 0.0)
        window = min(factor * p, blocks - min(r, blocks)) * block / tp
        refiner = w["dit_refiner"] / tp
        active["denoise"] = (0.0 if permanent else held) + window + refiner
        host = host + (blocks - (r if permanent else 0)) * block / tp + refiner
        stores.append(("transformer", blocks - (r if permanent else 0), block / tp))
    else:  # component / snapshot offload: the whole DiT (split by TP only: FSDP shards resident modules only)
        load["transformer"] = 0.0
        active["denoise"] = dit_total / tp
    load["adaln_slab"] = slab

    # text encoder
    te_layers = int(w["te_layers"])
    if mode["text_encoder"] == "resident":
        load["text_encoder"] = te_resident
    elif mode["text_encoder"] == "layerwise-offload":
        load["text_encoder"], active["encode"], on_host = layerwise(
            "text_encoder", te_layers, w["te_layer"], w["te_nonlayer_layerwise"], g)
        host += on_host + w["te_vision"]
        stores.append(("text_encoder", te_layers, w["te_layer"] / g))
    else:
        load["text_encoder"] = 0.0
        active["encode"] = te_resident

    # video VAE
    vae_blocks = int(w["vae_blocks"])
    if mode["video_vae"] == "resident":
        load["video_vae"] = vae_total
    elif mode["video_vae"] == "layerwise-offload":
        load["video_vae"], active["decode"], on_host = layerwise("video_vae", vae_blocks, w["vae_block"], w["vae_nonlayer"])
        host += on_host
        stores.append(("video_vae", vae_blocks, w["vae_block"]))
    else:
        load["video_vae"] = 0.0
        active["decode"] = vae_total
    load["audio_vae"] = w["audio_vae"] if mode["audio_vae"] == "resident" else 0.0

    context = 0.0 if lower_bound else _values(release, "context_gib")["multi_gpu" if num_gpus > 1 else "single_gpu"]
    capacity = _capacity(hw)
    weights = sum(load.values())
    load_total = weights + context
    failing = None
    if capacity is not None and load_total > capacity:
        running = context + load["adaln_slab"]
        for comp in LOAD_ORDER:
            running += load.get(comp, 0.0)
            if running > capacity:
                failing = comp
                break

    wl = workload_for(a, entry, intent, c)
    act_live = typical = peak_live = peak_typ = None
    peak_stage = max(active, key=lambda s: active[s])
    if wl is not None:
        warm = _values(release, "warmup")
        fps = warm["fps"]
        rows = wl.rows(fps)
        ref_rows = Workload(int(warm["width"]), int(warm["height"]), warm["seconds"], "").rows(fps)
        act_dit = 0.0 if lower_bound else ((rows / sp) * (32 + 57 / tp) + rows * 21.5) * _KIB
        stage_live = {
            "encode": active["encode"] + ws["te_act_gib"],
            "denoise": active["denoise"] + act_dit + ws["live_margin_gib"],
            "decode": active["decode"] + ws["vae_act_gib"],
        }
        peak_stage = max(stage_live, key=lambda s: stage_live[s])
        act_live = stage_live[peak_stage] - active[peak_stage]
        if hw.platform == "rocm":
            band = ws["rocm_typical_gib"]
        else:
            band = ws["typical_gib_8_gpus"] if n >= 8 else ws["typical_gib_up_to_4_gpus"]
        if fsdp:
            band += ws["fsdp_extra_gib"]
        typical = max(ws["floor_gib"], band * rows / ref_rows)
        peak_live = weights + context + stage_live[peak_stage]
        # the measured band is peak reserved minus weights: it already holds the CUDA context
        peak_typ = max(weights + max(active.values()) + typical, peak_live)  # reserved is never below live

    spendable = None
    if hw.host_memory_gib is not None:
        spendable = max(0.0, hw.host_memory_gib - max(0.05 * hw.host_memory_gib, 2.0))
    return Budget(
        peak_weights_gib=weights + context + max(active.values()),
        fails_open=warmup_fails_open(a, wl),
        capacity_gib=capacity, context_gib=context, load_by_component=load, load_gib=load_total,
        load_failing_component=failing, stage_active_gib=active, peak_stage=peak_stage, workload=wl,
        activations_live_gib=act_live, live_margin_gib=ws["live_margin_gib"], workspace_typical_gib=typical, peak_live_gib=peak_live,
        peak_typical_gib=peak_typ, host_layerwise_gib=host * num_gpus, host_spendable_gib=spendable,
        host_stores=tuple(stores), ranks=num_gpus, fold=fold, uncertain=uncertain,
    )


def pinned_need_gib(b: Budget, release: str, pin: bool, host_gib: float | None, courier: bool = True) -> float | None:
    """The host memory that this launch pins, all ranks of the host together, as the release pins
    it (`releasedata/<release>/memory.json` `pinning`): the layerwise layer stores (each rank pins
    its own shard), and from 0.5.19 each rank's staging slots for the layers left on the
    checkpoint's mapping (`staging_slots`, outside the pin budget, pinned whatever
    `--pin-cpu-memory` says). The non-layer weights sglang keeps on the host are pageable for
    MiniMax-H3 (`non_layer_pinned_gib`: 0).

    Not counted, so the figure is a lower bound: MiniMax-H3's AdaLN host tier (0.5.20 on, sized from
    the memory available at run time), the checkpoint's page cache and the process's own memory
    (Python, torch, the CUDA context); a component's layers count as mapped only where its copies
    do not fit the host as the rank plans it, which a real host (with less available) reaches sooner.
    `pin`: ServerArgs.pin_cpu_memory (True unless `--pin-cpu-memory false`); `courier`: False with
    SGLANG_DIFFUSION_DISABLE_MAPPED_COURIER. None where the host memory, which a budget plans
    against, is unknown."""
    stores = [(n, size) for _, n, size in b.host_stores if n > 0 and size > 0]
    if not stores:
        return 0.0
    p = _values(release, "pinning")
    non_layer = b.ranks * (p.get("non_layer_pinned_gib") or 0.0)
    if p["budget"] == "none":
        # no budget: every store is pinned, rounded as the release rounds it; unpinned, each is an
        # anonymous copy of its own size all the same (and nothing is left on the mapping: no slots)
        return b.ranks * sum(n * (_locked(size, p) if pin else size) for n, size in stores) + non_layer
    if host_gib is None:
        return None
    # each rank plans against its share of the host: what it books is the store's size, what
    # it locks the block the release allocates for it
    share = host_gib / b.ranks
    room = min(share - max(p["reserve_fraction"] * share, p["reserve_min_gib"]), share - p["copy_reserve_gib"])
    slots = (p.get("staging_slots") or 0) if courier else 0
    booked = locked = staging = 0.0
    for n, size in stores:
        k = max(0, min(n, int((room - booked) // size))) if pin else 0
        # sglang weighs the component's host copies (pinned and pageable alike, booked before they
        # are allocated) against what is available less the copy reserve, after the components
        # before it pinned theirs; copies that do not fit leave the unpinned layers on the mapping,
        # which the courier ships through its pinned slots, each the size of one layer
        mapped = k < n and n * size > share - p["copy_reserve_gib"] - locked
        booked += k * size
        locked += k * _locked(size, p)
        staging += slots * _locked(size, p) if mapped else 0.0
    return b.ranks * (locked + staging) + non_layer


def _locked(size_gib: float, p: dict[str, Any]) -> float:
    """What pinning one store of `size_gib` locks: itself where the release pins it in place,
    else the power of two torch's pinned allocator rounds it up to."""
    if p["stores"] == "in_place" and size_gib >= p["in_place_min_gib"]:
        return size_gib
    return float(2 ** math.ceil(math.log2(size_gib)))


def _capacity(hw: HardwareFacts) -> float | None:
    """What the least-free selected GPU can give: free memory at launch (other processes' bytes
    are not ours), falling back to the total."""
    if hw.gpu_free_gib is not None:
        return float(hw.gpu_free_gib)
    return None if hw.gpu_memory_gib is None else float(hw.gpu_memory_gib)


def _int(value: Any, default: int) -> int:
    try:
        return int(value)
    except (TypeError, ValueError):
        return default
