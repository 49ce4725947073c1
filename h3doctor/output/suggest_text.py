"""`h3doctor suggest` for people: reads the report object (the JSON output), decides nothing.

Commands go to `out` unstyled, one per line, so they can be copied as they are.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, TextIO

from h3doctor.output.lines import Lines, escape

if TYPE_CHECKING:  # Rich styles a terminal's report only (output/markup.py)
    from rich.console import Console


def suggest_report(data: dict[str, Any], console: Console, out: TextIO) -> None:
    console = _Folded(Lines(console))
    hw = data["hardware"]
    where = hw.get("description") or hw.get("device_name") or hw.get("platform")
    request = data.get("request")
    shape = f" for {request['resolution']} x {request['seconds']:g} s requests" if request else ""
    console.print(f"{escape(data['family']['label'])} launch suggestion on {escape(str(where))} "
                  f"[dim]({escape(str(hw.get('source')))})[/], preferring {data['prefer']}{escape(shape)}")
    best = data["best"]
    status = data["status"]
    if best is None:
        _nothing(data, console)
    else:
        console.print(_HEADINGS[status][0])
        _one(best, console, out)
        if data["runner_ups"]:
            console.print(_HEADINGS[status][1])
            for n, item in enumerate(data["runner_ups"], 2):
                console.print(f" {n}.")
                _one(item, console, out)
    if best is not None and data["cookbook"]:
        console.print("")
        for recipe in data["cookbook"]:
            verdict = "at least as parallel" if recipe["suggestion_as_parallel"] else "less parallel"
            console.print(f"cookbook: {escape(recipe['label'])} ({recipe['parallel']} GPU(s) on one request): "
                          f"the suggestion is {verdict}")
    s = data["search"]
    console.print(f"\n[dim]searched {s['resolved']} launch(es) ({s['pruned_by_memory']} placement(s) dropped by the "
                  f"memory model before the rules ran), {s['checked']} full check(s)"
                  f"{' (the budget of full checks ran out)' if s['stopped_early'] else ''}, {s['elapsed_s']:.2f} s; "
                  f"score: {escape(data['score']['doc'])}[/]")
    for note in data["notes"]:
        console.print(f"[dim]note: {escape(note)}[/]", soft_wrap=True)


class _Folded:
    """The console's `print` with each line folded to its width (output/lines.py): the markup here
    is h3doctor's own with every value escaped, and a leading newline is a blank line."""

    def __init__(self, lines: Lines) -> None:
        self.lines = lines

    def print(self, markup: str = "", *, soft_wrap: bool = True) -> None:  # noqa: ARG002 - always folded
        for line in markup.split("\n"):
            self.lines.markup(line)


_NOT_FIT = ("\n[bold red]Nothing fits:[/] no launch h3doctor searched fits in this GPU memory with these choices "
            "(sglang would start, then run out of memory). The nearest, most headroom first:\n\n"
            "[bold red]Nearest[/] (checks clean, does NOT fit in memory):")
_HEADINGS = {
    "fits": ("\n[bold green]Best[/] (checks clean, fits in memory):", "\n[bold]Runner-ups[/] (each checks clean):"),
    "cannot-verify": ("\n[bold yellow]Best[/] (checks clean; whether it fits in memory cannot be verified here):",
                      "\n[bold]Runner-ups[/] (each checks clean, memory fit not verified):"),
    "none-fits": (_NOT_FIT, "\n[bold]Also not fitting[/]:"),
}


def _one(item: dict[str, Any], console: _Folded, out: TextIO) -> None:
    out.write(f"    {item['command']}\n")
    out.flush()
    console.print(f"     why: {escape('; '.join(item['why']))}", soft_wrap=True)
    memory = item["memory"]
    if memory and memory.get("peak_typical_gib") is not None:
        console.print(memory_line(item))
    elif memory is None:
        console.print("     memory: not modelled on this platform: whether it fits cannot be verified")
    elif item["fits"] is None:
        console.print("     memory: the fit cannot be verified (see `h3doctor check` on this command)")
    scored = item["score"]["memory"]
    console.print(f"     score: speed {item['score']['speed']:g}, memory "
                  + (f"{scored:g}" if scored is not None else "not modelled"))
    for g in item["gives_up"]:
        console.print(f"     [yellow]gives up:[/] {escape(g)}", soft_wrap=True)
    unverified = sorted({w["rule"] for w in item["warnings"] if w["cannot_verify"]})
    if unverified:
        console.print(f"     [yellow]cannot verify:[/] {', '.join(unverified)} (see `h3doctor check` on this command)")
    for w in item["warnings"]:
        if not w["cannot_verify"]:
            console.print(f"     [yellow]warning {w['rule']}:[/] {escape(w['message'])}", soft_wrap=True)


def memory_line(item: dict[str, Any]) -> str:
    """A launch's peak against the GPU's free memory, from its JSON item: the headroom while there
    is one; a negative headroom is a shortfall, said once (by the fit's words when it does not fit)."""
    memory = item["memory"]
    room = memory["headroom_gib"]
    if room is None or room >= 0:
        said = "" if room is None else f" ({room + 0.0:g} GiB headroom)"  # + 0.0: never "-0"
    else:
        said = "" if item["fits"] is False else f" ({-room:g} GiB short)"
    return (f"     memory: peak about {memory['peak_typical_gib']} of {memory['capacity_gib']} GiB per GPU"
            f"{said}{_fit_words(item)}")


def _fit_words(item: dict[str, Any]) -> str:
    if item["fits"] is not False:
        return ""
    short = item["shortfall_gib"]
    if short:
        return f": does NOT fit, {short:g} GiB short per GPU"
    return ": does NOT fit, under the margin the workspace of real runs needs"


def _nothing(data: dict[str, Any], console: _Folded) -> None:
    console.print("\n[bold red]No launch checks clean[/] on this hardware with these choices.")
    for r in data["rejected"][:5]:
        console.print(f" ✗ [bold]{r['rule']}[/] ({r['count']} candidate(s)): {escape(r['title'])}")
        console.print(f"     {r['says']}: {escape(r['message'])}", soft_wrap=True)
        if r["fix_note"]:
            console.print(f"     fix: {escape(r['fix_note'])}", soft_wrap=True)
        console.print(f"     e.g. {escape(r['example'])}", soft_wrap=True)
