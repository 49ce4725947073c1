"""The memory budget the fit rules read (H3D540-H3D542, H3D640-H3D641), and the least disruptive
change that makes the launch fit (for the `memory_fit` fix strategy).

The bytes come from `sglang/memory.py`. Verdicts are three-valued: True (will not fit), False
(fits), None (cannot tell: an uncalibrated family, a replaced checkpoint, or a text-encoder fold
that only the unknown P2P topology decides). Rules treat `derived.memory.*` like hardware facts:
None there is "cannot verify", never a pass.
"""

from __future__ import annotations

from typing import Any

from h3doctor.engine.derivations.registry import derives
from h3doctor.sglang.memory import Budget, budget, constants
from h3doctor.sglang.residency import H3_COMPONENTS, canonical_mode, normalize_layerwise

_PLATFORMS = ("cuda", "rocm")
_LAYERWISE_NAME = {"transformer": "dit", "text_encoder": "text_encoder", "video_vae": "vae"}
# least disruptive first: the text encoder runs once per request, the DiT every step, the VAE last
_OFFLOAD_ORDER = ("text_encoder", "transformer", "video_vae")


def _intent(ctx: dict[str, Any]) -> dict[str, Any]:
    whole = ctx.get("intent")
    if isinstance(whole, dict):  # check.py puts the whole request there: no scan of every context key
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


@derives("memory", "memory.capacity_gib", "memory.load_gib", "memory.load_over",
         "memory.load_failing_component", "memory.workload", "memory.workload_what",
         "memory.peak_live_gib", "memory.peak_typical_gib", "memory.peak_stage", "memory.warmup_over",
         "memory.likely_over", "memory.headroom_gib", "memory.host_layerwise_gib", "memory.host_spendable_gib",
         "memory.host_short", "memory.fix_ops", "memory.fix_why")
def memory_budget(r: Any, hw: Any, ctx: dict[str, Any]) -> dict[str, Any]:
    if hw.platform not in _PLATFORMS:
        return {"derived.memory": None}
    a, family, entry = r.args, r.family.key, ctx.get("entry")
    residency = dict(ctx.get("derived.residency") or {})
    intent = _intent(ctx)
    release = str(ctx.get("sglang_version") or "0.5.23")
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
        "derived.memory.warmup_over": warm_over,
        "derived.memory.likely_over": likely_over,
        "derived.memory.headroom_gib": _round(None if b.capacity_gib is None or b.peak_typical_gib is None
                                              else b.capacity_gib - b.peak_typical_gib),
        "derived.memory.host_layerwise_gib": _round(b.host_layerwise_gib),
        "derived.memory.host_spendable_gib": _round(b.host_spendable_gib),
        "derived.memory.host_short": host_short,
    }
    if load_over or warm_over:
        # a component the user placed with --component-residency stays there whatever the
        # layerwise list says (residency_mode precedence, server_args.py:1893-1935)
        pinned = {c for c in H3_COMPONENTS if canonical_mode(c, a.get("component_residency")) is not None}
        placed = {c for c in H3_COMPONENTS if r.res.explicit_mode(c) is not None}
        ops, why = _least_disruptive_fit(a, residency, family, hw, r.env, entry, intent, release, pinned, placed)
        out["derived.memory.fix_ops"] = ops
        out["derived.memory.fix_why"] = why
    return out


def _largest(b: Budget) -> str:
    return max(b.load_by_component, key=lambda c: b.load_by_component[c])


def _round(v: float | None) -> float | None:
    return None if v is None else round(v, 1)


def _fits(b: Budget) -> bool:
    cap = b.capacity_gib
    if cap is None or b.load_gib is None or b.load_gib > cap:
        return False
    return b.peak_live_gib is None or b.peak_live_gib <= cap


def _least_disruptive_fit(a, residency, family, hw, env, entry, intent, release, pinned=frozenset(),
                          placed=frozenset()) -> tuple[list[dict], str | None]:
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
            if _fits(trial({}, modes)):
                value = ",".join(names)
                return ([{"set": {"flag": "--layerwise-offload-components", "value": value}}],
                        f"memory: layerwise offload of {value.replace(',', ', ')} fits by h3doctor's memory model")
        if residency.get("transformer") == "layerwise-offload":
            held = a.get("dit_layerwise_resident_layers") or 0
            for r_new in range(int(held) - 1 if held >= 1 else -1, -1, -1):
                if _fits(trial({"dit_layerwise_resident_layers": float(r_new)}, residency)):
                    return ([{"set": {"flag": "--dit-layerwise-resident-layers", "value": str(r_new)}}],
                            f"memory: {r_new} resident DiT layers fit by h3doctor's memory model")
    if str(a.get("performance_mode")) != "memory":
        modes = dict(residency)
        for comp in H3_COMPONENTS[:3]:
            if modes.get(comp) == "resident" and comp not in placed:
                modes[comp] = "layerwise-offload" if hw.platform == "cuda" else "component-offload"
        if _fits(trial({"performance_mode": "memory"}, modes)):
            return ([{"set": {"flag": "--performance-mode", "value": "memory"}}],
                    "memory: --performance-mode memory fits by h3doctor's memory model")
    return [], None
