"""The command line's one error boundary: exceptions to exit codes (0/1 verdicts, 2 for anything
about the user's input or environment, 3 for a bug), the guarded streams, and `--show-completion
SHELL`, answered before Typer parses (cli.py's `main` runs the app through `run`)."""

from __future__ import annotations

import os
import sys

import typer

from h3doctor.check_args import OPTIONS_HINT
from h3doctor.cli_output import short
from h3doctor.errors import ExitCode, H3DoctorError, UsageError
from h3doctor.output.streams import Output, OutputError


def run(app) -> None:
    """`app` (the Typer app) in the one error boundary mapping exceptions to exit codes.

    0/1 verdicts, 2 for anything about the user's input or environment (including a closed,
    broken or full stdout), 3 for a bug, with the hint to rerun with H3DOCTOR_DEBUG=1 (a plain
    traceback: never local variables)."""
    streams = sys.stdout, sys.stderr
    sys.stdout, sys.stderr = Output(sys.stdout, "stdout"), Output(sys.stderr, "stderr")
    try:
        code = _named_completion(sys.argv[1:])
        code = app(standalone_mode=False) if code is None else code
        code = code if isinstance(code, int) else 0
    except H3DoctorError as exc:
        blamed = _in_hook_args(exc, exc.hint == OPTIONS_HINT)
        code = _fail(*(blamed or (f"error: {exc}", exc.hint)), int(exc.exit_code))
    except typer.Exit as exc:
        code = exc.exit_code
    except KeyboardInterrupt:
        code = 130
    except Exception as exc:  # click usage errors and anything unexpected
        code = _unexpected(exc)
    code = _flush_stdout(code)
    sys.stdout, sys.stderr = streams  # a failed one now points at /dev/null: Python's exit flush is quiet
    sys.exit(code)



COMPLETION_SHELLS = ("bash", "zsh", "fish")


def _named_completion(argv: list[str]) -> int | None:
    """`--show-completion SHELL` (or `=SHELL`): the script for the shell named, not the one this runs
    in (Typer's flag takes no value and detects the current shell); None for anything else."""
    if argv[:1] == ["--show-completion"] and len(argv) == 2:
        shell = argv[1]
    elif len(argv) == 1 and argv[0].startswith("--show-completion="):
        shell = argv[0].partition("=")[2]
    else:
        return None
    if shell not in COMPLETION_SHELLS:
        raise UsageError(f"--show-completion: no completion for shell {shell[:40]!r}; choose one of "
                         f"{', '.join(COMPLETION_SHELLS)}")
    from typer._completion_shared import get_completion_script  # Typer's own scripts (pinned below 0.29)

    sys.stdout.write(get_completion_script(prog_name="h3doctor", complete_var="_H3DOCTOR_COMPLETE", shell=shell))
    return 0


def _in_hook_args(exc: Exception, about_options: bool) -> tuple[str, str] | None:
    """(message, hint) blaming H3DOCTOR_HOOK_ARGS for an error in h3doctor's own options under the
    shell hook, else None. The hook writes `check --hook [--argv-out FILE]`, that variable's words,
    `--`, and the launch: an option h3doctor cannot take (`--profle`, `--fail-on warnin`) is the
    variable's, and the command line the user typed is not to blame."""
    hook_args = os.environ.get("H3DOCTOR_HOOK_ARGS", "").strip()
    if not (about_options and hook_args and sys.argv[1:3] == ["check", "--hook"]):
        return None
    message = getattr(exc, "format_message", lambda: str(exc))()
    return (f"error: in H3DOCTOR_HOOK_ARGS ({short(hook_args, 80)}): {message}",
            "it holds h3doctor check's options, e.g. H3DOCTOR_HOOK_ARGS=\"--profile 4xH200 --fail-on warning\"")


def _unexpected(exc: Exception) -> int:
    click_error, abort = _click_exception_types()
    blamed = _in_hook_args(exc, isinstance(exc, click_error))
    if blamed:
        return _fail(*blamed, int(getattr(exc, "exit_code", ExitCode.USAGE) or ExitCode.USAGE))
    if isinstance(exc, click_error):
        try:
            exc.show(file=sys.stderr)
        except OutputError:
            pass
        return int(getattr(exc, "exit_code", ExitCode.USAGE) or 0)
    if isinstance(exc, abort):
        return 130
    if os.environ.get("H3DOCTOR_DEBUG"):
        import traceback

        traceback.print_exception(exc, file=sys.stderr)  # plain: no local variables
        return int(ExitCode.INTERNAL)
    return _fail(f"internal error: {type(exc).__name__}: {short(str(exc))}",
                 "this is a bug in h3doctor: rerun with H3DOCTOR_DEBUG=1 for the traceback and report it",
                 int(ExitCode.INTERNAL))


def _fail(message: str, hint: str | None, code: int) -> int:
    try:
        sys.stderr.write(message + "\n" + (f"hint: {hint}\n" if hint else ""))
        sys.stderr.flush()
    except OutputError:
        pass  # stderr is closed too: the exit code is all that is left
    return code


def _flush_stdout(code: int) -> int:
    """Flush inside the boundary: a failure at interpreter exit would be Python's exit 120."""
    if getattr(sys.stdout, "failed", False):
        return code  # already reported
    try:
        sys.stdout.flush()
    except OutputError as exc:
        return _fail(f"error: {exc}", None, int(ExitCode.USAGE))
    return code


def _click_exception_types() -> tuple[tuple[type, ...], tuple[type, ...]]:
    """Typer 0.26+ vendors click as typer._click; older Typer uses click itself."""
    errors: list[type] = []
    aborts: list[type] = []
    for name in ("typer._click.exceptions", "click.exceptions"):
        try:
            module = __import__(name, fromlist=["ClickException", "Abort"])
        except ImportError:
            continue
        errors.append(module.ClickException)
        if hasattr(module, "Abort"):
            aborts.append(module.Abort)
    return tuple(errors), tuple(aborts)
