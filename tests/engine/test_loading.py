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


SAME_AS_PYYAML = [
    "a: 1\nb: [x, 'y', \"z\", 0x1f, 012, 1_000, -3, +4, 1:30]\nc: {d: 1.5, e: .5, f: 1e3, g: ~, h: null, i: , j: yes, k: Off}\n",
    "- a\n- [b, [c, {d: e}]]\n- |\n  block\n  text\n- >\n  folded\n  text\n- !!str 5\n- !!int '7'\n- ! 8\n",
    "base: &b {x: 1, y: [1, 2]}\nm: {<<: *b, y: 2}\nn: *b\nk: &k key\n*k : v\nlist: &l [1, 2]\nagain: *l\n",
    "dup: 1\ndup: 2\n'quoted key': \"v\"\nempty: {}\nnone: []\nwhen: 2026-12-01\n",
    "---\na: 1\n---\n- b\n...\n",
]


@pytest.mark.parametrize("text", SAME_AS_PYYAML)
def test_values_are_what_pyyaml_gives(text):
    """One pass over the events builds the values PyYAML's safe loader builds (timestamps kept as typed)."""
    import yaml

    expected = list(yaml.safe_load_all(text))
    expected = [{k: (str(v) if k == "when" else v) for k, v in e.items()} if isinstance(e, dict) and "when" in e else e
                for e in expected]
    assert [doc.data for doc in load_yaml(text, "f.yaml")] == expected


def test_aliased_and_merged_values_have_positions():
    [doc] = load_yaml("base: &b {x: 1, y: [1, 2]}\nm: {<<: *b, y: 2}\nn: *b\n", "f.yaml")
    assert str(doc.pos(("n", "y", 1))) == "1:24"  # the anchored value's own place
    assert str(doc.pos(("m", "x"))) == "1:7" and str(doc.pos(("m", "y"))) == "2:16"
    assert doc.data["n"] is not doc.data["base"]  # each alias is its own copy


def test_a_document_is_parsed_once_and_never_composed(monkeypatch):
    import yaml

    from h3doctor import safeload

    made = []
    real = safeload._yaml_classes

    def counting():
        cls = real()

        class Counted(cls):  # type: ignore[misc,valid-type]
            def __init__(self, stream):
                made.append(1)
                super().__init__(stream)

            def get_node(self):  # composing would build the node graph a second time
                raise AssertionError("composed")

            def get_single_node(self):
                raise AssertionError("composed")
        return Counted

    monkeypatch.setattr(safeload, "_yaml_classes", counting)
    monkeypatch.setattr(yaml, "compose", lambda *a, **k: pytest.fail("composed"))
    docs = load_yaml("a: [1, 2]\n---\nb: {c: d}\n", "f.yaml")
    assert [d.data for d in docs] == [{"a": [1, 2]}, {"b": {"c": "d"}}] and made == [1]


def test_one_node_budget_for_every_yaml_reader():
    """Past safeload.MAX_NODES (keys counted, aliases expanded) every reader refuses the file with
    the same located words, a LimitExceeded (exit 2), before building it."""
    from h3doctor import safeload
    from h3doctor.safeload import MAX_NODES, LimitExceeded

    over = "".join(f"k{i}: {i}\n" for i in range(MAX_NODES // 2 + 1))
    within = "".join(f"k{i}: {i}\n" for i in range((MAX_NODES - 1) // 2))  # the mapping and its keys and values
    assert len(load_yaml(within, "f.yaml")[0].data) == (MAX_NODES - 1) // 2
    for read in (lambda t: load_yaml(t, "f.yaml"), lambda t: safeload.load_yaml(t, origin="f.yaml")):
        with pytest.raises(LimitExceeded, match=f"more than {MAX_NODES:,} values") as err:
            read("root:\n" + "".join("  " + line for line in over.splitlines(True)))
        assert err.value.location.startswith(f"f.yaml:{MAX_NODES // 2}")
    bomb = "a: &a [x, x, x, x, x, x, x, x, x, x]\n" + "".join(
        f"{c}: &{c} [{', '.join(['*' + p] * 10)}]\n" for p, c in zip("abcd", "bcde"))
    with pytest.raises(LimitExceeded, match="aliases expanded"):
        load_yaml(bomb, "f.yaml")
    with pytest.raises(LimitExceeded, match="without end"):
        load_yaml("a: &a [*a]\n", "f.yaml")

@pytest.mark.parametrize("package", ["h3doctor", "h3doctor.schema", "h3doctor.sglang.flagdata",
                                     "h3doctor.host.builtin_profiles", "h3doctor.engine.catalog", "h3doctor.explain"])
def test_a_shipped_package_is_found_where_importing_it_would_find_it(package):
    """package_path names a data package's directory without importing it: the same directory."""
    import importlib
    import os

    from h3doctor.paths import package_path

    here = os.path.dirname(importlib.import_module(package).__file__)
    assert package_path(package) == here and package_path(package, "x.json") == os.path.join(here, "x.json")
    with pytest.raises(ValueError):
        package_path("json")
