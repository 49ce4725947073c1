"""The command line: options in, one call into the engine, a report and an exit code out."""

from __future__ import annotations

import json
import math
import os
import sys
from enum import Enum
from typing import Annotated, List, Optional

import typer

from h3doctor.errors import ExitCode, H3DoctorError, UsageError
from h3doctor.output.streams import Output, OutputError

app = typer.Typer(
    add_completion=False,
    no_args_is_help=True,
    rich_markup_mode=None,
    pretty_exceptions_enable=False,
    help="Preflight doctor for SGLang MiniMax-H3 launches: every constraint sglang would raise, before the download.",
)


class Format(str, Enum):
    text = "text"
    json = "json"


class Severity(str, Enum):
    error = "error"
    warning = "warning"
    info = "info"


def _console(stderr: bool = False):
    from rich.console import Console

    no_color = bool(os.environ.get("NO_COLOR"))
    return Console(stderr=stderr, no_color=no_color, highlight=False, soft_wrap=True)


@app.command(
    context_settings={"allow_extra_args": True, "ignore_unknown_options": True, "allow_interspersed_args": True},
    help="Check a proposed launch. Give sglang's flags directly, or the whole command after `--`: "
    "h3doctor check --profile 4xH200 -- sglang serve MiniMaxAI/MiniMax-H3 --num-gpus 4",
)
def check(
    ctx: typer.Context,
    profile: Annotated[Optional[str], typer.Option(help="Built-in hardware profile name (see `h3doctor profiles`) or a YAML/JSON profile file. Without it, this host is probed (see `h3doctor probe`).")] = None,
    no_cache: Annotated[bool, typer.Option("--no-cache", help="Probe this host afresh, without reading or writing the probe cache.")] = False,
    format: Annotated[Format, typer.Option("--format", help="Report format.")] = Format.text,
    show_config: Annotated[bool, typer.Option("--show-config", help="Print the effective configuration sglang would resolve.")] = False,
    fail_on: Annotated[Severity, typer.Option("--fail-on", help="Lowest severity that makes the exit code 1.")] = Severity.error,
    recipe: Annotated[Optional[str], typer.Option("--recipe", help="A YAML launch recipe (command, env, profile, request); see README.")] = None,
    sglang_version: Annotated[Optional[str], typer.Option("--sglang-version", help="sglang release whose rules and parser to use (default 0.5.23).")] = None,
    rules_dir: Annotated[Optional[str], typer.Option("--rules-dir", help="Use the rule files in this directory.")] = None,
    request_quality: Annotated[Optional[str], typer.Option("--request-quality", help="The quality you will request (exact, lossless, high): checks the quality=\"high\" deployment audit (catalog 2.H).")] = None,
    request_steps: Annotated[Optional[int], typer.Option("--request-steps", help="num_inference_steps you will request (AdaLN plan checks, catalog R8).")] = None,
    argv: Annotated[Optional[List[str]], typer.Argument(help="sglang flags, or `-- sglang serve MODEL [flags]`.")] = None,
) -> None:
    from h3doctor.output import json_report as report
    from h3doctor.request import CheckRequest, run

    result = run(CheckRequest(
        tokens=list(argv or []) + list(ctx.args), profile=profile, recipe=recipe, sglang_version=sglang_version,
        rules_dir=rules_dir, use_probe_cache=not no_cache, intent={"quality": request_quality, "steps": request_steps},
    ))
    data = report.build(result, fail_on.value)
    if format is Format.json:
        sys.stdout.write(_json_text(data))
    else:
        from h3doctor.output.text import text_report

        text_report(result, _console(), sys.stdout, show_config=show_config, effective=data["effective_config"])
    raise typer.Exit(int(ExitCode.FINDINGS) if report.exit_failing(result, fail_on.value) else int(ExitCode.OK))


@app.command("rules", help="List the rules.")
def rules_cmd(
    format: Annotated[Format, typer.Option("--format")] = Format.text,
    rules_dir: Annotated[Optional[str], typer.Option("--rules-dir")] = None,
) -> None:
    from pathlib import Path

    from h3doctor.engine.ruleset import load_rules

    rules = load_rules(Path(rules_dir) if rules_dir else None)
    if format is Format.json:
        sys.stdout.write(_json_text([r.as_dict() for r in rules]))
        return
    for r in sorted(rules, key=lambda r: r.id):
        sys.stdout.write(f"{r.id}  {','.join(r.catalog):<8} {r.severity:<8} {r.stage:<15} {r.title}\n")


@app.command("rule", help="Explain one rule, with its examples.")
def rule_cmd(
    rule_id: Annotated[str, typer.Argument(help="Rule ID (H3D305) or name.")],
    format: Annotated[Format, typer.Option("--format")] = Format.text,
    rules_dir: Annotated[Optional[str], typer.Option("--rules-dir")] = None,
) -> None:
    import difflib
    from pathlib import Path

    from h3doctor.engine.ruleset import load_rules

    rules = load_rules(Path(rules_dir) if rules_dir else None)
    match = next((r for r in rules if rule_id.upper() == r.id or rule_id == r.name), None)
    if match is None:
        close = difflib.get_close_matches(rule_id, [r.id for r in rules] + [r.name for r in rules], n=1)
        raise UsageError(f"no rule {_short(rule_id, 80)!r}" + (f"; did you mean {close[0]}?" if close else ""))
    if format is Format.json:
        sys.stdout.write(_json_text(match.as_dict()))
        return
    out = sys.stdout
    out.write(f"{match.id} {match.name}: {match.title}\n")
    out.write(f"catalog {', '.join(match.catalog)}; sglang {match.where} ({match.versions}); "
              f"severity {match.severity}; fails at: {match.stage}\n\n")
    out.write(f"sglang says: {match.message}\n\nwhy: {' '.join(match.why.split())}\n")
    if match.fix_note:
        out.write(f"fix: {match.fix_note}\n")
    out.write("\nexamples:\n")
    for ex in match.examples:
        out.write(f"  [{ex['expect']}] on {ex['profile']}: {ex['argv']}\n")
        if ex.get("fixed"):
            out.write(f"         corrected: {ex['fixed']}\n")


@app.command("coverage", help="Print the catalog coverage table (catalog ID -> rule IDs or reason).")
def coverage_cmd(
    write: Annotated[Optional[str], typer.Option("--write", help="Write the table to this file instead of printing it.")] = None,
) -> None:
    from h3doctor.engine.coverage import markdown
    from h3doctor.engine.ruleset import load_rules

    text = markdown(load_rules())
    if write:
        _write_file(write, text, "coverage table")
    else:
        sys.stdout.write(text)


@app.command("probe", help="Probe this host as sglang would see it: one line per hardware fact, with its source.")
def probe_cmd(
    format: Annotated[Format, typer.Option("--format", help="Report format (json: see README, Live probe).")] = Format.text,
    refresh: Annotated[bool, typer.Option("--refresh", help="Probe afresh and update the cache.")] = False,
    no_cache: Annotated[bool, typer.Option("--no-cache", help="Probe afresh; neither read nor write the cache.")] = False,
    timeout: Annotated[Optional[float], typer.Option("--timeout", help="Seconds the torch/driver probe may take (default 30, or H3DOCTOR_PROBE_TIMEOUT).")] = None,
    save_profile: Annotated[Optional[str], typer.Option("--save-profile", help="Also write this host as a profile file for --profile FILE.")] = None,
) -> None:
    from h3doctor.host.probe import probe, profile_text, render_text

    result = probe(dict(os.environ), use_cache=not no_cache, refresh=refresh, timeout=timeout)
    if save_profile:
        _write_file(save_profile, profile_text(result), "profile")
    if format is Format.json:
        sys.stdout.write(_json_text(result.as_dict()))
    else:
        render_text(result, _console())
        if save_profile:
            sys.stdout.write(f"\nprofile written to {save_profile} (use: h3doctor check --profile {save_profile} ...)\n")


@app.command("profiles", help="List the built-in hardware profiles.")
def profiles_cmd() -> None:
    from h3doctor.host.profiles import builtin_profile_names, load_profile

    for name in builtin_profile_names():
        sys.stdout.write(f"{name:<10} {load_profile(name).description}\n")


def _json_text(data) -> str:
    """JSON as JSON: a non-finite number (from a --config file, say) is written as a string."""
    try:
        return json.dumps(data, indent=2, default=str, allow_nan=False) + "\n"
    except ValueError:
        return json.dumps(_finite(data), indent=2, default=str, allow_nan=False) + "\n"


def _finite(value):
    if isinstance(value, float) and not math.isfinite(value):
        return str(value)
    if isinstance(value, dict):
        return {k: _finite(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_finite(v) for v in value]
    return value


def _write_file(path: str, text: str, what: str) -> None:
    from pathlib import Path

    from h3doctor.paths import write_atomic

    try:
        write_atomic(Path(path), text)
    except (OSError, ValueError) as exc:
        reason = exc.strerror if isinstance(exc, OSError) and exc.strerror else type(exc).__name__
        raise UsageError(f"cannot write the {what}: {reason}", location=_short(path, 200)) from None


def main() -> None:
    """Entry point: the one error boundary mapping exceptions to exit codes.

    0/1 verdicts, 2 for anything about the user's input or environment (including a closed,
    broken or full stdout), 3 for a bug, with the hint to rerun with H3DOCTOR_DEBUG=1 (a plain
    traceback: never local variables)."""
    streams = sys.stdout, sys.stderr
    sys.stdout, sys.stderr = Output(sys.stdout, "stdout"), Output(sys.stderr, "stderr")
    try:
        code = app(standalone_mode=False)
        code = code if isinstance(code, int) else 0
    except H3DoctorError as exc:
        code = _fail(f"error: {exc}", exc.hint, int(exc.exit_code))
    except typer.Exit as exc:
        code = exc.exit_code
    except KeyboardInterrupt:
        code = 130
    except Exception as exc:  # click usage errors and anything unexpected
        code = _unexpected(exc)
    code = _flush_stdout(code)
    sys.stdout, sys.stderr = streams  # a failed one now points at /dev/null: Python's exit flush is quiet
    sys.exit(code)


def _unexpected(exc: Exception) -> int:
    click_error, abort = _click_exception_types()
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
    return _fail(f"internal error: {type(exc).__name__}: {_short(str(exc))}",
                 "this is a bug in h3doctor: rerun with H3DOCTOR_DEBUG=1 for the traceback and report it",
                 int(ExitCode.INTERNAL))


def _fail(message: str, hint: str | None, code: int) -> int:
    try:
        sys.stderr.write(message + "\n" + (f"hint: {hint}\n" if hint else ""))
        sys.stderr.flush()
    except OutputError:
        pass  # stderr is closed too: the exit code is all that is left
    return code


def _short(text: str, limit: int = 300) -> str:
    return text if len(text) <= limit else text[: limit - 3] + "..."


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
