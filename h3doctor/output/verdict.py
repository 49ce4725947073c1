"""The one pass/fail verdict: check's report, lint's report and each of its launches, and the exit
codes all read it, so a suppressed finding cannot pass in one place and fail in another.

A finding fails when it is not suppressed and its severity is at or above `--fail-on`. Lint's
records carry `suppressed` (why a suppression or ignore accepted it, else None); the engine's
findings have no such field, as `check` has no suppressions: they are never suppressed.
"""

from __future__ import annotations

from h3doctor.engine.ruleset import SEVERITY_RANK

TYPE_CHECKING = False  # typing is not imported at run time (start-up: record.py)
if TYPE_CHECKING:
    from collections.abc import Iterable
    from typing import Any, TypeVar

    F = TypeVar("F")


def failing(findings: Iterable[F], fail_on: str) -> list[F]:
    """The findings that fail the run: not suppressed, at or above the `fail_on` severity."""
    bar = SEVERITY_RANK[fail_on]
    return [f for f in findings if getattr(f, "suppressed", None) is None and SEVERITY_RANK[f.severity] >= bar]


def verdict(findings: Iterable[Any], fail_on: str) -> str:
    """"fail" when any finding fails the run (`failing`), else "pass"."""
    return "fail" if failing(findings, fail_on) else "pass"
