"""The launch a log holds, as shell words: its command line, else the `server_args: {…}` line
sglang logs at the end of ServerArgs.__post_init__ (its fields as JSON, once adjusted and
validated), rebuilt into flags. The command line wins: it is the user's own form.

The rebuilt command carries resolved values (what the auto-tuner and the adjust phase chose),
not what was typed; fields at their default are left out, and so are fields no flag sets.
"""

from __future__ import annotations

import json
from typing import Any

from h3doctor import shellsplit
from h3doctor.explain.logread import Found, LogText
from h3doctor.safeload import load_json


# what only `sglang generate` prints: its frames in a traceback (the server_args line is the same for both)
GENERATE_MARKERS = ("generate_cmd", "DiffGenerator", "entrypoints/cli/generate.py")


def entry_of(log: LogText) -> str:
    """`generate` when the log shows generate's own code running, else `serve`."""
    return "generate" if any(marker in line for line in log.lines for marker in GENERATE_MARKERS) else "serve"


def from_log(log: LogText, table: Any) -> tuple[list[str] | None, Found | None, str | None]:
    """(the launch's words, where it was found, why a found one could not be read)."""
    problem = None
    for found in log.commands:
        try:
            words = shellsplit.split(found.text)
        except ValueError as exc:
            problem = f"line {found.line}: the command line cannot be split into words ({exc})"
            continue
        if words:
            return words, found, None
    for found in log.server_args:
        try:
            data = load_json(found.text, origin=f"line {found.line}")
        except Exception as exc:  # noqa: BLE001 - a damaged line is reported, never fatal
            problem = f"line {found.line}: server_args is not readable JSON ({type(exc).__name__})"
            continue
        if isinstance(data, dict) and isinstance(data.get("model_path"), str):
            return argv_from_server_args(data, table, entry_of(log)), found, None
        problem = f"line {found.line}: server_args has no model_path"
    return None, None, problem


def argv_from_server_args(data: dict[str, Any], table: Any, entry: str = "serve") -> list[str]:
    # serve takes the model as its positional word; generate only as --model-path
    words = ["sglang", entry, data["model_path"]] if entry == "serve" else ["sglang", entry, "--model-path", data["model_path"]]
    options = table.options_for(entry)
    for dest, value in data.items():
        opt = table.primary_option(dest)
        action = table.by_dest.get(dest)
        if dest == "model_path" or opt is None or opt not in options or action.action in ("help", "version"):
            continue
        if value is None or value == table.default_of(dest) or value in ({}, []):
            continue
        if action.action == "store_true":
            words += [opt] if value is True else []
        elif action.action == "store_boolean":
            words += [opt, "true" if value else "false"]
        elif isinstance(value, list):
            if action.nargs in ("+", "*"):
                words += [opt, *(json.dumps(v) if isinstance(v, (dict, list)) else str(v) for v in value)]
        elif isinstance(value, dict):
            words += [opt, json.dumps(value, separators=(",", ":"))]
        elif isinstance(value, bool):
            words += [opt, "true" if value else "false"]
        else:
            words += [opt, str(value)]
    return words
