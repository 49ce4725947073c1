"""`lint` as plain text: one `path:line:col: ID severity [target] message` line per diagnostic
(output/diagnostic.py), suppressed ones left out, then each launch's corrected command per target and a summary line
(`text`); the finding lines alone (`concise`, `--quiet`); or one line per rule with its count
(`--statistics`)."""

from __future__ import annotations

from typing import Any

from h3doctor.output.diagnostic import Diagnostic
from h3doctor.shellwords import safe_text

MESSAGE_LIMIT = 2000  # a longer message is shown as an excerpt (the JSON report has it whole)


def concise(diagnostics: list[Diagnostic]) -> list[str]:
    """One line per diagnostic that is not suppressed."""
    out = []
    for d in diagnostics:
        if d.suppression is not None:
            continue
        at = d.location
        target = f" [{d.target}]" if d.target else ""
        out.append(f"{safe_text(str(at.path))}:{at.line}:{at.column}: {d.rule} {d.severity}{safe_text(target)} "
                   f"{safe_text(d.qualified, MESSAGE_LIMIT)}")
    return out


def statistics(diagnostics: list[Diagnostic]) -> list[str]:
    """`count  ID  severity  name` per rule, most frequent first (ruff's --statistics)."""
    counts: dict[tuple[str, str, str], int] = {}
    for d in diagnostics:
        if d.suppression is None:
            key = (d.rule, d.severity, d.name)
            counts[key] = counts.get(key, 0) + 1
    return [f"{n:>5}  {rule:<8} {severity:<8} {name}"
            for (rule, severity, name), n in sorted(counts.items(), key=lambda kv: (-kv[1], kv[0]))]


def lines(report: dict[str, Any], diagnostics: list[Diagnostic], *, show_fixes: bool = True,
          summary: bool = True) -> list[str]:
    """The report's lines: `report` is lint's JSON object, `diagnostics` its findings."""
    out = concise(diagnostics)
    if show_fixes:
        for file in report["files"]:
            for launch in file["launches"]:
                fixes = {r["corrected_command"] for r in launch["results"] if r["corrected_command"]}
                for fix in sorted(fixes):
                    targets = ", ".join(r["target"] for r in launch["results"] if r["corrected_command"] == fix)
                    out.append(f"{safe_text(file['path'])}:{launch['line']}: corrected for {safe_text(targets)}: {fix}")
    if not summary:
        return out
    s = report["summary"]
    n = s["findings"]
    out.append(f"{s['files']} file(s), {s['launches']} launch(es), {s['checks']} check(s): "
               f"{n['error']} error(s), {n['warning']} warning(s), {n['info']} info, {s['suppressed']} suppressed"
               f" — {report['verdict']} (fail-on {report['fail_on']})")
    return out
