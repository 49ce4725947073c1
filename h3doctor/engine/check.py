"""One check: parse the launch, resolve it as sglang would, run the rules, and correct it.

Pure: no printing, no exit codes. The CLI renders what this returns.
"""

from __future__ import annotations

import copy
import json
from dataclasses import replace
from typing import Any

from h3doctor.engine.alternatives import alternatives
from h3doctor.engine.conditions import Compiled, compile_condition, render
from h3doctor.engine.derivations import derive_all
from h3doctor.engine.fixes import FixContext, apply_edits
from h3doctor.engine.results import Change, CheckResult, Evaluation, Finding, FixStep
from h3doctor.engine.ruleset import Rule
from h3doctor.engine.strategies import PARSE_KIND, STRATEGIES
from h3doctor.facts import HardwareFacts
from h3doctor.sglang.argv import ParsedCommand, parse_command
from h3doctor.sglang.configfile import ConfigLoad, coerce, load_config
from h3doctor.sglang.families import FamilyMatch, match_family
from h3doctor.sglang.flagtable import DEFAULT_SGLANG_VERSION, FlagTable
from h3doctor.sglang.platform import apply_platform_override
from h3doctor.sglang.releases import ReleaseTarget, describe_foreign, family_versions, in_range, lowest
from h3doctor.sglang.releases import facts as release_facts
from h3doctor.sglang.releases import key as release_key
from h3doctor.sglang.releases import model_versions, needs_at_least
from h3doctor.sglang.resolve import Resolver, parse_component_backend_map
from h3doctor.sglang.sampling import request_intent

MAX_FIX_ROUNDS = 16
_NEWEST = DEFAULT_SGLANG_VERSION  # the newest release whose rules are verified
RELEVANT_ENV = (
    "SGLANG_DIFFUSION_PLATFORM_OVERRIDE", "SGLANG_CACHE_DIT_ENABLED", "SGLANG_DIFFUSION_MINIMAX_H3_ADALN_GPU_PLANS",
    "SGLANG_USE_SGL_FA3_KERNEL", "SGLANG_DIFFUSION_DISABLE_AUTO_RESIDENCY", "CUDA_VISIBLE_DEVICES", "SGLANG_CACHE_DIR",
)


def _config_for(cmd: ParsedCommand, table: FlagTable) -> ConfigLoad | None:
    path = cmd.provided.get("config")
    if not path:
        return None
    booleans = {a.dest for a in table.actions if a.action in ("store_boolean", "store_true", "store_false")}
    numeric = {a.dest: a.type for a in table.actions if a.type in ("int", "float") and a.nargs is None}
    return load_config(str(path), known_fields=set(table.dataclass_defaults), boolean_fields=booleans,
                       removed=table.removed_config_keys, numeric_fields=numeric)


_DEFAULTS: dict[int, tuple[FlagTable, dict[str, Any], tuple[str, ...]]] = {}


def _defaults(table: FlagTable) -> dict[str, Any]:
    """Every dest's default, computed once per flag table; mutable defaults copied per check."""
    cached = _DEFAULTS.get(id(table))
    if cached is None or cached[0] is not table:
        base = {dest: table.default_of(dest) for dest in table.dataclass_defaults}
        for action in table.actions:
            base.setdefault(action.dest, table.default_of(action.dest))
        mutable = tuple((k, copy.copy if _flat(v) else copy.deepcopy) for k, v in base.items()
                        if isinstance(v, (dict, list, set)))
        cached = _DEFAULTS[id(table)] = (table, base, mutable)
    _table, base, mutable = cached
    args = dict(base)
    for key, copier in mutable:
        args[key] = copier(base[key])
    return args


def _flat(value: Any) -> bool:
    """A container of immutable values only: a shallow copy is a full copy."""
    items = value.values() if isinstance(value, dict) else value
    return all(isinstance(v, (str, int, float, bool, type(None), tuple)) for v in items)


def _server_args(cmd: ParsedCommand, config: ConfigLoad | None, table: FlagTable) -> tuple[dict[str, Any], set[str]]:
    """Dataclass defaults, then --config, then the CLI (catalog 1.2 step 5)."""
    args = _defaults(table)
    explicit: set[str] = set()
    if config is not None and config.error is None:
        args.update(config.values)
        explicit |= set(config.values)
        for key, expected in config.type_mismatches.items():  # reported by a rule; coerced so the check goes on
            if key in cmd.provided:
                continue
            converted = coerce(args[key], expected)
            args[key] = table.default_of(key) if converted is None else converted
    cli = {k: v for k, v in cmd.provided.items() if k != "config"}
    args.update(cli)
    explicit |= set(cli)
    for dest, mapping in cmd.dynamic.items():  # from_cli_args merges the dynamic maps last
        if dest == "component_attention_backends":
            merged, _ = parse_component_backend_map(args.get(dest))
        else:
            merged = dict(args.get(dest) or {})
        merged.update(mapping)
        args[dest] = merged
        explicit.add(dest)
    if cmd.entry == "serve" and "warmup_mode" not in explicit:
        args["warmup_mode"] = "server"
    for key in ("component_paths", "component_weights_paths", "component_quantizations"):
        if args.get(key) is None:
            args[key] = {}
    return args, explicit


_ARG_PATHS: dict[str, str] = {}


def _arg_path(dest: str) -> str:
    """`args.<dest>`, built once per dest: every evaluation spells ~200 of them (a lint run, thousands
    of evaluations). The cache is capped: a --config file can bring any number of odd keys."""
    path = _ARG_PATHS.get(dest)
    if path is None:
        path = "args." + dest
        if len(_ARG_PATHS) < 2048:
            _ARG_PATHS[dest] = path
    return path


def _context(cmd, config, family, hw, env, resolver, intent, release: ReleaseTarget, reads) -> dict[str, Any]:
    ctx: dict[str, Any] = {"family": family.family.key if family.family else None, "entry": cmd.entry,
                           "launcher": cmd.launcher}
    foreign = _release_context(ctx, cmd, family, resolver, release, reads)
    resolved = resolver is not None and "resolution_error" not in resolver.events
    if resolver is not None:
        ctx.update(zip(map(_arg_path, resolver.args), resolver.args.values()))
        ctx.update({f"events.{k}": v for k, v in resolver.events.items()})
        ctx["explicit"] = sorted(resolver.explicit)
    ctx.update({f"hw.{k}": v for k, v in hw.as_dict().items()})
    ctx.update({f"env.{k}": env.get(k) for k in RELEVANT_ENV})
    ctx.update({f"intent.{k}": v for k, v in intent.items()})
    if cmd.entry == "generate":  # its one request is the command's own: --quality, --num-inference-steps
        own = request_intent(cmd.provided, release.version)
        ctx.update({f"intent.{k}": v for k, v in own.items()})
        intent = {**intent, **own}
    ctx["intent"] = {k: v for k, v in intent.items() if v is not None}  # the whole request, for derivations
    for p in cmd.problems:
        kind = PARSE_KIND.get(p.kind, p.kind)
        if id(p) in foreign:  # a flag of another release: rule H3D012 reports it where argparse meets it
            kind = "release_flag"
        ctx.setdefault(f"parse.{kind}", []).append(p.message)
        ctx.setdefault(f"parse.{kind}_message", p.message)
        # argparse classifies every option before it consumes any value, so an ambiguous
        # abbreviation is met first; the others in argv order (parse_known_args)
        position = -1 if p.kind == "ambiguous" else p.start
        if kind == "release_flag":
            # argparse stops at an ambiguous option at once; leftovers are reported after the whole parse
            position = -1 if p.kind == "ambiguous" else _AFTER_PARSE + p.start
        if position < ctx.get(f"parse.{kind}_position", float("inf")):
            ctx[f"parse.{kind}_position"] = position
            ctx[f"parse.{kind}_message"] = p.message if p.message.startswith("error: ") else f"error: {p.message}"\
                if kind == "release_flag" else p.message
    if config is not None:
        ctx["config.path"] = config.path
        ctx["config.error"] = config.error
        ctx["config.error_kind"] = config.error_kind
        ctx["config.string_booleans"] = config.string_booleans
        ctx["config.ignored_keys"] = config.ignored_keys
        ctx["config.removed_keys"] = config.removed_keys
        ctx["config.keys"] = sorted(config.values)
        ctx["config.values"] = config.values
        for key, value in config.values.items():  # per-component maps the file sets (fixes override them)
            if isinstance(value, dict):
                ctx[f"config.map.{key}"] = sorted(str(k).replace("-", "_") for k in value)
        # the command line wins over the file, so a value typed there is no longer mistyped
        mistyped = [key for key in config.type_mismatches if key not in cmd.provided]
        ctx["config.mistyped_keys"] = mistyped
        ctx["config.type_mismatches"] = [config.describe_mismatch(key) for key in mistyped]
    if resolved:  # last, so derivations can read every other root
        ctx.update(derive_all(resolver, hw, ctx))
    return ctx


_AFTER_PARSE = 1_000_000  # orders "unrecognized arguments" after every argparse error (rule H3D012)
_FOREIGN_KINDS = ("unrecognized", "ambiguous")


def _release_context(ctx: dict[str, Any], cmd: ParsedCommand, family: FamilyMatch, resolver, release: ReleaseTarget,
                     reads) -> set[int]:
    """`release.*`: the target release and what it knows of this launch. Returns the parse problems
    (by id) that are flags of another release. `reads(path)`: whether an applicable rule reads a
    value; the oldest release the launch needs is worked out only then (it reads every flag's
    history, ~180 KB of data, for the one rule that says it)."""
    version = release.version
    ctx.update({"release.version": version, "release.source": release.source, "release.table": release.table_version,
                "release.newer_than_verified": release.newer_than_verified})
    first = release_facts()["first_h3"]
    ctx["release.first_h3"] = first
    ctx["release.has_h3"] = release_key(version) >= release_key(first)
    model = resolver.args.get("model_path") if resolver is not None else None
    fam = family.family.key if family.family else None
    spec = model_versions(model) or (family_versions(fam) if fam else None)
    ctx["release.model_registered"] = None if spec is None else in_range(version, spec)
    ctx["release.model_since"] = lowest(spec) if spec else None
    typed = [o.option for o in cmd.occurrences if not o.abbreviated and o.option.startswith("--")]
    notes, ids = [], set()
    for p in cmd.problems:
        if p.kind in _FOREIGN_KINDS and p.option:
            info = describe_foreign(p.option, cmd.entry, release.table_version)
            if info is not None:
                ids.add(id(p))
                notes.append(info["text"])
                typed.append(p.option)
    ctx["release.foreign_flags"] = notes
    ctx["release.foreign_text"] = "; ".join(notes)
    if reads("release.needs_at_least") or reads("release.needs_why"):
        floor, why = needs_at_least(typed, cmd.entry, fam, model)
        ctx["release.needs_at_least"], ctx["release.needs_why"] = floor, why
    return ids


_UNVERIFIED: dict[tuple, tuple[list[Rule], list[str]]] = {}


def _unverified(rules: list[Rule], family: str | None, platform: str, entry: str, version: str, newest: str) -> list[str]:
    """The rule groups (by sglang stage) that apply on the newest verified release but are not
    verified for `version`: h3doctor cannot say whether this release raises them. Worked out once
    per rule list and combination, like the applicable rules."""
    if family is None or version == newest:
        return []
    key = (id(rules), len(rules), family, platform, entry, version, newest)
    cached = _UNVERIFIED.get(key)
    if cached is None or cached[0] is not rules:
        cached = _UNVERIFIED[key] = (rules, _count_unverified(rules, family, platform, entry, version, newest))
    return list(cached[1])


def _count_unverified(rules: list[Rule], family: str, platform: str, entry: str, version: str, newest: str) -> list[str]:
    missing: dict[str, int] = {}
    for rule in rules:
        if rule.absent and in_range(version, rule.absent):
            continue  # checked: this release has no such check, so there is nothing to verify
        if rule.applies(family, platform, entry, newest) and not rule.applies(family, platform, entry, version):
            missing[rule.sglang_stage] = missing.get(rule.sglang_stage, 0) + 1
    return [f"{_STAGE_NAMES.get(s, s)} ({n} rule{'s' if n > 1 else ''})" for s, n in sorted(missing.items(), key=lambda kv: _STAGE_ORDER.index(kv[0]) if kv[0] in _STAGE_ORDER else 99)]


_STAGE_ORDER = "DPFAVMWLR-"
_STAGE_NAMES = {"D": "dispatch", "P": "argument parsing", "F": "--config files", "A": "the adjust phase (auto-tuner, residency, parallelism, backends)",
                "V": "argument validation", "M": "the H3 model hook", "W": "worker start", "L": "model load",
                "R": "first request / forward", "-": "h3doctor's own advice (memory fit, GPUs)"}


def _family_of(cmd: ParsedCommand, args: dict[str, Any]) -> FamilyMatch:
    """Which H3 family sglang would build, or why this launch is not an H3 diffusion launch."""
    if cmd.model_type not in ("auto", "diffusion"):
        return FamilyMatch(None, f"--model-type {cmd.model_type}: sglang serve starts its {cmd.model_type!r} backend, "
                                 "not the diffusion server (cli/serve.py:181-225)")
    match = match_family(args.get("model_path"), args.get("model_id"), args.get("pipeline_class_name"))
    if match.family is not None and _diffusers_backend(args):
        return FamilyMatch(match.family, match.how + "; with --backend diffusers sglang uses the generic diffusers "
                                         "pipeline config (registry.py:617): the H3 model, worker, load and request "
                                         "checks do not run, the generic ones do")
    return match


def _diffusers_backend(args: dict[str, Any]) -> bool:
    return str(args.get("backend") or "auto").lower() == "diffusers"


# Stages that belong to the H3 pipeline config and pipeline; --backend diffusers bypasses them.
_H3_PIPELINE_STAGES = frozenset("MWLR")
_RESOLUTION_ERROR_ORDER = 400  # H3D990: the start of the adjust phase


_APPLICABLE: dict[tuple, tuple[list[Rule], list[tuple[Rule, Compiled]], str]] = {}
_COMPILED: dict[int, tuple[Rule, Compiled]] = {}


def _applicable(rules: list[Rule], family: str | None, platform: str, entry: str, version: str) -> list[tuple[Rule, Compiled]]:
    """The rules that apply to this family, platform, entry and release, with their compiled
    conditions: worked out once per rule list and combination, not per check."""
    key = (id(rules), len(rules), family, platform, entry, version)
    cached = _APPLICABLE.get(key)
    if cached is None or cached[0] is not rules:
        chosen = []
        for rule in rules:
            if rule.applies(family, platform, entry, version):
                rule = rule.for_version(version)
                compiled = _COMPILED.get(id(rule))
                if compiled is None or compiled[0] is not rule:
                    compiled = _COMPILED[id(rule)] = (rule, compile_condition(rule.when))
                chosen.append((rule, compiled[1]))
        # what the chosen rules can read anywhere (conditions, messages, fix notes, alternatives):
        # context values only some rules need are computed only when one of these names them
        text = "\n".join(json.dumps(rule.raw, sort_keys=True, default=str) for rule, _ in chosen)
        cached = _APPLICABLE[key] = (rules, chosen, text)
    return cached[1]


def _read_by_applicable(rules: list[Rule], family: str | None, platform: str, entry: str, version: str, path: str) -> bool:
    """Whether any rule that applies here mentions `path` (a safe over-approximation: a mention is
    a read)."""
    _applicable(rules, family, platform, entry, version)
    return path in _APPLICABLE[(id(rules), len(rules), family, platform, entry, version)][2]


def evaluate_launch(tokens: list[str], hw: HardwareFacts, rules: list[Rule], table: FlagTable,
                    env: dict[str, str], intent: dict[str, Any] | None = None,
                    release: ReleaseTarget | None = None) -> Evaluation:
    release = release or ReleaseTarget(table.sglang_version, "default", table.sglang_version)
    cmd = parse_command(tokens, table)
    env = cmd.form.environment(env)
    hw = apply_platform_override(hw, env)
    config = _config_for(cmd, table)
    args, explicit = _server_args(cmd, config, table)
    family = _family_of(cmd, args)
    resolver = None
    if family.family is not None:
        resolver = Resolver(args, explicit, family.family, hw, env, release=table.sglang_version)
        try:
            resolver.run()
        except (TypeError, ValueError, AttributeError, KeyError, ZeroDivisionError) as exc:
            # A value sglang's own adjust code would choke on too (it is the same arithmetic):
            # report it rather than crash; rule H3D990 turns the event into a finding.
            resolver.events["resolution_error"] = f"{type(exc).__name__}: {exc}"
    key = family.family.key if family.family else None

    def reads(path: str) -> bool:
        return _read_by_applicable(rules, key, hw.platform, cmd.entry, table.sglang_version, path)

    ctx = _context(cmd, config, family, hw, env, resolver, intent or {}, release, reads)
    ctx["sglang_version"] = table.sglang_version
    findings = []
    unverified = _unverified(rules, key, hw.platform, cmd.entry, table.sglang_version, _NEWEST)
    ctx["release.unverified"] = unverified
    ctx["release.unverified_text"] = "; ".join(unverified)
    diffusers = bool(key) and _diffusers_backend(args)
    resolution_failed = "events.resolution_error" in ctx
    for rule, condition in _applicable(rules, key, hw.platform, cmd.entry, table.sglang_version):
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
        why = render(rule.why, ctx) if "{" in rule.why else ""
        findings.append(Finding(rule, render(rule.message, ctx), severity, rule.order_for(key), tuple(unknown), why,
                                _after_first(rule, ctx)))
    findings.sort(key=lambda f: (f.order, ctx.get(f.rule.position, 0) if f.rule.position else 0, f.rule.id))
    effective = dict(resolver.args) if resolver else {}
    return Evaluation(cmd, family, hw, ctx, findings, config, effective)


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


def _changes(before: list[str], after: list[str]) -> tuple[Change, ...]:
    """Every run of tokens that differs between two commands (difflib over tokens)."""
    from difflib import SequenceMatcher

    out = []
    for op, i1, i2, j1, j2 in SequenceMatcher(None, before, after, autojunk=False).get_opcodes():
        if op == "equal":
            continue
        removed, added = tuple(before[i1:i2]), tuple(after[j1:j2])
        # a value changed behind its flag: say which flag (`--attention-backend nope` -> `... fa`)
        flag = before[i1 - 1] if i1 > 0 and before[i1 - 1].startswith("--") and "=" not in before[i1 - 1] else None
        starts_with_flag = (removed or added)[0].startswith("-")
        out.append(Change(removed, added, flag if flag and not starts_with_flag else None))
    return tuple(out)


def check(tokens: list[str], hw: HardwareFacts, rules: list[Rule], table: FlagTable, env: dict[str, str],
          intent: dict[str, Any] | None = None, evaluations: dict | None = None,
          release: ReleaseTarget | None = None) -> CheckResult:
    """The fix loop (`fix_loop`); when it ends in no-fix, the alternatives the unfixable rules
    list, each re-checked (engine/alternatives.py). Offered only: corrected_argv stays None."""
    result = fix_loop(tokens, hw, rules, table, env, intent, evaluations, release)
    if result.fix_status != "no-fix":
        return result
    offered = alternatives(result, tokens, rules, table,
                           lambda argv: fix_loop(argv, hw, rules, table, env, intent, evaluations, release),
                           lambda argv: _evaluate(argv, hw, rules, table, env, intent, evaluations, release))
    return replace(result, alternatives=offered) if offered else result


def fix_loop(tokens: list[str], hw: HardwareFacts, rules: list[Rule], table: FlagTable, env: dict[str, str],
             intent: dict[str, Any] | None = None, evaluations: dict | None = None,
             release: ReleaseTarget | None = None) -> CheckResult:
    """Evaluate; then fix the first failing rule, re-resolve, re-check, until nothing fails.

    A failing rule with no fix (no change of flags makes it pass) is set aside and the others
    are still fixed: the result is then `no-fix`, with no corrected command but the nearest
    launch (every fixable finding fixed) and what to give up.

    `evaluations`, when given, keeps the evaluations of this and earlier checks (a lint run passes
    one dict): a launch that another check already evaluated on the same hardware, environment
    and requests, e.g. the corrected command many launches converge on, is not evaluated again.
    Evaluations are frozen records, so sharing them is safe.
    """
    first = _evaluate(tokens, hw, rules, table, env, intent, evaluations, release)
    current, evaluation = list(tokens), first
    notes: list[str] = []
    gives_up: list[str] = []
    unfixable: list[str] = []
    seen = {tuple(tokens)}
    steps: list[FixStep] = []
    first_ids = {f.rule.id for f in first.findings}
    for _ in range(MAX_FIX_ROUNDS):
        blocking = [f for f in evaluation.findings if _needs_fix(f) and f.rule.id not in unfixable]
        for f in blocking:
            if f.rule.fix is None:
                unfixable.append(f.rule.id)
                gives_up.append(f"{f.rule.id} has no automatic fix: {f.rule.fix_note or 'no flag change fixes this'}")
        blocking = [f for f in blocking if f.rule.fix is not None]
        if not blocking:
            # a finding set aside as unfixable may have gone with a later fix (sage_fp8 SubBlock
            # on an A100: the SubBlock capability fix moves the transformer to fa)
            gone = [u for u in unfixable if not any(f.rule.id == u and _needs_fix(f) for f in evaluation.findings)]
            gives_up = [g for g in gives_up if not any(g.startswith(f"{u} has no automatic fix") for u in gone)]
            return _finish(first, tokens, current, notes, gives_up, [u for u in unfixable if u not in gone], steps)
        target = blocking[0]  # one at a time, in sglang's order, as sglang itself would report them
        fx = FixContext(evaluation.cmd, table, evaluation.context, STRATEGIES)
        edits = [e for op in target.rule.fix for e in fx.edits_for(op)]
        if not edits:  # the fix does not apply to this command (e.g. an unreadable --config file)
            unfixable.append(target.rule.id)
            gives_up.append(f"{target.rule.id} has no automatic fix here: {target.rule.fix_note or 'no flag change fixes this'}")
            continue
        if target.rule.gives_up and target.rule.gives_up not in gives_up:
            gives_up.append(target.rule.gives_up)
        notes += [n for n in fx.notes if n not in notes]
        gives_up += [g for g in fx.gives_up if g not in gives_up]
        before, current = current, apply_edits(evaluation.cmd, edits)
        steps.append(FixStep(target.rule, target.message, _changes(before, current), target.rule.id not in first_ids))
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


def _finish(first: Evaluation, tokens: list[str], current: list[str], notes: list[str], gives_up: list[str],
            unfixable: list[str], steps: list[FixStep]) -> CheckResult:
    changed = current != list(tokens)
    if unfixable:
        return CheckResult(first, None, "no-fix", notes, gives_up, nearest_argv=current if changed else None,
                           unfixable=list(unfixable), fix_steps=steps)
    return CheckResult(first, current if changed else None, "fixed" if changed else "clean", notes, gives_up,
                       fix_steps=steps)


def _needs_fix(f: Finding) -> bool:
    """Errors always; warnings only when they carry a fix and are not 'cannot verify'."""
    if f.cannot_verify:
        return False
    return f.severity == "error" or (f.severity == "warning" and f.rule.fix is not None)
