"""Alternatives: what the user can choose instead when no change of flags alone saves a launch.

A rule with `fix: none` (a hybrid variant without merged weights, cube sparse attention without
its tuning values, sage_fp8 on the wrong GPU) can still list `alternatives:` in its file: fix
operations plus what they give up ("serves the FL2VA partition instead of hybrid"). When the fix
loop ends in `no-fix`, each alternative of each unfixable rule is applied to the nearest launch
(every fixable finding already fixed), run through the fix loop again, and kept only if it
answers the finding it was written for. An alternative that leaves another unfixable finding is
combined with that finding's alternatives (two deep at most).

Alternatives are offered, never applied: the result keeps `corrected_argv` None and `fix_status`
no-fix, so nothing that runs a corrected command (`--exec --apply-fixes`) picks one by itself.
"""

from __future__ import annotations

from h3doctor.engine.conditions import evaluate
from h3doctor.engine.fixes import FixContext, apply_edits
from h3doctor.engine.results import Alternative, CheckResult
from h3doctor.engine.strategies import STRATEGIES

from h3doctor.engine.target import Target

# `Judge` (engine/judge.py) is named in annotations only: the judge imports this module.

MAX_ALTERNATIVES = 3
MAX_DEPTH = 2  # unfixable findings one alternative may answer together


def alternatives(result: CheckResult, tokens: list[str], judge: Judge, target: Target,
                 hold: frozenset[str] = frozenset()) -> list[Alternative]:
    """Up to MAX_ALTERNATIVES alternatives for a no-fix result: those that re-check clean; only
    when none does, the ones that answer their finding but still fail on another (marked so).
    Each is evaluated and fixed by the check's own judge on its own target (same hardware,
    release, environment and requests, the same rules held)."""
    if result.fix_status != "no-fix" or not any(r.alternatives for r in judge.rules if r.id in result.unfixable):
        return []
    start = result.nearest_argv or list(tokens)
    found: dict[tuple[str, ...], Alternative] = {}
    _explore(start, result.unfixable, [], [], [], _Against(judge, target, hold), found, depth=1)
    ranked = sorted(found.values(), key=lambda alt: not alt.checks_clean)  # stable: rule order, then file order
    clean = [alt for alt in ranked if alt.checks_clean]
    return (clean or ranked)[:MAX_ALTERNATIVES]


class _Against:
    """The judge, the target and the held rules every alternative is checked with."""

    def __init__(self, judge: Judge, target: Target, hold: frozenset[str]) -> None:
        self.judge, self.target, self.hold = judge, target, hold


def _explore(argv: list[str], unfixable: list[str], gives_up: list[str], answers: list[str], notes: list[str],
             on: _Against, found: dict[tuple[str, ...], Alternative], depth: int) -> None:
    evaluation = on.judge.evaluate(argv, on.target)
    blocking = [f for f in evaluation.findings if f.rule.id in unfixable and f.rule.alternatives]
    for finding in blocking[:1]:  # the first unfixable finding in sglang's order; the next one, one level down
        rule = finding.rule
        for alt in rule.alternatives:
            if "when" in alt and evaluate(alt["when"], evaluation.context) is not True:
                continue
            fx = FixContext(evaluation.cmd, on.target.table, evaluation.context, STRATEGIES)
            edits = [e for op in alt["fix"] for e in fx.edits_for(op)]
            if not edits:
                continue
            changed = apply_edits(evaluation.cmd, edits)
            if changed == argv:
                continue
            again = on.judge.fix_loop(changed, on.target, on.hold)
            if rule.id in again.unfixable:
                continue  # it does not answer the finding it was written for
            final = again.corrected_argv or again.nearest_argv or changed
            # the loop's "has no automatic fix" entries are what still fails (still_failing), not a cost
            costs = [g for g in again.gives_up if not any(g.startswith(f"{r} has no automatic fix") for r in again.unfixable)]
            given = _merge(gives_up, [alt["gives_up"]], fx.gives_up, costs)
            said = _merge(notes, fx.notes, again.fix_notes)
            if again.fix_status in ("clean", "fixed"):
                _keep(found, Alternative(final, given, answers + [rule.id], True, [], said))
            elif again.fix_status == "no-fix":
                if depth < MAX_DEPTH:
                    _explore(final, again.unfixable, given, answers + [rule.id], said, on, found, depth + 1)
                _keep(found, Alternative(final, given, answers + [rule.id], False, list(again.unfixable), said))


def _keep(found: dict[tuple[str, ...], Alternative], alt: Alternative) -> None:
    key = tuple(alt.argv)
    if key not in found or (alt.checks_clean and not found[key].checks_clean):
        found[key] = alt


def _merge(*parts: list[str]) -> list[str]:
    out: list[str] = []
    for part in parts:
        out += [p for p in part if p and p not in out]
    return out
