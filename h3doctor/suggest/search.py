"""Search the launch space for the best launch by a preference, with check's own rules and memory model.

Two passes. First every candidate is *resolved* only (a `Judge` with no rules, engine/judge.py:
sglang's adjust phase and the derived values, the memory budget among them, ~3 ms) and dropped
when the memory model says it will not fit or, for `balanced`, leaves too little headroom; where
the DiT streams layer by layer, the number of blocks held resident is searched (binary, the
budget grows with it). Then the survivors, best score first, go through the full `check` (all
rules, the fix loop, the alternatives) until the best and the runner-ups are found: a candidate
the rules reject costs one check and is passed over, one the fix loop corrects is taken as
corrected and checked again. Every suggestion is a command `check` reports clean; whether it also
fits in memory is its `fits` (when nothing fits, the search still returns the nearest launches, so
the report can show what is short and by how much).
"""

from __future__ import annotations

import json
import time
from dataclasses import dataclass, field, replace
from functools import cached_property, lru_cache
from typing import Any

from h3doctor.engine.judge import Judge
from h3doctor.engine.results import CheckResult, Evaluation
from h3doctor.engine.ruleset import GPU_MEMORY_VERDICTS, Rule
from h3doctor.engine.target import Target
from h3doctor.facts import HardwareFacts
from h3doctor.paths import package_dir
from h3doctor.sglang.flagtable import FlagTable
from h3doctor.sglang.platform import apply_platform_override
from h3doctor.verified import NEWEST_VERIFIED
from h3doctor.suggest.score import Score, dit_blocks, score
from h3doctor.suggest.space import Candidate, ladder, layouts

PREFERENCES = ("speed", "memory", "balanced")
# full checks at most: a candidate the rules reject costs one or two (with the alternatives check
# works out); when the first two dozen of the ranking all fail, the reason is seldom the placement
MAX_FULL_CHECKS = 24
_ASKED = ("args.model_path", "args.model_variant", "args.quantization")  # what a suggestion never changes


@dataclass(frozen=True)
class Suggestion:
    argv: list[str]
    candidate: Candidate
    score: Score
    evaluation: Evaluation  # of `argv` itself: check reports it clean
    gives_up: list[str] = field(default_factory=list)  # when it is a check alternative
    fix_notes: list[str] = field(default_factory=list)  # when the fix loop corrected the candidate
    cookbook: dict[str, Any] | None = None

    @property
    def fits(self) -> bool | None:
        """The memory model's word on this launch: fits (True), does not (False), cannot tell (None)."""
        return memory_fit(self.evaluation.context)


@dataclass
class SearchResult:
    prefer: str
    suggestions: list[Suggestion]  # best first
    rejected: dict[str, dict[str, Any]]  # rule id -> {count, message, example}: why candidates failed
    resolved: int = 0  # candidates resolved (first pass)
    pruned: int = 0  # dropped by the memory model before any rule ran
    checked: int = 0  # full checks
    stopped: bool = False  # MAX_FULL_CHECKS reached before the best and the runner-ups were found
    relaxed: bool = False  # nothing cleared the measured workspace: launches that fit the live need, by headroom
    elapsed_s: float = 0.0
    recipes: list[dict[str, Any]] = field(default_factory=list)  # published launches for this GPU model


@lru_cache(maxsize=None)
def cookbook(release: str = NEWEST_VERIFIED) -> tuple[dict[str, Any], ...]:
    path = package_dir("h3doctor.suggest").joinpath(f"cookbook-{release}.json")
    if not path.is_file():
        return ()
    return tuple(json.loads(path.read_text(encoding="utf-8"))["recipes"])


def search(hw: HardwareFacts, rules: list[Rule], table: FlagTable, env: dict[str, str], *, model: str,
           family: str, variant: str | None = None, prefer: str = "balanced", intent: dict[str, Any] | None = None,
           quantization: str | None = None, runner_ups: int = 3) -> SearchResult:
    started = time.perf_counter()
    platform = apply_platform_override(hw, env).platform
    recipes = [r for r in cookbook(table.sglang_version) if r["family"] == family and _device_matches(r, hw)]
    out = SearchResult(prefer, [], {}, recipes=recipes)
    # the rules a serve launch of this family can meet here, chosen once (check would pick the same)
    applicable = [r for r in rules if r.applies(family, platform, "serve", table.sglang_version)]
    run = _Run(hw, applicable, table, env, dict(intent or {}), model, variant, quantization, recipes, out)
    wanted = 1 + max(0, runner_ups)
    pool = run.pool(layouts(hw.gpu_count or 1, platform), platform, prefer, wanted, strict=True)
    if not pool:
        # nothing clears the workspace measured on real runs (H3D641): the launches that fit the live
        # need, most headroom first, each still carrying its "likely out of memory" warning
        out.relaxed = True
        pool = run.pool(layouts(hw.gpu_count or 1, platform), platform, "memory", wanted, strict=False)
    run.check_ranked(pool, "memory" if out.relaxed else prefer, wanted, strict=not out.relaxed)
    out.elapsed_s = time.perf_counter() - started
    return out


@dataclass
class _Run:
    """One search's fixed inputs and its counters."""

    hw: HardwareFacts
    rules: list[Rule]
    table: FlagTable
    env: dict[str, str]
    intent: dict[str, Any]
    model: str
    variant: str | None
    quantization: str | None
    recipes: list[dict[str, Any]]
    out: SearchResult

    @cached_property
    def target(self) -> Target:
        return Target.of(self.hw, self.table, self.env, self.intent)

    @cached_property
    def judge(self) -> Judge:  # the rules a serve launch of this family can meet here, loaded once for the search
        return Judge(self.rules)

    @cached_property
    def resolver(self) -> Judge:  # no rules: sglang's adjust phase and the derived values only
        return Judge([])

    def argv(self, c: Candidate) -> list[str]:
        return c.argv(self.model, self.variant, self.quantization)

    def resolve(self, c: Candidate) -> dict[str, Any] | None:
        self.out.resolved += 1
        ctx = self.resolver.evaluate(self.argv(c), self.target).context
        return None if "events.resolution_error" in ctx else ctx

    def pool(self, shapes: list[Candidate], platform: str, prefer: str, wanted: int, strict: bool
             ) -> list[tuple[Candidate, dict[str, Any]]]:
        """Per layout, the first placements down its ladder that meet the memory criterion."""
        pool = []
        per_layout = max(1, -(-wanted // len(shapes)))  # few layouts (one GPU): more placements of each
        for shape in shapes:
            kept = 0
            for rung in _ordered(ladder(shape, platform), prefer):
                picked = _place(rung, self.resolve, prefer, strict, dit_blocks(self.table.sglang_version))
                if picked is None:
                    self.out.pruned += 1
                    continue
                pool.append(picked)
                kept += 1
                if kept >= per_layout:
                    break
        return pool

    def check_ranked(self, pool: list[tuple[Candidate, dict[str, Any]]], prefer: str, wanted: int, strict: bool) -> None:
        out = self.out
        ranked = sorted(pool, key=lambda p: _rank(p, prefer, self.recipes), reverse=True)
        seen: set[tuple] = set()
        for cand, ctx in ranked:
            if len(out.suggestions) >= wanted:
                break
            if out.checked >= MAX_FULL_CHECKS:
                out.stopped = True
                break
            if _shape_key(ctx) in seen:
                continue
            found = self.full_check(cand, ctx, strict)
            if found is None:
                continue
            key = _shape_key(found.evaluation.context)
            if key in seen:
                continue
            seen |= {key, _shape_key(ctx)}
            out.suggestions.append(found)
        # a launch the memory model shows fitting before one it cannot judge, before one that does not fit
        out.suggestions.sort(key=lambda s: (_FIT_ORDER[s.fits], s.score.key(prefer), s.candidate.mode != "auto", -len(s.argv)), reverse=True)

    def full_check(self, cand: Candidate, ctx: dict[str, Any], strict: bool) -> Suggestion | None:
        """The candidate through `check`: clean as it is, or as the fix loop corrects it, or as the
        first alternative check offers that keeps what was asked (model, variant, quantization);
        whatever is taken is checked again and must come back clean."""
        argv = self.argv(cand)
        self.out.checked += 1
        # relaxed: the launches kept carry the failure-predicting warnings the report shows (they
        # are what comes nearest); the fix loop must not set out to correct them away
        hold = frozenset() if strict else frozenset(r.id for r in self.rules if r.predicts_failure and r.severity == "warning")
        first = result = self.judge.check(argv, self.target, hold)
        gives_up: list[str] = []
        notes: list[str] = []
        if result.fix_status == "fixed":
            argv, notes = list(result.corrected_argv), list(result.fix_notes)
        elif result.fix_status == "no-fix" and any(a.checks_clean for a in result.alternatives):
            alt = next(a for a in result.alternatives if a.checks_clean)
            argv, gives_up, notes = list(alt.argv), list(alt.gives_up), list(alt.fix_notes)
        elif result.fix_status != "clean":
            _reject(result, self.out)
            return None
        if argv != self.argv(cand):
            self.out.checked += 1
            result = self.judge.check(argv, self.target, hold)
        final = result.evaluation
        if (result.fix_status != "clean" or any(f.severity == "error" for f in final.findings)
                or not _fits(final.context, strict) or any(final.context.get(k) != ctx.get(k) for k in _ASKED)):
            _reject(first, self.out)  # the reason is what the candidate itself failed on
            return None
        match = _recipe_for(final.context, self.recipes)
        return Suggestion(argv, cand, score(final.context, match), final, gives_up, notes, match)


def _ordered(rungs: list[Candidate], prefer: str) -> list[Candidate]:
    """Speed and balanced walk the ladder from the most resident placement down; memory from the
    most offloaded up, sglang's `auto` (resident or streamed by the free memory) after the streamed ones."""
    if prefer != "memory":
        return rungs
    order = ("memory-mode", "dit-streamed", "text-encoder-streamed", "auto", "fsdp", "resident")
    return sorted(rungs, key=lambda r: order.index(r.rung) if r.rung in order else len(order))


_FIT_ORDER = {True: 2, None: 1, False: 0}


def memory_fit(ctx: dict[str, Any]) -> bool | None:
    """Whether the memory model shows the launch fitting: False when any verdict says it will run out
    (likely, by the workspace of real runs, included), None when any verdict cannot be reached (the
    platform's memory is not modelled, the request's shape is unknown), True only when every one says it fits."""
    verdicts = [ctx.get(k) for k in GPU_MEMORY_VERDICTS]
    if any(v is True for v in verdicts):
        return False
    return None if any(v is None for v in verdicts) else True


def _fits(ctx: dict[str, Any], strict: bool = True) -> bool:
    """Not predicted to run out of memory: no verdict says it will (None, cannot tell, is kept and
    reported by the rules as 'cannot verify'). Strict: not even by the workspace of real runs (H3D641)."""
    verdicts = (("load_over", "warmup_over", "warmup_fails_open_over", "likely_over") if strict
                else ("load_over", "warmup_over", "warmup_fails_open_over"))
    return not any(ctx.get(f"derived.memory.{k}") is True for k in verdicts)


def _meets(ctx: dict[str, Any], prefer: str, strict: bool) -> bool:
    if not _fits(ctx, strict):
        return False
    return prefer != "balanced" or score(ctx, None).margin_ok is not False


def _place(rung: Candidate, resolve, prefer: str, strict: bool, blocks: int) -> tuple[Candidate, dict[str, Any]] | None:
    """The rung with the DiT blocks held resident chosen: as many as the preference's memory
    criterion allows (speed, balanced), none (memory). None when the rung cannot meet it."""
    ctx = resolve(rung)
    if ctx is None or not _meets(ctx, prefer, strict):
        return None  # where the DiT streams, no block resident is the least this rung can use
    if ctx.get("derived.residency_transformer") != "layerwise-offload" or prefer == "memory":
        return rung, ctx
    top_ctx = resolve(replace(rung, resident_layers=blocks))
    if top_ctx is not None and _meets(top_ctx, prefer, strict):
        if rung.rung == "dit-streamed":
            return None  # every block fits: that is the text-encoder-streamed rung, without the streaming machinery
        return replace(rung, resident_layers=blocks), top_ctx
    best, lo, hi = (rung, ctx), 0, blocks  # lo meets the criterion, hi does not
    while hi - lo > 1:
        mid = (lo + hi) // 2
        cand = replace(rung, resident_layers=mid)
        mid_ctx = resolve(cand)
        if mid_ctx is not None and _meets(mid_ctx, prefer, strict):
            lo, best = mid, (cand, mid_ctx)
        else:
            hi = mid
    return best


def _rank(pick: tuple[Candidate, dict[str, Any]], prefer: str, recipes: list[dict[str, Any]]) -> tuple:
    cand, ctx = pick
    s = score(ctx, _recipe_for(ctx, recipes))
    # ties: an explicit mode (sglang's auto flips with the free memory at launch), then fewer flags
    return (*s.key(prefer), cand.mode != "auto", -len(cand.argv("m", None, None)))


def _reject(result: CheckResult, out: SearchResult) -> None:
    for f in result.evaluation.findings:
        if f.severity != "error" and not (f.rule.judges_gpu_memory and not f.cannot_verify):
            continue
        entry = out.rejected.setdefault(f.rule.id, {"count": 0, "title": f.rule.title, "message": f.message, "says": f.says,
                                                    "fix_note": f.rule.fix_note, "example": result.evaluation.cmd.tokens})
        entry["count"] += 1


def _shape_key(ctx: dict[str, Any]) -> tuple:
    """What a launch does, whatever flags say it: two candidates with the same key are one."""
    residency = ctx.get("derived.residency") or {}
    return (ctx.get("args.num_gpus"), ctx.get("args.tp_size"), ctx.get("args.ulysses_degree"), ctx.get("args.ring_degree"),
            tuple(sorted(residency.items())), ctx.get("args.dit_layerwise_resident_layers") if residency.get("transformer") == "layerwise-offload" else None,
            bool(ctx.get("args.use_fsdp_inference")), ctx.get("args.performance_mode") == "memory",
            ctx.get("derived.dit_backend"), ctx.get("args.quantization"))


def _device_matches(recipe: dict[str, Any], hw: HardwareFacts) -> bool:
    name = (hw.device_name or "").upper()
    return bool(name) and recipe["device"].upper() in name and (hw.gpu_count or 0) >= recipe["gpu_count"]


def _recipe_for(ctx: dict[str, Any], recipes: list[dict[str, Any]]) -> dict[str, Any] | None:
    """The published recipe with this launch's GPU count, layout and performance mode."""
    for r in recipes:
        lay = r["layout"]
        if (ctx.get("args.num_gpus") == r["gpu_count"] and ctx.get("args.tp_size") == lay["tp"]
                and ctx.get("args.ulysses_degree") == lay["ulysses"] and ctx.get("args.ring_degree") == lay["ring"]
                and bool(ctx.get("args.use_fsdp_inference")) == lay["fsdp"]
                and ctx.get("args.performance_mode") == r["performance_mode"]):
            return r
    return None
