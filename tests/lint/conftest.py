"""Fixtures of lint's room: a copy of the fixture repository (tests/fixtures/repo) to lint from."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.lint.test_lint_locations import _copy


@pytest.fixture
def fixture_repo(tmp_path, monkeypatch) -> Path:
    """A copy of the fixture repository (a git repository of its own), the test's working directory."""
    repo = _copy(tmp_path)
    monkeypatch.chdir(repo)
    return repo
