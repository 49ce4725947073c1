"""Each finding's fix as SARIF carries it (issue 30 item 8): the text span of the launch that
`lint --fix` edits, and the text it writes there — never the whole file — with the fix's
applicability (safe, or only with --unsafe-fixes).

The edit is the one lint/fix.py makes for the launch alone (`edited_text`); the span is where that
text and the file's differ (the same words, layout and quoting `--fix` keeps). A finding gets it
when the correction fixes its rule on some target (the fix loop's steps); a suppressed finding,
a launch with no correction, or one `--fix` would not write (a notebook, a refused rewrite) gets none.
"""

from __future__ import annotations

import bisect

from h3doctor.inputs.script_launch import line_argv
from h3doctor.lint.fix import Refused, edited_text, launch_corrections
from h3doctor.lint.probe_fixes import edited_rules, probe_edits
from h3doctor.lint.session import LintRun, LintSession
from h3doctor.output.diagnostic import Diagnostic, Fix, Replacement
from h3doctor.record import replace
from h3doctor.tokendiff import changed_span


def _line_col(starts: list[int], offset: int) -> tuple[int, int]:
    line = bisect.bisect_right(starts, offset)
    return line, offset - starts[line - 1] + 1


def with_fixes(records: list[Diagnostic], run: LintRun, session: LintSession) -> list[Diagnostic]:
    """`records`, each that a launch's correction fixes carrying that correction's located edit."""
    fixes: dict[tuple[str, str, str], Fix] = {}  # (path, launch, rule) -> its launch's fix
    for f in run.files:
        if f.kind == "notebook":
            continue
        starts = [0] + [i + 1 for i, c in enumerate(f.text) if c == "\n"]
        probes = probe_edits(f, session)
        for launch, fix, _why in launch_corrections(f, session, edited_rules(probes)):
            if fix is None or fix.kept:
                continue
            try:
                span = changed_span(f.text, edited_text(f, launch, fix.argv, session))
            except Refused:
                continue
            if span is None:
                continue
            (line, col), (end_line, end_col) = _line_col(starts, span[0]), _line_col(starts, span[1])
            located = Fix("corrected: " + " ".join(line_argv(launch, fix.argv) or fix.argv), "unsafe" if fix.unsafe else "safe",
                          (Replacement(line, col, end_line, end_col, span[2]),))
            rules = {step.rule.id for target in session.judged_on(launch)
                     for step in session.check(launch, target, _hold(f, launch))[1].fix_steps}
            for rule in rules:
                fixes[(f.path, launch.label, rule)] = located
        for e in probes:  # a probe's field, edited where the manifest writes it
            fixes[(f.path, e.launch, e.rule)] = Fix(e.what, "unsafe" if e.unsafe else "safe", (Replacement(
                e.pos.line, e.pos.col, e.end.line, e.end.col, e.text),))
    return [replace(d, fix=fixes[key]) if d.location is not None and d.suppression is None
            and (key := (d.location.path, d.launch, d.rule)) in fixes else d for d in records]


def _hold(f, launch) -> frozenset[str]:
    n = f.launches.index(launch)
    return f.holds[n] if n < len(f.holds) else frozenset()
