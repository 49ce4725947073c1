"""The memory budget the fit rules read (H3D540-H3D544, H3D640-H3D641), and the least disruptive
change that makes the launch fit (for the `memory_fit` fix strategy).

The bytes come from `sglang/memory.py`, for the check's release (`Release.memory`). Verdicts are
three-valued: True (will not fit), False (fits), None (cannot tell: an uncalibrated family, a
replaced checkpoint, a text-encoder fold that only the unknown P2P topology decides, or a release
whose figures are lower bounds and the bound fits). Rules treat `derived.memory.*` like hardware
facts: None there is "cannot verify", never a pass. Where no figure can be given at all (a
platform the model does not cover, no GPU memory figure, a release with no memory model),
`derived.memory.unmodelled` says why.
"""

from __future__ import annotations

import itertools

from h3doctor.engine.derivations.registry import derives
from h3doctor.record import replace
from h3doctor.sglang.memory import COMPONENTS, Budget, MemoryModel, budget, constants, pinned_need_gib
from h3doctor.sglang.residency import H3_COMPONENTS, canonical_mode, normalize_layerwise

TYPE_CHECKING = False  # typing is not imported at run time (start-up: record.py)
if TYPE_CHECKING:
    from typing import Any

_PLATFORMS = ("cuda", "rocm")
_LAYERWISE_NAME = {"transformer": "dit", "text_encoder": "text_encoder", "video_vae": "vae"}
# least disruptive first: the text encoder runs once per request, the DiT every step, the VAE last
_OFFLOAD_ORDER = ("text_encoder", "transformer", "video_vae")


def _intent(ctx: dict[str, Any]) -> dict[str, Any]:
    whole = ctx.get("intent")
    if isinstance(whole, dict):  # engine/evaluate.py puts the whole request there: no scan of every context key
        return dict(whole)
    return {k.removeprefix("intent."): v for k, v in ctx.items() if k.startswith("intent.") and v is not None}


def _over(value: float | None, capacity: float | None) -> bool | None:
    if value is None or capacity is None:
        return None
    return value > capacity


def _verdict(primary: Budget, other: Budget | None, pick, uncertain: bool) -> bool | None:
    """True/False when every case the model cannot tell apart agrees, else None."""
    first = _over(pick(primary), primary.capacity_gib)
    if first is None:
        return None
    if other is not None and _over(pick(other), other.capacity_gib) != first:
        return None
    if uncertain and first:
        return True  # the bound is a lower one: the replaced/unmodelled part only adds bytes
    if uncertain:
        return None
    return first


def _unmodelled(hw: Any, model: MemoryModel | None, release: str) -> str | None:
    """Why no memory figure can be given for this launch at all, or None when one can."""
    if hw.platform not in _PLATFORMS:
        where = "an unknown platform" if hw.platform in (None, "", "unknown") else f"the {hw.platform} platform"
        what = (" (sglang keeps every component resident in host RAM there: server_args.py residency_mode)"
                if hw.platform == "cpu" else "")
        return (f"h3doctor's memory model covers CUDA and ROCm GPUs only, not {where}{what}: whether the "
                "weights and the first forward fit in this host's memory is not checked")
    if model is None:
        return f"h3doctor has no memory model for sglang {release}"
    return None  # an unknown GPU size leaves the figures' verdicts None: the fit rules say "cannot verify"


def _unified(r: Any, hw: Any, ctx: dict[str, Any], release: str) -> str:
    """Apple MPS, in words: the GPU and the CPU share one memory, and sglang keeps every layer of
    every component there (synchronous layerwise offload, H3D302), so the model's weights — as
    the CUDA model sizes them, held once — are compared with that memory. What the first forward
    adds on MPS is not modelled: the fit stays unverified, only what will happen is said."""
    one = {"num_gpus": 1, "tp_size": 1, "dp_size": 1, "ulysses_degree": 1, "ring_degree": 1, "use_fsdp_inference": False}
    held = budget({**r.args, **one}, dict.fromkeys(COMPONENTS, "resident"), r.family.key, replace(hw, platform="cuda"),
                  r.env, ctx.get("entry"), _intent(ctx), release)
    weights = round(sum(held.load_by_component.values()), 1)
    memory = hw.host_memory_gib if hw.host_memory_gib is not None else hw.gpu_memory_gib
    shared = "unified memory the GPU and the CPU share"
    streamed = ("sglang keeps every layer there and streams it to the GPU as it runs (MPS's synchronous layerwise "
                "offload)")
    if memory is None:
        return (f"on Apple MPS the model's weights (about {weights:g} GiB) must fit in the {shared}, and this host's "
                f"memory is not known: {streamed}; give host_memory_gib in a profile file to compare")
    if weights >= memory:
        return (f"on Apple MPS the model's weights alone (about {weights:g} GiB) are more than the {memory:g} GiB of "
                f"{shared}: {streamed}, so macOS will page weights out to disk and read them back at every "
                "denoising step: expect it to be far slower than on a GPU with the memory, if it is not stopped "
                "for want of memory")
    return (f"on Apple MPS the model's weights (about {weights:g} GiB) fit in the {memory:g} GiB of {shared}, "
            f"leaving {memory - weights:.1f} GiB for the activations, macOS and everything else running: {streamed}; "
            "h3doctor has no figures for the activations on MPS (on a CUDA GPU the first forward's workspace alone "
            "is 10-11 GiB at 1344x768 x 5 s), so whether the first forward fits is not checked")


@derives("memory", "memory.capacity_gib", "memory.load_gib", "memory.load_over",
         "memory.load_failing_component", "memory.workload", "memory.workload_what",
         "memory.peak_live_gib", "memory.peak_typical_gib", "memory.peak_stage", "memory.warmup_over",
         "memory.warmup_fails_open_over",
         "memory.likely_over", "memory.headroom_gib", "memory.shortfall_gib", "memory.host_layerwise_gib", "memory.host_spendable_gib",
         "memory.host_short", "memory.host_pinned_need_gib", "memory.host_pinned_over",
         "memory.unpinned_stay_mapped",
         "memory.fix_ops", "memory.fix_why", "memory.unmodelled",
         "memory.load_unverified", "memory.fit_unverified", "memory.fit_unverified_why",
         reads=("derived.residency", "entry", "intent"))
def memory_budget(r: Any, hw: Any, ctx: dict[str, Any]) -> dict[str, Any]:
    release, model = r.release.table_version, r.release.memory
    why = _unmodelled(hw, model, release)
    if why is not None and hw.platform == "mps" and model is not None:
        why = _unified(r, hw, ctx, release)
    if why is not None:
        return {"derived.memory": None, "derived.memory.unmodelled": why, "derived.memory.load_over": None,
                **_NOTHING_UNVERIFIED}
    a, family, entry = r.args, r.family.key, ctx.get("entry")
    residency = dict(ctx.get("derived.residency") or {})
    intent = _intent(ctx)
    if not model.exact:
        return _bounded(r, hw, model, residency, intent, entry)
    b = budget(a, residency, family, hw, r.env, entry, intent, release)
    other = budget(a, residency, family, hw, r.env, entry, intent, release, no_fold=True) if b.fold is None else None
    # replaced checkpoints are sized as the base ones: an upper bound for overrides (usually smaller)
    overrides = any("replaced" in u for u in b.uncertain)
    unmodelled = any("not modelled" in u for u in b.uncertain)
    headroom = constants(release)["workspace"]["headroom_warn_gib"]["value"]

    def fit(pick) -> bool | None:
        if overrides:
            over = _over(pick(b), b.capacity_gib)
            return None if over else False  # only an upper bound: "fits" is known, "over" is not
        return _verdict(b, other, pick, unmodelled)

    load_over = fit(lambda x: x.load_gib)
    warm_over = None if b.workload is None else fit(lambda x: x.peak_live_gib)
    # serve's synthetic warmup on one GPU fails open: sglang logs the OOM and serves. It is then a
    # launch failure only where even the stage's weights, without any activations, do not fit
    # (no request of any size can run); otherwise requests of the warmup's size fail (H3D642).
    reported_warm, fails_open_over = warm_over, False
    if b.fails_open and warm_over:
        nothing_runs = fit(lambda x: x.peak_weights_gib)
        reported_warm, fails_open_over = nothing_runs, nothing_runs is False
    typical = (lambda x: None if x.peak_typical_gib is None else x.peak_typical_gib + headroom)
    likely_over = None if b.workload is None else fit(typical)
    host_short: bool | None = False  # nothing streamed from the host: nothing to pin
    if b.host_layerwise_gib > 0:
        host_short = None if b.host_spendable_gib is None else b.host_layerwise_gib > b.host_spendable_gib
    out: dict[str, Any] = {
        "derived.memory": b.as_dict(),
        "derived.memory.capacity_gib": _round(b.capacity_gib),
        "derived.memory.load_gib": _round(b.load_gib),
        "derived.memory.load_over": load_over,
        "derived.memory.load_failing_component": b.load_failing_component or _largest(b),
        "derived.memory.workload": None if b.workload is None else f"{b.workload.width}x{b.workload.height} x {b.workload.seconds:g} s",
        "derived.memory.workload_what": None if b.workload is None else b.workload.what,
        "derived.memory.peak_live_gib": _round(b.peak_live_gib),
        "derived.memory.peak_typical_gib": _round(b.peak_typical_gib),
        "derived.memory.peak_stage": b.peak_stage,
        "derived.memory.warmup_over": reported_warm,
        "derived.memory.warmup_fails_open_over": fails_open_over,
        "derived.memory.likely_over": likely_over,
        "derived.memory.headroom_gib": _round(None if b.capacity_gib is None or b.peak_typical_gib is None
                                              else b.capacity_gib - b.peak_typical_gib),
        # what the GPU lacks for this launch to clear every memory verdict (the workspace of real
        # runs plus H3D641's margin): the shortfall "no corrected command fits" names
        "derived.memory.shortfall_gib": _round(None if b.capacity_gib is None or b.peak_typical_gib is None
                                               else max(0.0, b.peak_typical_gib + headroom - b.capacity_gib)),
        "derived.memory.host_layerwise_gib": _round(b.host_layerwise_gib),
        "derived.memory.host_spendable_gib": _round(b.host_spendable_gib),
        "derived.memory.host_short": host_short,
        **_pinned(pinned_need_gib(b, release, _pins(a), hw.host_memory_gib, _courier(r.env)), hw, release),
        "derived.memory.unmodelled": None,
        **_NOTHING_UNVERIFIED,
    }
    if load_over or warm_over or likely_over:
        # a component the user placed with --component-residency stays there whatever the
        # layerwise list says (residency_mode precedence, server_args.py:1893-1935). The fix
        # clears the workspace measured on real runs too where any change does (a fix that only
        # fits the live need leaves H3D641's "torch.OutOfMemoryError is likely"); else the live need.
        ops, why = _least_disruptive_fit(a, residency, family, hw, r.env, entry, intent, release, *_placed(r),
                                         headroom=headroom)
        if not ops and (load_over or warm_over):
            ops, why = _least_disruptive_fit(a, residency, family, hw, r.env, entry, intent, release, *_placed(r))
        out["derived.memory.fix_ops"] = ops
        out["derived.memory.fix_why"] = why
    return out


# the calibrated release's figures are estimates, not bounds: H3D540/H3D640 judge them themselves
_NOTHING_UNVERIFIED = {"derived.memory.load_unverified": False, "derived.memory.fit_unverified": False,
                       "derived.memory.fit_unverified_why": None}


def _unverified(bound: list[str], cap: float | None, load_over: bool | None, warm_over: bool | None,
                replaced: bool) -> dict[str, Any]:
    """A lower bound that fits says nothing (all offloaded, the bound of the load is 0 GiB): where
    the load's bound fits, H3D540 keeps silent; where no bound is over, neither H3D540 nor H3D640
    speaks and H3D544 alone says "cannot verify", in words and with no figure."""
    fit_unverified = load_over is not True and warm_over is not True
    why = None
    if fit_unverified:
        what = ("the GPU's free memory is not known" if cap is None else
                "a replaced checkpoint leaves no lower bound" if replaced else
                "those bounds fit, which says nothing of what this release really places")
        why = f"{'; '.join(bound)}; {what}: whether the weights load and the first forward runs is not known"
    return {"derived.memory.load_unverified": load_over is not True, "derived.memory.fit_unverified": fit_unverified,
            "derived.memory.fit_unverified_why": why}


_PLACEMENTS = ("resident", "component-offload", "layerwise-offload")
# a bound streams as little as any setting could: no resident layers, the smallest prefetch
_LEAST_KNOBS = {"dit_layerwise_resident_layers": 0.0, "dit_offload_prefetch_size": 0.0, "layerwise_prefetch_size": None,
                "layerwise_resident_layers": None, "dit_layerwise_residency_lifetime": "forward",
                "layerwise_residency_lifetime": None}


def _bounded(r: Any, hw: Any, model: MemoryModel, residency: dict[str, str], intent: dict[str, Any],
             entry: str | None) -> dict[str, Any]:
    """The verdicts for a release whose figures are lower bounds: the components its own tuner is
    verified to place as resolved stay so, every other one takes each placement it could have, and
    each figure is the least of them. Over capacity even so is an out-of-memory whatever that
    release places; under it is "cannot verify" (None), never a pass."""
    a, family, release = r.args, r.family.key, model.release
    verified = model.verified_placement(a, set(r.explicit))
    free = [c for c in COMPONENTS if c not in verified]
    knobs = {**a, **_LEAST_KNOBS} if free else a
    options = [_PLACEMENTS if c != "audio_vae" else _PLACEMENTS[:2] for c in free]
    placements = [{**residency, **dict(zip(free, modes))} for modes in itertools.product(*options)]
    trials = [budget(knobs, placed, family, hw, r.env, entry, intent, release, lower_bound=True) for placed in placements]
    least_load = min(trials, key=lambda b: b.load_gib)
    least_peak = min(trials, key=lambda b: (b.peak_live_gib if b.peak_live_gib is not None else b.load_gib))
    cap = least_load.capacity_gib
    bound = [model.why_bound or f"sglang {release}'s figures are lower bounds"]
    if free:
        bound.append(f"the placement of {', '.join(free)} by sglang {release}'s auto-tuner is not modelled: "
                     "each is taken at its smallest footprint")
    # a replaced checkpoint is sized as the base one, which bounds it from above: no bound is left
    replaced = any("replaced" in u for u in least_load.uncertain)
    load_over = True if not replaced and _over(least_load.load_gib, cap) else None
    warm_over = None
    if not replaced and least_peak.workload is not None and _over(least_peak.peak_live_gib, cap):
        warm_over = True
    shown = {**least_peak.as_dict(), "load_gib": round(least_load.load_gib, 2), "lower_bound": True,
             "peak_typical_gib": None, "headroom_gib": None, "workspace_typical_gib": None,
             "placement_verified": sorted(verified), "uncertain": bound + least_peak.uncertain}
    out = {
        "derived.memory": shown,
        "derived.memory.capacity_gib": _round(cap),
        "derived.memory.load_gib": _round(least_load.load_gib),
        "derived.memory.load_over": load_over,
        "derived.memory.load_failing_component": least_load.load_failing_component or _largest(least_load),
        "derived.memory.workload": None if least_peak.workload is None else
        f"{least_peak.workload.width}x{least_peak.workload.height} x {least_peak.workload.seconds:g} s",
        "derived.memory.workload_what": None if least_peak.workload is None else least_peak.workload.what,
        "derived.memory.peak_live_gib": _round(least_peak.peak_live_gib),
        "derived.memory.peak_typical_gib": None,
        "derived.memory.peak_stage": least_peak.peak_stage,
        "derived.memory.warmup_over": warm_over,
        "derived.memory.warmup_fails_open_over": False,  # the fail-open warmup is read on 0.5.23 only
        "derived.memory.likely_over": None,
        "derived.memory.headroom_gib": None,
        "derived.memory.host_layerwise_gib": None,
        "derived.memory.host_spendable_gib": _round(least_load.host_spendable_gib),
        "derived.memory.host_short": None,
        **_pinned(_least_pinned(r, hw, placements, trials, entry, intent, release), hw, release),
        "derived.memory.unmodelled": None,
        **_unverified(bound, cap, load_over, warm_over, replaced),
    }
    # No change is offered: what fits is known only by the calibrated release's placement, and a
    # corrected command for this release must be one its own launcher was shown to accept.
    out["derived.memory.fix_ops"], out["derived.memory.fix_why"] = [], None
    return out


def _pins(a: dict[str, Any]) -> bool:
    """ServerArgs.pin_cpu_memory: True unless the launch says `--pin-cpu-memory false`."""
    return a.get("pin_cpu_memory") is not False


def _courier(env: dict[str, Any]) -> bool:
    """Whether sglang ships mapped layers through its pinned staging slots: unless
    SGLANG_DIFFUSION_DISABLE_MAPPED_COURIER is "true" or "1" (sglang's get_bool_env_var)."""
    return str(env.get("SGLANG_DIFFUSION_DISABLE_MAPPED_COURIER") or "false").lower() not in ("true", "1")


def _pinned(need: float | None, hw: Any, release: str) -> dict[str, Any]:
    """The pinned host need and whether it is more than the host memory sglang can use (the
    cgroup cap where there is one): None where either is unknown, False where nothing is pinned.
    And whether this release leaves a layer it does not pin on the checkpoint's mapping when the
    copies do not fit (it budgets them), so that `--pin-cpu-memory false` lowers the need."""
    host = hw.host_memory_gib
    over = need > host if need is not None and host is not None else (False if need == 0 else None)
    return {"derived.memory.host_pinned_need_gib": _round(need), "derived.memory.host_pinned_over": over,
            "derived.memory.unpinned_stay_mapped": constants(release)["pinning"]["budget"]["value"] != "none"}


def _least_pinned(r: Any, hw: Any, placements: list[dict[str, str]], trials: list[Budget], entry: str | None,
                  intent: dict[str, Any], release: str) -> float | None:
    """The least pinned host need of any placement this release's tuner could give the components
    whose placement is not verified (`placements`, with the GPU's lower bound of each in `trials`),
    among those that could fit the GPU (a placement that cannot dies on the GPU first: H3D540 says
    so). Each is weighed with the launch's own layerwise knobs. None where no placement is known to
    fit the GPU or the host memory a budget plans against is unknown."""
    needs = []
    for placed, gpu in zip(placements, trials):
        # the weights of its largest stage, without activations: what any request needs at least
        if gpu.capacity_gib is None or gpu.peak_weights_gib > gpu.capacity_gib:
            continue
        if "layerwise-offload" not in placed.values():
            return 0.0  # no layer streamed from the host: nothing pinned, the least there is
        b = budget(r.args, placed, r.family.key, hw, r.env, entry, intent, release, lower_bound=True)
        needs.append(pinned_need_gib(b, release, _pins(r.args), hw.host_memory_gib, _courier(r.env)))
    if not needs or None in needs:
        return None
    return min(needs)


def _placed(r: Any) -> tuple[set[str], set[str]]:
    """(pinned, placed): the components --component-residency places, which the layerwise list
    cannot move, and every component with an explicit placement, which memory mode leaves alone."""
    pinned = {c for c in H3_COMPONENTS if canonical_mode(c, r.args.get("component_residency")) is not None}
    placed = {c for c in H3_COMPONENTS if r.res.explicit_mode(c) is not None}
    return pinned, placed


def _largest(b: Budget) -> str:
    return max(b.load_by_component, key=lambda c: b.load_by_component[c])


def _round(v: float | None) -> float | None:
    return None if v is None else round(v, 1)


def _fits(b: Budget, headroom: float | None = None) -> bool:
    """The live need fits; with `headroom`, the peak with the workspace of real runs plus that
    margin fits too (H3D641's measure)."""
    cap = b.capacity_gib
    if cap is None or b.load_gib is None or b.load_gib > cap:
        return False
    if headroom is not None and b.peak_typical_gib is not None and b.peak_typical_gib + headroom > cap:
        return False
    return b.peak_live_gib is None or b.peak_live_gib <= cap


def _least_disruptive_fit(a, residency, family, hw, env, entry, intent, release, pinned=frozenset(),
                          placed=frozenset(), headroom: float | None = None) -> tuple[list[dict], str | None]:
    """The first change, least disruptive first, that fits by the model: layerwise offload of the
    biggest resident components (keeping the user's mode), fewer DiT layers held resident,
    `--performance-mode memory`. Empty when none does (the rule then has no fix here).

    `pinned`: components --component-residency places (the layerwise list cannot move them);
    `placed`: every component with an explicit placement (memory mode leaves them where they are)."""
    def trial(changes: dict[str, Any], modes: dict[str, str]) -> Budget:
        return budget({**a, **changes}, modes, family, hw, env, entry, intent, release, no_fold=True)

    if hw.platform == "cuda":
        # the resolved list may carry default groups H3 has no module for (image_encoder): not worth a word
        places_h3 = {"all", "dit", "vae", *H3_COMPONENTS}
        listed = [n for n in normalize_layerwise(a.get("layerwise_offload_components")) or [] if n in places_h3]
        modes = dict(residency)
        names = list(listed)
        for comp in _OFFLOAD_ORDER:
            if modes.get(comp) != "resident" or comp in pinned:
                continue
            modes[comp] = "layerwise-offload"
            name = _LAYERWISE_NAME[comp]
            if name not in names and "all" not in names:
                names.append(name)
            if _fits(trial({}, modes), headroom):
                value = ",".join(names)
                return ([{"set": {"flag": "--layerwise-offload-components", "value": value}}],
                        f"memory: layerwise offload of {value.replace(',', ', ')} fits by h3doctor's memory model")
        if residency.get("transformer") == "layerwise-offload":
            held = a.get("dit_layerwise_resident_layers") or 0
            for r_new in range(int(held) - 1 if held >= 1 else -1, -1, -1):
                if _fits(trial({"dit_layerwise_resident_layers": float(r_new)}, residency), headroom):
                    return ([{"set": {"flag": "--dit-layerwise-resident-layers", "value": str(r_new)}}],
                            f"memory: {r_new} resident DiT layers fit by h3doctor's memory model")
    if str(a.get("performance_mode")) != "memory":
        modes = dict(residency)
        for comp in H3_COMPONENTS[:3]:
            if modes.get(comp) == "resident" and comp not in placed:
                modes[comp] = "layerwise-offload" if hw.platform == "cuda" else "component-offload"
        if _fits(trial({"performance_mode": "memory"}, modes), headroom):
            return ([{"set": {"flag": "--performance-mode", "value": "memory"}}],
                    "memory: --performance-mode memory fits by h3doctor's memory model")
    return [], None
