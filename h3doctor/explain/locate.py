"""Where one pattern's pieces sit in a normalised message, in time linear in the message.

A template is cut at its runs of text (`{x:text}`) into chunks: fixed words and the narrow holes
among them (numbers, words, reprs: each reads a run of its own characters). A chunk is a small
regular expression matched at one known position; a run of text between two chunks is the gap up
to the leftmost place its next chunk fits, found with `str.find` on that chunk's first fixed piece.
No regular expression ever holds a run of text: in one, a run costs a scan per start, and two, as
in H3D311's `{backend} needs compute capability {capabilities}; ...`, took 80 s on a 4 KB line.

The order is the one `re` takes — leftmost start, each run of text as short as it can be, a later
place for a chunk only when what follows it does not fit — with at most MAX_PLACEMENTS chunk
placements per pattern and message: a line that needs more (only a line built to) is not matched
by that pattern. A value in front of the first fixed piece (`{backend:word} is not supported`) is
looked for in the LEAD_CHARS characters before that piece.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

MAX_PLACEMENTS = 256
LEAD_CHARS = 256


@dataclass(frozen=True)
class Chunk:
    literal: str  # the chunk's first fixed piece, found with str.find
    lead: re.Pattern[str] | None  # the holes in front of that piece, ending where it starts
    body: re.Pattern[str]  # the whole chunk, matched where it starts
    full: re.Pattern[str]  # the same, ending the message (a whole-message match's last chunk)
    gap: int | None  # the run of text in front of the chunk (its hole number), if any


@dataclass(frozen=True)
class Plan:
    chunks: tuple[Chunk, ...]
    tail: int | None  # the run of text that takes the rest of the message, if the template ends with one
    holes: int


class Work:
    """The placements tried: the tests' measure of the work done, instead of time."""

    def __init__(self) -> None:
        self.placements = 0


Item = tuple[str, str]  # ("lit", the fixed text) or (the hole's type, its regular expression)


def plan(items: list[Item]) -> Plan:
    """A template's chunks from its fixed pieces and holes in order (hole i is group h<i>)."""
    chunks: list[Chunk] = []
    current: list[Item] = []
    gap = tail = None
    holes = sum(kind != "lit" for kind, _ in items)
    hole = 0
    for index, (kind, text) in enumerate(items):
        if kind == "lit":
            if text:
                current.append((kind, text))
            continue
        if kind == "text":
            if current:
                chunks.append(_chunk(current, gap))
                current = []
            elif gap is not None or chunks:
                raise ValueError("two runs of text with no fixed text between them")
            if all(k == "lit" and not t for k, t in items[index + 1:]):
                tail = hole
            else:
                gap = hole
        else:
            current.append((kind, f"(?P<h{hole}>{text})"))
        hole += 1
    if current:
        chunks.append(_chunk(current, gap))
    if not chunks:
        raise ValueError("a template without fixed text")
    return Plan(tuple(chunks), tail, holes)


def _chunk(items: list[Item], gap: int | None) -> Chunk:
    lead: list[str] = []
    for kind, text in items:
        if kind == "lit":
            break
        lead.append(text)
    literal = next((text for kind, text in items if kind == "lit"), "")
    if not literal or (lead and gap is not None):
        raise ValueError("a hole with no fixed text to place it by")
    body = "".join(literal_expression(text) if kind == "lit" else text for kind, text in items)
    return Chunk(literal, re.compile("".join(lead) + r"\Z") if lead else None, re.compile(body),
                 re.compile(body + r"\Z"), gap)


def literal_expression(text: str) -> str:
    """Fixed text as a regular expression: each space one run of white space."""
    return r"\s+".join(re.escape(word) for word in text.split(" "))


def locate(plan: Plan, message: str, whole: bool, work: Work | None = None) -> list[str] | None:
    """Each hole's value (in order) where the template fits the message (the whole message if
    `whole`, else the leftmost place it fits in it), or None."""
    budget = [MAX_PLACEMENTS]
    values: list[str | None] = [None] * plan.holes

    def place(j: int, pos: int) -> bool:
        if j == len(plan.chunks):
            if plan.tail is not None:
                values[plan.tail] = message[pos:]
            return True
        chunk = plan.chunks[j]
        regex = chunk.full if whole and plan.tail is None and j == len(plan.chunks) - 1 else chunk.body
        if chunk.gap is None and (whole or j):  # placed where the last chunk ended
            return _fits(regex.match(message, pos), j, pos)
        at = pos
        while budget[0] > 0:
            at = message.find(chunk.literal, at)
            if at < 0:
                return False
            budget[0] -= 1
            if work is not None:
                work.placements += 1
            start = at
            if chunk.lead is not None:
                m = chunk.lead.search(message, max(pos, at - LEAD_CHARS), at)
                start = m.start() if m else -1
            if start >= 0 and _fits(regex.match(message, start), j, pos):
                return True
            at += 1
        return False

    def _fits(m: re.Match[str] | None, j: int, pos: int) -> bool:
        if m is None:
            return False
        if plan.chunks[j].gap is not None:
            values[plan.chunks[j].gap] = message[pos:m.start()]
        if not place(j + 1, m.end()):
            return False
        for name, value in m.groupdict().items():
            values[int(name[1:])] = value
        return True

    return [v or "" for v in values] if place(0, 0) else None
