"""lint's `.gitignore` matcher (h3doctor/lint/gitignore.py): pathspec's meaning, without its cost."""

from __future__ import annotations

import warnings

import pathspec
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from h3doctor.lint.gitignore import GitIgnore

segment_globs = st.sampled_from(["a", "b", "ab", "*", "**", "a*", "*b", "a*b", "?", "a?", "[ab]", "[a-b]x",
                                 "*a*b*", "x", "[!a]", "\\*", "ab*", "[ab", ""])
patterns = st.builds(lambda neg, segs, lead: ("!" if neg else "") + ("/" if lead else "") + "/".join(segs),
                     st.booleans(), st.lists(segment_globs, min_size=1, max_size=4), st.booleans())
names = st.sampled_from(["a", "b", "ab", "x", "aab", "ba", "axb", "*", "abab"])
paths = st.builds(lambda segs, is_dir: "/".join(segs) + ("/" if is_dir else ""),
                  st.lists(names, min_size=1, max_size=4), st.booleans())


def _pathspec(lines):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        # pathspec's own regex backend, the meaning the matcher copies: with google-re2 installed
        # (cel-python brings it) pathspec picks its re2 backend, which reads some folders otherwise
        # (`!*` then `a` on `a/`: ignored, as git has it; the regex backend and this matcher: not)
        return pathspec.GitIgnoreSpec.from_lines(lines, backend="simple")


def _crosses_a_slash(lines, path):
    """pathspec lets a negated class match the `/` between two segments; git (and we) do not."""
    return "[!a]" in "".join(lines) and "/" in path


@settings(max_examples=1500, deadline=None)
@given(st.lists(patterns, min_size=1, max_size=5), st.lists(paths, min_size=1, max_size=5))
def test_the_matcher_agrees_with_pathspec(lines, paths_):
    try:
        theirs = _pathspec(lines)
    except Exception:  # pathspec refuses "!" (normalises to nothing); git ignores such a line
        return
    ours = GitIgnore(lines)
    for path in paths_:
        if _crosses_a_slash(lines, path):
            continue
        assert ours.match_file(path) == theirs.match_file(path), (lines, path)


@pytest.mark.parametrize("lines,path,ignored", [
    (["build/"], "build/", True), (["build/"], "build", False), (["build/"], "src/build/x.sh", True),
    (["/build"], "src/build", False), (["*.sh", "!keep.sh"], "keep.sh", False),
    (["dir/", "!dir/keep.sh"], "dir/keep.sh", False), (["a/**/b"], "a/x/y/b", True), (["a/**/b"], "a/b", True),
    (["**/x"], "p/q/x", True), (["a/**/a"], "a", False), (["a/**/b/**/a"], "a/b", False), (["a/**"], "a/", True), (["a/**"], "a", False), (["[!a]b"], "a/b", False),
])
def test_git_semantics(lines, path, ignored):
    assert GitIgnore(lines).match_file(path) is ignored


def test_a_backtracking_glob_is_placed_piece_by_piece():
    """`*a*a*a*a*a*a*a*a*c` against a long name of `a`s backtracks for minutes in a regex; here each
    piece is searched for once (pathspec: 5 s for 30 characters, growing as the 8th power)."""
    spec = GitIgnore(["*a*a*a*a*a*a*a*a*c"])
    [pattern] = spec.everywhere
    pieces = [p.pattern for part in pattern.parts if part != "**" for p, _ in part]
    assert pieces == ["", *["a"] * 8, "c"]  # no `[^/]*` left to backtrack over
    assert spec.match_file("a" * 250) is False
    assert spec.match_file("a" * 250 + "c") is True


def test_plain_patterns_are_looked_up_not_tried_one_by_one():
    spec = GitIgnore([f"name{i}" for i in range(5000)] + ["deep/name7/x", "*.tmp"])
    assert spec.match_file("src/name42/file.sh") is True
    assert spec.match_file("src/other/file.sh") is False
    assert spec.tried <= 4  # *.tmp and name42, not 5,000 patterns per path
