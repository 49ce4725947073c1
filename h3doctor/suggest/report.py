"""The suggest result as one JSON-able object (schema h3doctor/schema/suggest.schema.json).

The text renderer (output/suggest_text.py) reads this same object, so text and JSON never differ.
"""

from __future__ import annotations

import shlex
from typing import Any

from h3doctor import __version__
from h3doctor.facts import HardwareFacts
from h3doctor.sglang.families import Family
from h3doctor.suggest.score import MARGIN_GIB, MARGIN_SHARE, WEIGHTS
from h3doctor.suggest.search import SearchResult, Suggestion

SCHEMA_VERSION = 1
NOTES = (
    "The speed score counts resident weights, GPUs on one request and the attention path; the sources h3doctor "
    "cites publish no per-step times for these launches, so no measured time enters it (docs/suggest.md).",
)


def suggestion_dict(s: Suggestion) -> dict[str, Any]:
    ctx = s.evaluation.context
    memory = ctx.get("derived.memory") or {}
    residency = ctx.get("derived.residency") or {}
    return {
        "argv": s.argv,
        "command": shlex.join(s.argv),
        "checks_clean": True,  # search keeps only launches `check` reports clean
        "fits": s.fits,  # the memory model's word: True fits, False does not, None cannot verify
        "shortfall_gib": _shortfall(memory) if s.fits is False else None,
        "placement": s.candidate.rung,
        "layout": {"num_gpus": ctx.get("args.num_gpus"), "tp": ctx.get("args.tp_size"),
                   "ulysses": ctx.get("args.ulysses_degree"), "ring": ctx.get("args.ring_degree"),
                   "fsdp": bool(ctx.get("args.use_fsdp_inference"))},
        "performance_mode": ctx.get("args.performance_mode"),
        "residency": residency,
        "dit_resident_layers": ctx.get("args.dit_layerwise_resident_layers") if residency.get("transformer") == "layerwise-offload" else None,
        "dit_attention_backend": ctx.get("derived.dit_backend"),
        "score": {"speed": s.score.speed, "terms": s.score.terms,
                  # no memory score where memory is not modelled (CPU, MPS): null, never a made-up 100
                  "memory": round(s.score.memory(), 2) if s.score.headroom_gib is not None else None,
                  "margin_ok": s.score.margin_ok},
        "memory": {k: memory.get(k) for k in ("capacity_gib", "load_gib", "peak_live_gib", "peak_typical_gib", "headroom_gib")}
                  if memory else None,
        "why": s.score.why,
        "warnings": [{"rule": f.rule.id, "message": f.message, "cannot_verify": f.cannot_verify}
                     for f in s.evaluation.findings if f.severity != "info"],
        "gives_up": s.gives_up,
        "fix_notes": s.fix_notes,
        "cookbook": None if s.cookbook is None else {"id": s.cookbook["id"], "label": s.cookbook["label"],
                                                      "peak_gib": s.cookbook["peak_gib"], "source": s.cookbook["source"]},
    }


def build(result: SearchResult, *, hw: HardwareFacts, family: Family, model: str, variant: str | None,
          intent: dict[str, Any], quantization: str | None, sglang_version: str) -> dict[str, Any]:
    items = [suggestion_dict(s) for s in result.suggestions]
    best = items[0] if items else None
    recipes = []
    for r in result.recipes:
        parallel = r["layout"]["tp"] * r["layout"]["ulysses"] * r["layout"]["ring"]
        recipes.append({"id": r["id"], "label": r["label"], "argv": r["argv"], "parallel": parallel,
                        "peak_gib": r["peak_gib"], "source": r["source"],
                        "suggestion_as_parallel": None if best is None else _parallel(best) >= parallel})
    return {
        "schema_version": SCHEMA_VERSION,
        "status": _status(best),
        "kind": "h3doctor-suggest",
        "h3doctor_version": __version__,
        "sglang_version": sglang_version,
        "model": model,
        "family": {"key": family.key, "label": family.label},
        "variant": variant,
        "prefer": result.prefer,
        "request": ({"resolution": intent["resolution"], "seconds": intent["seconds"]} if intent else None),
        "quantization": quantization,
        "hardware": hw.as_dict(),
        "best": best,
        "runner_ups": items[1:],
        "cookbook": recipes,
        "rejected": [{"rule": k, **v, "example": shlex.join(v["example"])}
                     for k, v in sorted(result.rejected.items(), key=lambda kv: -kv[1]["count"])],
        "search": {"resolved": result.resolved, "pruned_by_memory": result.pruned, "checked": result.checked,
                   "stopped_early": result.stopped, "memory_criterion": "live" if result.relaxed else "typical",
                   "elapsed_s": round(result.elapsed_s, 3)},
        "score": {"formula": "speed S = 30*log2(P) + 40*d + 10*e + 5*u - 10*f - 2*m - 5*b + 3*c; "
                             "memory M = headroom_gib + S/100; balanced: S among launches with headroom >= "
                             f"max({MARGIN_GIB:g} GiB, {MARGIN_SHARE:.0%} of the GPU), else the most headroom",
                  "weights": WEIGHTS, "doc": "docs/suggest.md"},
        "notes": list(NOTES),
    }


def _status(best: dict[str, Any] | None) -> str:
    """fits: the best launch checks clean and the memory model shows it fitting (exit 0). Otherwise
    exit 1: cannot-verify (it checks clean, its memory fit cannot be judged here), none-fits (nothing
    in the launch space fits; the best is the nearest), none-checks-clean (no best)."""
    if best is None:
        return "none-checks-clean"
    return {True: "fits", None: "cannot-verify", False: "none-fits"}[best["fits"]]


def _shortfall(memory: dict[str, Any]) -> float | None:
    """GiB per GPU the typical peak is over the free memory (the live peak where it is the larger)."""
    cap = memory.get("capacity_gib")
    peaks = [p for p in (memory.get("peak_typical_gib"), memory.get("peak_live_gib"), memory.get("load_gib")) if p is not None]
    if cap is None or not peaks:
        return None
    return round(max(0.0, max(peaks) - cap), 2)


def _parallel(item: dict[str, Any]) -> int:
    lay = item["layout"]
    return int(lay["tp"] or 1) * int(lay["ulysses"] or 1) * int(lay["ring"] or 1)
