"""Derivations declare what they read: the run order is computed from reads over produces, a check
runs only the derivations it needs, and the declarations are held to what each one really reads."""

from __future__ import annotations

import contextlib
import re
import shlex
from dataclasses import replace
from pathlib import Path

import pytest

from h3doctor.engine import derivations
from h3doctor.engine.check import evaluate_launch
from h3doctor.engine.derivations.registry import Derivation, DerivationGraphError, derives, needed_for, ordered
from h3doctor.engine.ruleset import load_rules, rules_dir
from h3doctor.engine.strategy_reads import STRATEGY_READS
from h3doctor.errors import RuleFileError
from h3doctor.host.profiles import load_profile
from h3doctor.sglang import releases
from h3doctor.sglang.flagtable import load_flag_table
from h3doctor.sglang.resolve import EVENTS

PACKAGE = Path(derivations.__file__).resolve().parents[2]  # h3doctor/


def _d(name: str, produces: tuple[str, ...], reads: tuple[str, ...] = ()) -> Derivation:
    return Derivation(name, "mod", tuple(f"derived.{p}" for p in produces), lambda r, hw, ctx: {}, reads=reads)


def test_a_read_no_derivation_produces_is_an_error_naming_the_reader_and_the_path():
    with pytest.raises(DerivationGraphError, match=r"mod\.b reads 'derived\.nope', which no derivation produces"):
        ordered([_d("a", ("x",)), _d("b", ("y",), ("derived.x", "derived.nope"))])


def test_a_cycle_is_an_error_naming_both_derivations_and_the_paths():
    with pytest.raises(DerivationGraphError) as info:
        ordered([_d("first", ("z",)), _d("a", ("x",), ("derived.y",)), _d("b", ("y",), ("derived.x", "derived.z"))])
    message = str(info.value)
    assert "cycle" in message
    assert "mod.a reads 'derived.y' from mod.b" in message and "mod.b reads 'derived.x' from mod.a" in message
    with pytest.raises(DerivationGraphError, match=r"mod\.self reads 'derived\.s' from mod\.self"):
        ordered([_d("self", ("s",), ("derived.s",))])


def test_an_event_the_adjust_phase_does_not_record_is_an_error():
    with pytest.raises(DerivationGraphError, match=r"mod\.a reads 'events\.performance_mode_eror'"):
        ordered([_d("a", ("x",), ("events.performance_mode_eror",))], EVENTS)
    assert ordered([_d("a", ("x",), ("events.performance_mode_error",))], EVENTS)


def test_two_producers_of_one_value_is_an_error_naming_both():
    with pytest.raises(DerivationGraphError, match=r"mod\.a and mod\.b both produce 'derived\.x'"):
        ordered([_d("a", ("x",)), _d("b", ("x", "y"))])


def test_the_order_puts_each_derivation_after_what_it_reads_and_keeps_registration_order_otherwise():
    late = _d("late", ("l",))
    reader = _d("reader", ("r",), ("derived.l",))
    free = _d("free", ("f",))
    assert [d.name for d in ordered([reader, free, late])] == ["free", "late", "reader"]
    # only what is needed, and what that reads from, in order
    assert [d.name for d in needed_for(["derived.r"], ordered([reader, free, late]))] == ["late", "reader"]
    assert needed_for(["derived.nothing", "args.tp_size"], [reader, free, late]) == ()


def test_the_shipped_order_runs_every_producer_before_its_readers():
    order = derivations.ORDER
    assert sorted(d.name for d in order) == sorted(d.name for d in derivations.REGISTRY)
    at = {p: i for i, d in enumerate(order) for p in d.paths}
    for i, d in enumerate(order):
        for path in d.reads:
            if path.startswith("derived."):
                assert at[path] < i, (d.name, path)
            if path.startswith("events."):
                assert path.removeprefix("events.") in EVENTS, (d.name, path)


def test_points_at_must_name_declared_values():
    with pytest.raises(ValueError, match="points_at names"):
        derives("a", points_at={"b": ("num_gpus",)})


def test_a_fix_ref_to_an_undeclared_derived_value_fails_to_load_with_file_and_line(tmp_path):
    target = tmp_path / "rules"
    target.mkdir()
    text = (rules_dir() / "H3D109.yaml").read_text(encoding="utf-8")
    old = "value: {ref: derived.fit_num_gpus}"
    assert old in text
    text = text.replace(old, "value: {ref: derived.fit_num_gpu}")
    (target / "H3D109.yaml").write_text(text, encoding="utf-8")
    line = next(i for i, row in enumerate(text.splitlines(), 1) if "derived.fit_num_gpu}" in row)
    with pytest.raises(RuleFileError, match="derived.fit_num_gpu'") as info:
        load_rules(target, use_cache=False)
    assert info.value.location == f"{target / 'H3D109.yaml'}:{line}"


def test_a_rule_naming_a_strategy_reads_what_the_strategy_reads(rules):
    by_id = {r.id: r for r in rules}
    for rule in rules:
        for op in rule.fix or ():
            for path in STRATEGY_READS.get(op.get("strategy"), ()):
                assert path in rule.reads, (rule.id, path)
    assert "derived.memory.fix_ops" in by_id["H3D540"].reads
    from h3doctor.engine.strategies import STRATEGIES

    assert set(STRATEGY_READS) <= set(STRATEGIES)


# the derived values code outside the rules and the derivations reads: the report, suggest and the
# check's own words (computed on every check: derivations.REPORTED), and the fix strategies (a
# rule naming one reads them: STRATEGY_READS). lint's locate.py reads a value only for a rule reading it.
_REPORTED_BY = ("engine/evaluate.py", "engine/judge.py", "output/", "suggest/")
_STRATEGIES = ("engine/strategies.py", "engine/layout.py")


def test_every_derived_value_the_code_reads_is_computed_where_it_reads_it():
    always = {p for d in derivations.plan_for(frozenset()) for p in d.paths}
    by_strategy = {p for paths in STRATEGY_READS.values() for p in paths}
    seen = set()
    for path in PACKAGE.rglob("*.py"):
        where = path.relative_to(PACKAGE).as_posix()
        for name in re.findall(r'"(derived\.[\w.]*\w)"', path.read_text(encoding="utf-8")):
            if where.startswith(_REPORTED_BY):
                assert name in always, (where, name)
                seen.add(name)
            elif where.startswith(_STRATEGIES):
                assert name in by_strategy, (where, name)
                seen.add(name)
    assert {"derived.memory", "derived.residency", "derived.memory.fix_ops", "derived.fa_really_runs"} <= seen


class _Recording(dict):
    """A context that notes every key a derivation looks up."""

    def __init__(self, data, seen: set[str]) -> None:
        super().__init__(data)
        self.seen = seen

    def __getitem__(self, key):
        self.seen.add(key)
        return super().__getitem__(key)

    def get(self, key, default=None):
        self.seen.add(key)
        return super().get(key, default)

    def __contains__(self, key):
        self.seen.add(key)
        return super().__contains__(key)


def _recorded(d: Derivation, reads: dict[str, set[str]]):
    """`d.compute`, noting the context keys and the events it reads under its name."""
    compute = d.compute

    def recording(r, hw, ctx):
        seen = reads.setdefault(d.name, set())
        events = getattr(r, "events", None)
        if events is not None:
            noted: set[str] = set()
            r.events = _Recording(events, noted)
        try:
            return compute(r, hw, _Recording(ctx, seen))
        finally:
            if events is not None:
                r.events = events
                seen.update(f"events.{e}" for e in noted)
    return recording


def _examples(rules):
    for rule in rules:
        for example in rule.examples:
            if "config" in example or "checkpoint" in example:
                continue
            yield rule.id, example


def _evaluate(example, rules):
    release = releases.target(example.get("sglang_version"), None)
    hw = replace(load_profile(example["profile"]), **example.get("hw", {}))
    return evaluate_launch(shlex.split(example["argv"]), hw, rules, load_flag_table(release.table_version),
                           example.get("env", {}), example.get("intent", {}), release, example.get("deployment"))


@contextlib.contextmanager
def _recording():
    """Inside: every derivation runs on every check (the plan is the whole order) and notes what it
    reads. On leaving: each read must be declared."""
    reads: dict[str, set[str]] = {}
    originals = {d.name: d.compute for d in derivations.ORDER}
    plan_for = derivations.plan_for
    for d in derivations.ORDER:
        object.__setattr__(d, "compute", _recorded(d, reads))
    derivations.plan_for = lambda paths: tuple(derivations.ORDER)
    try:
        yield reads
    finally:
        derivations.plan_for = plan_for
        for d in derivations.ORDER:
            object.__setattr__(d, "compute", originals[d.name])
    declared = {d.name: set(d.reads) for d in derivations.ORDER}
    undeclared = {name: sorted(seen - declared[name]) for name, seen in reads.items() if seen - declared[name]}
    assert reads and not undeclared, f"reads not declared in @derives(reads=...): {undeclared}"


def test_every_derivation_reads_only_what_it_declares_and_the_planned_run_equals_the_whole_one(rules):
    """Every rule example, run twice: once as a check runs it (only the derivations its rules and
    the reports need) and once with every derivation, each noting what it looks up in the context
    and in the resolved launch's events. Each read is declared (so the order and the plan cannot
    drift from the code), each declared read is made, and the findings and every value a rule or
    report reads are the same."""
    planned = [(rule_id, example, _evaluate(example, rules)) for rule_id, example in _examples(rules)]
    with _recording() as reads:
        wholes = [_evaluate(example, rules) for _rule_id, example, _ev in planned]
    for (rule_id, example, ev), whole in zip(planned, wholes):
        assert [(f.rule.id, f.message, f.severity) for f in ev.findings] == \
            [(f.rule.id, f.message, f.severity) for f in whole.findings], (rule_id, example["argv"])
        family = ev.family.family.key if ev.family.family else None
        wanted = rules.reads(family, ev.hardware.platform, ev.cmd.entry, ev.context["release.table"])
        for path in sorted(wanted | set(derivations.REPORTED)):
            if path.startswith("derived.") and path != "derived.derivation_errors":
                # as text: some values hold records with no equality of their own (quality_high's _SetRepr)
                assert repr(ev.context.get(path)) == repr(whole.context.get(path)), (rule_id, path)
    declared = {d.name: set(d.reads) for d in derivations.ORDER}
    unused = {name: sorted(declared[name] - seen) for name, seen in reads.items() if declared[name] - seen}
    assert not unused, f"declared reads never made on any rule example: {unused}"


@pytest.mark.parametrize("version", ["0.5.23", "0.5.17"])
def test_every_derivation_reads_only_what_it_declares_on_the_conformance_cases(version):
    """A sample of the recorded conformance cases (every 6th), each a whole check with its fix loop
    and alternatives, every derivation noting what it reads (the fixture fails on an undeclared read)."""
    import sys

    sys.path.insert(0, str(PACKAGE.parent / "tools" / "conformance"))
    import compare

    doctor = compare.Doctor(version)
    _meta, cases = compare.read_jsonl(compare.goldens_path(version))
    with _recording() as reads:
        for case in cases[::6]:
            assert doctor.run(case).fix_status != "crash", case["argv"]
    assert len(reads) > 40


def test_a_check_runs_only_the_derivations_its_applicable_rules_and_the_reports_need(rules, monkeypatch):
    """A `serve` launch runs none of `sglang generate`'s sampling derivations (only generate's rules
    read them); a generate launch does; what the reports read runs for either. A launch checked
    with every derivation has values the planned check never computed, and the same findings."""
    serve = {d.name for d in derivations.plan_for(rules.reads("h3", "cuda", "serve", "0.5.23"))}
    generate = {d.name for d in derivations.plan_for(rules.reads("h3", "cuda", "generate", "0.5.23"))}
    reported = {d.name for d in derivations.plan_for(frozenset())}
    assert "sampling_request" in generate and "sampling_request" not in serve
    assert {"memory_budget", "residency", "transformer_backend"} <= reported <= serve & generate
    example = {"argv": "sglang serve MiniMaxAI/MiniMax-H3 --num-gpus 4 --ring-degree 2", "profile": "4xH200"}
    planned = _evaluate(example, rules)
    monkeypatch.setattr(derivations, "plan_for", lambda paths: tuple(derivations.ORDER))
    whole = _evaluate(example, rules)
    assert "derived.memory" in planned.context and planned.context["derived.derivation_errors"] == []
    assert set(planned.context) < set(whole.context)
    assert [f.rule.id for f in planned.findings] == [f.rule.id for f in whole.findings]


def test_the_oldest_release_a_launch_needs_is_worked_out_where_a_rule_reads_it(rules):
    """H3D003 (a release without MiniMax-H3) names the release the launch needs: computed because
    the rule reads it (Rule.reads), not found by searching the rules' text; not for a release
    whose rules do not read it."""
    old = _evaluate({"argv": "sglang serve MiniMaxAI/MiniMax-H3 --num-gpus 4", "profile": "4xH200",
                     "sglang_version": "0.5.16"}, rules)
    (finding,) = [f for f in old.findings if f.rule.id == "H3D003"]
    assert old.context["release.needs_at_least"] and "None" not in finding.message
    assert f"needs at least {old.context['release.needs_at_least']}" in finding.message
    new = _evaluate({"argv": "sglang serve MiniMaxAI/MiniMax-H3 --num-gpus 4", "profile": "4xH200"}, rules)
    assert "release.needs_at_least" not in new.context


def test_lint_points_a_finding_on_a_derived_value_at_the_flags_its_derivation_declares(rules, table):
    """lint's locations of findings that read only derived values come from `points_at` (the hand
    map it replaced, entry for entry), e.g. H3D910's workers-per-node at --num-gpus and --nnodes."""
    from h3doctor.engine.derivations.registry import flags_of
    from h3doctor.engine.locate import Locator

    assert flags_of(derivations.ORDER) == {
        "derived.local_gpus_needed": ("num_gpus", "nnodes"),
        "derived.visible_gpus": ("num_gpus",),
        "derived.dp_tp_cfg": ("tp_size", "dp_size"),
        "derived.ring_x_ulysses": ("ulysses_degree", "ring_degree"),
        "derived.config_removed_message": ("config.removed_keys",),
        "derived.string_false_keys": ("derived.config_string_false_keys",),
    }
    h3d910 = next(r for r in rules if r.id == "H3D910")
    assert Locator(table).dests(h3d910)[1][:2] == ("num_gpus", "nnodes")
