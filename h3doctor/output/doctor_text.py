"""`h3doctor doctor`'s text, from its report (host/doctor.py): one line per fact, flutter-doctor
style — the fact, what was found in a user's words, and why it matters (or not) for H3 here, its
source dimmed — then the summary and what to run next, each folded to the terminal's width at word
boundaries (output/lines.py). Decides nothing."""

from __future__ import annotations

from typing import Any

from h3doctor.output.lines import Lines, escape

# ✓ fine, ✗ stops H3 here, ! sglang will warn (H3 serves), ? cannot verify, - does not apply here
GLYPHS = {"ok": "[green]✓[/]", "problem": "[bold red]✗[/]", "warning": "[yellow]![/]", "unknown": "[yellow]?[/]",
          "n/a": "[dim]-[/]"}


def doctor_report(data: dict[str, Any], console: Any) -> None:
    lines = Lines(console)
    lines.markup("[bold]h3doctor doctor[/]: this machine for sglang MiniMax-H3")
    for c in data["checks"]:
        fact_line(lines, c)
    s = data["summary"]
    lines.markup()
    lines.markup(f"{GLYPHS[s['status']]} {escape(s['text'], 600)}")
    lines.markup("[dim]next: h3doctor check -- sglang serve MiniMaxAI/MiniMax-H3 ... judges a launch on this "
                 "machine; h3doctor probe --format json gives these facts to scripts[/]")


def fact_line(lines: Lines, c: dict[str, Any]) -> None:
    """One fact, as the doctor and the probe both print it: its glyph, name, value in words, why
    and source (host/doctor.py's words)."""
    why = f" — {escape(c['why'], 600)}" if c["why"] else ""
    lines.markup(f"{GLYPHS[c['status']]} {escape(c['label'], 60)}: [bold]{escape(c['says'], 80)}[/]{why} "
                 f"[dim]\\[{escape(c['source'], 200)}][/]")
