"""The advice commands' bodies: `h3doctor explain` (an error or a crash log -> the rule and the
corrected command) and `h3doctor suggest` (the best launch on this hardware); cli.py declares them.
Each writes its report and returns its exit code."""

from __future__ import annotations

import os
import sys

from h3doctor.cli_output import write_report
from h3doctor.errors import ExitCode, UsageError


def explain(words: list[str], log: str | None, format_name: str, output_file: str | None, **request) -> int:
    """`h3doctor explain`: the text from --log, stdin (`-`) or the first word; the words after it
    are the launch. 0 when a rule or a cause is named, 1 when nothing matched."""
    from h3doctor.explain import source
    from h3doctor.explain.report import ExplainRequest, run
    from h3doctor.output.explain_text import explain_report
    from h3doctor.output.formats import Report

    if log is not None:
        text = source.from_file(log)
    elif not words:
        raise UsageError("nothing to explain: give the error text, - to read stdin, or --log FILE")
    else:
        first, words = words[0], words[1:]
        text = source.from_stdin() if first == "-" else source.from_argument(first)
    report = run(ExplainRequest(text, words, **request))
    write_report("explain", format_name, Report(report.as_dict(), text=lambda console, buf: explain_report(report, console, buf)),
                 sys.stdout, output_file)
    return int(ExitCode.OK) if report.explained else int(ExitCode.FINDINGS)


def suggest(format_name: str, output_file: str | None, exec_: bool, **request) -> int:
    """`h3doctor suggest`: the search's report; with --exec, the best command started as `check
    --exec` starts a clean launch. 1 when nothing checks clean or the best is shown not to fit."""
    from h3doctor.output.formats import Report
    from h3doctor.output.suggest_text import suggest_report
    from h3doctor.suggest import SuggestRequest, run

    data = run(SuggestRequest(**request))
    out = sys.stderr if exec_ else sys.stdout  # when sglang starts, stdout is sglang's
    write_report("suggest", format_name, Report(data, text=lambda console, buf: suggest_report(data, console, buf)),
                 out, output_file)
    # nothing checks clean, or the best is shown not to fit; "cannot verify" the memory fit (CPU, MPS) is
    # said in the report and, as a warning is for check, does not fail the command
    if data["status"] not in ("fits", "cannot-verify"):
        return int(ExitCode.FINDINGS)
    return _exec(data["best"]["argv"]) if exec_ else int(ExitCode.OK)


def _exec(argv: list[str]) -> int:
    """Launch the best suggestion as `check --exec` launches a clean launch (it checked clean)."""
    from h3doctor.launch.gate import Verdict, exec_launch
    from h3doctor.sglang.launch_forms import program_lookup

    return exec_launch(Verdict([], None, "clean"), list(argv), dict(os.environ), program_of=program_lookup)
