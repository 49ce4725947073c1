"""Every command's report formats in one table: `FORMATS[command][name]` is the writer.

A writer turns a finished `Report` into the whole text of the report; the CLI writes that text to
stdout or `--output-file` (the same bytes either way) and lists a command's formats from here, so
a format exists for a command exactly when it is in this table. A command offers a format by
handing its `Report` the parts that format reads: `data` (every command: the JSON object), `text`
(the human renderer), `diagnostics` and `rules` (the located findings, output/diagnostic.py, and
the rule list that SARIF, GitHub annotations and lint's concise lines read). Registering a new command is one line, e.g.

    FORMATS["explain"] = {"text": write_text, "json": write_json}

with the command building `Report(data=..., text=...)`.
"""

from __future__ import annotations

import io
from collections.abc import Callable
from h3doctor.errors import UsageError
from h3doctor.output.json_text import json_text
from h3doctor.record import record

TYPE_CHECKING = False  # typing is not imported at run time (start-up: record.py)
if TYPE_CHECKING:
    from typing import Any

    from h3doctor.output.diagnostic import Diagnostic


@record(frozen=True)
class Report:
    """What a command hands its format writers."""

    data: Any  # the command's JSON object: exactly what `json` writes
    text: Callable[[Any, io.StringIO], None] | None = None  # text(console, out): styled lines to console, commands to out
    diagnostics: Callable[[], list[Diagnostic]] | None = None  # the located findings, built when asked
    rules: Callable[[], list[dict[str, Any]]] | None = None  # rule metadata for SARIF's driver
    help_uri_base: str | None = None
    styled: bool = False  # text for a terminal: Rich's colours; otherwise plain (markup.PlainConsole)
    width: int | None = None  # the columns the text renderers fold their lines to; None: a terminal's own, or never


def terminal_width(stream) -> int | None:
    """The columns a text report is folded to on `stream`: $COLUMNS when it is a number (as Rich
    and most programs read it), else the terminal's, else None (a pipe or a file: lines whole)."""
    import os

    from h3doctor.digits import is_digits

    columns = os.environ.get("COLUMNS", "")
    if is_digits(columns) and 0 < int(columns) <= 10000:
        return int(columns)
    try:
        return os.get_terminal_size(stream.fileno()).columns if stream.isatty() else None
    except (AttributeError, OSError, ValueError):
        return None


def write_json(report: Report) -> str:
    return json_text(report.data)


def write_text(report: Report) -> str:
    buf = io.StringIO()
    report.text(_console(buf, report.styled, report.width), buf)
    return buf.getvalue()


def write_sarif(report: Report) -> str:
    from h3doctor.output import sarif

    return json_text(sarif.build(report.diagnostics(), report.rules(), help_uri_base=report.help_uri_base))


def write_github(report: Report) -> str:
    from h3doctor.output import github

    return "".join(line + "\n" for line in github.lines(report.diagnostics()))


def write_concise(report: Report) -> str:
    from h3doctor.output.lint_text import concise

    return "".join(line + "\n" for line in concise(report.diagnostics()))


_FINDINGS_FORMATS = {"text": write_text, "json": write_json, "sarif": write_sarif, "github": write_github}

FORMATS: dict[str, dict[str, Callable[[Report], str]]] = {
    "check": dict(_FINDINGS_FORMATS),
    "lint": {**_FINDINGS_FORMATS, "concise": write_concise},
    "suggest": {"text": write_text, "json": write_json},
    "explain": {"text": write_text, "json": write_json},
    "doctor": {"text": write_text, "json": write_json},
    "probe": {"text": write_text, "json": write_json},
}


def names(command: str) -> tuple[str, ...]:
    return tuple(FORMATS[command])


def render(command: str, name: str, report: Report) -> str:
    """The report's whole text in the named format (a format the command does not offer: exit 2)."""
    writer = FORMATS[command].get(name)
    if writer is None:
        raise UsageError(f"{command} has no format {name[:40]!r}; formats: {', '.join(FORMATS[command])}")
    return writer(report)


def _console(buf: io.StringIO, styled: bool, width: int | None = None):
    if not styled:
        from h3doctor.output.markup import PlainConsole

        return PlainConsole(buf, width)
    import os

    from rich.console import Console

    # a terminal's colours, written into the text like everything else (the CLI prints it once)
    return Console(file=buf, force_terminal=True, no_color=bool(os.environ.get("NO_COLOR")), highlight=False,
                   soft_wrap=True, emoji=False, width=width)
