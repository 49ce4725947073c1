"""Every release has its data files, and tools/release.py reproduces the committed ones.

The per-release sglang lines of the rules (releasedata/X/where.json) are re-derived offline from a
recorded fixture of line digests of 0.5.22 and 0.5.23 (no sglang source is stored); the full
run from the wheels is `python tools/release.py add 0.5.23 --venv VENV` (tools/flagtable/README.md).
A rule citing a file the fixture lacks needs the fixture re-recorded: add
`--fixture tests/release/line-digests-0.5.22-0.5.23.json.gz` to that command.
"""

from __future__ import annotations

import gzip
import json
import shutil
import sys
from pathlib import Path

import pytest
from repo_paths import REPO

ROOT = REPO
sys.path.insert(0, str(ROOT / "tools"))

import release  # noqa: E402  (tools/release.py)
import where as wherelib  # noqa: E402  (tools/flagtable/where.py)

from h3doctor.engine import ruleset  # noqa: E402
from h3doctor.sglang.releases import in_range, key  # noqa: E402

FLAGDATA = ROOT / "h3doctor" / "sglang" / "flagdata"
RELEASEDATA = ROOT / "h3doctor" / "sglang" / "releasedata"
FIXTURE = ROOT / "tests" / "release" / "line-digests-0.5.22-0.5.23.json.gz"
RELEASES = release.known_releases()


@pytest.mark.parametrize("version", RELEASES)
def test_every_release_has_each_of_its_data_files(version):
    assert release.missing_data(version) == []


def test_the_committed_data_is_whole():
    assert release.main(["check"]) == 0


def _repo_copy(tmp_path: Path, *releases: str) -> Path:
    """The data tools/release.py reads and writes, for these releases only."""
    data = tmp_path / "h3doctor" / "sglang"
    shutil.copytree(FLAGDATA, data / "flagdata")
    (data / "releasedata").mkdir()
    shutil.copy(RELEASEDATA / "manifest.json", data / "releasedata")
    for version in releases:
        shutil.copytree(RELEASEDATA / version, data / "releasedata" / version)
    shutil.copytree(ROOT / "rules", tmp_path / "rules")
    return tmp_path


def test_a_release_missing_a_data_file_or_with_a_copy_to_check_fails(tmp_path):
    root = _repo_copy(tmp_path, "0.5.22", "0.5.23")
    (root / "h3doctor/sglang/releasedata/0.5.23/where.json").unlink()
    assert release.missing_data("0.5.23", root) == ["0.5.23/where.json: missing"]
    (root / "h3doctor/sglang/releasedata/0.5.24").mkdir()
    (root / "h3doctor/sglang/releasedata/0.5.24/notes.txt").write_text("x")
    assert release.missing_data("0.5.24", root) == [
        "0.5.24/manifest.json: missing", "0.5.24/attention-backends.json: missing", "0.5.24/flags.json: missing",
        "0.5.24/memory.json: missing", "0.5.24/sampling.json: missing", "0.5.24/where.json: missing",
        "0.5.24/notes.txt: not in releasedata/manifest.json",
        "flagdata/flag-history.json: no entry for 0.5.24"]
    states = release.copy_previous("0.5.24", "0.5.23", root)
    assert set(states) == {"attention-backends.json", "sampling.json"}
    assert states["attention-backends.json"].startswith("a copy of 0.5.23's: check it against 0.5.24's source")
    assert states["sampling.json"].startswith("a copy of 0.5.23's: re-run tools/release.py add 0.5.24 with the wheel")
    new, old = (json.loads((root / f"h3doctor/sglang/releasedata/{v}/attention-backends.json").read_text(encoding="utf-8"))
                for v in ("0.5.24", "0.5.23"))
    assert new["sglang_version"] == "0.5.24" and new["where"] == old["where"]
    assert release.copy_previous("0.5.24", "0.5.23", root) == {}  # a file the release holds is never overwritten
    assert release.main(["--root", str(root), "check"]) == 1


def test_a_piece_its_manifest_says_is_not_done_fails_the_check(tmp_path):
    root = _repo_copy(tmp_path, "0.5.23")
    own = root / "h3doctor/sglang/releasedata/0.5.23/manifest.json"
    data = json.loads(own.read_text(encoding="utf-8"))
    data["files"]["memory.json"]["state"] = "calibrate on an H200"
    own.write_text(json.dumps(data), encoding="utf-8")
    assert release.missing_data("0.5.23", root) == ["0.5.23/memory.json: calibrate on an H200"]
    del data["files"]["memory.json"]
    own.write_text(json.dumps(data), encoding="utf-8")
    assert release.missing_data("0.5.23", root) == ["0.5.23/manifest.json: memory.json is not listed"]


def test_where_files_cover_exactly_the_rules_of_their_release(rules):
    by_id = {r.id: r for r in rules}
    for version in RELEASES:
        data = release.read_where(version)
        assert data["sglang_version"] == version and data["previous"] == release.previous_release(version)
        lines = release.lines_of(data)
        assert not set(data["where"]) & set(data["reviewed"])
        assert set(lines) <= set(by_id), f"where-{version}.json names unknown rules"
        applying = {r.id for r in rules if in_range(version, r.versions)}
        assert set(lines) == applying, f"where-{version}.json: {sorted(set(lines) ^ applying)}"


def test_the_loader_gives_each_release_its_line(rules):
    h3d305 = next(r for r in rules if r.id == "H3D305")
    assert h3d305.for_version("0.5.18").where == "multimodal_gen/runtime/models/dits/minimax_h3.py:490"
    assert h3d305.for_version("0.5.21").where == "multimodal_gen/configs/pipeline_configs/minimax_h3.py:254"
    assert h3d305.for_version("0.5.23").where == release.read_where("0.5.23")["where"]["H3D305"]
    assert dict(h3d305.where_spans())["0.5.19-0.5.20"] == "multimodal_gen/configs/pipeline_configs/minimax_h3.py:257"


def test_the_rules_cache_follows_the_where_files(tmp_path, monkeypatch):
    monkeypatch.setenv("H3DOCTOR_CACHE_DIR", str(tmp_path / "cache"))
    data = release.read_where("0.5.23")
    moved = tmp_path / "where-0.5.23.json"
    monkeypatch.setattr(ruleset, "where_files", lambda: [moved])  # where.json's content, another path
    for line in ("x.py:1", "x.py:2"):
        data["where"]["H3D305"] = line
        moved.write_text(json.dumps(data), encoding="utf-8")
        rule = next(r for r in ruleset.load_rules() if r.id == "H3D305")
        assert rule.for_version("0.5.23").where == line
    digests = {p.name for p in (tmp_path / "cache").glob("rules-*.json")}
    assert len(digests) == 2  # each where file's bytes are part of the digest


def test_a_rule_file_may_not_carry_a_release_line(tmp_path):
    text = (ROOT / "rules" / "H3D305.yaml").read_text(encoding="utf-8")
    text = text.replace('  - versions: "==0.5.18"\n', '  - versions: "==0.5.18"\n    where: x.py:1\n')
    (tmp_path / "H3D305.yaml").write_text(text, encoding="utf-8")
    with pytest.raises(ruleset.RuleFileError) as err:
        ruleset.load_rules(tmp_path, use_cache=False)
    assert err.value.location.endswith("H3D305.yaml:10") and "where" in err.value.message


def test_readding_the_newest_release_is_byte_identical_offline():
    recorded = json.loads(gzip.decompress(FIXTURE.read_bytes()))["releases"]
    old = wherelib.DigestSource("0.5.22", recorded["0.5.22"])
    new = wherelib.DigestSource("0.5.23", recorded["0.5.23"])
    written = release.regenerate_where("0.5.23", old, new)
    assert set(written) == {"h3doctor/sglang/releasedata/0.5.23/where.json", "docs/releases/0.5.23-review.md"}
    for rel, text in written.items():
        assert (ROOT / rel).read_text(encoding="utf-8") == text, f"{rel} differs: re-run tools/release.py"


def test_the_flag_history_is_rebuilt_byte_identical():
    assert release.history.render(release.history.build()) == (FLAGDATA / "flag-history.json").read_text(encoding="utf-8")


# --- the line carrying itself, on small made-up files -------------------------------------------

OLD = ["def check(x):", "    if x > 1:", "        raise ValueError('too big')", "    return x", "", "pass"]
NEW = ["import os", "", "def check(x):", "    if x > 2:", "        raise ValueError('too big')", "    return x",
       "", "pass"]


def _sources(old=OLD, new=NEW):
    digest = {v: {"m.py": "".join(wherelib.line_digests("\n".join(lines)))} for v, lines in (("1", old), ("2", new))}
    return wherelib.DigestSource("1", digest["1"]), wherelib.DigestSource("2", digest["2"])


def test_an_unchanged_line_moves_with_its_block():
    a, b = _sources()
    assert wherelib.map_where("m.py:4 (return)", a, b) == ("m.py:6 (return)", "")
    assert wherelib.map_where("m.py:6 (return)", a, b, reverse=True) == ("m.py:4 (return)", "")


def test_an_edited_line_is_found_by_its_unique_text_or_left_to_a_person():
    a, b = _sources()
    assert wherelib.map_where("m.py:3", a, b)[0] == "m.py:5"  # the raise: unchanged text, one of it
    carried, why = wherelib.map_where("m.py:2", a, b)  # the condition itself changed
    assert carried is None and "changed" in why
    carried, why = wherelib.map_where("gone.py:2", a, b)
    assert carried is None and "not in both" in why


def test_a_line_that_cannot_be_carried_is_reported_not_guessed():
    a, b = _sources()
    rules = [{"id": "H3D900", "versions": ">=1", "where": "m.py:2"}, {"id": "H3D901", "versions": ">=1", "where": "m.py:4"}]
    derived, kept, notes = release.derive_where("2", "1", rules, prev_lines={"H3D900": "m.py:2", "H3D901": "m.py:4"},
                                                reviewed={}, old=a, new=b, releases=["1", "2"])
    assert derived == {"H3D901": "m.py:6"} and kept == {}
    assert [n.split(":")[0] for n in notes["person"]] == ["H3D900"]
    derived, kept, notes = release.derive_where("2", "1", rules, prev_lines={"H3D900": "m.py:2", "H3D901": "m.py:4"},
                                                reviewed={"H3D900": "m.py:4"}, old=a, new=b, releases=["1", "2"])
    assert kept == {"H3D900": "m.py:4"} and notes["person"] == []


def test_the_review_maps_each_changed_hunk_to_the_rules_citing_it():
    a, b = _sources()
    text = release.review_markdown("2", "1", prev_lines={"H3D900": "m.py:2"}, new_lines={"H3D900": "m.py:4"},
                                   notes={"person": [], "from_rule": [], "reviewed_differs": [], "ended": []},
                                   old=a, new=b)
    assert "| 2 | 4 | H3D900 |" in text  # the edited condition
    assert "| after 0 | 1-2 | H3D900 |" in text  # the import added above it (within NEAR lines)
