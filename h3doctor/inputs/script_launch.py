"""A script's command line whose `-c` script holds sglang's flags, as a lint launch:

    docker run … IMAGE bash -lc 'exec sglang serve --model-path M --num-gpus 8 "$@"' -- --port 30000

is judged through the reader `check` uses (inputs/script_line.py): the words the shell gives
sglang, in its order. Each judged word points where the file writes it — a line argument at its
own word, a word of the script inside the quoted script (when the script is written in one pair
of quotes, as scripts are; else at the script's opening quote) — and `lint --fix` writes a
correction back through `ScriptLine.written_back` (lint/fix.py), so a word the shell computes is
never replaced and a change that would renumber the script's arguments is refused, as in check.
"""

from __future__ import annotations

import dataclasses

from h3doctor.inputs.launch import Launch
from h3doctor.inputs.script_line import NotWritten, ScriptLine


def word_offsets(line: ScriptLine, text: str, starts: list[int], ends: list[int]) -> list[int]:
    """Each judged word's offset in `text`; `starts`/`ends`: the line words' offsets there."""
    at = line.script_at
    inside = _script_start(text, starts[at], ends[at], line.tokens[at])
    out = [starts[min(k, len(starts) - 1)] for k in range(line.moved_from)]  # the line's own words (and `--`)
    for w in line.words:
        if w.where == "arg":
            out.append(starts[w.at])
        else:
            out.append(starts[at] if inside is None else inside + w.span[0])
    return out


def _script_start(text: str, start: int, end: int, script: str) -> int | None:
    """The offset of the script's first character when the file writes it verbatim in one pair
    of quotes (`'…'`; `"…"` with nothing the shell would read inside); None otherwise."""
    quote = text[start:start + 1]
    if quote not in ("'", '"') or text[start + 1:end - 1] != script or text[end - 1:end] != quote:
        return None
    if quote == '"' and any(c in script for c in '"\\$`'):
        return None
    return start + 1


def as_line(launch: Launch, judged: list[str]) -> tuple[Launch, list[str]]:
    """The launch as its line writes it and `judged` (a correction of its judged words) written
    back into that line; NotWritten (script_line.py) when a change cannot be written there."""
    line: ScriptLine = launch.script_line
    return dataclasses.replace(launch, tokens=list(line.tokens), script_line=None), line.written_back(judged)


def line_argv(launch: Launch, judged: list[str] | None) -> list[str] | None:
    """A command of the launch's judged words as its line writes it (the report's argv and
    corrected command); None when there is none or it cannot be written back."""
    if judged is None or launch.script_line is None:
        return judged
    try:
        return launch.script_line.written_back(judged)
    except NotWritten:
        return None
