"""inputs/positional.py: a `sh -c` script's positional parameters, bound as the shell binds them."""

from __future__ import annotations

from dataclasses import dataclass

import pytest

from h3doctor.inputs.positional import Positional
from h3doctor.unresolved import MARK


@dataclass(frozen=True)
class W:
    text: str
    where: str = "script"


def _bind(script_words: list[str], after: list[str], quoted: bool = True, shift: list[str] | None = None):
    p = Positional([W(a, "arg") for a in after])
    if shift is not None:
        assert p.shifted(shift)
    words = [W(w.replace("$", MARK + "$") if "$" in w else w) for w in script_words]
    return [(w.text, w.where) for w in p.bind(words, [quoted] * len(words))]


def test_all_arguments_are_the_words_after_zero_with_their_own_places():
    assert _bind(["sglang", "serve", "--num-gpus", "$@"], ["--", "--tp-size", "2"]) == [
        ("sglang", "script"), ("serve", "script"), ("--num-gpus", "script"), ("--tp-size", "arg"), ("2", "arg")]


@pytest.mark.parametrize("word, value", [("$0", "h3"), ("$1", "M"), ("${2}", "4"), ("$#", "2")])
def test_one_parameter(word, value):
    assert _bind([word], ["h3", "M", "4"])[0][0] == value


def test_shift_drops_the_first_arguments_and_a_parameter_past_the_last_is_empty():
    assert _bind(["$1", "$@"], ["h3", "x", "M"], shift=["shift"]) == [("M", "arg"), ("M", "arg")]
    assert _bind(["$3"], ["h3", "M"]) == [("", "script")]  # quoted: an empty word
    assert _bind(["$3"], ["h3", "M"], quoted=False) == []  # unquoted: no word
    assert _bind(["${@:2}"], ["h3", "a", "b", "c"]) == [("b", "arg"), ("c", "arg")]


def test_what_the_shell_would_split_again_stays_unknown():
    assert _bind(["$1"], ["h3", "a b"], quoted=False) == [(MARK + "$1", "script")]
    assert _bind(["$@"], ["h3", "a*"], quoted=False) == [(MARK + "$@", "script")]
    assert _bind(["--x=$1"], ["h3", "a b"]) == [("--x=" + MARK + "$1", "script")]
    assert _bind(["--x=$1"], ["h3", "ab"]) == [("--x=ab", "script")]
