"""The coverage table accounts for every catalog entry and cannot drift from the rule files."""

from __future__ import annotations

from pathlib import Path

from h3doctor.engine.coverage import (
    catalog,
    launch_stage_share,
    markdown,
    not_encoded,
    table,
)
from repo_paths import REPO

DOC = REPO / "docs" / "coverage.md"


def test_catalog_has_126_entries():
    assert len(catalog()) == 126


def test_every_entry_has_a_rule_or_a_reason(rules):
    missing = [e.id for e, ids, reason in table(rules) if not ids and not reason.strip()]
    assert missing == []


def test_reasons_only_for_entries_without_rules(rules):
    encoded = {c for r in rules for c in r.catalog}
    assert sorted(set(not_encoded()) & encoded) == []


def test_rules_cite_only_catalog_ids(rules):
    known = {e.id for e in catalog()}
    cited = {c for r in rules for c in r.catalog if c[0].isalpha() and not c.startswith(("mem-", "gen-", "host-"))}
    assert sorted(cited - known) == []


def test_generate_references_name_sections_of_the_generate_page(rules):
    # the `sglang generate` sampling rules cite docs/generate.md's sections ("gen-3")
    page = (DOC.parent / "generate.md").read_text(encoding="utf-8")
    cited = {c for r in rules for c in r.catalog if c.startswith("gen-")}
    assert cited, "the generate rules cite their sections"
    assert sorted(c for c in cited if f"({c})" not in page) == []


def test_memory_references_name_sections_of_the_memory_model(rules):
    # the memory rules cite docs/memory.md's sections ("mem-4.2"), not the constraint catalog
    page = (DOC.parent / "memory.md").read_text(encoding="utf-8")
    cited = {c for r in rules for c in r.catalog if c.startswith("mem-")}
    assert cited, "the memory rules cite their model sections"
    assert sorted(c for c in cited if f"({c})" not in page) == []


def test_host_references_name_sections_of_the_host_facts_page(rules):
    # the host-fact rules cite docs/host-facts.md's sections ("host-1"): the facts are the host's, not sglang's
    page = (DOC.parent / "host-facts.md").read_text(encoding="utf-8")
    cited = {c for r in rules for c in r.catalog if c.startswith("host-")}
    assert cited, "the host-fact rules cite their sections"
    assert sorted(c for c in cited if f"({c})" not in page) == []


def test_committed_table_is_up_to_date(rules):
    assert DOC.read_text(encoding="utf-8") == markdown(rules), "run: h3doctor coverage --write docs/coverage.md"


def test_at_least_95_percent_of_launch_stage_entries_have_rules(rules):  # issue: stages D-M
    assert launch_stage_share(table(rules)) >= 0.95


def test_named_post_download_entries_have_rules(rules):
    named = ["W1", "W3", "W4", "W5", "W6", "W7", "L6", "L8", "L10", "L13", "L15", "L16", "L17", "L19", "L1", "L2",
             "L21", "L23", "R1", "R3", "R4", "R5", "R6", "R8", "R9", "R11", "R12"]
    encoded = {c for r in rules for c in r.catalog}
    assert [c for c in named if c not in encoded] == []
