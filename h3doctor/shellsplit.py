"""Shell text into words: the one place h3doctor splits what a shell would read (a recipe's
`command:` string, a script, a Dockerfile's RUN and FROM, a Slurm `#SBATCH` line, a `-c` script of
`docker run … bash -lc`, the command line a log shows, the line the command-line hook is handed).
Writing words back for a shell is `shellwords.py`'s (quoting); reading them is this module's.

Two engines, each where it is right:

* `split` (words only) is the stdlib's `shlex.split` in POSIX mode without comments, as every
  caller of it has read its text from the start (a recipe's `#` is a word, not a comment). A text
  with none of the characters where shlex and the shell differ is split by one regular expression
  instead (same words, tested: a lint run reads thousands of recipes); with `continuations`, a
  command pasted with `\\` at its line ends is one command, as the shell reads it (shlex keeps each
  escaped newline as a word).
* `shell_commands` (words with their offsets, split into simple commands) is hand-written,
  because shlex gives no offsets (lint locates and edits each word in its file), does not split
  commands at `&&`/`|`/newlines with redirections dropped, and cannot leave an expansion in its
  word as written (h3doctor/unresolved.py) or give a variable its value. With `ansi_c` it reads
  bash's and zsh's `$'…'` (the command-line hook's typed line), which shlex does not know.
* `script_tokens` is shlex's own lexer with shell punctuation (`;`, `&&`, `|`, `(`, `<`, `>`) as
  tokens and `#` comments, for the `-c` script of a container's shell (sglang/container_run.py).

Every entry refuses a text past `MAX_CHARS` with `Unsupported` (a ValueError, which each caller
already reads as "cannot be split"): the words of a text are fewer than its characters, so this
one bound also bounds the words and the memory they take.
"""

from __future__ import annotations

import re
import shlex
from collections.abc import Iterator, Mapping

from h3doctor.digits import is_digits
from h3doctor.unresolved import has_mark, marked

# Above the largest text any reader hands here (explain's 16 MiB log; files are at most 8 MiB):
# a bound for what the API and in-memory documents pass, never met by a file h3doctor accepts.
MAX_CHARS = 16 << 20


class Unsupported(ValueError):
    """Shell syntax the word splitter does not model (the message says which)."""


_OPERATORS = "|&;<>()\n"
_PLAIN = re.compile(r"[^ \t\r|&;<>()\n\\'\"$`]+")  # what the scanner copies as it stands
# A text of plain words and blanks only (no quote, escape, operator, expansion or comment): its
# words are its runs of non-blanks, found in one regex pass (a 1 MiB recipe command is 140k words).
_PLAIN_TEXT = re.compile(r"[^|&;<>()\n\\'\"$`#]*")
_NON_BLANK = re.compile(r"[^ \t\r]+")

Word = tuple[str, int, int]  # the word as the shell reads it, and its [start, end) offsets in the text


SCRIPT_ARGS = marked("$@")  # the word `"$@"` (the script's own arguments), with script_args=True


def shell_commands(text: str, *, script_args: bool = False, variables: Mapping[str, str | None] | None = None,
                   keep_expansions: bool = False, ansi_c: bool = False) -> list[list[Word]]:
    """The simple commands of a shell text (split at unquoted newlines, `|`, `&&`, `;`, ...), each
    as its words with offsets. A redirection (`> log`, `2>&1`) ends the words of its command.

    Hand-written because shlex gives no offsets. Quotes, backslashes and line continuations as the
    shell reads them; `$` and backticks are not expanded: a command using them raises Unsupported.
    With `script_args`, a whole word `"$@"` (or `$@`) is the word SCRIPT_ARGS: a Docker entrypoint
    passes the container's arguments on with `exec sglang serve ... "$@"`.
    With `variables`, `$NAME` and `${NAME}` of a name it binds are its value (a task file's own
    environment); a name it lacks, or binds to None (declared, given only when it runs), raises
    Unsupported naming it, as does an unquoted value the shell would split or glob.
    With `keep_expansions`, an expansion it cannot give a value (`$HOME`, `$(hostname)`, backquotes,
    a name `variables` lacks) is no error: it is kept in its word as written, marked
    (h3doctor/unresolved.py); whether it matters is decided by where it stands in the launch, not
    here (lint's scripts, the command-line hook's typed line).
    With `ansi_c`, `$'…'` is bash's and zsh's ANSI-C quoting (`$'\\e'`, `$'\\x41'`): the line a user
    typed in either shell, and what `shellwords.quote` writes for a word a terminal cannot show. A
    script of any POSIX shell is read without it (dash before 0.5.12 reads `$'a'` as `$` and `'a'`).
    """
    _bounded(text)
    commands: list[list[Word]] = []
    i = 0
    if keep_expansions:
        variables = _Marking(variables or {})
    while i <= len(text):
        words, stop = _scan(text, i, script_args, variables, ansi_c)
        if words:
            commands.append(words)
        if stop >= len(text):
            break
        i = _skip_redirection(text, stop, words, ansi_c)
    return commands


def shell_words(text: str) -> list[Word]:
    """The words of the first simple command of `text`."""
    commands = shell_commands(text)
    return commands[0] if commands else []


def _skip_redirection(text: str, stop: int, words: list[Word], ansi_c: bool = False) -> int:
    """Past the operator at `stop`; past a redirection's target too, dropping its fd number."""
    op = text[stop]
    if op not in "<>":
        return stop + 1
    if words and words[-1][2] == stop and is_digits(words[-1][0]):
        words.pop()  # the `2` of `2>&1`
    j = stop + 1
    while j < len(text) and text[j] in "<>&":
        j += 1
    while j < len(text) and text[j] in " \t":
        j += 1
    while j < len(text) and text[j] not in " \t\n;|&":  # the target word
        j += 1
    # the rest of the line stays with this command's redirections, not a new command
    rest, _ = _scan(text, j, True, ansi_c=ansi_c)
    return j if not rest else _end_of(text, j)


def _end_of(text: str, j: int) -> int:
    while j < len(text) and text[j] not in "\n;|&":
        j += 1
    return j


_VARIABLE = re.compile(r"\$(?:\{([A-Za-z_][A-Za-z0-9_]*)\}|([A-Za-z_][A-Za-z0-9_]*))")
_SPLIT_OR_GLOB = re.compile(r"[\s*?\[]")


class _Marking(dict):
    """The variables of `shell_commands(keep_expansions=True)`: what they do not give is marked, not refused."""


def _expansion_end(text: str, i: int) -> int:
    """The offset after the expansion at `text[i]` (`$NAME`, `${…}`, `$(…)`, `$((…))`, a backtick
    command, `$1`, `$?`); nested parentheses and braces counted, quotes inside not read."""
    if text[i] == "`":
        close = text.find("`", i + 1)
        if close < 0:  # the shell refuses the text (unexpected end of file): not a word of any value
            raise Unsupported(f"unterminated command substitution {text[i:i + 8]!r}")
        return close + 1
    m = _VARIABLE.match(text, i)
    if m:
        return m.end()
    if i + 1 < len(text) and text[i + 1] in "({":
        pair = {"(": ")", "{": "}"}[text[i + 1]]
        depth, j = 0, i + 1
        while j < len(text):
            depth += text[j] == text[i + 1]
            depth -= text[j] == pair
            j += 1
            if depth == 0:
                return j
        raise Unsupported(f"unterminated {text[i:i + 2]!r} in {text[i:i + 12]!r}")
    return min(i + 2, len(text))  # $1, $?, $#, $$


def _known(value: str | None) -> bool:
    return value is not None and not has_mark(value)


def _variable(text: str, i: int, variables: Mapping[str, str | None] | None, quoted: bool) -> tuple[str, int]:
    """The value of the `$NAME` / `${NAME}` at `text[i]` and the offset after it; Unsupported when
    it is another expansion or its value is not known here (marked, with `_Marking` variables)."""
    m = _VARIABLE.match(text, i) if variables is not None else None
    if isinstance(variables, _Marking) and (m is None or not _known(variables.get(m.group(1) or m.group(2)))):
        end = _expansion_end(text, i)  # kept as written: `$PORT` of a Secret stays `$PORT`, not its stand-in
        return marked(text[i:end]), end
    if m is None:
        raise Unsupported(f"shell expansion in {text[i:i + 8]!r}")
    name = m.group(1) or m.group(2)
    value = variables.get(name)
    if value is None:
        said = "is declared without a value (given when it runs)" if name in variables else "has no value here"
        raise Unsupported(f"${name} {said}")
    if not quoted and (not value or _SPLIT_OR_GLOB.search(value)):
        raise Unsupported(f"${name} unquoted: the shell splits or globs its value {value!r}")
    return value, m.end()


def _scan(text: str, i: int, script_args: bool = False, variables: Mapping[str, str | None] | None = None,
          ansi_c: bool = False) -> tuple[list[Word], int]:
    if _PLAIN_TEXT.fullmatch(text, i):
        return [(m.group(), m.start(), m.end()) for m in _NON_BLANK.finditer(text, i)], len(text)
    words: list[Word] = []
    end = len(text)
    while i < end:
        c = text[i]
        if script_args and c in '"$':
            form = '"$@"' if c == '"' else "$@"
            after = i + len(form)
            if text.startswith(form, i) and (after >= end or text[after] in " \t\r" + _OPERATORS):
                words.append((SCRIPT_ARGS, i, after))
                i = after
                continue
        if c in " \t\r":
            i += 1
            continue
        if c == "\\" and i + 1 < end and text[i + 1] == "\n":  # line continuation
            i += 2
            continue
        if c == "#":  # a comment runs to the end of the line
            while i < end and text[i] != "\n":
                i += 1
            return words, i
        if c in _OPERATORS:
            return words, i
        word_start, buf = i, []
        while i < end and text[i] not in " \t\r" and text[i] not in _OPERATORS:
            c = text[i]
            if c == "\\":
                if i + 1 < end and text[i + 1] != "\n":
                    buf.append(text[i + 1])
                i += 2
            elif c == "'":
                close = text.find("'", i + 1, end)
                if close < 0:
                    raise Unsupported("unterminated single quote")
                buf.append(text[i + 1:close])
                i = close + 1
            elif c == '"':
                j = i + 1
                while j < end and text[j] != '"':
                    if text[j] == "\\" and j + 1 < end and text[j + 1] in '"\\$`\n':
                        if text[j + 1] != "\n":
                            buf.append(text[j + 1])
                        j += 2
                        continue
                    if (text[j] == "$" and variables is not None) or (text[j] == "`" and isinstance(variables, _Marking)):
                        value, j = _variable(text, j, variables, quoted=True)
                        buf.append(value)
                        continue
                    if text[j] in "$`":
                        raise Unsupported(f"shell expansion in {text[word_start:j + 8]!r}")
                    buf.append(text[j])
                    j += 1
                if j >= end:
                    raise Unsupported("unterminated double quote")
                i = j + 1
            elif ansi_c and c == "$" and text.startswith("'", i + 1):
                value, i = _ansi_c(text, i + 2, end)
                buf.append(value)
            elif (c == "$" and variables is not None) or (c == "`" and isinstance(variables, _Marking)):
                value, i = _variable(text, i, variables, quoted=False)
                buf.append(value)
            elif c in "$`":
                raise Unsupported(f"shell expansion in {text[word_start:i + 8]!r}")
            else:  # a run of plain characters at once (a 1 MiB launch is 1M characters)
                run = _PLAIN.match(text, i, end)
                buf.append(run.group())
                i = run.end()
        words.append(("".join(buf), word_start, i))
    return words, i


# bash's ANSI-C escapes (bash's manual, "ANSI-C Quoting"); \cX, a control character, is read too
_ANSI_NAMED = {"a": 7, "b": 8, "e": 27, "E": 27, "f": 12, "n": 10, "r": 13, "t": 9, "v": 11,
               "\\": 92, "'": 39, '"': 34, "?": 63}
_ANSI_NUMERIC = re.compile(r"[0-7]{1,3}|x[0-9A-Fa-f]{1,2}|u[0-9A-Fa-f]{1,4}|U[0-9A-Fa-f]{1,8}")


def _ansi_c(text: str, i: int, end: int) -> tuple[str, int]:
    """The word part of `$'…'` whose text starts at `text[i]`, and the offset after its closing
    quote. Bytes as bash makes them (`\\xff` is the byte 0xff: undecodable bytes are kept as
    surrogateescape's, as every other input is read), characters as their UTF-8 bytes."""
    out = bytearray()
    while i < end and text[i] != "'":
        c = text[i]
        if c != "\\" or i + 1 >= end:
            out += _utf8(c)
            i += 1
            continue
        nxt = text[i + 1]
        m = _ANSI_NUMERIC.match(text, i + 1, end)
        if nxt in _ANSI_NAMED:
            out.append(_ANSI_NAMED[nxt])
            i += 2
        elif nxt == "c" and i + 2 < end:
            out.append(ord(text[i + 2]) & 0x1F)
            i += 3
        elif m:
            digits = m.group()
            value = int(digits, 8) if digits[0] in "01234567" else int(digits[1:], 16)
            if digits[0] in "uU":
                out += chr(min(value, 0x10FFFF)).encode("utf-8", "surrogatepass")
            else:
                out.append(value & 0xFF)
            i = m.end()
        else:  # an escape bash does not know stays as written, backslash and all
            out += c.encode()
            i += 1
    if i >= end:
        raise Unsupported("unterminated $'...' quote")
    # a C string ends at its first NUL: bash drops the rest of the quote (`$'a\\0b'` is `a`)
    return bytes(out).split(b"\0", 1)[0].decode("utf-8", "surrogateescape"), i + 1


def _utf8(ch: str) -> bytes:
    try:
        return ch.encode("utf-8", "surrogateescape")  # an undecodable byte read from argv is that byte
    except UnicodeEncodeError:  # a lone surrogate no byte stands for: kept, never a crash
        return ch.encode("utf-8", "surrogatepass")


def _bounded(text: str) -> None:
    if len(text) > MAX_CHARS:
        raise Unsupported(f"shell text of {len(text):,} characters, past h3doctor's limit of {MAX_CHARS:,}")


# Characters where shlex.split and the shell (the located scanner) read a text differently:
# comments, expansions, escapes, operators, newlines. A text without them splits the same in both.
_SHELL_SPECIAL = frozenset("#$`\\|&;<>()\n")
_CONTINUED = frozenset("\\\n")


def split(text: str, *, continuations: bool = False) -> list[str]:
    """The words of `text` as `shlex.split(text)` reads them (POSIX quoting, `#` not a comment);
    ValueError (shlex's own: "No closing quotation", "No escaped character") when it cannot.
    With `continuations`, a text whose only special characters are line continuations (`\\` at
    line ends) and newlines is read as the shell reads it when that makes one command."""
    _bounded(text)
    if _SHELL_SPECIAL.isdisjoint(text):
        try:
            return [w for w, _s, _e in shell_words(text)]
        except Unsupported:  # an unterminated quote: let shlex say so
            pass
    elif continuations and _SHELL_SPECIAL.intersection(text) <= _CONTINUED and "\\\n" in text:
        try:
            commands = shell_commands(text)
        except Unsupported:
            commands = []
        if len(commands) == 1:
            return [w for w, _s, _e in commands[0]]
    return shlex.split(text)


SCRIPT_PUNCTUATION = ";&|()<>"


def script_tokens(text: str) -> Iterator[str]:
    """shlex's POSIX tokens of a `-c` script: words, runs of SCRIPT_PUNCTUATION as their own
    tokens, `#` comments dropped. A generator, so a text past the bound or an open quote raises
    (ValueError) where the caller reads the tokens."""
    _bounded(text)
    lexer = shlex.shlex(text, posix=True, punctuation_chars=SCRIPT_PUNCTUATION)
    lexer.whitespace_split = True
    lexer.commenters = "#"
    yield from lexer
