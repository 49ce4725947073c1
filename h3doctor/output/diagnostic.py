"""The located finding: one `Diagnostic` per finding (or lint notice), on one target, that every
finding writer reads — lint's text, the JSON report's `findings`, SARIF, GitHub annotations — and
the verdict (`output/verdict.py`) honours through its suppression; lint's carry their fix and its
applicability for SARIF's `fixes`.

A diagnostic is built from an engine `Finding` in one place (`from_finding`), with where lint (or a
recipe) locates it; `check` builds them directly, with no location when the launch came from the
command line. A `@record`, not a dataclass: check's SARIF and GitHub writers are its readers too
(docs/architecture.md, "@record or @dataclass").
"""

from __future__ import annotations

import hashlib

from h3doctor.output.glimpse import glimpsed
from h3doctor.record import record

TYPE_CHECKING = False  # typing is not imported at run time (start-up: record.py)
if TYPE_CHECKING:
    from typing import Any

    from h3doctor.engine.results import Evaluation, Finding
    from h3doctor.engine.ruleset import Rule

# what each suppression source is to SARIF (3.34 suppression.kind): written in the file, or elsewhere
SUPPRESSION_KIND = {"comment": "inSource", "recipe": "external", "config": "external", "baseline": "external"}


@record(frozen=True)
class Location:
    """Where in its file the diagnostic points (1-based; column 0: the line as a whole)."""

    path: str
    line: int
    column: int
    end_line: int | None = None
    end_column: int | None = None


@record(frozen=True)
class Replacement:
    """Text of the file replaced: from line:column to end_line:end_column (1-based, the end column
    the first one past the span; equal ends: an insertion) by `text`."""

    line: int
    column: int
    end_line: int
    end_column: int
    text: str


@record(frozen=True)
class Fix:
    """What `lint --fix` would write for the launch a diagnostic is about: the launch's edited text
    spans, and whether it is applied unasked ("safe") or only with --unsafe-fixes ("unsafe")."""

    description: str
    applicability: str
    replacements: tuple[Replacement, ...]


@record(frozen=True)
class Suppressed:
    """What accepted a diagnostic: `by` one of SUPPRESSION_KIND's sources, and the reason given."""

    by: str
    reason: str

    @property
    def kind(self) -> str:
        return SUPPRESSION_KIND[self.by]


@record(frozen=True)
class Diagnostic:
    """One finding (or lint notice) where it was found: the rule, sglang's message, where, on which
    target and release, and whether a suppression accepted it."""

    rule: str  # the rule's (or notice's) ID
    name: str
    title: str
    severity: str
    message: str  # sglang's own words where it prints any
    location: Location | None = None  # None: a launch given on the command line
    why: str = ""
    stage: str | None = None
    catalog: tuple[str, ...] = ()
    target: str | None = None
    hardware: str | None = None
    launch: str | None = None  # the launch's label ("command line" when it was not read from a file)
    input_kind: str | None = None
    unknown_facts: tuple[str, ...] = ()
    cannot_verify_why: str | None = None  # with unknown facts: what is not known, in words
    found_after_fix: bool = False  # sglang reports it only once the launch's first findings are fixed
    sglang_version: str | None = None  # the release the launch was judged for, and where that came from
    sglang_version_source: str | None = None
    suppression: Suppressed | None = None
    fix: Fix | None = None  # lint: the launch's correction where it would fix this finding

    @property
    def cannot_verify(self) -> bool:
        return bool(self.unknown_facts)

    @property
    def suppressed(self) -> str | None:
        """Why a suppression accepted it (None: it counts); what output/verdict.py reads."""
        return None if self.suppression is None else self.suppression.reason

    @property
    def fingerprint(self) -> str:
        """Stable while lines move: the file, rule, target, launch and message, not the position."""
        path = self.location.path if self.location is not None else ""
        h = hashlib.sha256("\0".join([path, self.rule, self.target or "", self.launch or "", self.message])
                           .encode("utf-8", "surrogatepass"))  # a file name that is not UTF-8 too
        return h.hexdigest()[:32]

    @property
    def qualified(self) -> str:
        """The message as the text, SARIF and GitHub formats show it: a "cannot verify" one says so
        first (and what is not known), one met only while fixing says when sglang reports it."""
        text = self.message
        if self.cannot_verify:
            why = self.cannot_verify_why
            text = f"cannot verify{f' ({why})' if why else ''}: {text}"
        if self.found_after_fix:
            text = f"once the first findings are fixed: {text}"
        return text

    def as_json(self) -> dict[str, Any]:
        """The finding record of the JSON reports (lint-report.schema.json's `findings`)."""
        at = self.location
        return {
            "rule": self.rule, "name": self.name, "title": self.title, "severity": self.severity,
            "stage": self.stage, "message": self.message, "catalog": ",".join(self.catalog),
            "catalog_refs": list(self.catalog),
            "file": at.path if at else None, "line": at.line if at else None, "col": at.column if at else None,
            "target": self.target, "hardware": self.hardware, "launch": self.launch, "input_kind": self.input_kind,
            "cannot_verify": self.cannot_verify,
            "cannot_verify_why": self.cannot_verify_why if self.cannot_verify else None,
            "found_after_fix": self.found_after_fix,
            "sglang_version": self.sglang_version, "sglang_version_source": self.sglang_version_source,
            "suppressed": None if self.suppression is None else {"kind": self.suppression.kind,
                                                                 "reason": self.suppression.reason},
            "fingerprint": self.fingerprint,
        }


def of_rule(rule: Rule, severity: str, message: str, location: Location | None = None, *, why: str = "",
            **about: Any) -> Diagnostic:
    """A diagnostic of one of the rules (`about`: Diagnostic's fields from `target` on)."""
    return Diagnostic(rule.id, rule.name, rule.title, severity, message, location, why=why or rule.why, stage=rule.stage,
                      catalog=tuple(rule.catalog), **about)


def from_finding(f: Finding, ev: Evaluation, location: Location | None = None, **about: Any) -> Diagnostic:
    """One finding of an evaluation as a diagnostic: its message with long values the launch gave
    only glimpsed (output/glimpse.py), and the release it was judged for (`ev`'s context)."""
    return of_rule(f.rule, f.severity, glimpsed(f.message, ev), location, why=f.why, unknown_facts=tuple(f.unknown_facts),
                   cannot_verify_why=f.unknown_why or None, sglang_version=ev.context.get("release.version"),
                   sglang_version_source=ev.context.get("release.source"), **about)
