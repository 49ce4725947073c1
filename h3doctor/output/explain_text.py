"""`h3doctor explain`'s text report, from its finished report (h3doctor/explain/report.py);
decides nothing. Commands go to `out` unstyled, one per line, so they can be copied as they are."""

from __future__ import annotations

import shlex
from typing import TYPE_CHECKING, Any, TextIO

from h3doctor.output.text import escape
from h3doctor.output.verdict import corrected_heading

if TYPE_CHECKING:  # Rich styles a terminal's report only (output/markup.py)
    from rich.console import Console

_MARK = {"error": "[bold red]✗[/]", "warning": "[yellow]![/]", "info": "[blue]i[/]"}


def shown(text: Any, limit: int = 400) -> str:
    """A value echoed from the log or the launch, safe to print through the one path every
    renderer uses (output/text.escape over shellwords.safe_text): C0/C1 controls, every bidi and
    format character (U+202E, U+2066-2069, U+200B-200F, U+061C: category Cf) and undecodable
    bytes written as escapes, Rich markup escaped, long values cut."""
    return escape(str(text), limit)


def explain_report(report: Any, console: Console, out: TextIO) -> None:
    data = report.as_dict()
    source = data["input"]
    console.print(f"h3doctor explain: {source['lines']} line(s) from {shown(source['origin'])}")
    for note in source["notes"] + data["notes"]:
        console.print(f"[dim]note: {shown(note)}[/]")
    if not data["matches"] and not data["causes"]:
        console.print("\n[bold]Nothing matched:[/] no rule's sglang message, in any release's wording, matches "
                      "these lines, and no out-of-memory error is among them; h3doctor does not guess a rule.")
        for item in data["unmatched"][:5]:
            console.print(f"  line {item['line']}: {shown(item['text'])}")
    for m in data["matches"]:
        console.print(f"\n {_MARK[m['severity']]} [bold]{m['rule']}[/] {m['severity']}: {shown(m['title'])}")
        console.print(f"     matched: {_how(m)} (line {m['line']}{', x' + str(m['count']) if m['count'] > 1 else ''})")
        said = "the line" if m["how"] == "crash" else "sglang says"  # a crash line is the kernel's, torch's, the shell's
        console.print(f"     {said}: {shown(m['text'])}", soft_wrap=True)
        if m["captured"] and m["how"] != "crash":
            console.print("     captured: " + ", ".join(f"{shown(k)}={shown(v, 120)}" for k, v in m["captured"].items()),
                          soft_wrap=True)
        for note in m["notes"]:
            console.print(f"     {shown(note)}", soft_wrap=True)
        console.print(f"     why: {shown(m['why'], 2000)}", soft_wrap=True)
        if m["fix_note"]:
            console.print(f"     fix: {shown(m['fix_note'], 1000)}", soft_wrap=True)
        if m["confirmed"] is not None:
            console.print("     the check of this launch reports it too" if m["confirmed"] else
                          "     [yellow]the check of this launch does not report it[/] (another launch, hardware or release?)")
    for c in data["causes"]:
        console.print(f"\n {_MARK[c['severity']]} [bold]{shown(c['title'])}[/]")
        console.print(f"     matched: {shown(c['signature'])} (line {c['line']}{', x' + str(c['count']) if c['count'] > 1 else ''})")
        console.print(f"     the line: {shown(c['text'])}", soft_wrap=True)
        console.print(f"     why: {shown(c['why'], 2000)}", soft_wrap=True)
        if c["probe"]:
            console.print(f"     probe check: {shown(c['probe'])}", soft_wrap=True)
        console.print(f"     fix: {shown(c['fix'], 1000)}", soft_wrap=True)
    _release(data["release"], console)
    _launch(data, console, out)


def _how(m: dict[str, Any]) -> str:
    if m["how"] == "oom":
        return f"out of memory, phase {m['captured'].get('phase', 'unknown')}"
    if m["how"] == "crash":
        return f"what a server killed by it prints: {m['captured'].get('signature', '')!r}"
    what = "the rule's message" if m["how"] == "message" else "sglang's wording of it"
    exact = "exactly" if m["exact"] else "inside the line"
    return f"{what}, {exact}, as sglang {', '.join(m['releases'])} print{'s' if len(m['releases']) == 1 else ''} it"


def _release(release: dict[str, Any], console: Console) -> None:
    if release.get("inferred"):
        console.print(f"\n[bold]Release:[/] sglang {shown(release['version'])}: {shown(release['why'])}")
    elif release.get("why", "").startswith("every release"):  # the range it cannot be narrowed from
        console.print(f"\n[bold]Release:[/] not placed: {shown(release['why'])}", soft_wrap=True)


def _launch(data: dict[str, Any], console: Console, out: TextIO) -> None:
    launch = data["launch"]
    if launch is None:
        console.print("\n[dim]No launch given or found in the text: give it after `--` for the corrected command.[/]")
        return
    where = launch["source"] + (f", line {launch['line']}" if launch["line"] else "")
    console.print(f"\n[bold]Launch[/] ({shown(where)}): {shown(shlex.join(launch['argv']), 2000)}", soft_wrap=True)
    findings = data["check_findings"]
    if findings is None:
        return
    failing = [f["rule"] for f in findings if f["severity"] == "error"]
    console.print(f"check on this launch: {', '.join(failing) if failing else 'no error'} (fix status: {data['fix_status']})")
    if data["corrected_command"] is not None:
        console.print(f"\n[bold]Corrected command[/] ({corrected_heading(data['corrected_unverified'])}):")
        out.write(data["corrected_command"] + "\n")
        out.flush()
    elif data["fix_status"] == "no-fix":
        console.print("[bold red]No corrected command:[/] no change of flags alone makes this launch pass "
                      "(h3doctor check shows the alternatives).")
