"""The text renderers' one line writer: lines folded to the console's width at word boundaries
(output/wrap.py) and printed unwrapped, so a terminal and a pipe show the same lines and no word
is cut at the edge. check's, lint's, explain's, suggest's and the doctor's text all write through
it; a command to paste never does (it goes to the report's `out` whole, one line, whatever the
width)."""

from __future__ import annotations

from h3doctor.output.markup import escape as markup_escape
from h3doctor.output.markup import plain
from h3doctor.output.wrap import cells, fold
from h3doctor.shellwords import safe_text

TYPE_CHECKING = False  # typing is not imported at run time (start-up: record.py)
if TYPE_CHECKING:  # Rich styles a terminal's report only (output/markup.py)
    from rich.console import Console

TEXT_LIMIT = 2000  # a message or note shown longer than this is an excerpt (the JSON report has it whole)


def escape(text: str, limit: int = TEXT_LIMIT) -> str:
    """Text for the console: control characters and undecodable bytes written as escapes and cut
    to `limit` characters (safe_text), then markup escaped. Every value from an input reaches the
    console through here."""
    return markup_escape(safe_text(text, limit))


class Lines:
    """A console's lines folded to its width; a console without a width (a pipe, a file) gets each
    line whole."""

    def __init__(self, console: Console) -> None:
        self.console = console
        self.width = getattr(console, "width", None)

    def say(self, text: str, *, mark: str = "", indent: int = 0, hang: int = 2, limit: int = TEXT_LIMIT) -> None:
        """`text` (plain, from any input: escaped here) after `indent` spaces and the markup `mark`,
        continued `hang` cells further in than the line's start."""
        lead = " " * indent + (mark + " " if mark else "")
        start = indent + (cells(plain(mark)) + 1 if mark else 0)
        lines = fold(safe_text(text, limit), self.width, start=start, indent=indent + hang)
        self.console.print(lead + markup_escape(lines[0]), soft_wrap=True)
        for line in lines[1:]:
            self.console.print(markup_escape(line), soft_wrap=True)

    def markup(self, markup: str = "", *, hang: int = 2) -> None:
        """A line of h3doctor's own markup (no input in it, or input already escaped), folded like
        the rest below its own leading spaces (its styles are dropped only when it has to be folded)."""
        text = plain(markup)
        if self.width is None or cells(text) <= self.width:
            self.console.print(markup, soft_wrap=True)
        else:
            body = text.lstrip(" ")
            self.say(body, indent=len(text) - len(body), hang=hang)
