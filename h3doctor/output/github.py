"""GitHub Actions workflow commands: one `::error file=…,line=…,col=…,title=ID::message` line per
finding (warnings as `::warning`, info as `::notice`), escaped as the runner parses them: in the
message `%`, CR and LF; in properties also `:` and `,`."""

from __future__ import annotations

import os
import re
from typing import Any

from h3doctor.output.lint_text import qualified
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


def lines(findings: list[dict[str, Any]]) -> list[str]:
    out = []
    for f in findings:
        if f.get("suppressed"):
            continue
        props = []
        if f.get("file"):
            props += [f"file={escape_property(_relative(f['file']))}", f"line={f['line']}"]
            if f.get("col"):
                props.append(f"col={f['col']}")
        props.append(f"title={escape_property(f['rule'])}")
        target = f" [target {f['target']}]" if f.get("target") else ""
        out.append(f"::{_COMMAND[f['severity']]} {','.join(props)}::{escape_data(qualified(f) + target)}")
    return out


def _relative(path: str) -> str:
    """GitHub resolves `file=` against the repository root (the working directory in CI)."""
    absolute = os.path.abspath(path)
    rel = os.path.relpath(absolute)
    return path if rel.startswith("..") else rel.replace(os.sep, "/")
