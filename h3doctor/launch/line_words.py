"""The words of a command line a user submits, read as data (never evaluated): split into simple
commands at `;`, `&`, `&&`, `|`, `||`, `(`, `)` and newlines, quotes removed, redirections dropped.
The command-line hook (launch/hook_line.py) judges each simple command that is an sglang launch.

The shell expands `$NAME`, `$(…)`, backquotes, `~`, globs and braces only when the line runs: a
word holding one unquoted is marked `expands` (its value is not known here, so a launch holding
it cannot be verified). bash, zsh and fish read quotes alike for what matters here ('…' literal,
"…" with backslash escapes); fish's `(…)` is its command substitution, split like a subshell."""

from __future__ import annotations

from h3doctor.record import record

_BLANK = " \t"
_SEPARATORS = ";&|()\n"
_REDIRECTS = "<>"
_GLOB = "*?[{~"
_ESCAPED_IN_DOUBLE = '$`"\\\n'


@record
class Word:
    text: str
    expands: bool = False  # holds an unquoted (or double-quoted) expansion the shell makes when it runs


def simple_commands(line: str) -> list[list[Word]]:
    """The simple commands of `line`, each its words (redirections and their targets left out)."""
    commands: list[list[Word]] = [[]]
    chars = list(line)
    i, n = 0, len(chars)
    skip_next = False  # the next word is a redirection's target
    while i < n:
        ch = chars[i]
        if ch in _BLANK:
            i += 1
            continue
        if ch == "#" and (i == 0 or chars[i - 1] in _BLANK + _SEPARATORS):
            while i < n and chars[i] != "\n":  # a comment, to the end of the line
                i += 1
            continue
        if ch in _SEPARATORS and not _redirect_at(chars, i):
            if commands[-1]:
                commands.append([])
            i += 1
            continue
        if ch in _REDIRECTS or _redirect_at(chars, i):
            i = _skip_operator(chars, i)
            skip_next = True
            continue
        word, i = _read_word(chars, i)
        if i < n and chars[i] in _REDIRECTS and word.text.isdigit() and not word.expands:
            continue  # `2>&1`: the digits glued to the operator are its file descriptor
        if skip_next:
            skip_next = False
            continue
        commands[-1].append(word)
    return [c for c in commands if c]


def _redirect_at(chars: list[str], i: int) -> bool:
    """`&>` and `>&`/`<&`'s `&`: a redirection, not a separator."""
    return chars[i] == "&" and i + 1 < len(chars) and chars[i + 1] == ">"


def _skip_operator(chars: list[str], i: int) -> int:
    while i < len(chars) and chars[i] in "<>&|-":
        i += 1
    return i


def _read_word(chars: list[str], i: int) -> tuple[Word, int]:
    out: list[str] = []
    expands = False
    n = len(chars)
    start = i
    while i < n and chars[i] not in _BLANK + _SEPARATORS + _REDIRECTS:
        ch = chars[i]
        if ch == "\\":
            if i + 1 < n and chars[i + 1] != "\n":
                out.append(chars[i + 1])
            i += 2
        elif ch == "'":
            end = _closing(chars, i + 1, "'")
            out.extend(chars[i + 1 : end])
            i = end + 1
        elif ch == '"':
            i += 1
            while i < n and chars[i] != '"':
                if chars[i] == "\\" and i + 1 < n and chars[i + 1] in _ESCAPED_IN_DOUBLE:
                    out.append(chars[i + 1])
                    i += 2
                    continue
                if chars[i] in "$`":
                    end = _substitution_end(chars, i)
                    out.extend(chars[i:end])
                    expands, i = True, end
                    continue
                out.append(chars[i])
                i += 1
            i += 1
        elif ch in "$`":
            end = _substitution_end(chars, i)
            out.extend(chars[i:end])
            expands, i = True, end
        else:
            expands = expands or ch in _GLOB and (ch != "~" or i == start)
            out.append(ch)
            i += 1
    return Word("".join(out), expands), i


def _substitution_end(chars: list[str], i: int) -> int:
    """Past `$(…)`, `${…}`, `$((…))` or `` `…` `` at i (one word, however many blanks it holds), else past `$`."""
    if chars[i] == "`":
        return _closing(chars, i + 1, "`") + 1
    if i + 1 < len(chars) and chars[i + 1] in "({":
        opening, closing = chars[i + 1], ")" if chars[i + 1] == "(" else "}"
        depth, i = 0, i + 1
        while i < len(chars):
            depth += (chars[i] == opening) - (chars[i] == closing)
            i += 1
            if depth == 0:
                break
        return i
    return i + 1


def _closing(chars: list[str], i: int, quote: str) -> int:
    while i < len(chars) and chars[i] != quote:
        i += 1
    return i
