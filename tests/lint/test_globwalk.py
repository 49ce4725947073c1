"""lint's command-line globs (h3doctor/lint/globwalk.py): glob's meaning, no folder link entered by `**`."""

from __future__ import annotations

import glob
import os

import pytest

from h3doctor.lint.globwalk import expand_glob


@pytest.fixture
def tree(tmp_path, monkeypatch):
    for rel in ("a/x.sh", "a/b/y.sh", "a/b/c/z.yaml", "a/.hidden/h.sh", "top.sh", "a/b/.dot.sh", "e/f/g.sh"):
        (tmp_path / rel).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / rel).write_text("echo\n", encoding="utf-8")
    monkeypatch.chdir(tmp_path)
    return tmp_path


@pytest.mark.parametrize("pattern", ["**/*.sh", "a/**/*.sh", "a/**", "*/b/*", "a/*.sh", "**", "a/**/c/*", "*.sh",
                                     "a/.*/*.sh", "a/b/.*", "**/b", "nope/**/*.sh", "a/[bx]*", "e/**/g.sh"])
def test_without_links_it_names_what_glob_names(tree, pattern):
    for prefix in ("", str(tree) + "/"):
        theirs = sorted({os.path.normpath(p) for p in glob.glob(prefix + pattern, recursive=True)})
        assert expand_glob(prefix + pattern) == theirs


def test_a_folder_link_under_double_star_is_listed_not_entered(tree):
    for name in ("l1", "l2", "l3"):
        os.symlink(".", tree / "a" / name)  # glob.glob("a/**/*.sh") would list a/l1/l2/l3/l1/... without end
    found = expand_glob("a/**/*.sh")
    assert found == ["a/b/y.sh", "a/x.sh"]
    assert "a/l1" in expand_glob("a/**")  # listed, as lint's walk lists a link it does not enter
