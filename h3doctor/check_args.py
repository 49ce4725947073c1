"""`check`'s option values (h3doctor/options.py) and launch words turned into one request, with
the usage errors check gives first. Both front doors call these — the console entry's fast path
(entry.py) and the Typer command (cli.py) — so they refuse the same command lines and ask for
the same check."""

from __future__ import annotations

import os

from h3doctor.cli_output import short
from h3doctor.errors import H3DoctorError, UsageError
from h3doctor.options import CHECK_OPTIONS

OPTIONS_HINT = ("h3doctor's options go before `--`, the launch after it: "
                "h3doctor check --profile 4xH200 -- sglang serve MODEL [flags]")


def check_request(values: dict, tokens: list[str]):
    """The one check these options ask for (request.run's input)."""
    from h3doctor.facts import size_gib
    from h3doctor.request import CheckRequest

    # the table's "size" options give a host fact for this check (facts.OVERRIDE_OPTIONS names the fact)
    sizes = {opt.flags[0]: size_gib(values[opt.name], opt.flags[0])
             for opt in CHECK_OPTIONS if opt.kind == "size" and values[opt.name] is not None}
    return CheckRequest(tokens=list(tokens), marked=values.get("marked_launch") is not None, profile=values["profile"], recipe=values["recipe"],
                        sglang_version=values["sglang_version"], rules_dir=values["rules_dir"],
                        use_probe_cache=not values["no_cache"], offer_all_gpus=not values["hook"], host_sizes=sizes,
                        intent={"quality": values["request_quality"], "steps": values["request_steps"],
                                "resolution": values["request_resolution"], "seconds": values["request_seconds"]})


def launch_words(values: dict, tokens: list[str]) -> list[str]:
    """check's usage errors (refuse_usage_errors), then the launch's words: after `--`, or (the
    command-line hook, cli_hook_line.py) `--marked-launch`'s JSON list, where each expansion the
    shell gives a value only when it runs is marked (h3doctor/unresolved.py: a NUL, which no argv
    word can hold, in front of its `$` or backquote)."""
    refuse_usage_errors(values, tokens)
    text = values.get("marked_launch")
    if text is None:
        return tokens
    import json

    from h3doctor.unresolved import MARK

    if not values["hook"]:
        raise UsageError("--marked-launch is for the shell hook (--hook)")
    if tokens:
        raise UsageError("give the launch after `--` or in --marked-launch, not both")
    try:
        words = json.loads(text)
    except (ValueError, RecursionError):
        words = None
    if not (isinstance(words, list) and words and all(isinstance(w, str) for w in words)):
        raise UsageError("--marked-launch takes a JSON list of the launch's words")
    for word in words:
        if any(not rest.startswith(("$", "`")) for rest in word.split(MARK)[1:]):
            raise UsageError(f"--marked-launch: a NUL that marks no expansion in {short(word.replace(MARK, '?'), 80)!r}")
    return words


def refuse_usage_errors(values: dict, tokens: list[str]) -> None:
    """check's options that contradict each other, and an option of h3doctor's misspelt among
    the launch's words: a UsageError before anything is checked."""
    _check_launch_options(values["exec_"], values["apply_fixes"], values["force"], values["hook"], values["argv_out"],
                          values["allow_unsafe_exec"])
    _refuse_misspelt_option(tokens, values["sglang_version"])


def _check_launch_options(exec_: bool, apply_fixes: bool, force: bool, hook: bool, argv_out: str | None,
                          allow_unsafe: bool) -> None:
    if (apply_fixes or force or allow_unsafe) and not exec_:
        raise UsageError("--apply-fixes, --force and --allow-unsafe-exec say what --exec launches: give --exec too")
    if apply_fixes and force:
        raise UsageError("give --apply-fixes (launch the corrected command) or --force (launch it as given), not both")
    if hook and exec_:
        raise UsageError("--hook never launches; the shell hook launches sglang itself: drop --exec")
    if argv_out and not hook:
        raise UsageError("--argv-out is for the shell hook (--hook)")


def _refuse_misspelt_option(tokens: list[str], sglang_version: str | None) -> None:
    """A word in front of the launch's program that is close to one of check's own options and is
    no sglang flag of the target release was meant for h3doctor (`--profle 4xH200`): a usage error
    with the spelling, not an sglang flag to report (through the shell hook: exit 2, launched anyway)."""
    from h3doctor.sglang.container_run import is_container_run

    if is_container_run(tokens):  # `docker run --memory 48g …`: the runtime's options, which its reader checks
        return
    own = sorted({flag for opt in CHECK_OPTIONS for flag in opt.flags if flag.startswith("--")})
    suspects = []
    for k, tok in enumerate(tokens):
        if os.path.basename(tok) == "sglang" or tok.startswith("-msglang") or tok == "-m":
            if k > 0 and tokens[0].startswith("-"):
                # no wrapper starts with an option: a launch's first word is never one of sglang's flags
                close = _close(tokens[0].split("=", 1)[0], own)
                raise UsageError(f"no such option: {short(tokens[0], 80)}"
                                 + (f"; did you mean {close}?" if close else ""), hint=OPTIONS_HINT)
            break  # the launch's own words start here: a misspelling there is sglang's (H3D020)
        name = tok.split("=", 1)[0]
        if name.startswith("--") and name not in own:
            close = _close(name, own)
            if close:
                suspects.append((name, close))
    if not suspects:
        return
    from h3doctor.sglang import releases
    from h3doctor.sglang.flagtable import DEFAULT_SGLANG_VERSION, ENTRY_POINTS, load_flag_table

    try:
        table = load_flag_table(releases.target(sglang_version or DEFAULT_SGLANG_VERSION, None).table_version)
    except H3DoctorError:
        return  # the check itself says what is wrong with the release
    sglang_flags = {o for entry in ENTRY_POINTS for o in table.options_for(entry)}
    for name, close in suspects:
        if name not in sglang_flags:
            raise UsageError(f"no such option: {short(name, 80)}; did you mean {close}?", hint=OPTIONS_HINT)


def _close(name: str, own: list[str]) -> str | None:
    import difflib  # only for a word in front of the program: a launch that starts with it never needs it

    close = difflib.get_close_matches(name, own, n=1, cutoff=0.75)
    return close[0] if close else None
