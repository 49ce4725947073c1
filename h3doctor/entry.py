"""The `h3doctor` console entry: the commonest `check` command lines answered before the full CLI loads.

The shell hook runs `h3doctor check --hook ... -- sglang ...` in front of every `sglang serve` /
`sglang generate`, and importing Typer (with the standard library it pulls in) is ~40% of such a
process. So two command lines are answered here, with the same request the CLI would make:

* the hook's own, `check --hook [OPTIONS] -- WORD...`: a clean launch (no finding at all) exits 0
  at once, quiet, as the CLI does; findings go to the full CLI.
* a plain check, `check [OPTIONS] -- WORD...` with a text or JSON report on stdout: the report is
  rendered by the CLI's own code (cli_output.py, the format registry) and the exit code is the
  CLI's (0, or 1 for a finding reaching --fail-on).

The options are read from the table the CLI's are built from (options.py), and refused where the
CLI refuses them (check_args.py). Anything else — --exec, SARIF or GitHub output, --output-file,
an option written in a way the table's parser leaves to click, an error of any kind — goes to the
full CLI, which runs the check again and reports it with its usual output and exit codes
(tests/cli/test_entry.py and tests/cli/test_options.py hold the two equal).
"""

from __future__ import annotations

import _signal  # signal.py imports enum, functools, collections: ~5 ms before the handler is in place
import os
import sys


# The cyclic garbage collector's first threshold while a check is answered here (Python's is 700
# new containers): what a check builds (the rules, the flag table: JSON trees and records of them)
# has no reference cycle, so collecting every 700 finds nothing and only walks them again and
# again (~2% of a clean launch's instructions). Larger inputs are still collected, less often.
_CHECK_GC_THRESHOLD = 50_000


# Ctrl-C and Ctrl-\ end h3doctor quietly with the shell's status for them (130, 131), which the shell
# hook reads as "did not finish: start nothing" (launch/hook.py). Python's own SIGINT handler raises
# KeyboardInterrupt wherever the process is, and one raised outside a `try` that expects it (an
# import of the CLI, the interpreter's exit) printed a traceback of 10-40 lines. So the handler is
# installed first thing, and raises KeyboardInterrupt only while `main` is inside the `try` that
# catches it (armed), once: the check's own code unwinds as before (the CLI's --exec, prompt, probe);
# anywhere else, or a second Ctrl-C, exits at once. Ctrl-\ always exits at once (no core dump).
_ARMED = [False]


def _interrupted(signum: int, _frame: object) -> None:
    if signum == _signal.SIGINT and _ARMED[0]:
        _ARMED[0] = False
        raise KeyboardInterrupt
    os._exit(128 + signum)


def _quiet_interrupts() -> None:
    for name in ("SIGINT", "SIGQUIT"):
        number = getattr(_signal, name, None)
        if number is not None and _signal.getsignal(number) is not _signal.SIG_IGN:  # an ignored one stays so (nohup, &)
            _signal.signal(number, _interrupted)


def main() -> None:
    _quiet_interrupts()
    try:
        _ARMED[0] = True
        _main()
    except KeyboardInterrupt:
        os._exit(130)
    finally:  # leaving main (SystemExit, the fast exit): the interpreter's exit is not the check's to unwind
        _ARMED[0] = False


def _main() -> None:
    import gc

    thresholds = gc.get_threshold()
    gc.set_threshold(_CHECK_GC_THRESHOLD, *thresholds[1:])
    try:
        from h3doctor.launch.execute import undo_locale_coercion

        undo_locale_coercion()  # what h3doctor hands on (--exec, the probe) is the environment it was given
        if sys.argv[1:2] == ["hook-tail"]:  # the relay of a hooked server's stderr (cli_hook_tail.py)
            from h3doctor.cli_hook_tail import main as hook_tail

            sys.exit(hook_tail(sys.argv[2:]))
        if sys.argv[1:2] == ["hook-line"]:  # the command-line hook's judge (cli_hook_line.py)
            from h3doctor.cli_hook_line import main as hook_line

            sys.exit(hook_line(sys.argv[2:]))
        code = hook_fast_path(sys.argv[1:])
        hook_answered = code is not None
        if code is None:
            code = check_fast_path(sys.argv[1:])
    finally:
        gc.set_threshold(*thresholds)  # the full CLI (and whoever called main) as always
    if code == 0 and hook_answered:
        _exit_quietly()
    if code is not None:
        sys.exit(code)
    from h3doctor.cli import main as cli_main

    cli_main()


def _exit_quietly() -> None:
    """Exit 0 at once after a clean hook launch, which has written nothing: the interpreter's own
    teardown (clearing every module, a last garbage collection over everything a check built) is
    ~8% of such a process, and nothing is left for it to do (no file open, no exit handler of
    h3doctor's). Should a flush fail, the usual exit reports it."""
    try:
        sys.stdout.flush()
        sys.stderr.flush()
    except (OSError, ValueError, AttributeError):
        sys.exit(0)
    os._exit(0)


# The formats the fast path writes: text and JSON need no more than the check. SARIF and GitHub
# annotations read the rule list (typing) and name files through pathlib, and an
# --output-file is written through pathlib and tempfile; those go to the full CLI, which loads
# them anyway (tests/cli/test_entry.py blocks the modules the fast path must not import).
FAST_FORMATS = ("text", "json")


def parse_argv(argv: list[str]) -> tuple[dict, list[str]] | None:
    """(check's option values, launch words) for `check [OPTIONS] -- WORD...`, else None. The
    options are read from the table the CLI is built from (options.py)."""
    if argv[:1] != ["check"] or "--" not in argv:
        return None
    split = argv.index("--")
    words = argv[split + 1:]
    if not words:
        return None
    from h3doctor.options import parse

    values = parse(argv[1:split])
    return None if values is None else (values, words)


def check_fast_path(argv: list[str]) -> int | None:
    """The exit code of a plain check, its report written; None when the full CLI must answer."""
    parsed = parse_argv(argv)
    if parsed is None:
        return None
    values, words = parsed
    if values["hook"] or values["exec_"] or values["output_file"] or values["format"] not in FAST_FORMATS:
        return None  # the hook's findings, what --exec runs: the CLI's to show and judge
    fail_on = values["fail_on"]
    try:
        from h3doctor.cli_output import check_report
        from h3doctor.errors import ExitCode
        from h3doctor.output.formats import render, terminal_width
        from h3doctor.output.streams import Output, OutputError
        from h3doctor.output.verdict import failing
        from h3doctor.record import replace

        result = _check(values, words).result
        out = Output(sys.stdout, "stdout")  # the CLI's guarded stdout (cli.main)
        report = check_report(result, fail_on, values["show_config"], values["recipe"], values["profile"],
                              values["rules_dir"], values["verbose"])
        # rendered whole first: a failure to write it is reported here, never a second copy
        text = render("check", values["format"], replace(report, styled=out.isatty() or bool(os.environ.get("FORCE_COLOR")),
                                                         width=terminal_width(sys.stdout)))
    except KeyboardInterrupt:
        return 130
    except Exception:  # noqa: BLE001 - every error is the full CLI's to report, the same way as always
        return None
    try:
        out.write(text)
        out.flush()
    except OutputError as exc:
        try:
            sys.stderr.write(f"error: {exc}\n")
        except (OSError, ValueError, AttributeError):
            pass
        return int(ExitCode.USAGE)
    return int(ExitCode.FINDINGS) if failing(result.evaluation.findings, fail_on) else int(ExitCode.OK)


def _check(values: dict, words: list[str]):
    """The check the CLI makes of these options, after the usage errors it gives first (check_args.py)."""
    from h3doctor.check_args import check_request, launch_words
    from h3doctor.request import run

    words = launch_words(values, words)
    return run(check_request(values, words))


def hook_fast_path(argv: list[str]) -> int | None:
    """0 when the hook's launch is clean; None when the full CLI must answer."""
    parsed = parse_argv(argv)
    if parsed is None or not parsed[0]["hook"]:
        return None
    values, words = parsed  # the corrected-command file (--argv-out) is written only after findings
    try:
        outcome = _check(values, words)
    except KeyboardInterrupt:
        return 130
    except Exception:  # noqa: BLE001 - every error is the full CLI's to report, the same way as always
        return None
    return 0 if not outcome.result.evaluation.findings else None
