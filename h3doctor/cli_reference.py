"""The reference commands' bodies: `h3doctor rules`, `rule ID`, `coverage`, `schema NAME` and
`profiles` (cli.py declares them). Each writes to stdout and returns nothing; a wrong name is a
UsageError (exit 2)."""

from __future__ import annotations

import sys
from pathlib import Path

from h3doctor.cli_output import short, write_file
from h3doctor.digits import is_digits
from h3doctor.errors import UsageError
from h3doctor.output.json_text import json_text

SCHEMAS = ("recipe", "config", "report", "lint-report", "rule", "explain")


def _rules(rules_dir: str | None):
    from h3doctor.engine.ruleset import load_rules

    return load_rules(Path(rules_dir) if rules_dir else None)


def rules(format_name: str, rules_dir: str | None, markdown: str | None) -> None:
    """`h3doctor rules`: one line per rule, their JSON, or the reference page (docs/rules.md)."""
    loaded = _rules(rules_dir)
    if markdown:
        from h3doctor.lint.report import rules_markdown

        Path(markdown).write_text(rules_markdown(loaded), encoding="utf-8")
        return
    if format_name == "json":
        sys.stdout.write(json_text([r.as_dict() for r in loaded]))
        return
    from h3doctor.output.reference_text import console, rules_list

    rules_list(loaded, console())


def rule(rule_id: str, format_name: str, rules_dir: str | None) -> None:
    """`h3doctor rule ID`: one rule, its sglang lines, texts and examples."""
    loaded = _rules(rules_dir)
    # the number alone is the rule people mean ("rule 305"), never a look-alike (H3D805)
    wanted = f"H3D{rule_id}" if is_digits(rule_id) else rule_id.upper()
    match = next((r for r in loaded if wanted == r.id or rule_id == r.name), None)
    if match is None:
        import difflib

        close = (difflib.get_close_matches(wanted, [r.id for r in loaded], n=1)  # IDs upper-case, names as written
                 + difflib.get_close_matches(rule_id, [r.name for r in loaded], n=1))
        raise UsageError(f"no rule {short(rule_id, 80)!r}" + (f"; did you mean {close[0]}?" if close else ""))
    if format_name == "json":
        sys.stdout.write(json_text(match.as_dict()))
        return
    from h3doctor.output.reference_text import console, rule_report

    rule_report(match, console(), sys.stdout)


def coverage(write: str | None) -> None:
    """`h3doctor coverage`: the catalog coverage table, printed or written to a file."""
    from h3doctor.engine.coverage import markdown

    text = markdown(_rules(None))
    if write:
        write_file(write, text, "coverage table")
    else:
        sys.stdout.write(text)


def schema(name: str) -> None:
    """`h3doctor schema NAME`: one of the package's JSON Schemas as it is shipped."""
    from h3doctor.paths import package_dir

    if name not in SCHEMAS:
        raise UsageError(f"no schema {name!r}; known: {', '.join(SCHEMAS)}")
    sys.stdout.write(package_dir("h3doctor.schema").joinpath(f"{name}.schema.json").read_text(encoding="utf-8"))


def profiles(format_name: str) -> None:
    """`h3doctor profiles`: the built-in profiles with what each assumes, and the GPU catalog."""
    from dataclasses import asdict

    from h3doctor.facts import assumed, assumed_line
    from h3doctor.host.gpus import catalog
    from h3doctor.host.profiles import builtin_profile_names, load_profile

    if format_name == "json":
        sys.stdout.write(json_text({"builtin": {n: load_profile(n).description for n in builtin_profile_names()},
                                    "assumed": {n: assumed(load_profile(n)) for n in builtin_profile_names()},
                                    "gpus": [asdict(g) for g in catalog()]}))
        return
    from h3doctor.output.reference_text import console, gpu_catalog, profiles_list

    plain = console()
    profiles_list([(name, (hw := load_profile(name)).description, assumed_line(hw)) for name in builtin_profile_names()],
                  plain)
    gpu_catalog(catalog(), plain)
