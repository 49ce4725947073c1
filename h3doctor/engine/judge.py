"""The judge: the loaded rules, and what they make of a launch on a target — one evaluation
(`evaluate`), the fix loop (`fix_loop`) and the whole check (`check`: the container the launch
runs in, the fix loop, and the alternatives when it finds no fix). Every caller (request.run,
lint's session, the API, suggest, explain, the integrations) goes through one.

Pure: no printing, no exit codes. The CLI renders what this returns.
"""

from __future__ import annotations

from h3doctor.engine.evaluate import evaluate
from h3doctor.engine.results import Change, CheckResult, Evaluation, Finding, FixStep
from h3doctor.engine.ruleset import rule_set
from h3doctor.engine.target import Target
from h3doctor.record import replace
from h3doctor.sglang.launch_forms import LaunchWords

TYPE_CHECKING = False  # typing is not imported at run time (start-up: record.py)
if TYPE_CHECKING:
    from typing import Any

MAX_FIX_ROUNDS = 16



class Judge:
    """The rules of one run, loaded once (a `RuleSet`, or a list made one), and optionally a memo
    of evaluations (`memo`: a lint run keeps one per naming directory): a launch another check
    already evaluated on the same target, e.g. the corrected command many launches converge on,
    is not evaluated again. Evaluations are frozen records, so sharing them is safe."""

    def __init__(self, rules: Any, memo: dict | None = None) -> None:
        self.rules = rule_set(rules)
        self.memo = memo

    def evaluate(self, launch: list[str] | LaunchWords, target: Target) -> Evaluation:
        """The rules on the launch as it stands: its form read and its flags parsed once."""
        words = LaunchWords.read(launch)
        if self.memo is None:
            return evaluate(words, target, self.rules)
        key = (words.tokens, target.key)
        hit = self.memo.get(key)
        if hit is not None and hit[0] is target.hw and hit[1] is target.table:
            return hit[2]
        evaluation = evaluate(words, target, self.rules)
        self.memo[key] = (target.hw, target.table, evaluation)  # kept alive: their ids stay theirs
        return evaluation

    def check(self, launch: list[str] | LaunchWords, target: Target, hold: frozenset[str] = frozenset()) -> CheckResult:
        """The fix loop on the target the launch's container makes of `target` (`Target.in_container`);
        when it ends in no-fix, the alternatives the unfixable rules list, each re-checked
        (engine/alternatives.py). Offered only: corrected_argv stays None.

        `hold`: rule IDs whose findings are reported but never fixed (lint's suppressed and
        unselected rules): the corrected command leaves what they are about as it is."""
        words = LaunchWords.read(launch)
        target = target.in_container(words)
        result = self.fix_loop(words, target, hold)
        if result.fix_status != "no-fix":
            return result
        from h3doctor.engine.alternatives import alternatives  # the fixers load only for a launch that needs them

        offered = alternatives(result, list(words.tokens), self, target, hold)
        return replace(result, alternatives=offered) if offered else result

    def fix_loop(self, launch: list[str] | LaunchWords, target: Target, hold: frozenset[str] = frozenset()) -> CheckResult:
        """Evaluate; then fix the first failing rule, re-resolve, re-check, until nothing fails.

        A failing rule with no fix (no change of flags makes it pass) is set aside and the others
        are still fixed: the result is then `no-fix`, with no corrected command but the nearest
        launch (every fixable finding fixed) and what to give up."""
        words = LaunchWords.read(launch)
        tokens = list(words.tokens)
        first = self.evaluate(words, target)
        current, evaluation = list(tokens), first
        notes: list[str] = []
        gives_up: list[str] = []
        unfixable: list[str] = []
        seen = {tuple(tokens)}
        steps: list[FixStep] = []
        first_ids = {f.rule.id for f in first.findings}
        for _ in range(MAX_FIX_ROUNDS):
            blocking = [f for f in evaluation.findings if _needs_fix(f) and f.rule.id not in unfixable
                        and f.rule.id not in hold]
            for f in blocking:
                if f.rule.fix is None:
                    unfixable.append(f.rule.id)
                    gives_up.append(f"{f.rule.id} has no automatic fix: {f.fix_note or 'no flag change fixes this'}")
            blocking = [f for f in blocking if f.rule.fix is not None]
            if not blocking:
                # a finding set aside as unfixable may have gone with a later fix (sage_fp8 SubBlock
                # on an A100: the SubBlock capability fix moves the transformer to fa)
                gone = [u for u in unfixable if not any(f.rule.id == u and _needs_fix(f) for f in evaluation.findings)]
                gives_up = [g for g in gives_up if not any(g.startswith(f"{u} has no automatic fix") for u in gone)]
                return _finish(first, evaluation, tokens, current, notes, gives_up, [u for u in unfixable if u not in gone], steps)
            failing = blocking[0]  # one at a time, in sglang's order, as sglang itself would report them
            from h3doctor.engine.fixes import FixContext, apply_edits  # a clean launch never loads the fixers
            from h3doctor.engine.strategies import STRATEGIES

            fx = FixContext(evaluation.cmd, target.table, evaluation.context, STRATEGIES,
                            lambda edits, ev=evaluation, rule=failing.rule.id: _passes(
                                ev, rule, self.evaluate(apply_edits(ev.cmd, edits), target)))
            edits = [e for op in failing.rule.fix for e in fx.edits_for(op)]
            changed = apply_edits(evaluation.cmd, edits) if edits else current
            if changed == current:
                # the fix does not apply to this command (e.g. an unreadable --config file), or it
                # would set what the command already says: no fix here, never a change that repeats it
                unfixable.append(failing.rule.id)
                why = fx.gives_up[0] if fx.gives_up else failing.fix_note or "no flag change fixes this"
                gives_up.append(f"{failing.rule.id} has no automatic fix here: {why}")
                continue
            if failing.rule.gives_up and failing.rule.gives_up not in gives_up:
                gives_up.append(failing.rule.gives_up)
            notes += [n for n in fx.notes if n not in notes]
            gives_up += [g for g in fx.gives_up if g not in gives_up]
            before, current = current, changed
            spelled_out = frozenset((evaluation.cmd.args[p.start].split("=", 1)[0], p.suggestion)
                                    for p in evaluation.cmd.problems if p.kind == "abbreviation" and p.suggestion)
            steps.append(FixStep(failing.rule, failing.message, _changes(before, current, spelled_out),
                                 failing.rule.id not in first_ids, tuple(before), evaluation))
            if tuple(current) in seen:
                break
            seen.add(tuple(current))
            evaluation = self.evaluate(current, target)
        return CheckResult(first, None, "not-converged", notes, gives_up, fix_steps=steps)


def _changes(before: list[str], after: list[str], resolved: frozenset[tuple[str, str]] = frozenset()) -> tuple[Change, ...]:
    """Every run of tokens that differs between two commands (tokendiff: linear in the tokens).
    `resolved`: (abbreviation, flag) pairs argparse itself resolves, so spelling one out is the same flag."""
    from h3doctor.tokendiff import opcodes

    out = []
    for op, i1, i2, j1, j2 in opcodes(before, after):
        if op == "equal":
            continue
        removed, added = tuple(before[i1:i2]), tuple(after[j1:j2])
        # a value changed behind its flag: say which flag (`--attention-backend nope` -> `... fa`)
        flag = before[i1 - 1] if i1 > 0 and before[i1 - 1].startswith("--") and "=" not in before[i1 - 1] else None
        starts_with_flag = (removed or added)[0].startswith("-")
        flags = tuple(t.split("=", 1)[0] for t in (removed[:1] + added[:1]))
        out.append(Change(removed, added, flag if flag and not starts_with_flag else None, flags in resolved, i1))
    return tuple(out)


def _finish(first: Evaluation, last: Evaluation, tokens: list[str], current: list[str], notes: list[str],
            gives_up: list[str], unfixable: list[str], steps: list[FixStep]) -> CheckResult:
    changed = current != list(tokens)
    if unfixable:
        # what the nearest launch still fails on, in its rules' words, and by how much memory
        still = [f"{f.rule.id}: {f.message}" for f in last.findings if f.rule.id in unfixable and f.predicts_failure]
        return CheckResult(first, None, "no-fix", notes, gives_up, nearest_argv=current if changed else None,
                           unfixable=list(unfixable), fix_steps=steps, still_fails=still,
                           shortfall_gib=last.context.get("derived.memory.shortfall_gib") or None)
    unverified = list(dict.fromkeys(f.rule.id for f in last.findings if f.cannot_verify)) if changed else []
    return CheckResult(first, current if changed else None, "fixed" if changed else "clean", notes, gives_up,
                       fix_steps=steps, corrected_unverified=unverified)


def _passes(before: Evaluation, rule: str, after: Evaluation) -> bool:
    """Whether a fix option's command (`after`) fixes `rule`'s finding and fails on nothing
    `before` did not (a `one_of` fix takes the first option that does)."""
    failing = {f.rule.id for f in before.findings if _needs_fix(f)}
    return not any(_needs_fix(f) and (f.rule.id == rule or f.rule.id not in failing) for f in after.findings)


def _needs_fix(f: Finding) -> bool:
    """Errors always; warnings when they predict a failure (the loop never stops at a launch that
    will not serve) or carry a fix; never 'cannot verify'."""
    if f.cannot_verify:
        return False
    return f.predicts_failure or (f.severity == "warning" and f.rule.fix is not None)
