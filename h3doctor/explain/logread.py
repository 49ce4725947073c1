"""A crash log (or one pasted message) as the error lines explain matches: bounded, normalised
text, never executed.

Normalising undoes what terminals and log collectors add around sglang's words: CRLF and the
carriage-return redraws of progress bars (the last redraw is the line), ANSI colour and cursor
codes, other control characters, and the prefixes in front of a message — sglang's
`[MM-DD HH:MM:SS]` (with a rank suffix), ISO timestamps, log levels, `[rank0]:`, Ray's
`(Worker pid=…)`, compose's `service | `. Interleaved processes need nothing more: each error
line stands on its own.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Callable

from h3doctor.explain.patterns import EXC_TYPE

MAX_LINE_CHARS = 64 * 1024  # a longer line is cut (sglang's server_args line is ~10-20 KiB)
MAX_LINES = 400_000
MAX_BARE_LINES = 200  # a text without any error line: this many lines are read as bare messages

_ANSI = re.compile(r"\x1b\[[0-?]*[ -/]*[@-~]|\x1b\][^\x07\x1b]*(?:\x07|\x1b\\)?|\x1b[@-Z\\-_]")
_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f]")
_PREFIX = re.compile("|".join((
    r"\[[^\]\n]{0,60}?\d{1,2}:\d{2}:\d{2}[^\]\n]{0,60}\]\s?",  # sglang: [12-01 23:41:15 TP0]
    r"\d{4}-\d{2}-\d{2}[T ]\d{2}:\d{2}:\d{2}(?:[.,]\d+)?(?:Z|[+-]\d{2}:?\d{2})?\s+",
    r"\((?:[\w.]+ )?pid=\d+(?:, ip=[\d.]+)?\)\s+",  # Ray workers
    r"\[(?:rank|Rank|RANK)\s?\d+\]:\s?",  # torchrun
    r"(?:TP|DP|SP|PP|EP|CFG|rank|Rank|Worker|worker)\s?\d+\s?[:|]\s?",
    r"[\w.@-]{1,64}\s+\|\s",  # docker compose: `service  | `
    r"(?:INFO|WARNING|WARN|ERROR|DEBUG|CRITICAL)(?::|\s+-)?\s+",
)))
# bounded repeats: a hostile line of 64 KiB capitals must not cost a quadratic scan
# bounded repeats: a hostile line of 64 KiB capitals must not cost a quadratic scan
_EXCEPTION = re.compile(r"^(?P<qual>(?:[A-Za-z_]\w{0,80}\.){0,8})(?P<type>" + EXC_TYPE + r")(?::\s?(?P<msg>.*))?$")
_ARGPARSE = re.compile(r"^(?:(?P<prog>[\w./ -]{1,80}): )?error: (?P<msg>.+)$")
_INNER_EXCEPTION = re.compile(r"\b(?P<type>" + EXC_TYPE + r"): (?P<msg>.+)$")
_COMMAND = re.compile(
    r"(?:^|[\s$>#+])(?P<cmd>(?:[A-Za-z_]\w*=\S*\s+)*(?:sglang\s+(?:serve|generate)"
    r"|python3?(?:\.\d+)?\s+-m\s+sglang(?:\.cli\.main|\.launch_server|\.multimodal_gen\.runtime\.(?:launch_server|entrypoints\.cli\.main)))"
    r"(?:\s.*)?)$")
# the program _COMMAND ends its `NAME=value` words at, where a command can start: found first, in
# one pass, so _COMMAND is tried only from a bounded stretch before it (from every start of a long
# line, its repeat of `NAME=value ` words was quadratic: 63 KB of `a= ` took 16 s)
_PROGRAM = re.compile(
    r"(?:^|(?<=[\s$>#+]))(?:sglang\s+(?:serve|generate)"
    r"|python3?(?:\.\d+)?\s+-m\s+sglang(?:\.cli\.main|\.launch_server|\.multimodal_gen\.runtime\.(?:launch_server|entrypoints\.cli\.main)))"
    r"(?=\s|$)")
MAX_ENV_CHARS = 2048  # `NAME=value` words read in front of the program; more is not a launch's environment
_NOT_A_COMMAND = ("usage:", "<model>", "recommended entrypoint", "Example:")
_SERVER_ARGS = re.compile(r"^server_args: (?P<json>\{.*\})\s*$")


@dataclass(frozen=True)
class ErrorLine:
    line: int  # 1-based, in the text as given
    text: str  # the normalised line
    exc_type: str | None
    message: str  # what sglang's words are compared with (normalised: see patterns.normalise)
    kind: str  # exception | argparse | logged | bare


@dataclass(frozen=True)
class Found:
    """A launch the log holds: the command line, or the server_args JSON sglang logs."""
    line: int
    source: str  # "command line" | "server_args"
    text: str  # the command (shell words) or the JSON text


@dataclass
class LogText:
    lines: list[str]
    errors: list[ErrorLine]
    commands: list[Found] = field(default_factory=list)
    server_args: list[Found] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)


def normalise_line(raw: str) -> str:
    text = raw.rstrip("\r")
    if "\r" in text:  # a progress bar's redraws: what the terminal shows is the last one
        parts = [p for p in text.split("\r") if p.strip()]
        text = parts[-1] if parts else ""
    if "\x1b" in text:
        text = _ANSI.sub("", text)
    text = _CONTROL.sub("", text.replace("\t", "    "))
    for _ in range(8):
        m = _PREFIX.match(text)
        if m is None or not m.end():
            break
        text = text[m.end():]
    return text.rstrip()


def read_log(text: str, quoted: Callable[[str], bool] | None = None) -> LogText:
    """The error lines, command lines and server_args lines of a text (already decoded, bounded).
    `quoted`: fixed text of sglang's messages; a line holding one is read too, though no exception
    or argparse error introduces it (sglang logs some of its refusals as warnings)."""
    from h3doctor.explain.patterns import normalise

    raw_lines = text.split("\n")
    notes = []
    if len(raw_lines) > MAX_LINES:
        notes.append(f"the text has {len(raw_lines)} lines: read the first 1000 and the last {MAX_LINES - 1000}")
        raw_lines = raw_lines[:1000] + raw_lines[-(MAX_LINES - 1000):]
    cut = sum(1 for line in raw_lines if len(line) > MAX_LINE_CHARS)
    if cut:
        notes.append(f"{cut} line(s) longer than {MAX_LINE_CHARS // 1024} KiB were cut")
    lines = [normalise_line(line[:MAX_LINE_CHARS]) for line in raw_lines]
    log = LogText(lines, [], notes=notes)
    for number, line in enumerate(lines, 1):
        if not line.strip():
            continue
        error = _error_line(number, line, normalise)
        if error is None and quoted is not None and quoted(line):
            exc_type, message = normalise(line)
            error = ErrorLine(number, line, exc_type, message, "logged")
        if error is not None:
            log.errors.append(error)
        m = _SERVER_ARGS.match(line)
        if m:
            log.server_args.append(Found(number, "server_args", m.group("json")))
            continue
        m = _command(line) if "sglang" in line else None
        if m and error is None and not any(word in line for word in _NOT_A_COMMAND):
            log.commands.append(Found(number, "command line", m.group("cmd").strip()))
    if not log.errors:  # one message pasted without its exception type: every line is a candidate
        for number, line in enumerate(lines, 1):
            if line.strip() and len(log.errors) < MAX_BARE_LINES:
                exc_type, message = normalise(line)
                log.errors.append(ErrorLine(number, line, exc_type, message, "bare"))
    return log


def _command(line: str) -> re.Match[str] | None:
    """_COMMAND's leftmost match, tried only from MAX_ENV_CHARS before the first program."""
    program = _PROGRAM.search(line)
    if program is None:
        return None
    return _COMMAND.search(line, max(0, program.start() - MAX_ENV_CHARS - 1))


def _error_line(number: int, line: str, normalise) -> ErrorLine | None:
    m = _EXCEPTION.match(line)
    if m:
        return ErrorLine(number, line, m.group("type"), normalise(m.group("msg") or "")[1], "exception")
    m = _ARGPARSE.match(line)
    if m:
        exc_type, message = normalise(m.group("msg"))
        return ErrorLine(number, line, exc_type, message, "argparse")
    m = _INNER_EXCEPTION.search(line) if ("Error: " in line or "Exception: " in line) else None
    if m and not line.startswith(" "):  # a logged failure quoting the exception: "Error executing ...: X: msg"
        return ErrorLine(number, line, m.group("type"), normalise(m.group("msg"))[1], "logged")
    return None
