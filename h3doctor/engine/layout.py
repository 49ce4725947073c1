"""Choose a parallel layout sglang accepts end to end, closest to what the user asked for.

Constraints (catalog C22-C28, W1, L15-L17, 4.1.10): tp divides every H3 dimension (tp in
{1,2,4,8}); Ulysses divides the 56/tp TP-local heads; ulysses*ring divides the packed
alignment 64; dp*tp*sp == num_gpus (V checks divisibility, W1 the product); ring > 1 only where
the DiT really runs FlashAttention and never on VDN; MPS runs one GPU.
"""

from __future__ import annotations

import math

from h3doctor.engine.fixes import Edit, FixContext
from h3doctor.record import record
from h3doctor.sglang.flagtable import DEFAULT_SGLANG_VERSION
from h3doctor.sglang.releases import has_data_parallel
from h3doctor.sglang.resolve import H3_ATTENTION_HEADS, H3_PACKED_ALIGNMENT

TYPE_CHECKING = False  # typing is not imported at run time (start-up: record.py)
if TYPE_CHECKING:
    from typing import Any

TP_SIZES = (1, 2, 4, 8)
FIELDS = (("tp_size", "--tp-size"), ("dp_size", "--dp-size"), ("ulysses_degree", "--ulysses-degree"),
          ("ring_degree", "--ring-degree"), ("sp_degree", "--sp-degree"))


@record(frozen=True)
class Layout:
    """A parallel layout: GPUs, and how they split into data, tensor, Ulysses and ring parallelism."""
    num_gpus: int
    dp: int
    tp: int
    ulysses: int
    ring: int

    @property
    def sp(self) -> int:
        return self.ulysses * self.ring

    def values(self) -> dict[str, int]:
        return {"num_gpus": self.num_gpus, "dp_size": self.dp, "tp_size": self.tp,
                "ulysses_degree": self.ulysses, "ring_degree": self.ring, "sp_degree": self.sp}


def valid_layouts(max_gpus: int, ring_allowed: bool, dp_allowed: bool = True) -> list[Layout]:
    out = []
    for tp in TP_SIZES:
        heads = H3_ATTENTION_HEADS // tp
        for ulysses in (u for u in range(1, heads + 1) if heads % u == 0):
            for ring in (1, 2, 4, 8, 16, 32, 64) if ring_allowed else (1,):
                if H3_PACKED_ALIGNMENT % (ulysses * ring):
                    continue
                for dp in range(1, (max_gpus if dp_allowed else 1) + 1):
                    n = dp * tp * ulysses * ring
                    if n <= max_gpus:
                        out.append(Layout(n, dp, tp, ulysses, ring))
    return out


# What it costs to move away from the request: changing a degree the user typed costs 50 plus its
# distance; introducing a kind of parallelism they did not ask for costs more (TP shards the model
# differently, DP adds replicas), so a lone --ulysses-degree 2 on 4 GPUs becomes Ulysses 4, not TP2+U2.
_INTRODUCE = {"tp_size": 70.0, "ring_degree": 70.0, "dp_size": 100.0}


def _cost(layout: Layout, asked: dict[str, Any], typed: set[str]) -> tuple:
    values = layout.values()
    cost = 0.0
    for field in ("tp_size", "ulysses_degree", "ring_degree", "dp_size"):
        target = values[field]
        if field in typed:
            if target != asked.get(field):
                cost += 50 + 10 * abs(math.log2(target / max(asked.get(field) or 1, 1)))
        elif field in _INTRODUCE and target != 1:
            cost += _INTRODUCE[field]
    return (layout.num_gpus != asked["num_gpus"], abs(layout.num_gpus - asked["num_gpus"]), -layout.num_gpus, cost, -layout.ulysses)


def resolved_defaults(num_gpus: int, explicit: dict[str, int]) -> dict[str, int]:
    """What sglang's _adjust_parallelism makes of these explicit values (no CFG for H3)."""
    tp = explicit.get("tp_size", 1)
    dp = explicit.get("dp_size", 1)
    sp = explicit.get("sp_degree")
    if sp is None:
        sp = num_gpus // (dp * tp) if num_gpus % (dp * tp) == 0 else 1
    ulysses, ring = explicit.get("ulysses_degree"), explicit.get("ring_degree")
    if ulysses is None and ring is None and sp != 1:
        ulysses = sp  # sp == 2 goes through kv_gather, which aliases Ulysses to 2
    return {"tp_size": tp, "dp_size": dp, "sp_degree": sp, "ulysses_degree": ulysses or 1, "ring_degree": ring or 1}


def requested_gpus(ctx: dict[str, Any], typed: set[str]) -> int:
    """The GPUs the typed degrees ask for: dp x tp x sp (sp typed, or ulysses x ring), each
    degree not typed taken as 1. Only positive whole degrees count."""
    def degree(dest: str) -> int:
        value = ctx.get(f"args.{dest}") if dest in typed else 1
        return value if isinstance(value, int) and not isinstance(value, bool) and value > 0 else 1
    sp = degree("sp_degree") if "sp_degree" in typed else degree("ulysses_degree") * degree("ring_degree")
    return degree("dp_size") * degree("tp_size") * sp


def choose(ctx: dict[str, Any], typed: set[str], gpus_typed: bool = True) -> tuple[Layout | None, str]:
    """The layout sglang accepts closest to the request. `gpus_typed`: --num-gpus was given; when
    it was not (sglang's default is one GPU), degrees that ask for more GPUs than that are a
    request for them, and the host's GPUs supply it rather than the degrees being cut."""
    asked = {k: ctx.get(f"args.{k}") for k in ("num_gpus", "tp_size", "dp_size", "ulysses_degree", "ring_degree")}
    platform = ctx.get("hw.platform")
    visible = ctx.get("hw.gpu_count") or 0
    if platform == "mps":
        return Layout(1, 1, 1, 1, 1), "MPS runs one GPU (catalog B17)"
    usable = visible - (ctx.get("args.base_gpu_id") or 0)  # GPUs [base_gpu_id, base_gpu_id + num_gpus)
    raised = None
    if not gpus_typed and platform in ("cuda", "rocm") and visible:
        want = min(requested_gpus(ctx, typed), max(usable, 1))
        if want > (asked["num_gpus"] or 1):
            asked["num_gpus"] = raised = want
    max_gpus = max(asked["num_gpus"] or 1, 1)
    if platform in ("cuda", "rocm") and visible and max_gpus > usable:
        max_gpus = max(usable, 1)
    ring_allowed = ctx.get("family") != "vdn" and ctx.get("derived.fa_really_runs") is True and (asked["ring_degree"] or 1) > 1
    # a release without data parallelism (0.5.17) rejects any --dp-size above 1: no replicas there
    dp_allowed = has_data_parallel(str(ctx.get("release.table") or DEFAULT_SGLANG_VERSION))
    candidates = valid_layouts(max_gpus, ring_allowed, dp_allowed)
    if not candidates:
        return None, "no parallel layout fits"
    best = min(candidates, key=lambda lay: _cost(lay, asked, typed))
    why = []
    if raised is not None and best.num_gpus == raised:
        why.append(f"the degrees asked for {raised} GPUs and this host has them; --num-gpus defaults to 1")
    if best.num_gpus != asked["num_gpus"]:
        why.append(f"no layout of MiniMax-H3 uses exactly {asked['num_gpus']} GPU(s) here; {best.num_gpus} is the closest that does")
    if best.dp > 1:
        why.append(f"{best.num_gpus} GPUs run as {best.dp} data-parallel replicas of {best.num_gpus // best.dp}, "
                   "because one replica cannot split the 56 heads and the 64-token packing alignment that many ways")
    return best, "; ".join(why) or "the closest layout to the one asked for"


def parallel_layout(fx: FixContext) -> list[Edit]:
    edits: list[Edit] = []
    if fx.context.get("args.enable_cfg_parallel"):
        # H3* have no CFG parallelism at all (C29, catalog 4.1.9): more GPUs never help.
        edits += fx.op_remove("--enable-cfg-parallel") + fx.op_remove("--cfg-parallel-size")
        fx.gives_up.append("CFG parallelism (H3 models have none to parallelise)")
    config_keys = set(fx.context.get("config.keys") or ())  # explicit too: a CLI flag overrides the file
    typed = {d for d in ("tp_size", "dp_size", "ulysses_degree", "ring_degree", "sp_degree")
             if fx.occurrences(_flag(d)) or d in config_keys}
    gpus_typed = bool(fx.occurrences("--num-gpus")) or "num_gpus" in config_keys
    layout, why = choose(fx.context, typed, gpus_typed)
    if layout is None:
        return edits
    if layout.num_gpus != fx.context.get("args.num_gpus"):
        edits += fx.op_set("--num-gpus", layout.num_gpus)
    target = layout.values()
    explicit = {d: target[d] for d in typed}
    for _ in range(len(FIELDS)):
        resolved = resolved_defaults(layout.num_gpus, explicit)
        wrong = [d for d, _flag_ in FIELDS if resolved[d] != target[d] and d not in explicit]
        if not wrong:
            break
        explicit[wrong[0]] = target[wrong[0]]
    changes = [f"--num-gpus {layout.num_gpus}"] if layout.num_gpus != fx.context.get("args.num_gpus") else []
    for dest, flag in FIELDS:
        if dest in explicit and (dest in typed or explicit[dest] != 1 or dest in ("ulysses_degree", "ring_degree")):
            if fx.context.get(f"args.{dest}") != explicit[dest] or dest not in typed:
                changes.append(f"{flag} {explicit[dest]}")
            edits += fx.op_set(flag, explicit[dest])
    shape = f"dp {layout.dp} x tp {layout.tp} x ulysses {layout.ulysses} x ring {layout.ring} = {layout.num_gpus} GPU(s)"
    fx.notes.append(f"parallel layout {shape} ({why}; set {', '.join(changes) or 'nothing else'})")
    return edits


def _flag(dest: str) -> str:
    return dict(FIELDS)[dest]
