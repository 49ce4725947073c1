"""docs/api-reference.md is what tools/api_reference.py makes of the docstrings, and every
```python block of docs/api.md and of the README's "Python API" runs as written (copy-paste)."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest
from repo_paths import REPO

ROOT = REPO
sys.path.insert(0, str(ROOT / "tools"))

import api_reference  # noqa: E402

README_API = (ROOT / "README.md").read_text(encoding="utf-8").split("## Python API", 1)[1].split("\n## ", 1)[0]
BLOCKS = re.findall(r"```python\n(.*?)```", (ROOT / "docs" / "api.md").read_text(encoding="utf-8") + README_API, re.S)


def test_the_reference_page_is_the_docstrings():
    assert (ROOT / "docs" / "api-reference.md").read_text(encoding="utf-8") == api_reference.render(), \
        "regenerate: python tools/api_reference.py"


def test_every_public_name_is_in_the_reference():
    from h3doctor import api

    page = api_reference.render()
    for name in api.__all__:
        assert f"`{name}" in page, name


@pytest.mark.parametrize("block", [b for b in BLOCKS if "api.probe()" not in b])
def test_the_guide_s_examples_run(block, monkeypatch):
    monkeypatch.chdir(ROOT)  # the examples name files of the repository (examples/)
    exec(compile(block, "docs/api.md", "exec"), {})


def test_the_guide_has_examples_of_every_call():
    text = "".join(BLOCKS)
    for call in ("api.check(", "api.lint(", "api.explain(", "api.suggest(", "api.probe(", "api.H3DoctorError"):
        assert call in text
