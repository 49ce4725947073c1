"""Rule files: schema-validated on load, located errors, and meta-checks over the registry."""

from __future__ import annotations

import re
import shutil
from pathlib import Path

import pytest

from h3doctor.engine.conditions import placeholders
from h3doctor.engine.ruleset import load_rules, rules_dir
from h3doctor.errors import ExitCode, RuleFileError

CONTEXT_ROOTS = ("args", "hw", "env", "derived", "parse", "events", "intent", "config", "release")


def test_ids_and_names_are_unique_and_match_file_names(rules):
    assert len({r.id for r in rules}) == len(rules)
    assert len({r.name for r in rules}) == len(rules)
    for r in rules:
        assert Path(r.path).stem == r.id and re.fullmatch(r"H3D\d{3}", r.id)


def test_placeholders_use_known_context_roots(rules):
    for r in rules:
        for p in placeholders(r.message):
            assert p.split(".")[0] in CONTEXT_ROOTS, (r.id, p)


def test_errors_have_a_fix_or_say_why_not(rules):
    for r in rules:
        if r.severity == "error" and r.fix is None:
            assert r.fix_note, r.id


def _copy_rules(tmp_path: Path) -> Path:
    target = tmp_path / "rules"
    shutil.copytree(rules_dir(), target)
    return target


def test_malformed_rule_names_file_and_line(tmp_path):
    target = _copy_rules(tmp_path)
    path = target / "H3D305.yaml"
    text = path.read_text().replace("severity: error", "severity: fatal")
    path.write_text(text)
    line = text.splitlines().index("severity: fatal") + 1
    with pytest.raises(RuleFileError) as info:
        load_rules(target, use_cache=False)
    assert info.value.location == f"{path}:{line}"
    assert info.value.exit_code == ExitCode.USAGE


def test_broken_yaml_is_located(tmp_path):
    target = _copy_rules(tmp_path)
    (target / "H3D305.yaml").write_text("id: H3D305\nwhen: [unclosed\n")
    with pytest.raises(RuleFileError) as info:
        load_rules(target, use_cache=False)
    assert info.value.location.startswith(str(target / "H3D305.yaml") + ":")


def test_an_alternative_reading_an_unknown_context_is_located(tmp_path):
    target = _copy_rules(tmp_path)
    path = target / "H3D604.yaml"
    text = path.read_text().replace("when: {path: derived.fa_really_runs, op: truthy}", "when: {path: nope.fa, op: truthy}", 1)
    path.write_text(text)
    line = text.splitlines().index("    when: {path: nope.fa, op: truthy}") + 1
    with pytest.raises(RuleFileError, match="alternatives/0/when") as info:
        load_rules(target, use_cache=False)
    assert info.value.location == f"{path}:{line}"


def test_an_alternative_must_say_what_it_gives_up(tmp_path):
    target = _copy_rules(tmp_path)
    path = target / "H3D405.yaml"
    text = path.read_text()
    first = text.index("  - gives_up: serves the FL2VA")
    path.write_text(text[:first] + "  -" + text[text.index("\n    fix:", first) + len("\n   "):])
    with pytest.raises(RuleFileError, match="'gives_up' is a required property"):
        load_rules(target, use_cache=False)


def test_python_in_a_rule_is_rejected(tmp_path):
    target = _copy_rules(tmp_path)
    path = target / "H3D305.yaml"
    path.write_text(path.read_text().replace("when:\n", "exec: __import__('os').system('true')\nwhen:\n", 1))
    with pytest.raises(RuleFileError, match="unknown key"):
        load_rules(target, use_cache=False)


def test_edited_rule_invalidates_the_cache(tmp_path, monkeypatch):
    monkeypatch.setenv("H3DOCTOR_CACHE_DIR", str(tmp_path / "cache"))
    target = _copy_rules(tmp_path)
    assert load_rules(target)  # fills the cache
    (target / "H3D305.yaml").write_text("id: nope\n")
    with pytest.raises(RuleFileError):
        load_rules(target)


def test_cli_exit_code_for_a_malformed_rule_dir(tmp_path, cli):
    target = _copy_rules(tmp_path)
    (target / "H3D305.yaml").write_text("id: H3D305\n")
    code, out, err = cli("check", "--rules-dir", str(target), "--profile", "4xH200", "--", "sglang", "serve", "MiniMaxAI/MiniMax-H3")
    assert code == 2 and "H3D305.yaml" in err and "Traceback" not in err


def test_a_release_without_verified_rules_is_judged_by_its_parser_and_says_what_it_cannot_verify(cli):
    code, out, _ = cli("check", "--sglang-version", "0.5.20", "--profile", "4xH200", "--format", "json", "--",
                       "sglang", "serve", "MiniMaxAI/MiniMax-H3", "--num-gpus", "4", "--attention_backend", "fa")
    report = out  # the cli fixture parses --format json
    assert code == 1 and report["sglang_version"] == "0.5.20" and report["sglang_version_source"] == "option"
    rules = {f["rule"]: f for f in report["findings"]}
    assert rules["H3D020"]["severity"] == "error"  # the 0.5.20 parser does not know --attention_backend
    assert rules["H3D921"]["severity"] == "warning" and rules["H3D921"]["message"].startswith("cannot verify for sglang 0.5.20")


def test_what_a_rule_set_reads_is_the_reads_of_its_applicable_rules_alike_from_the_cache(tmp_path, monkeypatch):
    """A check computes what the applicable rules read (`RuleSet.reads`: the union of each rule's
    `Rule.reads`, from its data, never a text search): the same from the cache entry as from the
    validated files, for every family, platform, entry and release; `release.needs_at_least`
    (worked out only for a rule that reads it) is read where H3D003 applies and nowhere else."""
    from h3doctor.engine import ruleset

    monkeypatch.setenv("H3DOCTOR_CACHE_DIR", str(tmp_path))
    built = load_rules()  # a miss: validated, the entry written
    cached = load_rules(examples=False)  # read from the entry, as a check reads it
    combos = {(family, platform, entry, version) for r in built for family in r.families if family != "any"
              for platform in (r.platforms or ("cuda",)) for entry in (r.entries or ("serve",))
              for version in ("0.5.23", "0.5.17", "0.5.16")}  # known releases: a rule judges one with its line there
    for combo in combos:
        expected = set().union(*(r.reads for r, _ in built.applicable(*combo)))
        assert cached.reads(*combo) == built.reads(*combo) == expected, combo
        needs = "release.needs_at_least" in cached.reads(*combo)
        assert needs == any(r.id == "H3D003" for r, _ in cached.applicable(*combo)), combo
    assert any("release.needs_at_least" in cached.reads(*c) for c in combos)
    h3d003 = next(r for r in cached if r.id == "H3D003")
    assert {"release.needs_at_least", "release.needs_why", "release.version"} <= h3d003.reads
    assert ruleset.RuleSet([]).reads("h3", "cuda", "serve", "0.5.23") == frozenset()


def test_rules_read_for_a_check_are_the_rules_but_their_examples(tmp_path, monkeypatch):
    """A check loads the rules without their examples (never read by it): from the cache entry,
    every rule equals the full one but for `examples` (empty) and `raw` (without them); a caller
    that reads examples gets them all back from the same entry."""
    from h3doctor.record import replace

    monkeypatch.setenv("H3DOCTOR_CACHE_DIR", str(tmp_path))
    built = load_rules(use_cache=False)
    load_rules()  # writes the entry
    for _ in range(2):  # through the content hash, then as the entry is read again
        lean, full = load_rules(examples=False), load_rules()
        assert list(full) == list(built) and all(r.examples for r in full)
        assert [r.raw for r in full] == [r.raw for r in built]
        assert all(not r.examples and "examples" not in r.raw for r in lean)
        assert [replace(r, examples=b.examples, raw=b.raw) for r, b in zip(lean, built)] == list(built)


@pytest.mark.parametrize("release, rule_id", [
    ("0.5.23", "H3D305"),  # the newest release: RuleSet.unverified says nothing there, so it was silent
    ("0.5.18", "H3D305"),  # a release in the middle of its range
])
def test_a_rule_without_its_sglang_line_in_a_release_of_its_range_is_a_load_error(tmp_path, monkeypatch, release,
                                                                                 rule_id):
    import json

    from h3doctor.engine import ruleset
    from h3doctor.sglang import release_files

    files = []
    for version in release_files.known():
        if not release_files.has(version, "where"):
            continue
        data = json.loads(release_files.shipped_text(version, "where"))
        if version == release:
            data["where"].pop(rule_id, None)
            data["reviewed"].pop(rule_id, None)
        files.append(tmp_path / f"where-{version}.json")
        files[-1].write_text(json.dumps(data), encoding="utf-8")
    monkeypatch.setattr(ruleset, "where_files", lambda: files)
    with pytest.raises(RuleFileError) as err:
        load_rules(use_cache=False)
    assert err.value.location.endswith(f"{rule_id}.yaml:1")
    assert rule_id in err.value.message and f"sglang {release}" in err.value.message
    assert err.value.exit_code == ExitCode.USAGE


def test_every_shipped_rule_has_its_sglang_line_in_every_release_of_its_range(rules):
    from h3doctor.engine.ruleset import version_in_range
    from h3doctor.sglang import release_files

    lined = [v for v in release_files.known() if release_files.has(v, "where")]
    silent = [(r.id, v) for r in rules for v in lined if version_in_range(v, r.versions) and v not in r.where_by_release]
    assert silent == []


def test_a_strategy_reading_another_value_is_not_served_from_the_rules_cache(tmp_path, monkeypatch):
    """A rule's reads hold what its fix strategy reads (strategy_reads.py): a cache written before
    a strategy read another value would leave that value out of the check. Fails when the cache's
    key does not hold the strategies' reads."""
    from h3doctor.engine import ruleset

    monkeypatch.setenv("H3DOCTOR_CACHE_DIR", str(tmp_path))
    before = {r.id: r.reads for r in load_rules(None, examples=False)}
    assert any("args.tp_size" in reads for reads in before.values())
    more = {**ruleset.STRATEGY_READS, "parallel_layout": (*ruleset.STRATEGY_READS["parallel_layout"], "args.port")}
    monkeypatch.setattr(ruleset, "STRATEGY_READS", more)
    after = {r.id: r.reads for r in load_rules(None, examples=False)}
    assert any("args.port" in after[rid] and "args.port" not in reads for rid, reads in before.items())
