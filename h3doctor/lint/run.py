"""`h3doctor lint`: configuration, paths, the session, `--fix`/`--diff`, and the report in the
chosen format. Returns the exit code and the text to print, so the CLI stays thin."""

from __future__ import annotations

import json
from pathlib import Path

from h3doctor.errors import ExitCode
from h3doctor.inputs.read import candidate
from h3doctor.lint import config as lint_config
from h3doctor.lint.discover import expand
from h3doctor.lint.report import build, rule_meta
from h3doctor.lint.session import LintSession


def lint(paths: list[str], *, targets: tuple[str, ...] = (), format: str = "text", fail_on: str | None = None,
         config_path: str | None = None, no_config: bool = False, fix: bool = False, diff: bool = False,
         sglang_version: str | None = None, rules_dir: str | None = None) -> tuple[int, str]:
    found = None if no_config else (Path(config_path) if config_path else lint_config.discover())
    cfg = lint_config.load_config(found)
    files = expand(paths, is_candidate=candidate, exclude=cfg.exclude, exclude_root=cfg.root)
    session = LintSession(cfg, cli_targets=targets, rules_dir=rules_dir, sglang_version=sglang_version, fail_on=fail_on)
    run = session.run(files)
    prefix = ""
    if fix or diff:
        from h3doctor.lint.fix import fix_files

        changes, notes = fix_files(run, session, write=fix and not diff)
        if diff:
            prefix = "".join(c.diff for c in changes)
            if format == "text":
                return (int(ExitCode.FINDINGS) if run.failing() else int(ExitCode.OK)), prefix + "".join(n + "\n" for n in notes)
        elif changes:
            run = session.__class__(cfg, cli_targets=targets, rules_dir=rules_dir, sglang_version=sglang_version,
                                    fail_on=fail_on).run(files)  # report what is left after the fix
        if format == "text":
            prefix += "".join(f"fixed {c.path} ({c.summary})\n" for c in changes if not diff)
            prefix += "".join(n + "\n" for n in notes)
    report = build(run, sglang_version=session.version)
    code = int(ExitCode.FINDINGS) if run.failing() else int(ExitCode.OK)
    if format == "json":
        return code, json.dumps(report, indent=2) + "\n"
    if format == "sarif":
        from h3doctor.output import sarif

        return code, json.dumps(sarif.build(report["findings"], rule_meta(session.rules),
                                            help_uri_base=cfg.help_uri_base), indent=2) + "\n"
    if format == "github":
        from h3doctor.output import github

        return code, "".join(line + "\n" for line in github.lines(report["findings"]))
    from h3doctor.output.lint_text import lines

    return code, prefix + "".join(line + "\n" for line in lines(report))

