"""`h3doctor explain`'s text report, from its finished report (h3doctor/explain/report.py);
decides nothing. Commands go to `out` unstyled, one per line, so they can be copied as they are."""

from __future__ import annotations

import shlex
from typing import TYPE_CHECKING, Any, TextIO

from h3doctor.output.lines import Lines, escape
from h3doctor.output.verdict import VERDICT_MARK, corrected_heading
from h3doctor.shellwords import safe_text

if TYPE_CHECKING:  # Rich styles a terminal's report only (output/markup.py)
    from rich.console import Console

_MARK = {"error": "[bold red]✗[/]", "warning": "[yellow]![/]", "info": "[blue]i[/]"}


def shown(text: Any, limit: int = 400) -> str:
    """A value echoed from the log or the launch, safe to print through the one path every
    renderer uses (output/lines.escape over shellwords.safe_text): C0/C1 controls, every bidi and
    format character (U+202E, U+2066-2069, U+200B-200F, U+061C: category Cf) and undecodable
    bytes written as escapes, Rich markup escaped, long values cut."""
    return escape(str(text), limit)


def explain_report(report: Any, console: Console, out: TextIO) -> None:
    data = report.as_dict()
    source = data["input"]
    lines = Lines(console)
    lines.markup(f"h3doctor explain: {source['lines']} line(s) from {shown(source['origin'])}")
    for note in source["notes"] + data["notes"]:
        lines.say(f"note: {note}")
    if not data["matches"] and not data["causes"]:
        lines.markup("")
        lines.markup("[bold]Nothing matched:[/] no rule's sglang message, in any release's wording, matches "
                     "these lines, and no out-of-memory error is among them; h3doctor does not guess a rule.")
        for item in data["unmatched"][:5]:
            lines.say(f"line {item['line']}: {item['text']}", indent=2, limit=400)
    for m in data["matches"]:
        lines.markup("")
        lines.say(f"{m['severity']}: {m['title']}", mark=f" {_MARK[m['severity']]} [bold]{shown(m['rule'])}[/]", hang=4,
                  limit=400)
        lines.say(f"matched: {_how(m)} (line {m['line']}{', x' + str(m['count']) if m['count'] > 1 else ''})",
                  indent=5)
        # a crash line is the kernel's, torch's, the shell's; a wording may be another program's (`by`)
        said = "the line" if m["how"] == "crash" else f"{safe_text(m['by'], 80)} says"
        lines.say(f"{said}: {m['text']}", indent=5, limit=400)
        if m["captured"] and m["how"] != "crash":
            lines.say("captured: " + ", ".join(f"{safe_text(k, 400)}={safe_text(str(v), 120)}"
                                               for k, v in m["captured"].items()), indent=5)
        for note in m["notes"]:
            lines.say(note, indent=5, limit=400)
        lines.say(f"why: {m['why']}", indent=5)
        if m["fix_note"]:
            lines.say(f"fix: {safe_text(m['fix_note'], 1000)}", indent=5)
        if m["confirmed"] is not None:
            lines.markup("     the check of this launch reports it too" if m["confirmed"] else
                         "     [yellow]the check of this launch does not report it[/] (another launch, hardware or release?)")
    for c in data["causes"]:
        lines.markup("")
        lines.say(c["title"], mark=f" {_MARK[c['severity']]}", hang=4, limit=400)
        lines.say(f"matched: {c['signature']} (line {c['line']}{', x' + str(c['count']) if c['count'] > 1 else ''})",
                  indent=5, limit=400)
        lines.say(f"the line: {c['text']}", indent=5, limit=400)
        lines.say(f"why: {c['why']}", indent=5, limit=2000)
        if c["probe"]:
            lines.say(f"probe check: {c['probe']}", indent=5, limit=400)
        lines.say(f"fix: {c['fix']}", indent=5, limit=1000)
    _release(data["release"], lines)
    _launch(data, lines, out)


def _how(m: dict[str, Any]) -> str:
    if m["how"] == "oom":
        return f"out of memory, phase {m['captured'].get('phase', 'unknown')}"
    if m["how"] == "crash":
        return f"what a server killed by it prints: {m['captured'].get('signature', '')!r}"
    exact = "exactly" if m["exact"] else "inside the line"
    if m["by"] != "sglang":  # another program's words (the container runtime's): no sglang release prints them
        return f"{safe_text(m['by'], 80)}'s wording of it, {exact}"
    what = "the rule's message" if m["how"] == "message" else "sglang's wording of it"
    return f"{what}, {exact}, as sglang {', '.join(m['releases'])} print{'s' if len(m['releases']) == 1 else ''} it"


def _release(release: dict[str, Any], lines: Lines) -> None:
    if release.get("inferred"):
        lines.markup("")
        lines.say(f"sglang {safe_text(release['version'], 400)}: {safe_text(release['why'], 400)}",
                  mark="[bold]Release:[/]")
    elif release.get("why", "").startswith("every release"):  # the range it cannot be narrowed from
        lines.markup("")
        lines.say(f"not placed: {safe_text(release['why'], 400)}", mark="[bold]Release:[/]")


def _launch(data: dict[str, Any], lines: Lines, out: TextIO) -> None:
    launch = data["launch"]
    lines.markup("")
    if launch is None:
        lines.markup("[dim]No launch given or found in the text: give it after `--` for the corrected command.[/]")
        return
    where = launch["source"] + (f", line {launch['line']}" if launch["line"] else "")
    lines.markup(f"[bold]Launch[/] ({shown(where)}):")
    out.write(safe_text(shlex.join(launch["argv"]), 2000) + "\n")  # a command stays one line, whatever the width
    out.flush()
    findings = data["check_findings"]
    if findings is None:
        return
    # check's own first line (output/verdict.summary), its mark and words, then what it found
    said = data["check_summary"]
    found = list(dict.fromkeys(f["rule"] for f in findings if f["severity"] != "info"))
    lines.say(f"check on this launch: {said['text']}" + (f"; found {', '.join(found)}" if found else "")
              + f" (fix status: {data['fix_status']})", mark=VERDICT_MARK[said["verdict"]])
    if data["corrected_command"] is not None:
        lines.markup("")
        lines.markup(f"[bold]Corrected command[/] ({corrected_heading(data['corrected_unverified'])}):")
        out.write(data["corrected_command"] + "\n")
        out.flush()
    elif data["fix_status"] == "no-fix":
        lines.markup("[bold red]No corrected command:[/] no change of flags alone makes this launch pass "
                     "(h3doctor check shows the alternatives).")
