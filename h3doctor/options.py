"""`check`'s options, declared once: the console entry's fast parser (entry.py) and the Typer
command (cli.py) are both built from `CHECK_OPTIONS`, so an option exists, is spelt, typed and
defaulted the same way behind both front doors (tests/cli/test_options.py parses every option and
alias through both).

Plain data and string handling only: the fast path imports this module before any check, so it
imports neither Typer nor typing, inspect, dataclasses or pathlib (tests/cli/test_entry.py blocks them).
"""

from __future__ import annotations

import os

from h3doctor.output.formats import names as format_names
from h3doctor.record import record
from h3doctor.verified import NEWEST_VERIFIED

SEVERITIES = ("error", "warning", "info")  # as engine/ruleset.py ranks them (tests/house/test_single_sources.py)

# kinds: "flag" (a switch, True when given), "text", "int", "float" (a value, converted as click
# converts it: Python's int()/float()), "choice" (a value among `choices`)
# "size" (a size as docker writes it, 64m/16g/2t: kept as text here, read by facts.size_gib when
# the request is built, so both doors refuse a bad one with the same usage error)
CONVERT = {"text": str, "int": int, "float": float, "choice": str, "size": str}


@record(frozen=True)
class Option:
    """One of `check`'s options: its parameter name, every spelling, and what it takes."""

    name: str  # the parameter (cli.check's keyword, the key of parse()'s answer)
    flags: tuple[str, ...]  # every spelling, the first the one help shows first
    kind: str  # "flag", "text", "int", "float", "choice" or "size"
    help: str
    default: object = None
    choices: tuple[str, ...] = ()
    envvar: str | None = None  # read when the option is not on the command line
    repeatable: bool = False  # every occurrence kept, in order (a list)
    hidden: bool = False  # not in --help (the shell hook's own options)
    complete: str | None = None  # what the shells complete its value from (cli.COMPLETERS): "profiles"
    panel: str = ""  # the group `check --help` lists it under: a key of PANELS


# `check --help`'s groups of options, in the order help lists them: key -> heading
# (cli_help.PanelledHelp; Typer's rich_help_panel carries the heading). Every row names one.
PANELS: dict[str, str] = {
    "launch": "The launch",
    "hardware": "Hardware and host facts",
    "request": "The request you will make",
    "report": "Report",
    "exec": "Starting sglang (--exec)",
    "hook": "Shell hook (hidden)",
}


CHECK_OPTIONS: tuple[Option, ...] = (
    Option("profile", ("--profile",), "text", "Built-in hardware profile name (see `h3doctor profiles`) or a "
           "YAML/JSON profile file. Without it, this host is probed (see `h3doctor probe`).", complete="profiles",
           panel="hardware"),
    Option("no_cache", ("--no-cache",), "flag", "Probe this host afresh, without reading or writing the probe cache.",
           default=False, panel="hardware"),
    Option("format", ("--format",), "choice", "Report format (sarif, github: see README, Lint).", default="text",
           choices=format_names("check"), panel="report"),
    Option("show_config", ("--show-config",), "flag", "Print the effective configuration sglang would resolve.",
           default=False, panel="report"),
    Option("verbose", ("--verbose",), "flag", "Explain each finding in full: why sglang fails, the catalog "
           "references and stage, and the fix search's notes (the default report is short).", default=False,
           panel="report"),
    Option("fail_on", ("--fail-on",), "choice", "Lowest severity that makes the exit code 1 (a warning that "
           "predicts a failure, '! likely to fail', exits 0 at the default error).", default="error",
           choices=SEVERITIES, panel="report"),
    Option("recipe", ("--recipe",), "text", "A YAML launch recipe (command, env, profile, request); see README.",
           panel="launch"),
    Option("sglang_version", ("--sglang-version",), "text",
           f"sglang release whose rules and parser to use (default {NEWEST_VERIFIED}).", panel="launch"),
    Option("rules_dir", ("--rules-dir",), "text", "Use the rule files in this directory.", panel="launch"),
    Option("request_quality", ("--request-quality",), "text", "The quality you will request (exact, lossless, high): "
           "checks the quality=\"high\" deployment audit (catalog 2.H).", panel="request"),
    Option("request_steps", ("--request-steps",), "int",
           "num_inference_steps you will request (AdaLN plan checks, catalog R8).", panel="request"),
    Option("request_resolution", ("--request-resolution",), "text", "WIDTHxHEIGHT of the request you will make "
           "(memory fit at that request; default: the server warmup).", panel="request"),
    Option("request_seconds", ("--request-seconds",), "float",
           "Seconds of video you will request (memory fit at that request).", panel="request"),
    Option("exec_", ("--exec",), "flag", "When no finding reaches --fail-on, replace h3doctor with the command (exit "
           "status and signals are sglang's); the report goes to stderr.", default=False, panel="exec"),
    Option("apply_fixes", ("--apply-fixes",), "flag", "With --exec and findings: launch the corrected command "
           "instead (refused when there is none).", default=False, panel="exec"),
    Option("force", ("--force",), "flag", "With --exec and findings: launch the command as given anyway.",
           default=False, panel="exec"),
    Option("allow_unsafe_exec", ("--allow-unsafe-exec",), "flag", "With --exec: launch even when the command runs "
           "more than sglang (a container script's other commands, --privileged, a host-root mount, a PATH of its "
           "own: rules H3D960-H3D963), which --exec otherwise refuses.", default=False, panel="exec"),
    Option("hook", ("--hook",), "flag", "Used by the shell hook (h3doctor init): never launches; exit 0 launch, "
           "1 do not.", default=False, hidden=True, panel="hook"),
    Option("argv_out", ("--argv-out",), "text", "With --hook: where an accepted corrected command is written.",
           hidden=True, panel="hook"),
    Option("marked_launch", ("--marked-launch",), "text", "With --hook: the launch as a JSON list of its words, "
           "each expansion the shell gives a value only when it runs marked by U+0000 (the command-line hook).",
           hidden=True, panel="hook"),
    Option("output_file", ("--output-file",), "text", "Write the report to this file instead of stdout.",
           panel="report"),
    # host facts for this check, over the profile's or the probe's (docs/host-facts.md)
    Option("host_memory", ("--host-memory",), "size", "Host memory the launch can use (16g, 512g, 2t; a bare "
           "number is GiB), over the profile's or the probe's.", panel="hardware"),
    Option("shm", ("--shm",), "size", "Size of /dev/shm where it runs (64m, 16g), over the profile's or the probe's.",
           panel="hardware"),
    Option("disk", ("--disk",), "size", "Free disk under the Hugging Face cache (500g, 2t), over the profile's or "
           "the probe's.", panel="hardware"),
    Option("spill_disk", ("--spill-disk",), "size", "Free disk under SGLANG_DIFFUSION_HOST_SPILL_DIR (20g), over the "
           "profile's or the probe's.", panel="hardware"),
)


def parse(words: list[str], table: tuple[Option, ...] = CHECK_OPTIONS,
          environ: dict[str, str] | None = None) -> dict[str, object] | None:
    """Every option's value (its default when not given) from the words in front of `--`, as
    click reads them; None for anything the fast path leaves to the full CLI to say or refuse: an
    unknown word, an option given twice that is not repeatable, a missing, empty or dash-led
    value, a value click would not convert or choose (the CLI names the problem)."""
    by_flag = {flag: opt for opt in table for flag in opt.flags}
    given: dict[str, object] = {}
    i = 0
    while i < len(words):
        flag, eq, inline = words[i].partition("=") if words[i].startswith("--") else (words[i], "", "")
        opt = by_flag.get(flag)
        if opt is None or (opt.name in given and not opt.repeatable):
            return None
        if opt.kind == "flag":
            if eq:
                return None
            given[opt.name] = True
            i += 1
            continue
        if eq:
            value, i = inline, i + 1
        elif i + 1 < len(words):
            value, i = words[i + 1], i + 2
        else:
            return None
        value = _value(opt, value)
        if value is None:
            return None
        given[opt.name] = [*given.get(opt.name, []), value] if opt.repeatable else value
    environ = os.environ if environ is None else environ
    values: dict[str, object] = {}
    for opt in table:
        if opt.name not in given and opt.envvar and environ.get(opt.envvar):
            # click splits a repeatable option's variable at blanks
            texts = environ[opt.envvar].split() if opt.repeatable else [environ[opt.envvar]]
            found = [_value(opt, text) for text in texts]
            if None in found or not found:
                return None
            given[opt.name] = found if opt.repeatable else found[0]
        values[opt.name] = given.get(opt.name, opt.default)
    return values


def _value(opt: Option, text: str) -> object | None:
    if opt.kind == "flag":  # a switch's value from a variable: click reads "1", "yes", ...; left to it
        return None
    if not text or text.startswith("-") or (opt.kind == "choice" and text not in opt.choices):
        return None
    try:
        return CONVERT[opt.kind](text)
    except ValueError:
        return None
