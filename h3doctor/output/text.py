"""Human-readable reports. Machine formats live in report.py; nothing here decides anything."""

from __future__ import annotations

import json

from h3doctor.engine.results import CheckResult
from h3doctor.output import memory_bar
from h3doctor.output.json_report import changes_by_rule, stage_title
from h3doctor.output.markup import escape as _markup_escape
from h3doctor.shellwords import join, safe_text

TYPE_CHECKING = False  # typing is not imported at run time (start-up: record.py)
if TYPE_CHECKING:  # Rich styles a terminal's report only (output/markup.py)
    from typing import Any, TextIO
    from rich.console import Console

TEXT_LIMIT = 2000  # a message or note shown longer than this is an excerpt (the JSON report has it whole)


def escape(text: str, limit: int = TEXT_LIMIT) -> str:
    """Text for the console: control characters and undecodable bytes written as escapes and cut
    to `limit` characters (safe_text), then markup escaped. Every value from an input reaches the
    console through here."""
    return _markup_escape(safe_text(text, limit))


def probe_env_notice(names: tuple[str, ...], shown: int = 8) -> str:
    """What the live probe held back from the launch's environment (names are identifiers)."""
    listed = ", ".join(names[:shown]) + (f" and {len(names) - shown} more" if len(names) > shown else "")
    return (f"the probe of this host ran without the launch's {listed}: only the variables sglang's platform "
            "detection reads reach it before --exec (nothing a launch sets may run code before you launch it)")


_MARK = {"error": "[bold red]✗[/]", "warning": "[yellow]![/]", "info": "[blue]i[/]"}


def text_report(result: CheckResult, console: Console, out: TextIO, *, show_config: bool, effective: dict[str, Any]) -> None:
    ev = result.evaluation
    fam = ev.family.family
    proposal = "the corrected command" if result.corrected_argv is not None else "the nearest launch"
    changes = changes_by_rule(result)
    hw = ev.hardware
    where = hw.description or hw.device_name or hw.platform
    if fam is None:
        console.print(f"[blue]i[/] not a MiniMax-H3 launch: {escape(ev.family.how)}")
    else:
        console.print(f"MiniMax-H3 launch check: [bold]{escape(fam.label)}[/] ({escape(ev.family.how)}) on {escape(where)} "
                      f"[dim]({escape(hw.source)})[/]")
    if hw.probe_env_not_applied:
        console.print(f"[yellow]![/] {escape(probe_env_notice(hw.probe_env_not_applied))}", soft_wrap=True)
    if show_config and effective:
        console.print("[bold]Effective configuration[/] (as sglang resolves it):")
        for key, value in effective.items():
            console.print(f"  {key} = {escape(json.dumps(value), 300)}", soft_wrap=True)
    if not ev.findings:
        console.print("[green]✓[/] no finding: sglang would accept this launch")
    stage = None
    for f in ev.findings:
        if f.rule.stage != stage:
            stage = f.rule.stage
            title = stage_title(stage, [g.severity for g in ev.findings if g.rule.stage == stage])
            console.print(f"\n[bold]{title}:[/]")
        label = "cannot verify" if f.cannot_verify else f.severity
        console.print(f" {_MARK[f.severity]} [bold]{f.rule.id}[/] ({','.join(f.rule.catalog)}) {label}: {escape(f.rule.title)}")
        console.print(f"     {f.says}: {escape(f.message)}", soft_wrap=True)
        if f.cannot_verify:
            console.print(f"     unknown: {escape(f.unknown_why or ', '.join(f.unknown_facts))}")
        console.print(f"     why: {escape(' '.join((f.why or f.rule.why).split()))}", soft_wrap=True)
        if f.detail:
            console.print(f"     {escape(f.detail)}", soft_wrap=True)
        if f.fix_note:
            console.print(f"     fix: {escape(f.fix_note)}", soft_wrap=True)
        for change in changes.get(f.rule.id, ()):
            console.print(f"     {proposal} {escape(change)}", soft_wrap=True)
    later = [step for step in result.fix_steps if step.found_after_fix and step.changes] if changes else []
    if later:
        console.print("\n[bold]Found while fixing[/] (sglang reports these only once the ones above are fixed):")
        for step in later:
            console.print(f" {_MARK['error']} [bold]{step.rule.id}[/]: {escape(step.message)}", soft_wrap=True)
            for change in step.changes:
                console.print(f"     {proposal} {escape(change.text)}", soft_wrap=True)
    memory = effective.get("memory") if effective else None
    if memory and (show_config or any(f.rule.judges_gpu_memory for f in ev.findings)):
        console.print("")
        memory_bar.draw(memory, console)
    late = [f for f in ev.findings if f.rule.stage in ("after-download", "first-request") and f.severity == "error"]
    if late and fam is not None:
        console.print(f"\n[bold]Saved:[/] {len(late)} failure(s) sglang would only report after downloading "
                      f"{fam.weights_note} or at the first request.")
    for note in result.fix_notes:
        console.print(f"[dim]note: {escape(note)}[/]")
    for item in result.gives_up:
        console.print(f"[yellow]gives up:[/] {escape(item)}")
    if result.fits_nowhere:
        console.print(f"\n[bold red]No corrected command fits this hardware:[/] the nearest launch is "
                      f"{result.shortfall_gib} GiB per GPU short (the workspace measured on real runs and its margin); it still fails:")
        for line in result.still_fails:
            console.print(f"  {escape(line)}", soft_wrap=True)
    elif result.fix_status == "no-fix":
        console.print("\n[bold red]No corrected command:[/] no change of flags alone makes this launch pass (see above).")
    if result.fix_status == "no-fix":
        if result.nearest_argv:  # every word dropped (`check --bogus-opt -- ...`) is no launch to show
            console.print("[bold]Nearest launch[/] (every other finding fixed):")
            out.write(join(result.nearest_argv) + "\n")
            out.flush()
        _alternatives(result, console, out)
    elif result.fix_status == "not-converged":
        console.print("\n[bold red]h3doctor could not find a corrected command[/] (the fixes did not converge).")
    if result.corrected_command is not None:
        console.print("\n[bold]Corrected command[/] (passes every rule):")
        out.write(result.corrected_command + "\n")
        out.flush()


def _alternatives(result: CheckResult, console: Console, out: TextIO) -> None:
    """What the user can choose instead, each with what it gives up; none is applied for them."""
    if not result.alternatives:
        return
    console.print("\n[bold]Alternatives[/] (each gives something up; h3doctor never picks one for you):")
    for n, alt in enumerate(result.alternatives, 1):
        state = "checks clean" if alt.checks_clean else f"still fails: {', '.join(alt.still_failing)}"
        console.print(f" {n}. {escape('; '.join(alt.gives_up))} [dim]({escape(state)})[/]", soft_wrap=True)
        out.write(f"    {alt.command}\n")
        out.flush()
