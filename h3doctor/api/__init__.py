"""h3doctor as a library: the CLI's commands as typed functions with frozen results.

    from h3doctor import api

    report = api.check(["sglang", "serve", "MiniMaxAI/MiniMax-H3", "--num-gpus", "4"], profile="4xH200")
    report.verdict, report.exit_code, report.corrected_argv
    report.to_dict()   # exactly `h3doctor check --format json`

Importing it imports neither torch, Typer nor Rich; no call prints, reads stdin or exits. The
calls are thread-safe and the rules are loaded once per process. Reference: docs/api.md.
"""

from __future__ import annotations

from h3doctor.api.commands import check, explain, lint, probe, suggest
from h3doctor.api.errors import ExitCode, H3DoctorError, InputError, InternalError, UsageError
from h3doctor.api.results import ExplainReport, Finding, Hardware, LintReport, Report, Suggestions

__all__ = [
    "check", "lint", "explain", "suggest", "probe",
    "Report", "Finding", "LintReport", "ExplainReport", "Suggestions", "Hardware",
    "H3DoctorError", "UsageError", "InputError", "InternalError", "ExitCode",
]
