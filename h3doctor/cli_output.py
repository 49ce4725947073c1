"""What `check`, `lint` and `suggest` hand the format registry (output/formats.py), and where the
text goes: --output-file or the stream. Kept apart from cli.py (and Typer) so the console entry
(entry.py) can answer `check` without loading the CLI, through the very same code."""

from __future__ import annotations

import os

from h3doctor.errors import UsageError


def check_report(result, fail_on: str, show_config: bool, recipe, profile, rules_dir, verbose: bool = False):
    """One check as the format writers read it (output/formats.py)."""
    from h3doctor.output import json_report
    from h3doctor.output.formats import Report

    data = json_report.build(result, fail_on)

    def text(console, out) -> None:
        from h3doctor.output.text import text_report

        text_report(result, console, out, show_config=show_config, effective=data["effective_config"],
                    summary=data["summary"], verbose=verbose)

    def diagnostics():
        launch, table = None, None
        if recipe:
            from h3doctor.inputs.recipe import load_recipe, recipe_launch
            from h3doctor.sglang.flagtable import load_flag_table

            launch = recipe_launch(load_recipe(recipe))
            table = load_flag_table(data["sglang_version"])
        target = profile or (launch.targets[0] if launch is not None and launch.targets else None)
        return check_diagnostics(result, target=target or result.evaluation.hardware.source, launch=launch, table=table)

    def rules():
        from pathlib import Path

        from h3doctor.engine.ruleset import load_rules
        from h3doctor.output.rule_meta import rule_meta

        return rule_meta(load_rules(Path(rules_dir) if rules_dir else None))

    return Report(data, text=text, diagnostics=diagnostics, rules=rules)


def check_diagnostics(result, *, target: str, launch=None, table=None) -> list:
    """One check's findings as diagnostics, located in the recipe when it came from one (`launch`,
    read with the flag table `table`), else with no location: the command line."""
    from h3doctor.output.diagnostic import Location, from_finding

    ev = result.evaluation
    if launch is None:
        return [from_finding(f, ev, target=target, hardware=ev.hardware.description or target, launch="command line")
                for f in ev.findings]
    from h3doctor.engine.locate import Locator

    locator = Locator(table)
    out = []
    for f in ev.findings:
        pos = locator.locate(f, ev, launch, result)
        out.append(from_finding(f, ev, Location(launch.path, pos.line, pos.col), target=target,
                                hardware=ev.hardware.description or target, launch=launch.label,
                                input_kind=launch.kind))
    # by line and column, as lint sorts them (stable: sglang's order on one word)
    return sorted(out, key=lambda d: (d.location.line, d.location.column))


def write_report(command: str, name: str, report, out, output_file: str | None, *, follow: bool = True) -> None:
    """The report in its format, to --output-file or else `out` (the same text either way; a
    terminal gets the text format's colours). `follow=False`: the file is written fresh, never
    through a link or into a FIFO (paths.write_atomic)."""
    from h3doctor.output.formats import render, terminal_width
    from h3doctor.record import replace

    styled = output_file is None and (out.isatty() or bool(os.environ.get("FORCE_COLOR")))
    width = None if output_file else terminal_width(out)
    text = render(command, name, replace(report, styled=styled, width=width))
    if output_file:
        write_file(output_file, text, "report", follow=follow)
    else:
        out.write(text)


def write_file(path: str, text: str, what: str, *, follow: bool = True) -> None:
    from pathlib import Path

    from h3doctor.paths import write_atomic

    try:
        write_atomic(Path(path), text, follow=follow)
    except (OSError, ValueError) as exc:
        reason = exc.strerror if isinstance(exc, OSError) and exc.strerror else type(exc).__name__
        raise UsageError(f"cannot write the {what}: {reason}", location=short(path, 200)) from None


def short(text: str, limit: int = 300) -> str:
    return text if len(text) <= limit else text[: limit - 3] + "..."
