"""GitHub Actions workflow commands: one `::error file=…,line=…,col=…,title=ID::message` line per
diagnostic (output/diagnostic.py; warnings as `::warning`, info as `::notice`), escaped as the runner parses them: in the
message `%`, CR and LF; in properties also `:` and `,`."""

from __future__ import annotations

import os
import re
from h3doctor.output.diagnostic import Diagnostic
from h3doctor.shellwords import safe_text

_LINE_BREAK = re.compile(r"(\r|\n)")
_COMMAND = {"error": "error", "warning": "warning", "info": "notice"}


def escape_data(text: str) -> str:
    """The runner's escapes (CR and LF as %0D, %0A), once every other control character (an ESC
    would colour the log) is written as its escape by safe_text."""
    text = "".join(part if part in ("\r", "\n") else safe_text(part) for part in _LINE_BREAK.split(text))
    return text.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")


def escape_property(text: str) -> str:
    return escape_data(text).replace(":", "%3A").replace(",", "%2C")


def lines(diagnostics: list[Diagnostic]) -> list[str]:
    out = []
    for d in diagnostics:
        if d.suppression is not None:
            continue
        props = []
        at = d.location
        if at is not None and at.path:
            props += [f"file={escape_property(_relative(at.path))}", f"line={at.line}"]
            if at.column:
                props.append(f"col={at.column}")
        props.append(f"title={escape_property(d.rule)}")
        target = f" [target {d.target}]" if d.target else ""
        out.append(f"::{_COMMAND[d.severity]} {','.join(props)}::{escape_data(d.qualified + target)}")
    return out


def _relative(path: str) -> str:
    """GitHub resolves `file=` against the repository root (the working directory in CI)."""
    absolute = os.path.abspath(path)
    rel = os.path.relpath(absolute)
    return path if rel.startswith("..") else rel.replace(os.sep, "/")
