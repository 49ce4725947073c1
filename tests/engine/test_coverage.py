"""The coverage table accounts for every catalog entry and cannot drift from the rule files."""

from __future__ import annotations

import pytest

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
    cited = {c for r in rules for c in r.catalog if c[0].isalpha() and not c.startswith(("mem-", "gen-", "host-", "k8s-"))}
    assert sorted(cited - known) == []


@pytest.mark.parametrize("prefix,page,who", [
    ("gen-", "generate.md", "the `sglang generate` sampling rules"),  # "gen-3"
    ("mem-", "memory.md", "the memory rules"),  # "mem-4.2": the model's sections, not the catalog
    ("host-", "host-facts.md", "the host-fact rules"),  # "host-1": the facts are the host's, not sglang's
    ("k8s-", "kubernetes.md", "the Kubernetes probe rules"),  # "k8s-1": what a manifest says around the launch
])
def test_references_name_sections_of_their_page(rules, prefix, page, who):
    # rules outside the constraint catalog cite the sections of their own docs page
    text = (DOC.parent / page).read_text(encoding="utf-8")
    cited = {c for r in rules for c in r.catalog if c.startswith(prefix)}
    assert cited, f"{who} cite their sections"
    assert sorted(c for c in cited if f"({c})" not in text) == []


def test_committed_table_is_up_to_date(rules):
    assert DOC.read_text(encoding="utf-8") == markdown(rules), "run: h3doctor coverage --write docs/coverage.md"


def test_at_least_95_percent_of_launch_stage_entries_have_rules(rules):  # issue: stages D-M
    assert launch_stage_share(table(rules)) >= 0.95


def test_named_post_download_entries_have_rules(rules):
    named = ["W1", "W3", "W4", "W5", "W6", "W7", "L6", "L8", "L10", "L13", "L15", "L16", "L17", "L19", "L1", "L2",
             "L21", "L23", "R1", "R3", "R4", "R5", "R6", "R8", "R9", "R11", "R12"]
    encoded = {c for r in rules for c in r.catalog}
    assert [c for c in named if c not in encoded] == []
