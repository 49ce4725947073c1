"""How a POSIX shell reads the first words of a simple command (`NAME=value` assignments set the
program's environment, the `exec` builtin runs the program in the shell's own process), and how a
word or text from an input is written back for a person: quoted so bash reads the same bytes,
control characters made inert. The launch-form reader (sglang/launch_forms.py), the launcher
(launch/) and every renderer (output/) need it."""

from __future__ import annotations

import re

from h3doctor.unresolved import MARK, as_written

ASSIGNMENT = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*=")


# The programs that can stand in front of sglang (README "Launch forms"): the wrappers h3doctor's
# launch-form reader reads (sglang/launch_forms.py) and the programs that start sglang. The shell
# hook (launch/hook.py) defines a function for each that a shell lets a function stand in for, so
# the forms `check` reads and the forms the hook intercepts are this one list.
WRAPPER_PROGRAMS = ("env", "nohup", "setsid", "time", "uv", "pipx")  # `uv run`, `pipx run`
SHELL_KEYWORDS = ("exec", "time")  # read by the shell itself: `time sglang` calls the sglang function
SGLANG_PROGRAM = "sglang"
PYTHON_PROGRAM = re.compile(r"^python(\d+(\.\d+)?)?$")  # python, python3, python3.11 (`-m sglang…`)


def is_assignment(word: str) -> bool:
    return ASSIGNMENT.match(word) is not None


def split_exec(words: list[str]) -> tuple[list[str], dict[str, str]]:
    """(program argv, assignments) for `NAME=value… [exec] program args…`: what a shell hands to
    exec. Words after the program are never read as assignments (`env A=1 prog` is env's job)."""
    env: dict[str, str] = {}
    i = 0
    while i < len(words) and is_assignment(words[i]):
        name, _, value = words[i].partition("=")
        env[name] = value
        i += 1
    if i < len(words) and words[i] == "exec":
        i += 1
    return list(words[i:]), env


# --- Showing words and text others wrote -----------------------------------------------------
# A word or message from an input may hold control characters (an ESC sequence, a carriage
# return that rewrites the line a user reads before answering y/N) or bytes that are not UTF-8
# (surrogateescape's \udc80-\udcff). Shown raw, the terminal obeys them and the command on screen
# is not the one that runs. `join` quotes each word as bash reads it back to the same bytes;
# `safe_text` makes free text inert. Both are the only way h3doctor's renderers show input.

_SAFE_WORD = re.compile(r"[\w@%+=:,./-]+", re.ASCII)
_NAMED = {"\a": "\\a", "\b": "\\b", "\x1b": "\\e", "\f": "\\f", "\n": "\\n", "\r": "\\r", "\t": "\\t", "\v": "\\v"}


def _shown(ch: str) -> bool:
    """A character a terminal draws as itself (no control, format, separator or lone surrogate)."""
    return ch == " " or ch.isprintable()


def _ansi_c(ch: str) -> str:
    """`ch` as bash's $'...' reads it back: named escapes, else every byte as \\xHH (an
    undecodable byte is its own byte; any other character its UTF-8 bytes, whatever the locale)."""
    if ch in _NAMED:
        return _NAMED[ch]
    if ch in "\\'":
        return "\\" + ch
    if _shown(ch):
        return ch
    return "".join(f"\\x{b:02x}" for b in ch.encode("utf-8", "surrogateescape"))


def quote(word: str) -> str:
    """One word as a shell reads it back exactly: as is when it is plain, in single quotes when it
    only holds characters a terminal shows, else bash's ANSI-C quoting ($'\\e[2K'), which bash and
    zsh read back to the same bytes (shlex.split does not know $'...'). A word holding an expansion
    its file leaves to the shell (marked: h3doctor/unresolved.py) is written as the file wrote it,
    in double quotes, so the shell expands it as one word (a character a terminal would obey
    shown as its escape: inert, as nothing else can be inside double quotes)."""
    if MARK in word:
        return '"' + safe_text(as_written(word)).replace('"', '\\"') + '"'
    if word and _SAFE_WORD.fullmatch(word):
        return word
    if all(map(_shown, word)):
        return "'" + word.replace("'", "'\"'\"'") + "'"
    return "$'" + "".join(map(_ansi_c, word)) + "'"


def join(words: list[str] | tuple[str, ...]) -> str:
    """A command line that bash runs as exactly these words (see `quote`)."""
    return " ".join(quote(w) for w in words)


def safe_text(text: str, limit: int | None = None) -> str:
    """Free text (a message, a file name) safe to print: each character a terminal would obey
    instead of show written as its escape (`\\e`, `\\r`, `\\xff`, `\\u202e`); with `limit`, cut to
    about that many characters with `...` and how much was left out."""
    if limit is not None and len(text) > limit:
        text = f"{text[:limit]}... ({len(text) - limit} more characters)"
    if all(map(_shown, text)):
        return text
    return "".join(ch if _shown(ch) else _text_escape(ch) for ch in text)


def _text_escape(ch: str) -> str:
    if ch in _NAMED:
        return _NAMED[ch]
    if 0xDC80 <= ord(ch) <= 0xDCFF:  # an undecodable byte (surrogateescape)
        return f"\\x{ord(ch) - 0xDC00:02x}"
    return f"\\x{ord(ch):02x}" if ord(ch) < 0x100 else f"\\u{ord(ch):04x}" if ord(ch) < 0x10000 else f"\\U{ord(ch):08x}"


def join_excerpt(words: list[str] | tuple[str, ...], limit: int = 500) -> str:
    """`join(words)` for a sentence about them: the first words up to about `limit` characters,
    then how many more there are (the exact words stay in the data beside it)."""
    shown: list[str] = []
    size = 0
    for n, word in enumerate(words):
        text = quote(word) if len(word) <= limit else quote(word[:limit]) + "..."
        size += len(text) + 1
        if size > limit and shown:
            return f"{' '.join(shown)} ... ({len(words) - n} more words)"
        shown.append(text)
    return " ".join(shown)
