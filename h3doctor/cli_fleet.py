"""The CI and fleet commands' bodies: `h3doctor lint`, `h3doctor admission` and `h3doctor export
vap` (cli.py declares them). Each returns its exit code or runs in the foreground."""

from __future__ import annotations

import sys

from h3doctor.cli_output import write_file, write_report
from h3doctor.errors import UsageError


def lint(paths: list[str] | None, format_name: str, output_file: str | None, **options) -> int:
    """`h3doctor lint` with lint.run.LintOptions' fields by name: options refused together are usage
    errors before any file is read; the report goes to stdout or --output-file, the notes
    (configurations found and not used) to stderr; the exit code."""
    from h3doctor.lint.run import LintOptions
    from h3doctor.lint.run import lint as run_lint

    given = LintOptions(**options)
    if given.unsafe_fixes and not (given.fix or given.diff):
        raise UsageError("--unsafe-fixes says which fixes --fix applies: give --fix too")
    if given.baseline and given.write_baseline:
        raise UsageError("--write-baseline writes the baseline --baseline reads: give one of them")
    if given.add_noqa and (given.fix or given.unsafe_fixes):
        raise UsageError("--add-noqa accepts the findings --fix would correct: give one of them")
    code, report, notes = run_lint(paths or ["."], given)
    # lint runs in trees others wrote: its report never goes through a link planted in them
    write_report("lint", format_name, report, sys.stdout, output_file, follow=False)
    if notes and not given.quiet:
        sys.stderr.write("".join(n + "\n" for n in notes))
    return code


def admission(**options) -> None:
    """`h3doctor admission`: the admission webhook's HTTPS server, in the foreground."""
    from h3doctor.integrations.kubernetes_admission.main import run_server

    run_server(**options)


def export_vap(deny: bool, name: str, output: str | None) -> None:
    """`h3doctor export vap`: the ValidatingAdmissionPolicy and its binding as YAML."""
    from h3doctor.integrations.vap import policies, render

    text = render(policies(deny=deny, name=name))
    if output:
        write_file(output, text, "policy")
    else:
        sys.stdout.write(text)
