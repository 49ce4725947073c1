"""Human-readable reports. Machine formats live in report.py; nothing here decides anything."""

from __future__ import annotations

import json

from h3doctor.facts import assumed_line, official_image
from h3doctor.engine.results import CheckResult
from h3doctor.output import memory_bar
from h3doctor.output.lines import Lines, escape
from h3doctor.output.json_report import changes_by_rule, stage_title
from h3doctor.output.verdict import VERDICT_MARK, corrected_heading
from h3doctor.shellwords import join, safe_text

TYPE_CHECKING = False  # typing is not imported at run time (start-up: record.py)
if TYPE_CHECKING:  # Rich styles a terminal's report only (output/markup.py)
    from typing import Any, TextIO
    from rich.console import Console


def probe_env_notice(names: tuple[str, ...], shown: int = 8) -> str:
    """What the live probe held back from the launch's environment (names are identifiers)."""
    listed = ", ".join(names[:shown]) + (f" and {len(names) - shown} more" if len(names) > shown else "")
    return (f"the probe of this host ran without the launch's {listed}: only the variables sglang's platform "
            "detection reads reach it before --exec (nothing a launch sets may run code before you launch it)")


_MARK = {"error": "[bold red]✗[/]", "warning": "[yellow]![/]", "info": "[blue]i[/]"}


def text_report(result: CheckResult, console: Console, out: TextIO, *, show_config: bool, effective: dict[str, Any],
                summary: dict[str, Any], verbose: bool = False) -> None:
    """The check as a person reads it: the verdict first (`summary`, output/verdict.py), then per
    finding its headline, sglang's words, the fix and the changed words; `verbose` adds each
    finding's why, catalog references and stage, and the fix loop's notes."""
    ev = result.evaluation
    fam = ev.family.family
    lines = Lines(console)
    lines.say(summary["text"], mark=VERDICT_MARK[summary["verdict"]])
    _header(result, lines, verbose)
    if summary.get("all_gpus_command"):
        idle = summary["gpus_present"] - summary["gpus_used"]
        lines.say(f"{_count_gpus(idle)} idle; this launch uses all {_count_gpus(summary['gpus_present'])} (it checks "
                  "clean):", mark=_MARK["info"])
        out.write(summary["all_gpus_command"] + "\n")  # one pasteable line, whatever the width
        out.flush()
    if show_config and effective:
        lines.markup("[bold]Effective configuration[/] (as sglang resolves it):")
        for key, value in effective.items():
            lines.say(f"{key} = {safe_text(json.dumps(value), 300)}", indent=2, hang=4)
    if verbose:
        _findings_verbose(result, lines)
    else:
        _findings_short(result, lines)
    memory = effective.get("memory") if effective else None
    if memory and (show_config or any(f.rule.judges_gpu_memory for f in ev.findings)):
        lines.markup("")
        memory_bar.draw(memory, console, gpus_used=summary.get("gpus_used"), gpus_present=summary.get("gpus_present"))
    late = [f for f in ev.findings if f.rule.stage in ("after-download", "first-request") and f.severity == "error"]
    if verbose and late and fam is not None:
        lines.markup("")
        lines.markup(f"[bold]Saved:[/] {len(late)} failure(s) sglang would only report after downloading "
                     f"{escape(fam.weights_note)} or at the first request.")
    for note in result.fix_notes if verbose else ():
        lines.say(f"note: {note}")
    shown = _said_above(result, verbose)
    for item in result.gives_up:
        lines.say(shown.get(item, item), mark="[yellow]gives up:[/]")
    _no_fix(result, lines, out, shown)
    if result.corrected_command is not None:
        lines.markup("")
        lines.markup(f"[bold]Corrected command[/] ({corrected_heading(result.corrected_unverified)}):")
        out.write(result.corrected_command + "\n")  # one pasteable line, whatever the width
        out.flush()
    if ev.findings and not verbose:
        ids = " ".join(dict.fromkeys(f.rule.id for f in ev.findings))
        lines.markup(f"[dim]more: --verbose, or h3doctor rule {ids}[/]")


def _count_gpus(n: int) -> str:
    return "1 GPU" if n == 1 else f"{n} GPUs"


def _header(result: CheckResult, lines: Lines, verbose: bool) -> None:
    """What was checked, on what hardware."""
    ev = result.evaluation
    fam = ev.family.family
    hw = ev.hardware
    where = hw.description or hw.device_name or hw.platform
    if official_image(hw):  # its CUDA stack, driver and kernels: `h3doctor profiles`, JSON `assumed`
        where += "; official image"
    if fam is not None:
        how, source = (f" ({ev.family.how})", f" ({hw.source})") if verbose else ("", "")
        lines.say(f"{fam.label}{how} on {where}{source}", indent=2)
    elif verbose:
        lines.say(f"not a MiniMax-H3 launch: {ev.family.how}", mark=_MARK["info"])
    probed = hw.source.startswith("probe")
    if verbose or not probed:
        # a profile's host facts are assumptions the verdict stands on (docs/host-facts.md); the
        # probe's are this machine's, said with their sources by `h3doctor probe` (and --verbose)
        lines.say(f"{'host' if probed else 'assumed'}: {assumed_line(hw, stack=not official_image(hw))}", indent=2)
    if hw.probe_env_not_applied:
        lines.say(probe_env_notice(hw.probe_env_not_applied), mark=_MARK["warning"])


def _findings_short(result: CheckResult, lines: Lines) -> None:
    """Per finding: its headline in the user's words, sglang's text where sglang prints one, one
    fix line and the words of the command it changes."""
    changes = changes_by_rule(result)
    for f in result.evaluation.findings:
        if f is result.evaluation.findings[0]:
            lines.markup("")
        mark, title = ("[yellow]?[/]", f"cannot verify: {f.rule.title}") if f.cannot_verify else (_MARK[f.severity], f.rule.title)
        lines.say(f"{title} [{f.rule.id}]", mark=mark)
        if f.cannot_verify:  # what it would take to tell; sglang's words if it fails: --verbose
            lines.say(f"unknown: {f.unknown_why or ', '.join(f.unknown_facts)}", indent=2)
            continue
        if f.severity == "info":  # a note: sglang goes on; its text and fix are --verbose's
            continue
        lines.say(f"{f.says}: {f.message}", indent=2, hang=2)
        # one fix line: the words the corrected command changes, else the rule's advice
        fixes = [f"the command {change}" for change in changes.get(f.rule.id, ())] or [f.fix_note] * bool(f.fix_note)
        for fix in fixes:
            lines.say(f"fix: {fix}", indent=2)
    _found_while_fixing(result, lines, changes)


def _findings_verbose(result: CheckResult, lines: Lines) -> None:
    """Each finding by stage, with the rule's catalog references, its why and detail."""
    ev = result.evaluation
    proposal = "the corrected command" if result.corrected_argv is not None else "the nearest launch"
    changes = changes_by_rule(result)
    stage = None
    for f in ev.findings:
        if f.rule.stage != stage:
            stage = f.rule.stage
            title = stage_title(stage, [g.severity for g in ev.findings if g.rule.stage == stage])
            lines.markup("")
            lines.markup(f"[bold]{escape(title)}:[/]")
        label = "cannot verify" if f.cannot_verify else f.severity
        lines.say(f"{f.rule.id} ({','.join(f.rule.catalog)}) {label}: {f.rule.title}", mark=" " + _MARK[f.severity],
                  hang=4)
        lines.say(f"{f.says}: {f.message}", indent=5)
        if f.cannot_verify:
            lines.say(f"unknown: {f.unknown_why or ', '.join(f.unknown_facts)}", indent=5)
        lines.say(f"why: {' '.join((f.why or f.rule.why).split())}", indent=5)
        if f.detail:
            lines.say(f.detail, indent=5)
        if f.fix_note:
            lines.say(f"fix: {f.fix_note}", indent=5)
        for change in changes.get(f.rule.id, ()):
            lines.say(f"{proposal} {change}", indent=5)
    _found_while_fixing(result, lines, changes)


def _found_while_fixing(result: CheckResult, lines: Lines, changes: dict[str, list[str]]) -> None:
    proposal = "the corrected command" if result.corrected_argv is not None else "the nearest launch"
    later = [step for step in result.fix_steps if step.found_after_fix and step.changes] if changes else []
    if later:
        lines.markup("")
        lines.markup("[bold]Found while fixing[/] (sglang reports these only once the ones above are fixed):")
        for step in later:
            lines.say(f"{step.rule.id}: {step.message}", mark=" " + _MARK["error"], hang=4)
            for change in step.changes:
                lines.say(f"{proposal} {change.text}", indent=5)


def _said_above(result: CheckResult, verbose: bool) -> dict[str, str]:
    """What the findings above already print, each mapped to a pointer to it, so the fix loop's
    "gives up" and "still fails" lines do not repeat a finding's message or fix word for word: a
    finding's message ("H3D641: …" → "H3D641, as above") and its advice when that was its fix
    line ("H3D641 has no automatic fix here: …" → "… here (its fix above)")."""
    changes = changes_by_rule(result)
    shown: dict[str, str] = {}
    for f in result.evaluation.findings:
        if f.cannot_verify or (f.severity == "info" and not verbose):
            continue
        shown[f"{f.rule.id}: {f.message}"] = f"{f.rule.id}, as above"
        if f.fix_note and (verbose or not changes.get(f.rule.id)):
            for says in ("has no automatic fix", "has no automatic fix here"):  # engine/judge.py's two
                shown[f"{f.rule.id} {says}: {f.fix_note}"] = f"{f.rule.id} {says} (its fix above)"
    return shown


def _no_fix(result: CheckResult, lines: Lines, out: TextIO, shown: dict[str, str]) -> None:
    """Why there is no corrected command, and the nearest launch and the alternatives instead."""
    if result.fits_nowhere:
        lines.markup("")
        lines.markup(f"[bold red]No corrected command fits this hardware:[/] the nearest launch is "
                     f"{result.shortfall_gib} GiB per GPU short (the workspace measured on real runs and its margin); "
                     "it still fails:")
        for line in result.still_fails:
            lines.say(shown.get(line, line), indent=2)
    elif result.fix_status == "no-fix":
        lines.markup("")
        lines.markup("[bold red]No corrected command:[/] no change of flags alone makes this launch pass (see above).")
    if result.fix_status == "no-fix":
        if result.nearest_argv:  # every word dropped (`check --bogus-opt -- ...`) is no launch to show
            lines.markup("[bold]Nearest launch[/] (every other finding fixed):")
            out.write(join(result.nearest_argv) + "\n")
            out.flush()
        _alternatives(result, lines, out)
    elif result.fix_status == "not-converged":
        lines.markup("")
        lines.markup("[bold red]h3doctor could not find a corrected command[/] (the fixes did not converge).")


def _alternatives(result: CheckResult, lines: Lines, out: TextIO) -> None:
    """What the user can choose instead, each with what it gives up; none is applied for them."""
    if not result.alternatives:
        return
    lines.markup("")
    lines.markup("[bold]Alternatives[/] (each gives something up; h3doctor never picks one for you):")
    for n, alt in enumerate(result.alternatives, 1):
        state = "checks clean" if alt.checks_clean else f"still fails: {', '.join(alt.still_failing)}"
        lines.say(f"{'; '.join(alt.gives_up)} ({state})", mark=f" {n}.", hang=4)
        out.write(f"    {alt.command}\n")  # a command stays one pasteable line
        out.flush()
