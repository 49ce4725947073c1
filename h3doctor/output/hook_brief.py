"""What the shell hook prints for a launch that starts with warnings: at most five lines — the
verdict, the warnings' titles (as many as fit, then how many more), and the command that shows the
full report — so the server's own output is not pushed off the screen by h3doctor's."""

from __future__ import annotations

from h3doctor.output.lines import Lines
from h3doctor.output.verdict import VERDICT_MARK
from h3doctor.output.wrap import fold

TYPE_CHECKING = False  # typing is not imported at run time (start-up: record.py)
if TYPE_CHECKING:
    from typing import Any, TextIO

    from h3doctor.engine.results import CheckResult

MAX_LINES = 5  # every line but the full report's command, counted in rows at the terminal's width
_MARK = {"error": "[bold red]✗[/]", "warning": "[yellow]![/]", "info": "[blue]i[/]", "cannot-verify": "[yellow]?[/]"}


def brief(result: CheckResult, console: Any, out: TextIO, *, summary: dict[str, Any], fail_on: str, again: str) -> None:
    """The verdict (`summary`, output/verdict.py), the findings' titles while they fit in
    MAX_LINES - 1 rows with room for "and N more", then `again`: the `h3doctor check` command of this
    launch, one line whatever the width."""
    lines = Lines(console)
    starts = f"; starting sglang (below --fail-on {fail_on})"
    text = summary["text"]
    # the verdict in at most two rows: whole, else without its detail, else its headline (the report has it all)
    shorter = [text, text.split(" (")[0].split(";")[0], text.split(":")[0]]
    verdict = next((v + starts for v in shorter if _rows(v + starts, lines.width, start=2, indent=2) <= 2),
                   shorter[-1] + starts)
    lines.say(verdict, mark=VERDICT_MARK[summary["verdict"]])
    rows = _rows(verdict, lines.width, start=2, indent=2)
    # what predicts a failure first, then warnings, checks not made, notes
    ranked = sorted(result.evaluation.findings, key=lambda f: (not f.predicts_failure, f.cannot_verify,
                                                                f.severity == "info"))
    titles = [(f"{'cannot verify: ' if f.cannot_verify else ''}{f.rule.title} [{f.rule.id}]",
               _MARK["cannot-verify" if f.cannot_verify else f.severity]) for f in ranked]
    room = MAX_LINES - 1 - rows  # the full report's line is the last
    for n, (title, mark) in enumerate(titles):
        left = len(titles) - n
        need = _rows(title, lines.width, start=4, indent=4)
        if need + (1 if left > 1 else 0) > room:  # the rest by rule ID, on the rows left
            lines.say(_by_id([f.rule.id for f in ranked[n:]], bool(n), lines.width, room), indent=2)
            break
        lines.say(title, mark=mark, indent=2, hang=2)
        room -= need
    out.write(f"  full report: {again}\n")  # one pasteable line, whatever the width
    out.flush()


def _by_id(ids: list[str], more: bool, width: int | None, room: int) -> str:
    """`[and ]N findings: ID, ID …` with as many IDs as fit in `room` rows (at least the count)."""
    head = f"{'and ' if more else ''}{len(ids)} finding{'s' if len(ids) > 1 else ''}"
    for shown in range(len(ids), 0, -1):
        text = f"{head}: {', '.join(ids[:shown])}" + (" …" if shown < len(ids) else "")
        if _rows(text, width, start=2, indent=4) <= max(room, 1):
            return text
    return head


def _rows(text: str, width: int | None, *, start: int, indent: int) -> int:
    """The rows `text` takes when Lines.say folds it so."""
    return len(fold(text, width, start=start, indent=indent))
