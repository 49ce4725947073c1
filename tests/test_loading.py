"""The one loader every input goes through: bounded, typed, located, and terse about values."""

from __future__ import annotations

import pytest

from h3doctor.located import load_file, load_json, load_yaml
from h3doctor.safeload import MAX_DEPTH, LoadError


def test_positions_of_values_and_keys_are_one_based():
    [doc] = load_yaml("a:\n  b: [x, 'y z']\nc: |\n  one\n  two words\n", "f.yaml")
    assert str(doc.pos(("a", "b", 1))) == "2:10" and str(doc.key_pos(("a", "b"))) == "2:3"
    assert str(doc.offset_pos(("a", "b", 1), 2)) == "2:13"  # inside the quoted scalar
    assert str(doc.offset_pos(("c",), 8)) == "5:7"  # "words" on the block scalar's second line


def test_size_is_checked_before_reading(tmp_path):
    big = tmp_path / "big.yaml"
    big.write_text("a: " + "x" * 2000 + "\n")
    with pytest.raises(LoadError, match="larger than 1 KiB"):
        load_file(str(big), max_bytes=1024)


def test_deep_nesting_is_refused_with_a_location():
    with pytest.raises(LoadError, match="nested deeper") as err:
        load_yaml("a: " + "[" * (MAX_DEPTH + 5) + "]" * (MAX_DEPTH + 5) + "\n", "f.yaml")
    assert err.value.location.startswith("f.yaml:1:")
    with pytest.raises(LoadError, match="nested deeper"):  # absurd flow nesting: no crash
        load_yaml("[" * 100_000 + "]" * 100_000, "f.yaml")


def test_alias_bombs_stop_early():
    bomb = "a: &a [x, x, x, x, x, x, x, x, x, x]\n" + "".join(
        f"{c}: &{c} [{', '.join(['*' + p] * 10)}]\n" for p, c in zip("abcdefg", "bcdefgh"))
    with pytest.raises(LoadError, match="aliases expanded"):
        load_yaml(bomb, "bomb.yaml")


def test_non_string_keys_and_non_finite_numbers_are_refused():
    with pytest.raises(LoadError, match="keys must be strings") as err:
        load_yaml("env:\n  1: x\n", "f.yaml")
    assert err.value.location == "f.yaml:2:3"
    with pytest.raises(LoadError, match="non-finite"):
        load_yaml("x: .inf\n", "f.yaml")
    with pytest.raises(LoadError, match="non-finite"):
        load_json('{"x": NaN}', "f.json")


def test_timestamps_stay_strings_and_merge_keys_work():
    [doc] = load_yaml("when: 2026-12-01\nbase: &b {x: 1}\nm: {<<: *b, y: 2}\n", "f.yaml")
    assert doc.data["when"] == "2026-12-01" and doc.data["m"] == {"x": 1, "y": 2}


def test_errors_quote_only_a_short_excerpt():
    value = "v" * 5000
    with pytest.raises(LoadError) as err:
        load_yaml(f"x: !custom {value}\n", "f.yaml")
    assert len(str(err.value)) < 200 and "unsupported YAML tag" in str(err.value)


def test_malformed_yaml_names_line_and_column():
    with pytest.raises(LoadError) as err:
        load_yaml("a: [1, 2\nb: 3\n", "f.yaml")
    assert err.value.location.startswith("f.yaml:") and err.value.location.count(":") == 2


@pytest.mark.parametrize("brackets", [0, 1000])  # few brackets: libyaml; many: the pure-Python composer
def test_both_composers_give_the_same_positions(brackets):
    text = "x: sglang serve --a b\n" + "pad: [" + ", ".join(["[1]"] * brackets) + "]\n"
    [doc] = load_yaml(text, "f.yaml")
    assert str(doc.offset_pos(("x",), 13)) == "1:17"
