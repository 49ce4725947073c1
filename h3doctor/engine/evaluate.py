"""One evaluation: the launch parsed once, resolved as sglang would, and every applicable rule
run on the context (engine/context.py). No fixing: that is the judge's (engine/judge.py).

Pure: no printing, no exit codes.
"""

from __future__ import annotations

from h3doctor.engine.conditions import said
from h3doctor.engine.context import arg_paths, build_context
from h3doctor.engine.results import Evaluation, Finding
from h3doctor.engine.ruleset import Rule, RuleSet
from h3doctor.engine.target import Target
from h3doctor.record import replace
from h3doctor.sglang.argv import attached_parse, parse_words
from h3doctor.sglang.flagtable import DEFAULT_SGLANG_VERSION
from h3doctor.sglang.launch_forms import LaunchWords
from h3doctor.sglang.platform import apply_platform_override
from h3doctor.sglang.resolve import Resolver
from h3doctor.sglang.server_args import config_for, diffusers_backend, family_of, server_args
from h3doctor.unresolved import UNRESOLVED, has_mark

TYPE_CHECKING = False  # typing is not imported at run time (start-up: record.py)
if TYPE_CHECKING:
    from typing import Any

_NEWEST = DEFAULT_SGLANG_VERSION  # the newest release whose rules are verified
# Stages that belong to the H3 pipeline config and pipeline; --backend diffusers bypasses them.
_H3_PIPELINE_STAGES = frozenset("MWLR")
_RESOLUTION_ERROR_ORDER = 400  # H3D990: the start of the adjust phase


def evaluate(launch: LaunchWords, target: Target, rules: RuleSet) -> Evaluation:
    tokens, table = list(launch.tokens), target.table
    if any(has_mark(t) for t in tokens):  # values the launch's file leaves to the shell: any value
        from h3doctor.engine.unresolved import swept

        def resolve(argv: list[str]):  # each tried value is a launch of its own
            return _resolved(LaunchWords.read(argv), target, rules)

        (cmd, config, family, hw, env, resolver, args, key), ctx, _values = swept(tokens, table, target.env, resolve,
                                                                                  attached_parse(launch, table))
        cmd = replace(cmd, tokens=list(tokens), args=list(tokens[cmd.prefix_len:]))  # the words as written
    else:
        (cmd, config, family, hw, env, resolver, args, key), ctx = _resolved(launch, target, rules)
    findings = []
    unverified = rules.unverified(key, hw.platform, cmd.entry, table.sglang_version, _NEWEST)
    ctx["release.unverified"] = unverified
    ctx["release.unverified_text"] = "; ".join(unverified)
    diffusers = bool(key) and diffusers_backend(args)
    # an error in some of the values an unresolved flag was tried with is UNRESOLVED: not a stop
    resolution_failed = ctx.get("events.resolution_error", UNRESOLVED) is not UNRESOLVED
    unknowns: set[str] = set()  # shared by the rules (~200 an evaluation); a new one only after a rule left facts in it
    for rule, condition in rules.applicable(key, hw.platform, cmd.entry, table.sglang_version):
        if diffusers and rule.sglang_stage in _H3_PIPELINE_STAGES:
            continue
        if resolution_failed and rule.order > _RESOLUTION_ERROR_ORDER:
            continue  # sglang stops where resolution failed; later rules would read half-resolved values
        if unknowns:
            unknowns = set()
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


def _resolved(launch: LaunchWords, target: Target, rules: RuleSet) -> tuple[tuple, dict[str, Any]]:
    """Parse (from the launch form already read) and resolve the launch as sglang would, and build
    the context the rules read."""
    table = target.table
    cmd = parse_words(launch, table)  # a parse lint's session made for its pre-checks is taken as it is
    env = cmd.form.environment(target.env)
    run = cmd.form.container
    # a fix that edits the container's line is judged with that line's facts, not the first one's
    hw = apply_platform_override(target.hw if target.host is None or run is None else target.container_hw(run), env)
    config = config_for(cmd, table)
    args, explicit = server_args(cmd, config, table)
    family = family_of(cmd, args)
    resolver = None
    if family.family is not None:
        resolver = Resolver(args, explicit, family.family, hw, env, release=target.release)
        try:
            resolver.run()
        except (TypeError, ValueError, AttributeError, KeyError, ZeroDivisionError) as exc:
            # A value sglang's own adjust code would choke on too (it is the same arithmetic):
            # report it rather than crash; rule H3D990 turns the event into a finding.
            resolver.events["resolution_error"] = f"{type(exc).__name__}: {exc}"
    key = family.family.key if family.family else None

    reads = rules.reads(key, hw.platform, cmd.entry, table.sglang_version)  # what the applicable rules read
    ctx = build_context(cmd, config, family, hw, env, resolver, target.intent, target.release, reads, target.deployment)
    return (cmd, config, family, hw, env, resolver, args, key), ctx


def unknown_why(unknown: list[str], ctx: dict[str, Any]) -> str:
    """What a "cannot verify" finding could not read, in words: the hardware facts the profile or
    probe did not give, and why the memory estimate cannot decide."""
    words: list[str] = []
    facts = [u.removeprefix("hw.") for u in unknown if u.startswith("hw.")]
    if facts:
        words.append(f"not known for this hardware: {', '.join(facts)}")
    if any(u.startswith("derived.memory.") for u in unknown):
        if ctx.get("derived.memory.unmodelled"):  # no figure at all: a platform or release with no model
            reason = ctx["derived.memory.unmodelled"]
        elif ctx.get("derived.memory.capacity_gib") is None:
            reason = "the GPU's memory is not known"
        elif (ctx.get("derived.memory") or {}).get("uncertain"):  # the budget's own words
            reason = "; ".join(ctx["derived.memory"]["uncertain"])
        else:
            reason = "it depends on whether the text encoder is folded over the GPUs, which their unknown P2P topology decides"
        words.append(f"the memory estimate is not certain here: {reason}")
    unresolved = [u for u in unknown if ctx.get(u) is UNRESOLVED]
    if unresolved:  # what the launch's file leaves to the shell (engine/unresolved.py)
        words.append(f"it depends on {ctx.get('unresolved.words')}, known only when the launch runs")
    host = [u.removeprefix("derived.host.") for u in unknown if u.startswith("derived.host.")]
    if host:  # worked out from the disks and caches of the machine the launch runs on (derivations/download.py)
        why = ctx.get("derived.host_unknown") or {}
        words.append(f"not known of the machine it runs on: {'; '.join(why.get(h, h) for h in host)}")
    probe = [u.removeprefix("derived.probe.") for u in unknown if u.startswith("derived.probe.")]
    if probe:  # a manifest's probes against the launch's start-up (derivations/probes.py)
        why = ctx.get("derived.probe_unknown") or {}
        words.append(f"not known: {'; '.join(why.get(p, p) for p in probe)}")
    cuda = [u.removeprefix("derived.cuda.") for u in unknown if u.startswith("derived.cuda.")]
    if cuda:  # the driver and kernels of the machine it runs on (derivations/kernels.py)
        why = ctx.get("derived.cuda_unknown") or {}
        words.append(f"not known of the machine it runs on: {'; '.join(why.get(c, c) for c in cuda)}")
    others = [u for u in unknown if not u.startswith(("hw.", "derived.memory.", "derived.host.", "derived.probe.", "derived.cuda."))
              and u not in unresolved]
    if others:
        words.append(f"not known: {', '.join(others)}")
    return "; ".join(words)


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
