"""The text renderers' console markup (`[bold]…[/]`), readable without Rich.

The renderers write Rich console markup. A terminal gets it styled by Rich; everything else (a
pipe, a file, `--output-file`, CI logs) gets it from `PlainConsole` with the tags dropped, so a
report that is not shown on a terminal never pays for importing Rich (~30 ms of every run). The
two read markup the same way (tests/output/test_output_registry.py compares them on the rule examples'
reports and on hostile text): a tag is `[` then a lower-case letter, `#`, `/` or `@`, up to the
first `]` with no `[` between; an odd run of backslashes before it makes it literal text, and
half of the run is kept. Both drop the control characters Rich drops (BEL, BS, VT, FF, CR) and
expand tabs to 8 columns (here counted in characters, where Rich counts terminal cells: the two
differ only for a tab after wide characters). No emoji codes are replaced on either path
(`:warning:` stays as typed).
"""

from __future__ import annotations

import re

# What Rich reads as a tag: optional backslashes, then `[` + [a-z#/@] + anything but `[`, up to `]`
_TAG = re.compile(r"(\\*)(\[[a-z#/@][^[]*?])")
_DROPPED = dict.fromkeys((7, 8, 11, 12, 13))


def escape(text: str) -> str:
    """`text` as markup that shows exactly `text` (rich.markup.escape's contract)."""
    text = _TAG.sub(lambda m: f"{m.group(1)}{m.group(1)}\\{m.group(2)}", text)
    if text.endswith("\\") and not text.endswith("\\\\"):
        return text + "\\"  # a trailing backslash must not escape a tag that follows it
    return text


def plain(markup: str) -> str:
    """The text the markup shows, its tags dropped."""
    out: list[str] = []
    position = 0
    for match in _TAG.finditer(markup):
        start, end = match.span()
        if start > position:
            out.append(markup[position:start].replace("\\[", "["))
        pairs, odd = divmod(len(match.group(1)), 2)
        out.append("\\" * pairs)
        if odd:  # an escaped tag is text
            out.append(match.group(2))
        position = end
    if position < len(markup):
        out.append(markup[position:].replace("\\[", "["))
    text = "".join(out).translate(_DROPPED)
    return text.expandtabs(8) if "\t" in text else text


class PlainConsole:
    """The part of rich.console.Console the renderers use, writing unstyled text to `file`."""

    def __init__(self, file, width: int | None = None) -> None:
        self.file = file
        self.width = width  # the renderers fold their lines to it (output/wrap.py); None: never folded

    def print(self, markup: str = "", *, soft_wrap: bool = True) -> None:  # noqa: ARG002 - never wraps
        self.file.write(plain(markup) + "\n")
