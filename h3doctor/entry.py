"""The `h3doctor` console entry: the shell hook's clean launches answered before the full CLI loads.

The shell hook runs `h3doctor check --hook ... -- sglang ...` in front of every `sglang serve` /
`sglang generate`, and importing Typer (with the standard library it pulls in) is ~40% of such a
process. So exactly the hook's own command line, `check --hook [--argv-out PATH] [--profile
NAME] -- WORD...`, is checked here first, with the same request the CLI would make. A clean launch
(no finding at all) exits 0 at once, quiet, as the CLI does. Anything else — findings, another
option, an error of any kind — goes to the full CLI, which runs the check again and reports it
with its usual output and exit codes: this path can only ever say "clean", never anything the CLI
would not.
"""

from __future__ import annotations

import sys


def main() -> None:
    from h3doctor.launch.execute import undo_locale_coercion

    undo_locale_coercion()  # what h3doctor hands on (--exec, the probe) is the environment it was given
    code = hook_fast_path(sys.argv[1:])
    if code is not None:
        sys.exit(code)
    from h3doctor.cli import main as cli_main

    cli_main()


def parse_hook_argv(argv: list[str]) -> tuple[str | None, str | None, list[str]] | None:
    """(argv_out, profile, launch words) for the hook's command line, else None."""
    if argv[:2] != ["check", "--hook"] or "--" not in argv:
        return None
    split = argv.index("--")
    options, words = argv[2:split], argv[split + 1:]
    found: dict[str, str] = {}
    while options:
        if len(options) < 2 or options[0] not in ("--argv-out", "--profile") or options[0] in found:
            return None
        name, value = options[0], options[1]
        if not value or value.startswith("-"):
            return None  # the CLI says what is wrong with it
        found[name] = value
        options = options[2:]
    if not words:
        return None
    return found.get("--argv-out"), found.get("--profile"), words


def hook_fast_path(argv: list[str]) -> int | None:
    """0 when the hook's launch is clean; None when the full CLI must answer."""
    parsed = parse_hook_argv(argv)
    if parsed is None:
        return None
    _argv_out, profile, words = parsed  # the corrected-command file is written only after findings
    try:
        from h3doctor.request import CheckRequest, run

        # the request exactly as `check` builds it from these options (cli.py)
        outcome = run(CheckRequest(tokens=list(words), profile=profile, recipe=None, sglang_version=None,
                                   rules_dir=None, use_probe_cache=True,
                                   intent={"quality": None, "steps": None, "resolution": None, "seconds": None}))
    except KeyboardInterrupt:
        return 130
    except Exception:  # noqa: BLE001 - every error is the full CLI's to report, the same way as always
        return None
    return 0 if not outcome.result.evaluation.findings else None
