"""Launches in shell scripts: every simple command that runs `sglang serve|generate` (or
`python -m sglang.multimodal_gen...`), continuation lines joined, `VAR=value` words in front
of it and earlier `export VAR=value` lines as its environment.

A launch that uses `$VAR`, `$(...)` or backticks is reported as not understood (the values are
only known when the script runs), not guessed at. The one exception is a whole word `"$@"`, the
Docker entrypoint idiom `exec sglang serve ... "$@"`: the launch is judged on its own words and a
note says the script's arguments are not known.

A script written with CRLF line ends (a Windows checkout) is read as its LF twin — the text git
commits under `core.autocrlf` and the container runs — so `\\<CR><LF>` continues the line and the
findings, lines and columns are the LF file's; word offsets are given back in the file's own text,
so `--fix` edits it where it stands and keeps its line ends.
"""

from __future__ import annotations

import bisect
import os
import re

from h3doctor.errors import UsageError
from h3doctor.inputs import script_line
from h3doctor.inputs.launch import (
    Launch,
    Note,
    Segment,
    is_shell_c,
    launch_start,
    mentions_sglang,
    unread_launch,
)
from h3doctor.located import Pos
from h3doctor.safeload import OutsideRepository
from h3doctor.shellsplit import SCRIPT_ARGS, Unsupported, shell_commands
from h3doctor.inputs.script_launch import word_offsets
from h3doctor.sglang.container_run import is_container_run, read_container_run
from h3doctor.sglang.launch_forms import read_launch_form
from h3doctor.shellwords import is_assignment


# the POSIX family whose syntax the reader models; not csh/tcsh or fish, whose syntax differs
_SHELLS = re.compile(r"(?:ba|da|z|k|mk|a)?sh")


def shebang_shell(first_line: str) -> bool:
    """Whether a first line `#!...` runs a POSIX-family shell: `#!/bin/bash`, `#!/bin/sh -eu`,
    `#!/usr/bin/env bash`, `#!/usr/bin/env -S zsh -e` (not `#!/usr/bin/env python3`, `#!/usr/bin/fish`)."""
    if not first_line.startswith("#!"):
        return False
    words = first_line[2:].split()
    if words and os.path.basename(words[0]) == "env":  # env's own options and NAME=value words
        words = [w for w in words[1:] if not w.startswith("-") and "=" not in w]
    if words and os.path.basename(words[0]) == "busybox":
        words = words[1:]
    return bool(words) and _SHELLS.fullmatch(os.path.basename(words[0])) is not None


def is_shell_script(path: str, text: str) -> bool:
    return path.endswith((".sh", ".bash")) or shebang_shell(text.split("\n", 1)[0])


class Lines:
    """Line and column of an offset in a text (the dockerfile reader's too)."""

    def __init__(self, text: str) -> None:
        self.starts = [0] + [m.end() for m in re.finditer("\n", text)]

    def pos(self, offset: int) -> Pos:
        line = bisect.bisect_right(self.starts, offset) - 1
        return Pos(line + 1, offset - self.starts[line] + 1)


def read_script(path: str, text: str, variables: dict[str, str | None] | None = None) -> tuple[list[Launch], list[Note]]:
    """`variables`: what `$NAME` is in the script (a task file's environment; None: not expanded)."""
    if "\r\n" not in text:
        return _read_lf(path, text, variables)
    lf = text.replace("\r\n", "\n")
    launches, notes = _read_lf(path, lf, variables)  # lines and columns are the same in both texts
    # the LF text's offset of each LF that had a CR before it
    crlf_ends = [m.start() - n for n, m in enumerate(re.finditer("\r\n", text))]

    def in_file(offset: int) -> int:  # each CR removed before `offset` moves it one on
        return offset + bisect.bisect_left(crlf_ends, offset)

    for launch in launches:
        for seg in launch.segments:
            seg.spans = [(in_file(s), in_file(e)) for s, e in seg.spans]
        launch.word_offsets = [in_file(o) for o in launch.word_offsets]
    return launches, notes


def _read_lf(path: str, text: str, variables: dict[str, str | None] | None) -> tuple[list[Launch], list[Note]]:
    lines = Lines(text)
    launches: list[Launch] = []
    notes: list[Note] = []
    exported: dict[str, str] = {}
    # what `$NAME` is: assigned so far, in file order. A task file's own environment (`variables`:
    # Slurm, SkyPilot) is the whole of what its script sees, so there a name it lacks stays refused.
    marking = variables is None
    known: dict[str, str | None] = dict(variables or {})
    for _number, (line_base, line) in _logical_lines(text):
        for base, words in _commands(path, line_base, line, lines, notes, known, marking):
            texts = [w for w, _s, _e in words]
            if texts and (texts[0] == "export" or all(is_assignment(t) for t in texts)):
                for word in texts[1:] if texts[0] == "export" else texts:
                    name, eq, value = word.partition("=")
                    if eq:
                        if marking:
                            known[name] = value
                        if texts[0] == "export":
                            exported[name] = value
                continue
            if is_container_run(texts) or is_shell_c(texts):
                launch = _container_launch(path, words, base, lines, exported, notes, text)
                if launch is not None:
                    launches.append(launch)
                continue
            found = launch_start(texts)
            if found is None:
                why = unread_launch(texts)
                if why:  # no silent pass: a command that may start sglang is judged or noted
                    notes.append(Note(path, lines.pos(base + words[0][1]), f"not understood ({why}); this launch "
                                                                           "is not judged"))
                continue
            start, prefix_env = found
            if any(w == SCRIPT_ARGS for w, _s, _e in words[start:]):
                notes.append(Note(path, lines.pos(base + words[start][1]),
                                  '"$@" passes on the script\'s own arguments (a container\'s command), which are not '
                                  'known here: the launch is judged without them'))
            mine = [w for w in words[start:] if w[0] != SCRIPT_ARGS]
            launches.append(Launch(
                path=path, kind="shell", label=f"line {lines.pos(base + mine[0][1]).line}",
                tokens=[w for w, _s, _e in mine], pos=lines.pos(base + mine[0][1]),
                token_pos=[lines.pos(base + s) for _w, s, _e in mine], env={**exported, **prefix_env},
                segments=[Segment("text", None, 0, [(base + s, base + e) for _w, s, e in mine])],
            ))
    return launches, notes


def _commands(path: str, base: int, line: str, lines: Lines, notes: list[Note], variables=None, marking=False):
    """(offset, words) of each simple command of a logical line. A line the word splitter does not
    model (an expansion somewhere) is split at its unquoted `;`, `&&`, `||`, `|` and each part read
    on its own: `cd "$APP" && exec sglang serve ...` is judged; a part that still is not
    understood and mentions sglang is reported."""
    try:
        return [(base, words) for words in shell_commands(line, script_args=True, variables=variables, keep_expansions=marking)]
    except Unsupported as exc:
        first = exc
    out = []
    parts = _top_level_parts(line)
    for start, part in parts if len(parts) > 1 else ():
        try:
            out += [(base + start, words)
                    for words in shell_commands(part, script_args=True, variables=variables, keep_expansions=marking)]
        except Unsupported as exc:
            if _may_launch(part):
                notes.append(Note(path, lines.pos(base + start), f"not understood ({exc}); this launch is not judged"))
    if len(parts) <= 1 and _may_launch(line):
        notes.append(Note(path, lines.pos(base), f"not understood ({first}); this launch is not judged"))
    return out


_COMPUTED_PROGRAM = re.compile(r"\s*(?:exec\s+)?(?:\$\{?\w+\}?|\$\(|`)\S*\s+(?:serve|generate)\b")


def _may_launch(text: str) -> bool:
    """A command the word splitter cannot read that may start sglang: it names sglang's launch, or
    its program is computed and its next word is a launch subcommand (`$S serve …`)."""
    return mentions_sglang(text) or _COMPUTED_PROGRAM.match(text) is not None


def _top_level_parts(line: str) -> list[tuple[int, str]]:
    """The line cut at `;`, `&`, `|` outside quotes, `$(...)` and backticks: (offset, text) each."""
    parts, start, i, depth, quote = [], 0, 0, 0, None
    while i < len(line):
        c = line[i]
        if c == "\\" and quote != "'":
            i += 2
            continue
        if quote:
            quote = None if c == quote else quote
        elif c in "'\"`":
            quote = c
        elif c == "(":
            depth += 1
        elif c == ")":
            depth = max(depth - 1, 0)
        elif c in ";&|" and depth == 0:
            parts.append((start, line[start:i]))
            while i + 1 < len(line) and line[i + 1] in "&|":
                i += 1
            start = i + 1
        i += 1
    parts.append((start, line[start:]))
    return [(o, p) for o, p in parts if p.strip()]


def _container_launch(path: str, words, base: int, lines: Lines, exported: dict[str, str],
                      notes: list[Note], text: str) -> Launch | None:
    """`docker run … IMAGE sglang …` (or `bash -lc '… sglang serve "$@"' -- FLAGS`, in a container
    or not): every word is the launch's (the corrected command keeps them); the container's
    environment comes from the script's exports only through `-e NAME`; a container that runs no
    sglang is not a launch. A `-c` script holding sglang's flags is read as the shell runs it
    (inputs/script_line.py, as `check` reads it)."""
    texts = [w for w, _s, _e in words]
    pos = lines.pos(base + words[0][1])
    try:
        line = script_line.read(texts, exported)
        if line is not None:
            return _script_line_launch(path, words, base, lines, exported, text, line)
        form = read_launch_form(texts)
    except OutsideRepository as exc:  # under lint: an --env-file out of the repository, never opened
        at = next((n for n, t in enumerate(texts) if t == exc.path or t.endswith("=" + exc.path)), 0)
        notes.append(Note(path, lines.pos(base + words[at][1]), f"{exc.message}; this launch is not judged",
                          notice="H3DL006"))
        return None
    except UsageError as exc:
        if any("sglang" in t for t in texts):  # a container that names sglang at all
            notes.append(Note(path, pos, f"not understood ({exc.message}); this launch is not judged"))
        return None
    run = form.container
    return Launch(path=path, kind="shell", label=f"line {pos.line}", tokens=texts, pos=pos,
                  token_pos=[lines.pos(base + s) for _w, s, _e in words], env=dict(exported),
                  segments=[Segment("text", None, 0, [(base + s, base + e) for _w, s, e in words])],
                  gpu_count=run.gpu_count(exported) if run else None, image=run.image if run else None,
                  image_pos=lines.pos(base + words[run.image_index][1]) if run else None)


def _script_line_launch(path: str, words, base: int, lines: Lines, exported: dict[str, str], text: str,
                        line: script_line.ScriptLine) -> Launch:
    """The launch of a line whose `-c` script holds sglang's flags: its judged words, each located
    where the file writes it (inputs/script_launch.py); its segment is the line's own words."""
    texts = [w for w, _s, _e in words]
    offsets = word_offsets(line, text, [base + s for _w, s, _e in words], [base + e for _w, _s, e in words])
    run = read_container_run(texts) if is_container_run(texts) else None
    pos = lines.pos(base + words[0][1])
    return Launch(path=path, kind="shell", label=f"line {pos.line}", tokens=list(line.judged), pos=pos,
                  token_pos=[lines.pos(o) for o in offsets], env=dict(exported),
                  segments=[Segment("text", None, 0, [(base + s, base + e) for _w, s, e in words])],
                  gpu_count=run.gpu_count(exported) if run else None, image=run.image if run else None,
                  image_pos=lines.pos(base + words[run.image_index][1]) if run else None,
                  script_line=line, word_offsets=offsets)


_UNQUOTED_STOP = re.compile(r"['\"\\#\n]")  # what can start a quote, escape, comment or end the line
_DOUBLE_QUOTED_STOP = re.compile(r'["\\]')


def _logical_lines(text: str):
    """(line number, (offset, text)) of each logical line: continuation lines stay in one piece and
    a quoted newline does not end the line. Runs of ordinary characters are skipped by regex, so
    a 1 MiB script costs a search per quote, escape or line, not a step per character."""
    i, number, end = 0, 1, len(text)
    while i < end:
        j, quote = i, None
        while j < end:
            if quote == "'":
                close = text.find("'", j)
                if close < 0:
                    j = end
                    break
                j, quote = close + 1, None
                continue
            if quote == '"':
                stop = _DOUBLE_QUOTED_STOP.search(text, j)
                if stop is None:
                    j = end
                    break
                j = stop.start()
                if text[j] == "\\":
                    j += 2
                else:
                    j, quote = j + 1, None
                continue
            stop = _UNQUOTED_STOP.search(text, j)
            if stop is None:
                j = end
                break
            j = stop.start()
            c = text[j]
            if c in "'\"":
                quote = c
            elif c == "\\" and j + 1 < end:
                j += 2
                continue
            elif c == "#" and (j == i or text[j - 1] in " \t"):
                newline = text.find("\n", j)
                j = end if newline < 0 else newline
                break
            elif c == "\n":
                break
            j += 1
        yield number, (i, text[i:j])
        number += text.count("\n", i, j + 1)
        i = j + 1
