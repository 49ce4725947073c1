"""h3doctor.safeload: the limits every input file is read within."""

from __future__ import annotations

import os

import pytest

from h3doctor.errors import UsageError
from h3doctor.safeload import LimitExceeded, LoadError, excerpt, load_json, load_yaml, read_bounded


def test_read_bounded_checks_the_size_before_reading(tmp_path, monkeypatch):
    big = tmp_path / "big.yaml"
    big.write_text("x" * 2000)
    opened = []
    monkeypatch.setattr("builtins.open", lambda *a, **k: opened.append(a) or (_ for _ in ()).throw(AssertionError("read")))
    with pytest.raises(LimitExceeded, match="larger than"):
        read_bounded(big, max_bytes=1000, what="profile")
    assert opened == []


@pytest.mark.parametrize("name,needle", [("missing.yaml", "no such profile file"), ("a\0b", "NUL"),
                                         ("x" * 5000, "too long"), (".", "directory")])
def test_read_bounded_turns_os_errors_into_usage_errors(tmp_path, monkeypatch, name, needle):
    monkeypatch.chdir(tmp_path)
    with pytest.raises(UsageError, match=needle) as info:
        read_bounded(name, max_bytes=1000, what="profile")
    assert len(str(info.value)) < 400


def test_read_bounded_refuses_a_pipe_at_once(tmp_path):
    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)  # no writer: a blocking open would wait forever
    with pytest.raises(LoadError, match="not a regular file \\(a FIFO\\)"):
        read_bounded(fifo, max_bytes=1000, what="config file")


def test_read_bounded_names_the_line_of_bad_utf8(tmp_path):
    bad = tmp_path / "r.yaml"
    bad.write_bytes(b"a: 1\nb: \xff\n")
    with pytest.raises(UsageError, match="not UTF-8") as info:
        read_bounded(bad, max_bytes=1000, what="recipe")
    assert info.value.location.endswith("r.yaml:2")


def test_yaml_limits_and_types():
    assert load_yaml("a: &x [1, 2]\nb: *x\nwhen: 2001-02-30\n", origin="f") == {"a": [1, 2], "b": [1, 2], "when": "2001-02-30"}
    assert load_yaml("<<: {a: 1}\nb: 2\n", origin="f") == {"a": 1, "b": 2}  # merge keys are string keys
    with pytest.raises(LimitExceeded, match="alias"):
        load_yaml("a: &a [x, x, x, x, x, x, x, x, x, x]\n" + "".join(
            f"{c}: &{c} [{', '.join(['*' + p] * 10)}]\n" for p, c in zip("abcde", "bcdef")), origin="f")
    with pytest.raises(LimitExceeded, match="nested"):
        load_yaml("a: &a [*a]\n", origin="f")
    with pytest.raises(UsageError, match="keys must be strings") as info:
        load_yaml("x: 1\n1: a\n", origin="f")
    assert info.value.location == "f:2"
    assert load_yaml("1: a\nb: .inf\n", origin="f", string_keys=False, finite=False) == {1: "a", "b": float("inf")}
    with pytest.raises(UsageError, match="not a finite number"):
        load_yaml("b: 1.0e+400\n", origin="f")
    with pytest.raises(UsageError, match="day is out of range"):
        load_yaml("b: 2001-02-30\n", origin="f", invalid_dates="error")
    with pytest.raises(UsageError, match="constructor"):
        load_yaml("a: !!python/object:os.system x\n", origin="f")


def test_json_limits():
    assert load_json('{"a": [1, 2.5]}', origin="f") == {"a": [1, 2.5]}
    for text in ("[NaN]", '{"a": -Infinity}', "[1e400]"):
        with pytest.raises(UsageError, match="not"):
            load_json(text, origin="f")
    assert load_json("[NaN]", origin="f", finite=False)[0] != 0
    with pytest.raises(LimitExceeded):
        load_json("[" * 65 + "]" * 65, origin="f")
    with pytest.raises(LimitExceeded):
        load_json("[" * 100_000 + "]" * 100_000, origin="f", max_depth=None)
    with pytest.raises(UsageError, match="malformed JSON") as info:
        load_json('{\n"a": }', origin="f")
    assert info.value.location == "f:2"


def test_excerpt_is_short_and_printable():
    assert excerpt("x" * 1000) == "x" * 77 + "..."
    assert excerpt("a\0b\n") == "a\\x00b\\n"
    shared = [1, 2]
    huge: list = [shared] * 10
    for _ in range(30):
        huge = [huge] * 10  # 10**30 elements if expanded
    assert len(excerpt(huge)) <= 80
