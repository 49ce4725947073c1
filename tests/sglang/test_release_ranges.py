"""A rule's upper release bound is its where lines, not its file (docs/rule-authoring.md, "One
folder per release"): the rule files name no newest release, and every known release judges
exactly the rules it judged when they did (tests/release/applicable-before-open-ranges.json,
recorded before the rewrite)."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from h3doctor.engine.ruleset import load_rules
from h3doctor.record import replace
from h3doctor.sglang.releases import known_releases
from h3doctor.verified import NEWEST_VERIFIED
from repo_paths import REPO

ROOT = REPO
BEFORE = json.loads((ROOT / "tests" / "release" / "applicable-before-open-ranges.json").read_text())["releases"]


@pytest.fixture(scope="module")
def rules():
    return load_rules(use_cache=False)


def test_every_release_judges_the_rules_it_judged_before_the_ranges_opened(rules):
    assert set(BEFORE) == set(known_releases())
    now = {v: sorted(r.id for r in rules if r.in_release(v)) for v in known_releases()}
    assert now == BEFORE


def test_no_rule_file_names_the_newest_release_as_its_upper_bound():
    """An upper bound in a rule file is where sglang dropped the check, never "the newest release
    we know": adding a release that does not touch a rule needs no edit to it."""
    for path in sorted((ROOT / "rules").glob("H3D*.yaml")):
        for line in path.read_text(encoding="utf-8").splitlines():
            if re.match(r"  versions: ", line):
                assert not re.search(rf"(<=|==){re.escape(NEWEST_VERIFIED)}\b", line), f"{path.name}: {line.strip()}"


def test_a_release_without_the_rules_line_does_not_judge_it(rules):
    """Inside its versions but with no line recorded in the release (tools/release.py could not
    carry it and no person has reviewed it): not applied, so the check says "not verified"."""
    rule = next(r for r in rules if r.in_release(NEWEST_VERIFIED) and r.versions.startswith(">=")
                and r.platforms is None and r.entries is None and r.families in (("any",), ("h3",)))
    unlined = replace(rule, where_by_release={v: w for v, w in rule.where_by_release.items() if v != NEWEST_VERIFIED})
    assert rule.applies("h3", "cuda", "serve", NEWEST_VERIFIED)
    assert not unlined.applies("h3", "cuda", "serve", NEWEST_VERIFIED)


def test_a_release_folder_is_only_ever_one_of_the_known_releases(tmp_path):
    """The version a user gives selects among the release folders; it never names a path."""
    from h3doctor.errors import UsageError
    from h3doctor.sglang import release_files
    from h3doctor.sglang.flagtable import load_flag_table

    for hostile in ("../0.5.23", "0.5.23/../0.5.22", "/etc", "0.5.23/", ".", ""):
        with pytest.raises(KeyError):
            release_files.path(hostile, "flags")
        assert not release_files.has(hostile, "memory")
        with pytest.raises(UsageError):
            load_flag_table.__wrapped__(hostile)
    for name in ("0.5.99", "0.5.98-evil", "x.y.z"):  # no flag table, or not a release's name
        (tmp_path / name).mkdir()
    (tmp_path / "0.5.98-evil" / "flags.json").write_text("{}")
    (tmp_path / "0.5.97").mkdir()
    (tmp_path / "0.5.97" / "flags.json").write_text("{}")
    assert release_files._known(str(tmp_path)) == ("0.5.97",)
