"""SARIF 2.1.0 for code scanning (GitHub and others), from the diagnostics (output/diagnostic.py)
and the rule list. Help links point into the repository's rule docs:
`<help_uri_base>/docs/rules.md#<id lowercased>` (`h3doctor rules --format markdown` writes that
page; `help_uri_base` is set in .h3doctor.yaml)."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from h3doctor import __version__
from h3doctor.output.diagnostic import Diagnostic, Fix
from h3doctor.shellwords import safe_text

SARIF_SCHEMA = "https://json.schemastore.org/sarif-2.1.0.json"
DEFAULT_HELP_URI_BASE = "https://h3doctor.invalid"
_LEVEL = {"error": "error", "warning": "warning", "info": "note"}
MESSAGE_LIMIT = 2000  # a SARIF viewer shows the text as it is: an excerpt, escaped


def help_uri(base: str | None, rule_id: str) -> str:
    return f"{(base or DEFAULT_HELP_URI_BASE).rstrip('/')}/docs/rules.md#{rule_id.lower()}"


def artifact_uri(path: str, root: str | None = None) -> str:
    """Relative to the working directory (the repository root in CI), else an absolute file URI;
    either way a URI (RFC 3986): every byte of the file's name (non-UTF-8 ones as they are on disk)
    but unreserved characters and `/` percent-encoded, so `h#1.sh` is not a fragment, `q?x.sh` not
    a query and `c:d.sh` not a scheme (`c%3Ad.sh`)."""
    from urllib.parse import quote

    absolute = Path(os.path.abspath(path))
    try:
        relative = absolute.relative_to(Path(root or os.getcwd()).resolve()).as_posix()
    except ValueError:
        return absolute.as_uri()  # pathlib percent-encodes the file system's bytes the same way
    return quote(os.fsencode(relative), safe="/")


def _fix(fix: Fix, path: str) -> dict[str, Any]:
    """SARIF 3.55 `fix`: the launch's edited spans of its file (3.56 artifactChange, 3.57
    replacement); the applicability (ruff's safe/unsafe) as a property."""
    return {
        "description": {"text": safe_text(fix.description, MESSAGE_LIMIT)},
        "artifactChanges": [{"artifactLocation": {"uri": artifact_uri(path)}, "replacements": [{
            "deletedRegion": {"startLine": r.line, "startColumn": r.column, "endLine": r.end_line,
                              "endColumn": r.end_column},
            "insertedContent": {"text": r.text},
        } for r in fix.replacements]}],
        "properties": {"applicability": fix.applicability},
    }


def build(diagnostics: list[Diagnostic], rules: list[dict[str, Any]], *, help_uri_base: str | None = None) -> dict[str, Any]:
    index = {r["id"]: i for i, r in enumerate(rules)}
    driver_rules = [{
        "id": r["id"],
        "name": r["name"],
        "shortDescription": {"text": r["title"]},
        "fullDescription": {"text": r["why"] or r["title"]},
        "help": {"text": r["help"], "markdown": r["help"].replace("<", "&lt;").replace("\n", "  \n")},
        "helpUri": help_uri(help_uri_base, r["id"]),
        "defaultConfiguration": {"level": _LEVEL[r["severity"]]},
        "properties": {"catalog": r["catalog_refs"], "stage": r["stage"], "tags": ["sglang", "minimax-h3"]},
    } for r in rules]
    results = []
    for d in diagnostics:
        target = f" [target {d.target}]" if d.target else ""
        result: dict[str, Any] = {
            "ruleId": d.rule,
            "level": _LEVEL[d.severity],
            "message": {"text": safe_text(f"{d.qualified}{target}", MESSAGE_LIMIT)},
            "partialFingerprints": {"h3doctor/v1": d.fingerprint},
            "properties": {"target": d.target, "hardware": d.hardware, "launch": d.launch,
                           "catalog": list(d.catalog), "cannotVerify": d.cannot_verify,
                           "foundAfterFix": d.found_after_fix,
                           "sglangVersion": d.sglang_version, "sglangVersionSource": d.sglang_version_source},
        }
        if d.rule in index:
            result["ruleIndex"] = index[d.rule]
        at = d.location
        if at is not None and at.path:
            region = {"startLine": at.line}
            if at.column:
                region["startColumn"] = at.column
            if at.end_line is not None and at.end_column is not None:  # the word's extent as written
                region["endLine"], region["endColumn"] = at.end_line, at.end_column
            result["locations"] = [{"physicalLocation": {
                "artifactLocation": {"uri": artifact_uri(at.path)}, "region": region}}]
        else:  # a launch given on the command line: no artifact, a logical location (SARIF 3.33)
            result["locations"] = [{"logicalLocations": [{"name": d.launch or "command line",
                                                          "fullyQualifiedName": "command line", "kind": "module"}]}]
        if d.fix is not None and at is not None and at.path:
            result["fixes"] = [_fix(d.fix, at.path)]
        if d.suppression is not None:
            result["suppressions"] = [{"kind": d.suppression.kind, "justification": d.suppression.reason}]
        results.append(result)
    return {
        "$schema": SARIF_SCHEMA,
        "version": "2.1.0",
        "runs": [{
            "tool": {"driver": {"name": "h3doctor", "version": __version__, "semanticVersion": __version__,
                                "informationUri": help_uri(help_uri_base, "").removesuffix("#"),
                                "rules": driver_rules}},
            "columnKind": "unicodeCodePoints",
            "results": results,
        }],
    }
