"""`h3doctor lint`: configuration, paths, the session, `--fix`/`--diff`, and the report for the
format writers (output/formats.py: the CLI picks the format). Returns the exit code and the
report, so the CLI stays thin."""

from __future__ import annotations

from pathlib import Path

from h3doctor.errors import ExitCode
from h3doctor.inputs.read import candidate
from h3doctor.lint import config as lint_config
from h3doctor.lint.discover import expand
from h3doctor.lint.report import build, rule_meta
from h3doctor.lint.session import LintSession
from h3doctor.output.formats import Report


def lint(paths: list[str], *, targets: tuple[str, ...] = (), fail_on: str | None = None,
         config_path: str | None = None, no_config: bool = False, fix: bool = False, diff: bool = False,
         sglang_version: str | None = None, rules_dir: str | None = None) -> tuple[int, Report]:
    found = None if no_config else (Path(config_path) if config_path else lint_config.discover())
    cfg = lint_config.load_config(found)
    files = expand(paths, is_candidate=candidate, exclude=cfg.exclude, exclude_root=cfg.root)
    session = LintSession(cfg, cli_targets=targets, rules_dir=rules_dir, sglang_version=sglang_version, fail_on=fail_on)
    run = session.run(files)
    before, diff_text = "", None  # what the text format prints before the findings, or instead of them (--diff)
    if fix or diff:
        from h3doctor.lint.fix import fix_files, lint_roots

        changes, notes = fix_files(run, session, write=fix and not diff, roots=lint_roots(paths))
        if diff:
            diff_text = "".join(c.diff for c in changes) + "".join(n + "\n" for n in notes)
        else:
            if changes:
                run = session.__class__(cfg, cli_targets=targets, rules_dir=rules_dir, sglang_version=sglang_version,
                                        fail_on=fail_on).run(files)  # report what is left after the fix
            before = "".join(f"fixed {c.path} ({c.summary})\n" for c in changes) + "".join(n + "\n" for n in notes)
    report = build(run, sglang_version=session.version)
    code = int(ExitCode.FINDINGS) if run.failing() else int(ExitCode.OK)

    def text(_console, out) -> None:
        from h3doctor.output.lint_text import lines

        out.write(diff_text if diff_text is not None else before + "".join(line + "\n" for line in lines(report)))

    return code, Report(report, text=text, findings=lambda: report["findings"], rules=lambda: rule_meta(session.rules),
                        help_uri_base=cfg.help_uri_base)
