"""What the CLI asks for, turned into one check: hardware, rules, parser table, environment.

Keeps `cli.check` to options in, report out. A recipe supplies the command, its environment,
the hardware and the planned requests; options given on the command line win over it.
"""

from __future__ import annotations

import os

from h3doctor.engine.results import CheckResult
from h3doctor.errors import UsageError
from h3doctor.facts import with_overrides
from h3doctor.record import field, record, replace
from h3doctor.safeload import excerpt

TYPE_CHECKING = False  # typing is not imported at run time (start-up: record.py)
if TYPE_CHECKING:
    from typing import Any


@record
class CheckRequest:
    """One `h3doctor check`, as the command line (or the hook) asks for it."""
    tokens: list[str]
    # the words mark each expansion the shell gives a value only when it runs (h3doctor/unresolved.py;
    # the command-line hook): the check reads such a value as "any value"
    marked: bool = False
    profile: str | None = None
    recipe: str | None = None
    sglang_version: str | None = None
    rules_dir: str | None = None
    use_probe_cache: bool = True
    # --host-memory/--shm/--disk in GiB (facts.OVERRIDE_OPTIONS): over the profile's or the probe's figures
    host_sizes: dict[str, float] = field(default_factory=dict)
    intent: dict[str, Any] = field(default_factory=dict)
    # what a library caller (h3doctor.api) hands in already made; None: as the CLI does
    hardware: Any = None  # HardwareFacts, or a function of the launch's environment giving them: instead of --profile or the probe
    env: dict[str, str] | None = None  # the environment the launch starts in: instead of this process's
    rules: Any = None  # a loaded RuleSet: instead of loading the rules for this check
    # check a launch that leaves GPUs idle again with them all (engine/idle_gpus.py): the report
    # offers that launch; the hook, which shows nothing for a clean launch, does not pay for it
    offer_all_gpus: bool = False


@record(frozen=True)
class Outcome:
    """A check's result with the launch it judged and the environment that launch starts in."""
    result: CheckResult
    tokens: list[str]  # the launch checked: from the command line or the recipe
    launch_env: dict[str, str]  # the environment it starts in: this process's, plus the recipe's `env`


_ENVIRONMENT: tuple[dict, dict[str, str]] | None = None  # (os.environ's bytes, decoded): the last seen


def process_environment() -> dict[str, str]:
    """A copy of this process's environment. Decoding os.environ cost a tenth of an API check, and it
    rarely changes between checks: the decoded copy is kept while os.environ's raw data is equal."""
    global _ENVIRONMENT
    raw = getattr(os.environ, "_data", None)
    if raw is None:  # not CPython's os._Environ
        return dict(os.environ)
    kept = _ENVIRONMENT
    if kept is not None and kept[0] == raw:
        return dict(kept[1])
    snapshot = dict(raw)  # decoded from this one snapshot, so the pair always agrees
    decoded = {os.environ.decodekey(k): os.environ.decodevalue(v) for k, v in snapshot.items()}
    _ENVIRONMENT = (snapshot, decoded)
    return dict(decoded)


def run(request: CheckRequest) -> Outcome:
    from h3doctor.engine.judge import Judge
    from h3doctor.engine.ruleset import load_rules
    from h3doctor.engine.target import Target
    from h3doctor.sglang import releases
    from h3doctor.sglang.flagtable import load_flag_table
    from h3doctor.sglang.launch_forms import LaunchWords

    tokens, profile, intent = list(request.tokens), request.profile, dict(request.intent)
    env = process_environment() if request.env is None else dict(request.env)
    recipe_version, recipe = None, None
    if request.recipe:
        from h3doctor.inputs.recipe import load_recipe

        recipe = load_recipe(request.recipe)
        if tokens:
            raise UsageError("give the launch either in the recipe or on the command line, not both")
        tokens = recipe.command
        env.update(recipe.env)
        profile = profile or (recipe.all_targets[0] if recipe.all_targets else None)  # check judges one; lint all
        recipe_version = recipe.sglang_version
        intent = {**recipe.request, **{k: v for k, v in intent.items() if v is not None}}
    _check_request(intent)
    if not tokens:
        raise UsageError("no launch to check: give sglang flags, `-- sglang serve MODEL [flags]`, or --recipe FILE")
    if not request.marked and any("\0" in word for word in tokens):  # a launch read from a log (explain): no program can be given it
        raise UsageError("the launch holds a NUL byte in a word, which no program can be given")
    from_recipe = recipe if recipe is not None and request.profile is None and recipe.profile else None
    line = _script_line(tokens, env)  # a `-c` script holding sglang's flags: judged as the shell runs it
    judged = list(line.judged) if line is not None else tokens
    launch = LaunchWords.read(judged)  # its form read once: for the hardware it sees and for the check
    hw = request.hardware
    if callable(hw):  # the hardware as this launch sees it (the devices its environment selects)
        hw = hw(launch.form_or_raise().environment(env))
    elif hw is None:
        with _located(from_recipe, "profile", "--profile" if request.profile is not None else None):
            hw = _hardware(profile, launch, env, request.use_probe_cache, from_recipe is not None)
    hw = with_overrides(hw, request.host_sizes)
    with _located(recipe if request.sglang_version is None else None, "sglang_version",
                  "--sglang-version" if request.sglang_version is not None else None):
        # option > recipe > installed sglang (package metadata, never imported) > newest verified
        installed = None if request.sglang_version or recipe_version else releases.installed_version()
        release = releases.target(request.sglang_version, recipe_version, installed=installed)
        table = load_flag_table(release.table_version)
    rules = request.rules
    if rules is None:
        rules = load_rules(request.rules_dir or None, examples=False)  # a check never reads them
    # rules not verified for the release are not run; rule H3D921 names them ("cannot verify")
    judge, on = Judge(rules), Target.of(hw, table, env, intent, release)
    with _located(recipe, "command"):  # a launch h3doctor cannot read points at the recipe's command
        result = judge.check(launch, on)
    if request.offer_all_gpus:
        from h3doctor.engine.idle_gpus import all_gpus_argv
        from h3doctor.record import replace

        more = all_gpus_argv(result, judged, judge, on)
        result = replace(result, all_gpus_argv=more) if more else result
    if line is not None:
        result = _written_back(result, line)
    return Outcome(result, tokens, env)


def _written_back(result: CheckResult, line: Any) -> CheckResult:
    """The check of a script line with its commands written as the line writes them: each change
    where its words are (ScriptLine.written_back). A command whose change cannot be written there
    (a word the shell computes, such as the script's `$1`) is not offered: why is said instead."""
    from h3doctor.inputs.script_line import NotWritten

    def back(argv: list[str] | None) -> list[str] | None:
        return None if argv is None else line.written_back(argv)

    ev = result.evaluation
    ev = replace(ev, cmd=replace(ev.cmd, tokens=list(line.tokens)))  # the launch as given, not as judged
    try:
        return replace(result, evaluation=ev, corrected_argv=back(result.corrected_argv),
                       nearest_argv=back(result.nearest_argv), all_gpus_argv=back(result.all_gpus_argv),
                       alternatives=[replace(a, argv=line.written_back(a.argv)) for a in result.alternatives])
    except NotWritten as why:
        return replace(result, evaluation=ev, corrected_argv=None, nearest_argv=None, all_gpus_argv=None,
                       alternatives=[], gives_up=[*result.gives_up, f"no corrected command: {why}"])


def _script_line(tokens: list[str], env: dict[str, str]) -> Any:
    """inputs/script_line.py's reading of a line with a shell given a `-c` script (None for any
    other line, without importing it: a plain check stays on the fast path's imports)."""
    from h3doctor.sglang.container_run import SHELLS, is_container_run

    shells = [t for t in tokens[:1] if t.rsplit("/", 1)[-1] in SHELLS]
    if not shells and not (is_container_run(tokens) and any(t.rsplit("/", 1)[-1] in SHELLS for t in tokens)):
        return None
    from h3doctor.inputs.script_line import read

    return read(tokens, env)


def run_without_unreadable(request: CheckRequest, unreadable: UsageError) -> tuple[Outcome, list[UsageError]] | None:
    """The check of a launch without the words naming each file h3doctor could not read (the
    error's `path`; then the next such file's, if another turns up): the outcome and the errors
    of the files left out, or None when no word names the file or the rest cannot be judged either.
    The shell hook blocks on it when what is left fails already (it fails closed on h3doctor's limits)."""
    from h3doctor.errors import H3DoctorError
    from h3doctor.sglang.launch_forms import without_words_naming

    tokens, unread = request.tokens, []
    while True:  # each round drops at least one word: it ends
        readable = without_words_naming(tokens, unreadable.path) if unreadable.path else tokens
        if readable == tokens:
            return None
        tokens = readable
        unread.append(unreadable)
        try:
            return run(replace(request, tokens=tokens)), unread
        except UsageError as another:  # another file the launch names that cannot be read either
            unreadable = another
        except H3DoctorError:
            return None


class _located:
    """An error about a value the recipe gave (no such profile, unknown release) points at its
    line; one about an option's value names the option. (A class, not contextlib's decorator:
    contextlib is not imported on the check's path.)"""

    def __init__(self, recipe: Any, key: str, flag: str | None = None) -> None:
        self.recipe, self.key, self.flag = recipe, key, flag

    def __enter__(self) -> None:
        return None

    def __exit__(self, kind: type | None, exc: BaseException | None, tb: object) -> bool:
        if not isinstance(exc, UsageError):
            return False
        recipe, key, flag = self.recipe, self.key, self.flag
        if exc.location is not None or (recipe is None and flag is None):
            return False
        if recipe is None:
            raise UsageError(exc.message, location=flag, hint=exc.hint) from None
        where = recipe.doc.pos((key,)) if recipe.doc is not None else None
        raise UsageError(f"{key}: {exc.message}", location=f"{recipe.path}:{where}" if where else recipe.path,
                         hint=exc.hint) from None


def _hardware(profile: str | None, launch: Any, env: dict[str, str], use_cache: bool, from_recipe: bool = False):
    if profile is not None:
        from h3doctor.host.profiles import builtin_profile_names, is_named_profile, load_profile

        if from_recipe and not is_named_profile(profile) and not os.path.isabs(profile):
            # a bare name in a recipe is a built-in or <N>x<GPU> profile; a file is named by its path (./lab.yaml)
            names = ", ".join(builtin_profile_names())
            raise UsageError(f"no built-in profile {excerpt(profile)!r} (a profile file is named by its path "
                             f"relative to the recipe, e.g. ./{excerpt(profile)}.yaml); built-in profiles: {names}")
        return load_profile(profile)
    from h3doctor.host.probe import facts_for_check

    return facts_for_check(launch.form_or_raise().environment(env), use_cache=use_cache)


def _check_request(intent: dict[str, Any]) -> None:
    """The planned request's shape (--request-resolution / --request-seconds or the recipe's)."""
    import math
    import re

    res = intent.get("resolution")
    if res is not None and not re.fullmatch(r"[1-9][0-9]{1,4}x[1-9][0-9]{1,4}", str(res)):
        raise UsageError(f"request resolution must be WIDTHxHEIGHT (e.g. 1344x768), got {str(res)[:40]!r}")
    secs = intent.get("seconds")
    if secs is not None and (isinstance(secs, bool) or not isinstance(secs, (int, float)) or not math.isfinite(secs)
                             or not 0 < secs <= 600):
        raise UsageError(f"request seconds must be a number in (0, 600], got {str(secs)[:40]!r}")

