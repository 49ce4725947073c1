"""The command line: options in, one call into the engine, a report and an exit code out."""

# No `from __future__ import annotations` here: Typer reads every option from these annotations,
# and string annotations make it eval() ~280 of them on every run (~15 ms of each check, the hook's
# hot path). Evaluated at import, they are built once.

import os
import sys
from enum import Enum
from typing import Annotated, List, Optional

import typer

from h3doctor import cli_advice, cli_fleet, cli_host, cli_reference  # the commands' bodies, by what they are for
from h3doctor.cli_boundary import run
from h3doctor.cli_help import GroupedHelp, PanelledHelp
from h3doctor.cli_output import check_report, write_report
from h3doctor.errors import ExitCode, UsageError
from h3doctor.output.formats import names as format_names
from h3doctor.verified import NEWEST_VERIFIED

app = typer.Typer(
    cls=GroupedHelp,  # --help lists the commands by what a user comes for, each whole (cli_help.py)
    context_settings={"help_option_names": ["-h", "--help"]},  # every command's too (click inherits it)
    add_completion=True,  # --install-completion / --show-completion for bash, zsh, fish (Typer's own)
    no_args_is_help=False,  # bare `h3doctor` is the machine's doctor (_root); `--help` is help
    rich_markup_mode=None,
    pretty_exceptions_enable=False,
    help="Preflight doctor for SGLang MiniMax-H3 launches: every constraint sglang would raise, before the download.",
)


class Format(str, Enum):
    text = "text"
    json = "json"


# the report commands' formats, as output/formats.py registers them (check's: its option table, options.py)
LintFormat = Enum("LintFormat", {name: name for name in format_names("lint")}, type=str)
SuggestFormat = Enum("SuggestFormat", {name: name for name in format_names("suggest")}, type=str)
ExplainFormat = Enum("ExplainFormat", {name: name for name in format_names("explain")}, type=str)
DoctorFormat = Enum("DoctorFormat", {name: name for name in format_names("doctor")}, type=str)


class Severity(str, Enum):
    error = "error"
    warning = "warning"
    info = "info"


class Shell(str, Enum):
    bash = "bash"
    zsh = "zsh"
    fish = "fish"


def _show_version(value: bool) -> None:
    if value:
        from h3doctor import __version__
        from h3doctor.sglang.flagtable import DEFAULT_SGLANG_VERSION

        sys.stdout.write(f"h3doctor {__version__} (rules for sglang {DEFAULT_SGLANG_VERSION})\n")
        raise typer.Exit(0)


@app.callback(invoke_without_command=True)
def _root(
    ctx: typer.Context,
    version: Annotated[bool, typer.Option("--version", is_eager=True, callback=_show_version,
                                          help="Show h3doctor's version and the sglang release its rules target.")] = False,
) -> None:
    """Preflight doctor for SGLang MiniMax-H3 launches. Without a command: `h3doctor doctor`."""
    if ctx.invoked_subcommand is None:
        doctor_cmd()


def check(ctx: typer.Context, argv: Optional[List[str]], values: dict) -> None:
    """`h3doctor check`, with its options' values by name as options.parse gives them (the fast path's)."""
    from h3doctor.check_args import check_request, launch_words
    from h3doctor.output.verdict import failing
    from h3doctor.request import run

    exec_, hook, fail_on, format_name = values["exec_"], values["hook"], values["fail_on"], values["format"]
    tokens = list(argv or []) + list(ctx.args)
    tokens = launch_words(values, tokens)
    request = check_request(values, tokens)
    try:
        outcome = run(request)
    except UsageError as unreadable:
        if not hook:
            raise
        _hook_judge_the_readable_words(request, unreadable, fail_on, format_name)
        raise
    result = outcome.result
    out = sys.stderr if exec_ or hook else sys.stdout  # when sglang may start, stdout is sglang's
    if not (hook and not result.evaluation.findings):  # the hook is quiet on a clean launch, as shell hooks are
        report = check_report(result, fail_on, values["show_config"], values["recipe"], values["profile"],
                              values["rules_dir"], values["verbose"])
        if hook and format_name == "text" and not values["verbose"] and not failing(result.evaluation.findings, fail_on):
            report = _hook_brief(report, result, fail_on)  # sglang starts: a few lines, the full report one command away
        write_report("check", format_name, report, out, values["output_file"])
    if exec_ or hook:
        from h3doctor.launch.gate import Verdict, exec_launch
        from h3doctor.launch.hook import hook_exit
        from h3doctor.sglang.launch_forms import program_lookup

        def labels(findings) -> list[str]:
            return [f"{f.rule.id} ({f.severity})" for f in findings]

        verdict = Verdict(labels(failing(result.evaluation.findings, fail_on)), result.corrected_argv,
                          result.fix_status, labels(f for f in result.evaluation.findings if f.rule.refuses_exec))
        if hook:
            raise typer.Exit(hook_exit(verdict, values["argv_out"]))
        raise typer.Exit(exec_launch(verdict, outcome.tokens, outcome.launch_env, apply_fixes=values["apply_fixes"],
                                     force=values["force"], allow_unsafe=values["allow_unsafe_exec"],
                                     program_of=program_lookup))
    raise typer.Exit(int(ExitCode.FINDINGS) if failing(result.evaluation.findings, fail_on) else int(ExitCode.OK))


def _hook_brief(report, result, fail_on: str):
    """The hook's report of a launch that starts with findings below --fail-on: output/hook_brief.py,
    ending with this very check without the hook's own options (`--hook`, `--argv-out FILE`)."""
    import shlex

    from h3doctor.output.hook_brief import brief
    from h3doctor.record import replace

    from h3doctor.shellwords import join

    words, skip, marked = [], False, False
    for word in sys.argv[1:]:
        if skip or word == "--hook" or word.startswith(("--argv-out", "--marked-launch")):
            skip = word in ("--argv-out", "--marked-launch")
            marked = marked or word.startswith("--marked-launch")
            continue
        words.append(word)
    again = shlex.join(["h3doctor", *words])
    if marked:  # the command-line hook's launch: its words as typed, the shell's expansions as written
        again += " -- " + join(result.evaluation.cmd.tokens)
    return replace(report, text=lambda console, out: brief(result, console, out, summary=report.data["summary"],
                                                          fail_on=fail_on, again=again))


def complete_profile(incomplete: str) -> list[str]:
    """`--profile <Tab>`: the built-in profiles, then the YAML/JSON files the word can be (the shells'
    own file completion gives way to this one)."""
    from glob import escape, glob

    from h3doctor.host.profiles import builtin_profile_names

    names = [n for n in builtin_profile_names() if n.startswith(incomplete)]
    if len(incomplete) > 200:
        return names
    files = sorted(glob(escape(incomplete) + "*"))[:200]
    return names + [f + "/" if os.path.isdir(f) else f for f in files
                    if os.path.isdir(f) or f.endswith((".yaml", ".yml", ".json"))]


COMPLETERS = {"profiles": complete_profile}


def _typer_parameter(opt):
    """One row of the option table as the keyword Typer reads: `Annotated[type, typer.Option(...)]`."""
    import inspect

    from h3doctor.options import PANELS

    if opt.kind == "flag":
        kind, default = bool, opt.default
    elif opt.kind == "choice":
        kind = Enum("".join(part.title() for part in opt.name.split("_")) + "Choice", {c: c for c in opt.choices},
                    type=str)
        default = None if opt.default is None else kind(opt.default)
    else:
        kind, default = {"text": str, "size": str, "int": int, "float": float}[opt.kind], opt.default
    if opt.repeatable:
        kind = List[kind]
    if default is None:
        kind = Optional[kind]
    option = typer.Option(*opt.flags, help=opt.help, hidden=opt.hidden, envvar=opt.envvar,
                          autocompletion=COMPLETERS[opt.complete] if opt.complete else None,
                          rich_help_panel=PANELS.get(opt.panel))  # none: "Other options"
    return inspect.Parameter(opt.name, inspect.Parameter.KEYWORD_ONLY, default=default,
                             annotation=Annotated[kind, option])


def check_command(table=None):
    """`check` as Typer reads it: a function whose signature is built from the option table (Typer
    reads `__signature__`), handing `check` the values by name, choices as their text."""
    import inspect

    from h3doctor.options import CHECK_OPTIONS

    def command(ctx: typer.Context, argv: Optional[List[str]] = None, **given) -> None:
        check(ctx, argv, {name: value.value if isinstance(value, Enum) else value for name, value in given.items()})

    fixed = list(inspect.signature(command).parameters.values())[:2]
    fixed[1] = fixed[1].replace(annotation=Annotated[Optional[List[str]], typer.Argument(
        help="sglang flags, or `-- sglang serve MODEL [flags]`.")])
    command.__signature__ = inspect.Signature(
        [*fixed, *(_typer_parameter(opt) for opt in (CHECK_OPTIONS if table is None else table))])
    return command


CHECK_SETTINGS = {"allow_extra_args": True, "ignore_unknown_options": True, "allow_interspersed_args": True}

app.command(
    "check",
    cls=PanelledHelp,  # its options in the option table's panels (cli_help.py)
    context_settings=CHECK_SETTINGS,
    help="Check a proposed launch. Give sglang's flags directly, or the whole command after `--`: "
    "h3doctor check --profile 4xH200 -- sglang serve MiniMaxAI/MiniMax-H3 --num-gpus 4",
)(check_command())


def _hook_judge_the_readable_words(request, unreadable: UsageError, fail_on: str, format_name: str) -> None:
    """The hook fails closed on h3doctor's own limits: when the check cannot read a file the launch
    names (a --config nested past the limit, an --env-file or --attention-backend-config that is a
    FIFO or too large, ...), the launch is judged without the words naming it
    (`request.run_without_unreadable`), and if what is left already fails the launch is blocked
    (exit 1, the report and which files were not read). Only when nothing readable fails does the
    UsageError stand (exit 2: the hook says it could not verify and launches, README "Shell hook")."""
    from h3doctor.output.verdict import failing
    from h3doctor.record import replace
    from h3doctor.request import run_without_unreadable

    judged = run_without_unreadable(request, unreadable)
    if judged is None or not failing(judged[0].result.evaluation.findings, fail_on):
        return
    result, unread = judged[0].result, judged[1]
    said = "; ".join(str(e) for e in unread)
    # a command corrected without the words naming the file would drop them: none is shown
    result = replace(result, corrected_argv=None, nearest_argv=None, alternatives=[],
                     gives_up=[*result.gives_up, f"no corrected command: it would leave out the words naming a file "
                                                 f"h3doctor could not read ({said})"])
    write_report("check", format_name, check_report(result, fail_on, False, None, request.profile, request.rules_dir),
                 sys.stderr, None)
    sys.stderr.write(f"h3doctor: cannot read {'a file' if len(unread) == 1 else 'files'} the launch names ({said}); "
                     "its other words, judged above without the words naming it, fail already: sglang was not started\n")
    raise typer.Exit(int(ExitCode.FINDINGS))


@app.command("init", short_help="Print the shell hook that checks every sglang launch first.", help="Print the shell hook that checks every `sglang serve` and `sglang generate` before it "
                          "starts: eval \"$(h3doctor init bash)\" in ~/.bashrc, eval \"$(h3doctor init zsh)\" in "
                          "~/.zshrc, h3doctor init fish | source in config.fish.")
def init_cmd(shell: Annotated[Shell, typer.Argument(help="bash, zsh or fish.")],
             wrap: Annotated[Optional[List[str]], typer.Option("--wrap", help="Also check `RUNTIME run … IMAGE sglang …` lines (docker, podman or nerdctl); other uses pass straight through.")] = None) -> None:
    from h3doctor.launch.hook import init_script

    sys.stdout.write(init_script(shell.value, tuple(wrap or ())))


@app.command("rules", help="List the rules.")
def rules_cmd(
    format: Annotated[Format, typer.Option("--format")] = Format.text,
    rules_dir: Annotated[Optional[str], typer.Option("--rules-dir")] = None,
    markdown: Annotated[Optional[str], typer.Option("--markdown", help="Write the rule reference page (docs/rules.md, where SARIF help links point) to this file.")] = None,
) -> None:
    cli_reference.rules(format.value, rules_dir, markdown)


@app.command("rule", help="Explain one rule, with its examples.")
def rule_cmd(
    rule_id: Annotated[str, typer.Argument(help="Rule ID (H3D305) or name.")],
    format: Annotated[Format, typer.Option("--format")] = Format.text,
    rules_dir: Annotated[Optional[str], typer.Option("--rules-dir")] = None,
) -> None:
    cli_reference.rule(rule_id, format.value, rules_dir)


@app.command("coverage", short_help="Print which rules cover each catalog constraint.", help="Print the catalog coverage table (catalog ID -> rule IDs or reason).")
def coverage_cmd(
    write: Annotated[Optional[str], typer.Option("--write", help="Write the table to this file instead of printing it.")] = None,
) -> None:
    cli_reference.coverage(write)


@app.command("probe", short_help="Probe this host as sglang would see it.", help="Probe this host as sglang would see it: one line per hardware fact, with its source.")
def probe_cmd(
    format: Annotated[Format, typer.Option("--format", help="Report format (json: see README, Live probe).")] = Format.text,
    refresh: Annotated[bool, typer.Option("--refresh", help="Probe afresh and update the cache.")] = False,
    no_cache: Annotated[bool, typer.Option("--no-cache", help="Probe afresh; neither read nor write the cache.")] = False,
    timeout: Annotated[Optional[float], typer.Option("--timeout", help="Seconds the torch/driver probe may take (default 30, or H3DOCTOR_PROBE_TIMEOUT).")] = None,
    save_profile: Annotated[Optional[str], typer.Option("--save-profile", help="Also write this host as a profile file for --profile FILE.")] = None,
) -> None:
    cli_host.probe(format.value, refresh, no_cache, timeout, save_profile)


@app.command("doctor", short_help="Show this machine for MiniMax-H3, one fact a line.", help="This machine for MiniMax-H3, one line per fact (✓ fine, ✗ stops H3 from serving "
             "here, ! sglang will warn, ? cannot verify, - does not apply here): the sglang release installed, "
             "GPUs, memory, cgroup cap, /dev/shm, disk, ffmpeg and its encoders, FlashAttention, and a summary. "
             "Bare `h3doctor` runs it. Exit 0, or 1 when a fact stops H3 from serving here.")
def doctor_cmd(
    format: Annotated[DoctorFormat, typer.Option("--format", help="Report format (json: README, `h3doctor doctor`).")] = DoctorFormat.text,
    no_cache: Annotated[bool, typer.Option("--no-cache", help="Probe afresh; neither read nor write the probe cache.")] = False,
    output_file: Annotated[Optional[str], typer.Option("--output-file", help="Write the report to this file instead of stdout.")] = None,
) -> None:
    raise typer.Exit(cli_host.doctor(getattr(format, "value", format), no_cache, output_file))


@app.command("profiles", short_help="List the built-in hardware profiles and the GPU catalog.", help="List the built-in hardware profiles and the GPU catalog (<N>x<GPU> for any count).")
def profiles_cmd(
    format: Annotated[Format, typer.Option("--format")] = Format.text,
) -> None:
    cli_reference.profiles(format.value)


# --- lint, schemas ---------------------------------------------------------------------------


@app.command("lint", short_help="Lint launch files (recipes, manifests, compose, scripts, docs).", help="Lint launch files: h3doctor recipes, sglang --config files, Kubernetes manifests, compose "
                          "files and shell scripts (files, directories, globs; .gitignore respected), each launch on "
                          "every target. Exit 1 on a finding at or above --fail-on.")
def lint_cmd(
    paths: Annotated[Optional[List[str]], typer.Argument(help="Files, directories or globs (default: .).")] = None,
    target: Annotated[Optional[List[str]], typer.Option("--target", "-t", help="A profile every launch must pass on (repeatable); wins over the files' and the configuration's targets.")] = None,
    format: Annotated[LintFormat, typer.Option("--format", "--output-format", help="Report format (--output-format: ruff's spelling).")] = LintFormat.text,
    output_file: Annotated[Optional[str], typer.Option("--output-file", help="Write the report to this file instead of stdout.")] = None,
    fail_on: Annotated[Optional[Severity], typer.Option("--fail-on", help="Lowest severity that makes the exit code 1 (default: the configuration's, else error).")] = None,
    exit_zero: Annotated[bool, typer.Option("--exit-zero", help="Exit 0 whatever the findings (usage and input errors keep exit 2).")] = False,
    verbose: Annotated[bool, typer.Option("--verbose", "-v", help="Say on stderr why each file that is not a launch input was skipped.")] = False,
    baseline: Annotated[Optional[str], typer.Option("--baseline", help="A baseline file (--write-baseline): the findings it holds are reported as suppressed and do not fail; only new ones do.")] = None,
    write_baseline: Annotated[Optional[str], typer.Option("--write-baseline", help="Write today's unsuppressed findings to this baseline file, then report them as the baseline.")] = None,
    config: Annotated[Optional[str], typer.Option("--config", help="The lint configuration file (default: .h3doctor.yaml or [tool.h3doctor] in pyproject.toml, from here upward).")] = None,
    no_config: Annotated[bool, typer.Option("--no-config", help="Read no configuration file.")] = False,
    fix: Annotated[bool, typer.Option("--fix", help="Rewrite the offending values in place to the corrected launch (safe fixes only, unless --unsafe-fixes).")] = False,
    diff: Annotated[bool, typer.Option("--diff", help="Show the fixes, safe and unsafe, as a unified diff (git apply); write nothing.")] = False,
    add_noqa: Annotated[bool, typer.Option("--add-noqa", help="Accept today's findings: add `# h3doctor: ignore[ID] added by --add-noqa` at the end of each launch that has any (with --diff: show it, write nothing).")] = False,
    unsafe_fixes: Annotated[bool, typer.Option("--unsafe-fixes", help="With --fix, also apply fixes that lower GPUs, parallel degrees, quality or residency, or differ between targets.")] = False,
    stdin_filename: Annotated[Optional[str], typer.Option("--stdin-filename", help="With the path -: the name of the text on stdin (its kind, per-path settings, the name in findings).")] = None,
    force_exclude: Annotated[bool, typer.Option("--force-exclude", help="Apply the configuration's exclude to files named on the command line too (pre-commit).")] = False,
    quiet: Annotated[bool, typer.Option("--quiet", "-q", help="Print the findings only: no corrected commands, summary or fix notes.")] = False,
    statistics: Annotated[bool, typer.Option("--statistics", help="Print one line per rule with its number of findings instead of the findings.")] = False,
    sglang_version: Annotated[Optional[str], typer.Option("--sglang-version", help="sglang release whose rules and parser to use.")] = None,
    rules_dir: Annotated[Optional[str], typer.Option("--rules-dir", help="Use the rule files in this directory.")] = None,
) -> None:
    raise typer.Exit(cli_fleet.lint(
        paths, format.value, output_file, targets=tuple(target or ()), fail_on=fail_on.value if fail_on else None,
        config_path=config, no_config=no_config, fix=fix, diff=diff, unsafe_fixes=unsafe_fixes,
        sglang_version=sglang_version, rules_dir=rules_dir, stdin_filename=stdin_filename,
        force_exclude=force_exclude, quiet=quiet, statistics=statistics, baseline=baseline,
        write_baseline=write_baseline, exit_zero=exit_zero, add_noqa=add_noqa, verbose=verbose))


@app.command("admission", short_help="Serve a Kubernetes validating admission webhook.", help="Serve a Kubernetes validating admission webhook over HTTPS (POST /validate, GET "
                               "/healthz): each pod template's sglang launches judged as lint judges them, on the GPU "
                               "its node labels name. Warns (allowed, with warnings) unless --deny. docs/kubernetes.md.")
def admission_cmd(
    cert: Annotated[str, typer.Option("--cert", help="The server certificate (PEM), e.g. a cert-manager Secret's tls.crt.")],
    key: Annotated[str, typer.Option("--key", help="Its private key (PEM), e.g. tls.key.")],
    host: Annotated[str, typer.Option("--host", help="Address to listen on.")] = "0.0.0.0",
    port: Annotated[int, typer.Option("--port", min=0, max=65535, help="Port to listen on (0: any free port).")] = 8443,
    deny: Annotated[bool, typer.Option("--deny", help="Refuse a launch whose findings say sglang will fail (default: allow with warnings).")] = False,
    sglang_version: Annotated[Optional[str], typer.Option("--sglang-version", help="sglang release to judge for (default: each container image's tag, else the newest verified).")] = None,
    rules_dir: Annotated[Optional[str], typer.Option("--rules-dir", help="Use the rule files in this directory.")] = None,
) -> None:
    cli_fleet.admission(cert=cert, key=key, host=host, port=port, deny=deny, sglang_version=sglang_version,
                        rules_dir=rules_dir)


export_app = typer.Typer(no_args_is_help=True, help="Export h3doctor's rules for another engine to enforce.")
app.add_typer(export_app, name="export")


@export_app.command("vap", help="Print a Kubernetes ValidatingAdmissionPolicy and its binding (CEL, no webhook) for "
                                "the launch-word rules CEL can judge: unknown flags of the image's sglang release, "
                                "flag choices and ints, abbreviations. Warn+Audit unless --deny. docs/kubernetes.md.")
def export_vap_cmd(
    deny: Annotated[bool, typer.Option("--deny", help="Refuse what sglang would refuse (validationActions: [Deny]); the warnings' policy still only warns.")] = False,
    name: Annotated[str, typer.Option("--name", help="Prefix of the objects' names.")] = "h3doctor",
    output: Annotated[Optional[str], typer.Option("--output", help="Write the YAML to this file instead of stdout.")] = None,
) -> None:
    cli_fleet.export_vap(deny, name, output)


@app.command("schema", short_help="Print a JSON Schema of an input or a report.", help="Print a JSON Schema: recipe, config (.h3doctor.yaml), report (check --format json), lint-report, rule, explain.")
def schema_cmd(
    name: Annotated[str, typer.Argument(help="recipe | config | report | lint-report | rule | explain")],
) -> None:
    cli_reference.schema(name)


# --- explain ------------------------------------------------------------------------------------

@app.command(
    "explain",
    short_help="Explain an error sglang printed, or a whole crash log.",
    context_settings={"allow_extra_args": True, "ignore_unknown_options": True},
    help="Explain an error sglang printed, or a whole crash log: the rule it is, why, and — with the launch "
    "after `--` or found in the log — the corrected command. h3doctor explain \"KeyError: 'SDPA'\"; "
    "h3doctor explain --log server.log; ... | h3doctor explain - -- sglang serve MODEL [flags]. "
    "Exit 0 when a rule or a cause is named, 1 when nothing matched.",
)
def explain_cmd(
    ctx: typer.Context,
    log: Annotated[Optional[str], typer.Option("--log", help="Read the error text from this log file (every argument is then the launch).")] = None,
    format: Annotated[ExplainFormat, typer.Option("--format", help="Report format (json: `h3doctor schema explain`).")] = ExplainFormat.text,
    output_file: Annotated[Optional[str], typer.Option("--output-file", help="Write the report to this file instead of stdout.")] = None,
    profile: Annotated[Optional[str], typer.Option(help="Hardware profile for the check of the launch (as `check`); without it, this host is probed.", autocompletion=complete_profile)] = None,
    no_cache: Annotated[bool, typer.Option("--no-cache", help="Probe this host afresh, without the probe cache.")] = False,
    sglang_version: Annotated[Optional[str], typer.Option("--sglang-version", help="sglang release that printed it (default: inferred from the wording where only some releases print it).")] = None,
    rules_dir: Annotated[Optional[str], typer.Option("--rules-dir", help="Use the rule files in this directory.")] = None,
    request_quality: Annotated[Optional[str], typer.Option("--request-quality", help="As `check`.")] = None,
    request_steps: Annotated[Optional[int], typer.Option("--request-steps", help="As `check`.")] = None,
    request_resolution: Annotated[Optional[str], typer.Option("--request-resolution", help="As `check`.")] = None,
    request_seconds: Annotated[Optional[float], typer.Option("--request-seconds", help="As `check`.")] = None,
    items: Annotated[Optional[List[str]], typer.Argument(metavar="[TEXT | -] [-- LAUNCH]", help="The error text (or - for stdin), then `-- LAUNCH`; with --log, the launch only.")] = None,
) -> None:
    raise typer.Exit(cli_advice.explain(
        list(items or []) + list(ctx.args), log, format.value, output_file, profile=profile,
        sglang_version=sglang_version, rules_dir=rules_dir, use_probe_cache=not no_cache,
        intent={"quality": request_quality, "steps": request_steps, "resolution": request_resolution,
                "seconds": request_seconds}))


# --- suggest ------------------------------------------------------------------------------------

class Prefer(str, Enum):
    speed = "speed"
    memory = "memory"
    balanced = "balanced"


@app.command("suggest", short_help="Search for the best MiniMax-H3 launch on this hardware.", help="Search the launch space for the best MiniMax-H3 launch on this hardware, with the "
             "rules and memory model of `check`: the best command with why, and the runner-ups. "
             "h3doctor suggest --profile 4xH200 --prefer speed")
def suggest_cmd(
    profile: Annotated[Optional[str], typer.Option(help="Built-in hardware profile name or a YAML/JSON profile file. Without it, this host is probed.", autocompletion=complete_profile)] = None,
    no_cache: Annotated[bool, typer.Option("--no-cache", help="Probe this host afresh, without the probe cache.")] = False,
    model: Annotated[str, typer.Option("--model", help="The model to serve (a MiniMax-H3 family hub id).")] = "MiniMaxAI/MiniMax-H3",
    variant: Annotated[Optional[str], typer.Option("--variant", help="--model-variant to serve: fl2va, ref2va or hybrid (base MiniMax-H3 only).")] = None,
    prefer: Annotated[Prefer, typer.Option("--prefer", help="What to rank by: speed, memory (headroom) or balanced (speed with headroom to spare); docs/suggest.md.")] = Prefer.balanced,
    request: Annotated[Optional[str], typer.Option("--request", help="The requests you will make, WIDTHxHEIGHTxSECONDS (e.g. 1344x768x5s): the memory fit at that shape (default: the server warmup).")] = None,
    quantization: Annotated[Optional[str], typer.Option("--quantization", help="Suggest only launches with this --quantization (e.g. fp8); without it, none is quantized.")] = None,
    runner_ups: Annotated[int, typer.Option("--runner-ups", help="How many runner-ups to show (0-10).")] = 3,
    sglang_version: Annotated[Optional[str], typer.Option("--sglang-version", help=f"sglang release whose rules and parser to use (default {NEWEST_VERIFIED}).")] = None,
    rules_dir: Annotated[Optional[str], typer.Option("--rules-dir", help="Use the rule files in this directory.")] = None,
    format: Annotated[SuggestFormat, typer.Option("--format", help="Report format.")] = SuggestFormat.text,
    output_file: Annotated[Optional[str], typer.Option("--output-file", help="Write the report to this file instead of stdout.")] = None,
    exec_: Annotated[bool, typer.Option("--exec", help="Run the best command (as `check --exec` runs a clean launch).")] = False,
) -> None:
    raise typer.Exit(cli_advice.suggest(
        format.value, output_file, exec_, profile=profile, model=model, variant=variant, prefer=prefer.value,
        request=request, quantization=quantization, sglang_version=sglang_version, rules_dir=rules_dir,
        use_probe_cache=not no_cache, runner_ups=runner_ups))


def main() -> None:
    """Entry point: the app inside the one error boundary (cli_boundary.py)."""
    run(app)
