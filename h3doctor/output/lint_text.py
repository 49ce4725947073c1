"""`lint` as plain text: one `path:line:col: ID severity [target] message` line per diagnostic
(output/diagnostic.py), suppressed ones left out, then each launch's corrected command per target and a summary line
(`text`, folded to the terminal's width; a corrected command never is); the finding lines alone (`concise`, `--quiet`); or one line per rule with its count
(`--statistics`)."""

from __future__ import annotations

import re
from typing import Any, TextIO

from h3doctor.output.diagnostic import Diagnostic
from h3doctor.output.lines import Lines
from h3doctor.shellwords import safe_text

MESSAGE_LIMIT = 2000  # a longer message is shown as an excerpt (the JSON report has it whole)
_LINE_BREAK = re.compile(r"[ \t]*(?:\r\n|\n)[ \t]*")


def one_line(message: str) -> str:
    """A message sglang prints on several lines (H3D040's "…entrypoint.\\n  Example: …") as one line
    of this format: each line break and the indent around it is one space. Any other control
    character is still shown as its escape (safe_text)."""
    return _LINE_BREAK.sub(" ", message)


def concise(diagnostics: list[Diagnostic]) -> list[str]:
    """One line per diagnostic that is not suppressed."""
    out = []
    for d in diagnostics:
        if d.suppression is not None:
            continue
        at = d.location
        target = f" [{d.target}]" if d.target else ""
        out.append(f"{safe_text(str(at.path))}:{at.line}:{at.column}: {d.rule} {d.severity}{safe_text(target)} "
                   f"{safe_text(one_line(d.qualified), MESSAGE_LIMIT)}")
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
    return concise(diagnostics) + (corrected(report) if show_fixes else []) + ([total(report)] if summary else [])


def write(console: Any, out: TextIO, report: dict[str, Any], diagnostics: list[Diagnostic], *, before: list[str] | tuple[str, ...] = (),
          show_fixes: bool = True, summary: bool = True) -> None:
    """The report's lines on `console`, folded to its width (output/lines.py) with a hanging indent;
    a line that carries a corrected command goes to `out` whole, whatever the width."""
    folded = Lines(console)
    for line in [*before, *concise(diagnostics)]:
        folded.say(line, hang=4)
    for line in corrected(report) if show_fixes else ():
        out.write(line + "\n")
        out.flush()
    if summary:
        folded.say(total(report), hang=4)


def corrected(report: dict[str, Any]) -> list[str]:
    """`path:line: corrected for TARGETS: COMMAND`, one line per launch and distinct command."""
    out = []
    for file in report["files"]:
        for launch in file["launches"]:
            fixes = {r["corrected_command"] for r in launch["results"] if r["corrected_command"]}
            for fix in sorted(fixes):
                targets = ", ".join(r["target"] for r in launch["results"] if r["corrected_command"] == fix)
                out.append(f"{safe_text(file['path'])}:{launch['line']}: corrected for {safe_text(targets)}: {fix}")
    return out


def total(report: dict[str, Any]) -> str:
    """The summary line: what was read, what was found, the verdict."""
    s = report["summary"]
    n = s["findings"]
    return (f"{s['files']} file(s), {s['launches']} launch(es), {s['checks']} check(s): "
            f"{n['error']} error(s), {n['warning']} warning(s), {n['info']} info, {s['suppressed']} suppressed"
            f" — {report['verdict']} (fail-on {report['fail_on']})")
