"""The derivation registry: every `derived.*` value is declared by the function that computes it,
rule loading refuses a name no derivation declares, and every declared value is read."""

from __future__ import annotations

import json
import re
import shlex
from collections import Counter
from dataclasses import replace
from pathlib import Path

import pytest

from h3doctor.engine import derivations
from h3doctor.engine.check import evaluate_launch
from h3doctor.engine.derivations import declared_paths, registry
from h3doctor.engine.ruleset import load_rules, rules_dir
from h3doctor.errors import ExitCode, RuleFileError
from h3doctor.host.profiles import load_profile
from h3doctor.sglang import releases
from h3doctor.sglang.flagtable import load_flag_table
from h3doctor.sglang.resolve import EVENTS

PACKAGE = Path(derivations.__file__).resolve().parents[2]  # h3doctor/


def _one_rule_dir(tmp_path: Path, rule_id: str, old: str, new: str) -> tuple[Path, int]:
    """A rules directory holding one rule file with `old` replaced by `new`; the edited line's number."""
    target = tmp_path / "rules"
    target.mkdir()
    text = (rules_dir() / f"{rule_id}.yaml").read_text(encoding="utf-8")
    assert old in text
    text = text.replace(old, new, 1)
    (target / f"{rule_id}.yaml").write_text(text, encoding="utf-8")
    line = next(i for i, row in enumerate(text.splitlines(), 1) if new.splitlines()[0] in row)
    return target / f"{rule_id}.yaml", line


def test_a_condition_reading_an_undeclared_derived_value_fails_to_load_with_file_and_line(tmp_path):
    path, line = _one_rule_dir(tmp_path, "H3D110", "path: derived.warmup_error\n", "path: derived.warmup_eror\n")
    with pytest.raises(RuleFileError, match="derived.warmup_eror") as info:
        load_rules(path.parent, use_cache=False)
    assert info.value.location == f"{path}:{line}"
    assert info.value.exit_code == ExitCode.USAGE


def test_a_message_naming_an_undeclared_derived_value_fails_to_load(tmp_path):
    path, line = _one_rule_dir(tmp_path, "H3D110", 'message: "{derived.warmup_error}"', 'message: "{derived.warmup_errors}"')
    with pytest.raises(RuleFileError, match="derived.warmup_errors") as info:
        load_rules(path.parent, use_cache=False)
    assert info.value.location == f"{path}:{line}"


def test_a_fix_condition_reading_an_undeclared_derived_value_fails_to_load(tmp_path):
    old = "when: {path: derived.warmup_error_kind, op: eq, value: frames}"
    path, line = _one_rule_dir(tmp_path, "H3D110", old, old.replace("error_kind", "error_kinds"))
    with pytest.raises(RuleFileError, match="derived.warmup_error_kinds") as info:
        load_rules(path.parent, use_cache=False)
    assert info.value.location == f"{path}:{line}"


def test_an_undeclared_event_fails_to_load(tmp_path):
    text = (rules_dir() / "H3D990.yaml").read_text(encoding="utf-8")
    event = re.search(r"events\.(\w+)", text).group(1)
    path, _line = _one_rule_dir(tmp_path, "H3D990", f"events.{event}", f"events.{event}_typo")
    with pytest.raises(RuleFileError, match=f"events.{event}_typo") as info:
        load_rules(path.parent, use_cache=False)
    assert info.value.location.startswith(f"{path}:")


def test_the_cli_refuses_a_rule_reading_an_undeclared_value_with_exit_2(tmp_path, cli):
    path, line = _one_rule_dir(tmp_path, "H3D110", "path: derived.warmup_error\n", "path: derived.warmup_eror\n")
    code, _out, err = cli("check", "--rules-dir", str(path.parent), "--profile", "4xH200", "--",
                          "sglang", "serve", "MiniMaxAI/MiniMax-H3")
    assert code == 2 and f"H3D110.yaml:{line}" in err and "derived.warmup_eror" in err and "Traceback" not in err


def test_every_rule_in_the_tree_reads_only_declared_values(rules):
    declared = declared_paths() | {f"events.{e}" for e in EVENTS}
    for rule in rules:
        for path in re.findall(r"\b(?:derived|events)\.[\w.]*\w", json.dumps(rule.raw)):
            assert path in declared, (rule.id, path)


def test_no_two_derivations_declare_the_same_value():
    counts = Counter(p for d in registry.REGISTRY for p in d.paths)
    assert [p for p, n in counts.items() if n > 1] == []
    assert len({d.name for d in registry.REGISTRY}) == len(registry.REGISTRY)


def test_every_declared_value_is_read_by_a_rule_an_output_or_a_later_derivation(rules):
    rule_text = "\n".join(json.dumps(r.raw) for r in rules)
    sources = {p: p.read_text(encoding="utf-8") for p in PACKAGE.rglob("*.py")}
    outside = "\n".join(t for p, t in sources.items() if "derivations" not in p.parts)
    inside = "\n".join(t for p, t in sources.items() if "derivations" in p.parts)
    unread = []
    for path in sorted(declared_paths()):
        if re.search(re.escape(path) + r"(?!\w)", rule_text) or f'"{path}"' in outside:
            continue
        if re.search(r'ctx(?:\.get\(|\[)"' + re.escape(path) + '"', inside):
            continue
        unread.append(path)
    assert unread == []


def _example_contexts(rules):
    for rule in rules:
        for example in rule.examples:
            if "config" in example or "checkpoint" in example:
                continue
            release = releases.target(example.get("sglang_version"), None)
            hw = replace(load_profile(example["profile"]), **example.get("hw", {}))
            yield evaluate_launch(shlex.split(example["argv"]), hw, rules, load_flag_table(release.table_version),
                                  example.get("env", {}), example.get("intent", {}), release,
                                  example.get("deployment")).context


def test_derivations_return_only_what_they_declare(rules):
    declared = declared_paths()
    produced: set[str] = set()
    for ctx in _example_contexts(rules):
        produced |= {k for k in ctx if k.startswith("derived.")}
    assert produced and produced <= declared, sorted(produced - declared)


def test_a_failing_derivation_is_returned_not_kept_and_the_others_still_run(monkeypatch):
    def broken(r, hw, ctx):
        raise TypeError("object of type 'int' has no len()")

    def later(r, hw, ctx):
        return {"derived.later": ctx.get("derived.broken", "absent")}

    monkeypatch.setattr(registry, "REGISTRY", [
        registry.Derivation("broken", "test", ("derived.broken",), broken),
        registry.Derivation("kept", "test", ("derived.kept",), broken, {"derived.kept": []}),
        registry.Derivation("later", "test", ("derived.later",), later),
    ])
    first = registry.run(None, None, {})
    assert first == {"derived.kept": [], "derived.later": "absent", "derived.derivation_errors": [
        "broken: TypeError: object of type 'int' has no len()", "kept: TypeError: object of type 'int' has no len()"]}
    first["derived.kept"].append("x")  # a fallback is a fresh value per run
    second = registry.run(None, None, {})
    assert second["derived.kept"] == [] and len(second["derived.derivation_errors"]) == 2


def test_a_fallback_must_name_declared_values():
    with pytest.raises(ValueError, match="not declared"):
        registry.derives("a", fallback={"b": None})


def test_every_event_the_adjust_phase_records_is_declared():
    recorded = set()
    for path in [*(PACKAGE / "sglang").glob("*.py"), PACKAGE / "engine" / "evaluate.py"]:
        recorded |= set(re.findall(r'\.events\["(\w+)"\]\s*=', path.read_text(encoding="utf-8")))
    assert recorded and recorded == set(EVENTS)


# a read of one event in code: `events.get("x")`, `events["x"]` (not followed by `=`), `"x" in
# ….events`, or the context's `"events.x"`; rules' `events.*` paths are checked at load (ruleset.known_paths)
_EVENT_READ = re.compile(r'events(?:\.get\(|\[)"(\w+)"[)\]](?!\s*=[^=])|"events\.(\w+)"'
                         r'|"(\w+)"\s+(?:not\s+)?in\s+[\w.]*\bevents\b')


def test_every_event_the_code_reads_is_one_the_adjust_phase_records():
    """An event name is a string: a misspelt read (`events.get("performance_mode_eror")`) is None
    on every launch, a silent "nothing happened". Each read in the package names a declared event."""
    reads = {}
    for path in PACKAGE.rglob("*.py"):
        for m in _EVENT_READ.finditer(path.read_text(encoding="utf-8")):
            reads.setdefault(next(g for g in m.groups() if g), []).append(path.relative_to(PACKAGE).as_posix())
    assert {"component_backend_map_error", "performance_mode_error", "attention_backend_config_error",
            "vdn_auto_mxfp8", "resolution_error"} <= set(reads)  # the pattern still sees the derivations' reads
    unknown = {name: where for name, where in reads.items() if name not in EVENTS}
    assert not unknown, f"events read but never recorded (sglang/resolve.py EVENTS): {unknown}"


def test_strict_ports_with_a_huge_dp_size_is_told_by_arithmetic_not_by_listing_every_port():
    """--dp-size can be any integer: the scheduler ports are never listed one by one (a blow-up
    for hostile input), and the first duplicate is still sglang's: the HTTP port inside the range."""
    from h3doctor.engine.derivations.validation import _strict_ports_duplicate

    a = {"strict_ports": True, "port": 30000, "scheduler_port": 5555, "dp_size": 10**15, "master_port": None}
    assert _strict_ports_duplicate(a) == "Scheduler[24445] port 30000 duplicates HTTP port and --strict-ports is enabled."
    assert _strict_ports_duplicate({**a, "dp_size": 24445}) is None
    assert _strict_ports_duplicate({**a, "dp_size": 4, "master_port": 5557}) == \
        "Master port 5557 duplicates Scheduler[2] port and --strict-ports is enabled."
    assert _strict_ports_duplicate({**a, "dp_size": 4, "master_port": 30000}) == \
        "Master port 30000 duplicates HTTP port and --strict-ports is enabled."
    assert _strict_ports_duplicate({**a, "dp_size": 10**15}, per_replica=False) is None


def test_the_scheduler_ports_run_out_only_past_what_a_host_can_hand_out():
    from h3doctor.engine.derivations.ports import _scheduler_ports_start

    a = {"strict_ports": False, "scheduler_port": 5555, "dp_size": 60536}
    assert _scheduler_ports_start(a) is None
    assert _scheduler_ports_start({**a, "dp_size": 60537}) == "5555-5655 or 65536"
    assert _scheduler_ports_start({**a, "dp_size": 10**18, "scheduler_port": 4000}) == "65536"
    assert _scheduler_ports_start({**a, "dp_size": 10**18, "scheduler_port": 7000}) == "7000"
    assert _scheduler_ports_start({**a, "dp_size": 10**18, "strict_ports": True}) is None


def test_negative_parallel_degrees_fail_in_the_process_group_layout():
    from h3doctor.engine.derivations.process_groups import _process_group_error

    base = dict(num_gpus=4, nnodes=1, tp_size=1, sp_degree=4, cfg_parallel_degree=1, dp_size=1, ulysses_degree=4, ring_degree=1)
    assert _process_group_error(base) is None
    assert _process_group_error({**base, "tp_size": -4, "sp_degree": -1, "ulysses_degree": -1}) == \
        "idx 1 with shape [-4, -1, 1, 1] mismatch the return idx [-3, 0, 0, 0]"
    assert _process_group_error({**base, "cfg_parallel_degree": -10**9}) is None  # too many ranks to lay out
    assert _process_group_error({**base, "nnodes": 2, "sp_degree": -1, "ulysses_degree": -1}) is None
