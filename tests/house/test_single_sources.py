"""Lists that must agree, each with one source in the code: the rule schema's enums are tested
equal to the code's dicts (strategies, operators, severities), the docs name every strategy, and
the memory-verdict rules are a property of the rules, not a list of IDs."""

from __future__ import annotations

import json
import re
from pathlib import Path

from h3doctor.engine.conditions import OPERATORS, evaluate
from h3doctor.engine.ruleset import GPU_MEMORY_VERDICTS, SEVERITY_RANK
from h3doctor.engine.strategies import STRATEGIES
from h3doctor.paths import package_dir
from repo_paths import REPO

DOCS = REPO / "docs"


def _schema() -> dict:
    return json.loads(package_dir("h3doctor.schema").joinpath("rule.schema.json").read_text(encoding="utf-8"))


def _enums(node, path=()):
    """Every enum in the schema, by its JSON path."""
    if isinstance(node, dict):
        if "enum" in node:
            yield "/".join(map(str, path)), node["enum"]
        for key, value in node.items():
            yield from _enums(value, (*path, key))
    elif isinstance(node, list):
        for i, value in enumerate(node):
            yield from _enums(value, (*path, i))


def _enum_ending(suffix: str) -> list[list]:
    found = [values for path, values in _enums(_schema()) if path.endswith(suffix)]
    assert found, suffix
    return found


def test_the_schema_strategy_enum_is_the_strategy_registry():
    for values in _enum_ending("properties/strategy"):
        assert sorted(values) == sorted(STRATEGIES)


def test_the_schema_operator_enum_is_the_condition_language():
    for values in _enum_ending("properties/op"):
        assert values == list(OPERATORS)


def test_every_operator_evaluates():
    for op in OPERATORS:
        assert evaluate({"path": "args.x", "op": op, "value": "ab"}, {"args.x": "abc"}) in (True, False), op


def test_the_schema_severities_are_the_ranked_severities():
    found = _enum_ending("properties/severity")
    assert len(found) == 2  # the rule's own and a per-release entry's
    for values in found:
        assert sorted(values) == sorted(SEVERITY_RANK)
    assert sorted(SEVERITY_RANK, key=SEVERITY_RANK.get) == ["info", "warning", "error"]


def test_the_rule_authoring_guide_names_every_strategy():
    text = (DOCS / "rule-authoring.md").read_text(encoding="utf-8")
    line = next(row for row in text.splitlines() if row.startswith("`strategy: "))
    named = re.match(r"`strategy: ([^`]+)`", line).group(1).split(" | ")
    assert sorted(named) == sorted(STRATEGIES)


def test_the_memory_verdict_rules_are_the_rules_reading_a_gpu_memory_verdict(rules):
    judging = {r.id for r in rules if r.judges_gpu_memory}
    # load, warmup (fatal, and survived on one GPU), the measured workspace; H3D543, which says
    # the load verdict cannot be reached, and H3D544, an older release's bounds that fit
    assert judging == {"H3D540", "H3D640", "H3D642", "H3D641", "H3D543", "H3D544"}
    for rule in rules:
        reads = json.dumps(rule.when)
        assert rule.judges_gpu_memory == any(v in reads for v in GPU_MEMORY_VERDICTS), rule.id


def _field_rows(text: str) -> dict[str, str]:
    """The rule-authoring guide's field table: field name -> its meaning."""
    return {m.group(1): m.group(2) for m in re.finditer(r"^\| `([\w.<>]+)` \| (.*) \|$", text, re.MULTILINE)}


def test_the_rule_authoring_guide_describes_every_required_rule_field_and_no_optional_one_as_required():
    schema = json.loads((package_dir("h3doctor.schema") / "rule.schema.json").read_text(encoding="utf-8"))
    rows = _field_rows((DOCS / "rule-authoring.md").read_text(encoding="utf-8"))
    described = {f: [m for r, m in rows.items() if r == f or r.startswith(f + ".")] for f in schema["required"]}
    assert [f for f, meanings in described.items() if not meanings] == []  # `sglang`: its `sglang.*` rows
    assert [f for f, meanings in described.items() if f in rows and rows[f].startswith("optional")] == []
    assert not [f for f, meaning in rows.items() if meaning.startswith("required") and f not in schema["required"]]


def test_the_rule_authoring_guide_names_every_event_the_adjust_phase_records():
    from h3doctor.sglang.resolve import EVENTS

    row = _field_rows((DOCS / "rule-authoring.md").read_text(encoding="utf-8"))["events.<name>"]
    assert {name for name in EVENTS if not re.search(rf"\b{name}\b", row)} == set()


def test_the_architecture_page_names_every_derivation_module():
    text = (DOCS / "architecture.md").read_text(encoding="utf-8")
    listed = re.search(r"The modules of `engine/derivations/` are\s+named for what they compute \((.*?)\); importing",
                       text, re.DOTALL)
    assert listed, "the derivation modules' sentence moved: update this test"
    modules = {p.stem for p in (package_dir("h3doctor.engine.derivations")).glob("*.py")} - {"__init__", "registry", "common"}
    assert {m for m in modules if f"`{m}`" not in listed.group(1)} == set()


# H3D990's message is the exception h3doctor's resolver raises on a value sglang's adjust phase would
# fail on: explain never matches it (it is not sglang's wording), but the words are the failure's
NOT_LABELLED_OWN = {"H3D990"}


def test_a_message_explain_knows_as_h3doctors_own_is_never_labelled_sglang_says(rules):
    """explain/wordings.json's `own` (rules whose message sglang never prints) and the rule files'
    `message_by: h3doctor` (check's "h3doctor says", not "sglang says") agree: issue 31's "text
    h3doctor wrote is labelled 'sglang says'" (H3D540/H3D640's predicted torch.OutOfMemoryError,
    H3D641's measured-run estimate, ...). Fails when such a rule loses its message_by."""
    own = set(json.loads(package_dir("h3doctor.explain").joinpath("wordings.json").read_text(encoding="utf-8"))["own"])
    labelled_sglang = {r.id for r in rules if r.message_by != "h3doctor"}
    assert own & labelled_sglang == NOT_LABELLED_OWN
