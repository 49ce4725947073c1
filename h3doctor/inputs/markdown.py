"""Launches in documentation: the fenced shell blocks of Markdown and MDX.

A README or cookbook command is copied into terminals as it stands, so one that sglang refuses
("unrecognized arguments") is a bug of the docs. The blocks judged are fenced (``` or ~~~) with a
shell language: `bash`, `sh`, `shell`, `zsh` (their text is a script) and `console` /
`shell-session` (only the lines after a `$ ` or `# ` prompt are commands, with the lines they
continue with `\\`; the rest is the program's output). Prose, indented code blocks and blocks of
other languages are not judged.

The file is read as one shell script in which everything outside those commands is blanked with
spaces (a prompt too): every launch keeps the line, column and offset it has in the Markdown file,
so findings point into the document and `--fix` edits the block where it stands.

`<!-- h3doctor: ignore -->` on the line before a block leaves the block unjudged (an example of a
wrong command, on purpose); `<!-- h3doctor: ignore[ID] reason -->` there suppresses those rules in
the block (lint/suppress.py reads it).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from h3doctor.inputs.launch import Launch, Note
from h3doctor.inputs.shell import read_script

DOC_SUFFIXES = (".md", ".mdx", ".markdown")
SCRIPT_LANGUAGES = frozenset({"bash", "sh", "shell", "zsh"})
SESSION_LANGUAGES = frozenset({"console", "shell-session", "shellsession"})
_FENCE = re.compile(r"^(?P<indent>[ \t]*)(?P<fence>`{3,}|~{3,})[ \t]*\{?\.?(?P<lang>[\w-]*)")
_PROMPT = re.compile(r"^([ \t]*)([$#] )")
# the whole block left alone (no rule IDs): `<!-- h3doctor: ignore -->`
_SKIP_BLOCK = re.compile(r"<!--\s*h3doctor:\s*ignore\s*-->")


@dataclass(frozen=True)
class Block:
    """A fenced block: its opening fence's line and its content lines (1-based, inclusive)."""

    fence_line: int
    first: int
    last: int
    language: str


def is_doc(path: str) -> bool:
    return path.lower().endswith(DOC_SUFFIXES)


def fenced_blocks(lines: list[str]) -> list[Block]:
    """The fenced code blocks of a Markdown text, as CommonMark closes them (a fence of the same
    character, at least as long; an unclosed one runs to the end)."""
    blocks: list[Block] = []
    n = 0
    while n < len(lines):
        m = _FENCE.match(lines[n])
        if m is None or (m.group("fence")[0] == "`" and "`" in lines[n][m.end("fence"):]):
            n += 1
            continue
        fence = m.group("fence")
        end = n + 1
        while end < len(lines) and not re.fullmatch(rf"[ \t]*{re.escape(fence[0])}{{{len(fence)},}}[ \t]*",
                                                     lines[end].rstrip("\r")):
            end += 1
        blocks.append(Block(n + 1, n + 2, end, m.group("lang").lower()))
        n = end + 1
    return blocks


def shell_view(text: str) -> str:
    """`text` with everything but the commands of its shell blocks turned into spaces: the same
    length, lines and columns (line ends kept)."""
    lines = text.split("\n")
    keep = [""] * len(lines)  # per line: the text kept (blanked to the line's length otherwise)
    for block in fenced_blocks(lines):
        if block.language not in SCRIPT_LANGUAGES | SESSION_LANGUAGES or _skipped(lines, block):
            continue
        session = block.language in SESSION_LANGUAGES
        continued = False
        for n in range(block.first - 1, block.last):
            line = lines[n]
            prompt = _PROMPT.match(line)
            if not session:  # a `$ ` prompt pasted into a bash block is not a command word
                keep[n] = _unprompted(prompt, line) if prompt and prompt.group(2) == "$ " else line
                continue
            if prompt is not None:
                keep[n] = _unprompted(prompt, line)
            elif continued:
                keep[n] = line
            else:
                continue
            continued = keep[n].rstrip("\r").endswith("\\")
    return "\n".join(k + _blank(line[len(k):]) for k, line in zip(keep, lines))


def _unprompted(prompt: re.Match, line: str) -> str:
    return prompt.group(1) + " " * len(prompt.group(2)) + line[prompt.end():]


def _blank(rest: str) -> str:
    return " " * len(rest.rstrip("\r")) + ("\r" if rest.endswith("\r") else "")


def _skipped(lines: list[str], block: Block) -> bool:
    before = block.fence_line - 2
    return before >= 0 and _SKIP_BLOCK.search(lines[before]) is not None


def comment_spans(text: str) -> dict[int, tuple[int, int]]:
    """The line of each comment written right before a fenced block -> the block's lines: a
    suppression there covers every line of the block."""
    lines = text.split("\n")
    return {b.fence_line - 1: (b.first, b.last) for b in fenced_blocks(lines) if b.fence_line >= 2}


def read_doc(path: str, text: str) -> tuple[list[Launch], list[Note]]:
    launches, notes = read_script(path, shell_view(text))
    for launch in launches:
        launch.kind = "markdown"
    return launches, notes
