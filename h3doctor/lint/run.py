"""`h3doctor lint`: configuration, paths (or standard input), the session, `--fix`/`--diff`, and
the report for the format writers (output/formats.py: the CLI picks the format). Returns the
exit code, the report and the notes for stderr, so the CLI stays thin."""

from __future__ import annotations

from dataclasses import dataclass, replace
from pathlib import Path

from h3doctor.errors import ExitCode, UsageError
from h3doctor.inputs.read import candidate
from h3doctor.lint import config as lint_config
from h3doctor.lint.discover import expand, force_excluded, lint_roots
from h3doctor.lint.report import build
from h3doctor.lint.session import LintRun, LintSession
from h3doctor.lint.stdin import STDIN, StdinCopy, default_name, read_stdin
from h3doctor.output.formats import Report
from h3doctor.output.rule_meta import rule_meta


@dataclass(frozen=True)
class LintOptions:
    targets: tuple[str, ...] = ()
    fail_on: str | None = None
    config_path: str | None = None
    no_config: bool = False
    fix: bool = False
    diff: bool = False
    unsafe_fixes: bool = False
    sglang_version: str | None = None
    rules_dir: str | None = None
    stdin_filename: str | None = None
    force_exclude: bool = False
    quiet: bool = False  # the findings only: no corrected commands, summary or fix notes
    statistics: bool = False  # one line per rule with its count instead of the findings
    baseline: str | None = None  # findings this baseline file accepts do not fail (lint/baseline.py)
    write_baseline: str | None = None  # write today's findings there first (then they are the baseline)
    exit_zero: bool = False  # exit 0 whatever the findings; usage and input errors keep their codes
    add_noqa: bool = False  # accept today's findings with inline suppressions (lint/add_noqa.py)
    verbose: bool = False  # say on stderr why each file that is no launch input was skipped


def lint(paths: list[str], opts: LintOptions = LintOptions()) -> tuple[int, Report, list[str]]:
    skipped: list[str] = []  # configurations found and not used, and why: said on stderr
    found = None if opts.no_config else (Path(opts.config_path) if opts.config_path
                                         else lint_config.discover(skipped=skipped))
    cfg = lint_config.load_config(found)
    copy = None
    if STDIN in paths:
        if paths != [STDIN]:
            raise UsageError("lint -: standard input is linted on its own; name no other path with it")
        text = read_stdin()
        copy = StdinCopy(text, opts.stdin_filename or default_name(text))
    try:
        code, report, notes = _lint(paths, opts, cfg, copy)
        return code, report, [f"h3doctor lint: configuration {s}" for s in skipped] + notes
    finally:
        if copy is not None:
            copy.close()


def _lint(paths: list[str], opts: LintOptions, cfg, copy: StdinCopy | None) -> tuple[int, Report, list[str]]:
    if copy is not None:
        # the name the user gave is a file of the repository: pre-commit and editors pass it with
        # --force-exclude as they do a named file, so `exclude:` skips it the same way (ruff's)
        skip = opts.force_exclude and force_excluded(copy.name, cfg.exclude, cfg.root)
        files, named = ([] if skip else [copy.path]), {copy.path: copy.name}
    else:
        if opts.stdin_filename:
            raise UsageError("--stdin-filename names the text of `lint -`; give - as the path")
        files = expand(paths, is_candidate=candidate, exclude=cfg.exclude, exclude_root=cfg.root,
                       force_exclude=opts.force_exclude)
        named = {}

    # "the repository": what lint may read (safeload.confined); standard input's text names files
    # as a script run here would, so its root is the working directory (and the copy itself)
    roots = lint_roots(paths) if copy is None else (".", copy.path)

    def new_session() -> LintSession:
        return LintSession(cfg, cli_targets=opts.targets, rules_dir=opts.rules_dir, sglang_version=opts.sglang_version,
                           fail_on=opts.fail_on, roots=roots)

    session = new_session()
    run = session.run(files, named=named)
    before, diff_text, notes, fixed_text = [], None, [], None
    overtaken = False  # a fix not written: the file changed while lint ran (exit 1 whatever the findings)
    if opts.fix or opts.diff or opts.add_noqa:
        from h3doctor.lint.fix import CHANGED_WHILE_RUNNING, fix_files

        write = (opts.fix or opts.add_noqa) and not opts.diff and copy is None
        if opts.add_noqa:
            from h3doctor.lint.add_noqa import add_noqa

            changes, notes = add_noqa(run, session, roots if copy is None else (), write=write)
        else:
            changes, notes = fix_files(run, session, write=write, roots=roots if copy is None else (),
                                       unsafe_fixes=opts.unsafe_fixes, show_unsafe=opts.diff)
        overtaken = any(n.endswith(CHANGED_WHILE_RUNNING) for n in notes)
        if copy is not None:
            changes = [replace(c, path=copy.name) for c in changes]
            notes = [copy.shown(n) for n in notes]
        if opts.diff:
            diff_text = "".join(c.diff for c in changes)
        elif copy is not None:  # `lint --fix -` writes the fixed text to stdout, as ruff does
            fixed_text = changes[0].after if changes else copy.text
            if changes:
                copy.write(fixed_text)
                run = new_session().run(files, named=named)
        else:
            if changes:
                run = new_session().run(files, named=named)  # report what is left after the fix
            before = [f"fixed {c.path} ({c.summary})" for c in changes] + notes
            notes = []
    if copy is not None:
        _rename(run, copy)
    notes = notes + _baseline(run, opts)
    if opts.verbose:
        notes += [f"h3doctor lint: skipped {f.path}: {f.skipped}" for f in run.files if f.skipped]
    report = build(run, sglang_version=session.version)
    code = int(ExitCode.FINDINGS) if (run.failing() or overtaken) and not opts.exit_zero else int(ExitCode.OK)

    def text(console, out) -> None:
        from h3doctor.output.lint_text import statistics, write

        if fixed_text is not None:
            out.write(fixed_text)
        elif diff_text is not None:
            out.write(diff_text)
        elif opts.statistics:
            out.write("".join(line + "\n" for line in statistics(run.records)))
        elif opts.quiet:
            write(console, out, report, run.records, show_fixes=False, summary=False)
        else:
            write(console, out, report, run.records, before=before)

    if fixed_text is not None:  # the findings left go to stderr: stdout is the file
        from h3doctor.output.lint_text import lines

        notes = notes + lines(report, run.records, show_fixes=False, summary=not opts.quiet)
    def diagnostics():  # SARIF's and GitHub's: each with its launch's located fix (read only by them)
        from h3doctor.lint.located_fixes import with_fixes

        return with_fixes(run.records, run, session) if fixed_text is None and diff_text is None else run.records

    return code, Report(report, text=text, diagnostics=diagnostics, rules=lambda: rule_meta(session.rules),
                        help_uri_base=cfg.help_uri_base), notes


def _baseline(run: LintRun, opts: LintOptions) -> list[str]:
    if not (opts.baseline or opts.write_baseline):
        return []
    from h3doctor.lint.baseline import apply_baseline, baseline_text, write_baseline

    if opts.write_baseline:
        write_baseline(opts.write_baseline, baseline_text(run))
    return apply_baseline(run, opts.write_baseline or opts.baseline)


def _rename(run: LintRun, copy: StdinCopy) -> None:
    """Every path and message of the run names the text as the user did, never the temporary copy."""
    for f in run.files:
        f.path = copy.shown(f.path)
    run.records = [replace(d, message=copy.shown(d.message), location=replace(d.location, path=copy.shown(d.location.path)))
                   for d in run.records]
