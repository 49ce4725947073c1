"""`h3doctor doctor`'s text, from its report (host/doctor.py): one line per fact, flutter-doctor
style, then the summary and what to run next. Decides nothing."""

from __future__ import annotations

from typing import Any

from h3doctor.output.text import escape

GLYPHS = {"ok": "[green]✓[/]", "problem": "[bold red]✗[/]", "unknown": "[yellow]![/]", "n/a": "[dim]-[/]"}


def doctor_report(data: dict[str, Any], console: Any) -> None:
    console.print("[bold]h3doctor doctor[/]: this machine for sglang MiniMax-H3")
    for c in data["checks"]:
        value = _value(c)
        console.print(f"{GLYPHS[c['status']]} {escape(c['label'], 60)}: [bold]{escape(value, 80)}[/] — "
                      f"{escape(c['reason'], 600)} [dim]\\[{escape(c['source'], 200)}][/]", soft_wrap=True)
    s = data["summary"]
    console.print(f"\n{GLYPHS[s['status']]} {escape(s['text'], 600)}", soft_wrap=True)
    console.print("[dim]next: h3doctor check -- sglang serve MiniMaxAI/MiniMax-H3 ... judges a launch on this "
                  "machine; h3doctor probe --format json gives these facts to scripts[/]", soft_wrap=True)


def _value(check: dict[str, Any]) -> str:
    value = check["value"]
    if value is None:
        return "unknown" if check["status"] == "unknown" else "—"
    if isinstance(value, (tuple, list)):  # a kernel's targets
        return ", ".join(map(str, value)) or "none"
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, float):
        return f"{value:g} GiB"
    return str(value)
