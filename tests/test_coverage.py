"""The coverage table accounts for every catalog entry and cannot drift from the rule files."""

from __future__ import annotations

from pathlib import Path

from h3doctor.coverage import catalog, markdown, not_encoded, table

DOC = Path(__file__).resolve().parent.parent / "docs" / "coverage.md"


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
    cited = {c for r in rules for c in r.catalog if c[0].isalpha()}
    assert sorted(cited - known) == []


def test_committed_table_is_up_to_date(rules):
    assert DOC.read_text(encoding="utf-8") == markdown(rules), "run: h3doctor coverage --write docs/coverage.md"
