"""One check: parse the launch, resolve it as sglang would, run the rules, and correct it (the
fix loop). The server args come from sglang/server_args.py, the context from engine/context.py.

Pure: no printing, no exit codes. The CLI renders what this returns.
"""

from __future__ import annotations

from h3doctor.engine.conditions import said
from h3doctor.engine.context import arg_paths, build_context
from h3doctor.engine.results import Change, CheckResult, Evaluation, Finding, FixStep
from h3doctor.engine.ruleset import Rule, RuleSet, rule_set
from h3doctor.errors import UsageError
from h3doctor.facts import HardwareFacts
from h3doctor.record import replace
from h3doctor.sglang.argv import parse_command
from h3doctor.sglang.flagtable import DEFAULT_SGLANG_VERSION, FlagTable
from h3doctor.sglang.launch_forms import read_launch_form
from h3doctor.sglang.platform import apply_platform_override
from h3doctor.sglang.releases import Release, image_target
from h3doctor.sglang.resolve import Resolver
from h3doctor.sglang.server_args import config_for, diffusers_backend, family_of, server_args
from h3doctor.unresolved import UNRESOLVED, has_mark

TYPE_CHECKING = False  # typing is not imported at run time (start-up: record.py)
if TYPE_CHECKING:
    from typing import Any

MAX_FIX_ROUNDS = 16
_NEWEST = DEFAULT_SGLANG_VERSION  # the newest release whose rules are verified
# Stages that belong to the H3 pipeline config and pipeline; --backend diffusers bypasses them.
_H3_PIPELINE_STAGES = frozenset("MWLR")
_RESOLUTION_ERROR_ORDER = 400  # H3D990: the start of the adjust phase


def evaluate_launch(tokens: list[str], hw: HardwareFacts, rules: RuleSet | list[Rule], table: FlagTable,
                    env: dict[str, str], intent: dict[str, Any] | None = None,
                    release: Release | None = None) -> Evaluation:
    rules = rule_set(rules)
    release = release or Release(table.sglang_version)  # built once: the resolver and every derivation read it

    def resolve(argv: list[str]):
        return _resolved(argv, hw, rules, table, env, intent, release)

    if any(has_mark(t) for t in tokens):  # values the launch's file leaves to the shell: any value
        from h3doctor.engine.unresolved import swept

        (cmd, config, family, hw, env, resolver, args, key), ctx, _values = swept(tokens, table, env, resolve)
        cmd = replace(cmd, tokens=list(tokens), args=list(tokens[cmd.prefix_len:]))  # the words as written
    else:
        (cmd, config, family, hw, env, resolver, args, key), ctx = resolve(tokens)
    findings = []
    unverified = rules.unverified(key, hw.platform, cmd.entry, table.sglang_version, _NEWEST)
    ctx["release.unverified"] = unverified
    ctx["release.unverified_text"] = "; ".join(unverified)
    diffusers = bool(key) and diffusers_backend(args)
    # an error in some of the values an unresolved flag was tried with is UNRESOLVED: not a stop
    resolution_failed = ctx.get("events.resolution_error", UNRESOLVED) is not UNRESOLVED
    for rule, condition in rules.applicable(key, hw.platform, cmd.entry, table.sglang_version):
        if diffusers and rule.sglang_stage in _H3_PIPELINE_STAGES:
            continue
        if resolution_failed and rule.order > _RESOLUTION_ERROR_ORDER:
            continue  # sglang stops where resolution failed; later rules would read half-resolved values
        unknowns: set[str] = set()
        verdict = condition(ctx, unknowns)
        if verdict is False:
            continue
        # Unknown facts matter only when they decide the verdict: a condition already true on
        # known facts is a plain finding, whatever else it could not read.
        severity = rule.severity if verdict else "warning"
        unknown = sorted(unknowns) if verdict is None else []
        why = said(rule.why, ctx, unknowns) if "{" in rule.why else ""
        fix_note = said(rule.fix_note, ctx, unknowns) if rule.fix_note and "{" in rule.fix_note else (rule.fix_note or "")
        findings.append(Finding(rule, said(rule.message, ctx, unknowns), severity, rule.order_for(key), tuple(unknown), why,
                                _after_first(rule, ctx), fix_note, unknown_why(unknown, ctx)))
    findings.sort(key=lambda f: (f.order, ctx.get(f.rule.position, 0) if f.rule.position else 0, f.rule.id))
    # each arg as the rules saw it (a fix or sweep may have set it), looked up in C over the paths' list
    effective = dict(zip(resolver.args, map(ctx.get, arg_paths(resolver.args), resolver.args.values()))) \
        if resolver else {}
    return Evaluation(cmd, family, hw, ctx, findings, config, effective)


def _resolved(tokens: list[str], hw: HardwareFacts, rules: RuleSet, table: FlagTable, env: dict[str, str],
              intent: dict[str, Any] | None, release: Release) -> tuple[tuple, dict[str, Any]]:
    """Parse and resolve the launch as sglang would, and build the context the rules read."""
    cmd = parse_command(tokens, table)
    env = cmd.form.environment(env)
    hw = apply_platform_override(hw, env)
    config = config_for(cmd, table)
    args, explicit = server_args(cmd, config, table)
    family = family_of(cmd, args)
    resolver = None
    if family.family is not None:
        resolver = Resolver(args, explicit, family.family, hw, env, release=release)
        try:
            resolver.run()
        except (TypeError, ValueError, AttributeError, KeyError, ZeroDivisionError) as exc:
            # A value sglang's own adjust code would choke on too (it is the same arithmetic):
            # report it rather than crash; rule H3D990 turns the event into a finding.
            resolver.events["resolution_error"] = f"{type(exc).__name__}: {exc}"
    key = family.family.key if family.family else None

    reads = rules.reads(key, hw.platform, cmd.entry, table.sglang_version)  # what the applicable rules read
    ctx = build_context(cmd, config, family, hw, env, resolver, intent or {}, release, reads)
    return (cmd, config, family, hw, env, resolver, args, key), ctx


def unknown_why(unknown: list[str], ctx: dict[str, Any]) -> str:
    """What a "cannot verify" finding could not read, in words: the hardware facts the profile or
    probe did not give, and why the memory estimate cannot decide."""
    said: list[str] = []
    facts = [u.removeprefix("hw.") for u in unknown if u.startswith("hw.")]
    if facts:
        said.append(f"not known for this hardware: {', '.join(facts)}")
    if any(u.startswith("derived.memory.") for u in unknown):
        if ctx.get("derived.memory.unmodelled"):  # no figure at all: a platform or release with no model
            reason = ctx["derived.memory.unmodelled"]
        elif ctx.get("derived.memory.capacity_gib") is None:
            reason = "the GPU's memory is not known"
        elif (ctx.get("derived.memory") or {}).get("uncertain"):  # the budget's own words
            reason = "; ".join(ctx["derived.memory"]["uncertain"])
        else:
            reason = "it depends on whether the text encoder is folded over the GPUs, which their unknown P2P topology decides"
        said.append(f"the memory estimate is not certain here: {reason}")
    host = [u.removeprefix("derived.host.") for u in unknown if u.startswith("derived.host.")]
    if host:  # worked out from the disks and caches of the machine the launch runs on (derivations/download.py)
        why = ctx.get("derived.host_unknown") or {}
        said.append(f"not known of the machine it runs on: {'; '.join(why.get(h, h) for h in host)}")
    unresolved = [u for u in unknown if ctx.get(u) is UNRESOLVED]
    if unresolved:  # what the launch's file leaves to the shell (engine/unresolved.py)
        said.append(f"it depends on {ctx.get('unresolved.words')}, known only when the launch runs")
    others = [u for u in unknown if not u.startswith(("hw.", "derived.memory.", "derived.host.")) and u not in unresolved]
    if others:
        said.append(f"not known: {', '.join(others)}")
    return "; ".join(said)


def _after_first(rule: Rule, ctx: dict[str, Any]) -> str | None:
    """A rule whose message is the first of several parse errors (`position: parse.<kind>_position`)
    names the others here: sglang stops at the first, and the fix removes them all."""
    if not rule.position or not rule.position.startswith("parse.") or not rule.position.endswith("_position"):
        return None
    kind = rule.position[len("parse."):-len("_position")]
    others = list(ctx.get(f"parse.{kind}") or [])
    first = ctx.get(f"parse.{kind}_message")
    if first in others:
        others.remove(first)
    return f"sglang stops at the first parse error; after it: {'; '.join(others)}" if others else None


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


def check(tokens: list[str], hw: HardwareFacts, rules: list[Rule], table: FlagTable, env: dict[str, str],
          intent: dict[str, Any] | None = None, evaluations: dict | None = None,
          release: Release | None = None, hold: frozenset[str] = frozenset()) -> CheckResult:
    """The fix loop (`fix_loop`); when it ends in no-fix, the alternatives the unfixable rules
    list, each re-checked (engine/alternatives.py). Offered only: corrected_argv stays None.

    `hold`: rule IDs whose findings are reported but never fixed (lint's suppressed and
    unselected rules): the corrected command leaves what they are about as it is."""
    rules = rule_set(rules)
    hw, table, release = in_container(tokens, hw, table, env, release)
    result = fix_loop(tokens, hw, rules, table, env, intent, evaluations, release, hold)
    if result.fix_status != "no-fix":
        return result
    from h3doctor.engine.alternatives import alternatives  # the fixers load only for a launch that needs them

    offered = alternatives(result, tokens, rules, table,
                           lambda argv: fix_loop(argv, hw, rules, table, env, intent, evaluations, release, hold),
                           lambda argv: _evaluate(argv, hw, rules, table, env, intent, evaluations, release))
    return replace(result, alternatives=offered) if offered else result


def in_container(tokens: list[str], hw: HardwareFacts, table: FlagTable, env: dict[str, str],
                 release: Release | None) -> tuple[HardwareFacts, FlagTable, Release | None]:
    """A launch in a container (`docker run … IMAGE sglang …`) sees the GPUs the runtime grants
    (at most the host's) and runs the image's sglang: its tag is the release unless the user named
    one (option, recipe); the host's installed sglang is never the container's. The image's
    Release is built here and handed on, with its own flag table."""
    try:
        run = read_launch_form(tokens).container
    except UsageError:  # an unreadable launch is evaluate_launch's to report, the usual way
        return hw, table, release
    if run is None:
        return hw, table, release
    granted = run.gpu_count(env)
    if granted is not None and (hw.gpu_count is None or granted < hw.gpu_count):
        hw = replace(hw, gpu_count=granted, description=f"{hw.description}; {granted} granted to the container "
                                                         f"({run.gpus.said if run.gpus else 'NVIDIA_VISIBLE_DEVICES'})")
    if release is not None and release.source in ("option", "recipe"):
        return hw, table, replace(release, image=run.image)
    release = image_target(run.image)
    if release.table_version != table.sglang_version:
        table = release.table
    return hw, table, release


def fix_loop(tokens: list[str], hw: HardwareFacts, rules: list[Rule], table: FlagTable, env: dict[str, str],
             intent: dict[str, Any] | None = None, evaluations: dict | None = None,
             release: Release | None = None, hold: frozenset[str] = frozenset()) -> CheckResult:
    """Evaluate; then fix the first failing rule, re-resolve, re-check, until nothing fails.

    A failing rule with no fix (no change of flags makes it pass) is set aside and the others
    are still fixed: the result is then `no-fix`, with no corrected command but the nearest
    launch (every fixable finding fixed) and what to give up.

    `evaluations`, when given, keeps the evaluations of this and earlier checks (a lint run passes
    one dict): a launch that another check already evaluated on the same hardware, environment
    and requests, e.g. the corrected command many launches converge on, is not evaluated again.
    Evaluations are frozen records, so sharing them is safe.
    """
    rules = rule_set(rules)
    first = _evaluate(tokens, hw, rules, table, env, intent, evaluations, release)
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
        target = blocking[0]  # one at a time, in sglang's order, as sglang itself would report them
        from h3doctor.engine.fixes import FixContext, apply_edits  # a clean launch never loads the fixers
        from h3doctor.engine.strategies import STRATEGIES

        fx = FixContext(evaluation.cmd, table, evaluation.context, STRATEGIES,
                        lambda edits, ev=evaluation, rule=target.rule.id: _passes(
                            ev, rule, _evaluate(apply_edits(ev.cmd, edits), hw, rules, table, env, intent, evaluations, release)))
        edits = [e for op in target.rule.fix for e in fx.edits_for(op)]
        changed = apply_edits(evaluation.cmd, edits) if edits else current
        if changed == current:
            # the fix does not apply to this command (e.g. an unreadable --config file), or it
            # would set what the command already says: no fix here, never a change that repeats it
            unfixable.append(target.rule.id)
            gives_up.append(f"{target.rule.id} has no automatic fix here: {target.fix_note or 'no flag change fixes this'}")
            continue
        if target.rule.gives_up and target.rule.gives_up not in gives_up:
            gives_up.append(target.rule.gives_up)
        notes += [n for n in fx.notes if n not in notes]
        gives_up += [g for g in fx.gives_up if g not in gives_up]
        before, current = current, changed
        spelled_out = frozenset((evaluation.cmd.args[p.start].split("=", 1)[0], p.suggestion)
                                for p in evaluation.cmd.problems if p.kind == "abbreviation" and p.suggestion)
        steps.append(FixStep(target.rule, target.message, _changes(before, current, spelled_out),
                             target.rule.id not in first_ids, tuple(before), evaluation))
        if tuple(current) in seen:
            break
        seen.add(tuple(current))
        evaluation = _evaluate(current, hw, rules, table, env, intent, evaluations, release)
    return CheckResult(first, None, "not-converged", notes, gives_up, fix_steps=steps)


def _evaluate(tokens, hw, rules, table, env, intent, memo: dict | None, release=None) -> Evaluation:
    if memo is None:
        return evaluate_launch(tokens, hw, rules, table, env, intent, release)
    key = (tuple(tokens), id(hw), id(rules), id(table), tuple(sorted(env.items())),
           tuple(sorted((intent or {}).items())), release)
    hit = memo.get(key)
    if hit is not None and hit[0] is hw and hit[1] is rules and hit[2] is table:
        return hit[3]
    evaluation = evaluate_launch(tokens, hw, rules, table, env, intent, release)
    memo[key] = (hw, rules, table, evaluation)
    return evaluation


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
