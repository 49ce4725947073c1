"""The five commands as functions: the CLI's own request layer underneath, no second pipeline.

Each call is what the CLI command does with the same options, up to the report object (the CLI
then renders it and exits with its code): `check` is `request.run` (what `h3doctor check` and
the console entry's fast path call), `lint` is `lint.run.lint`, `explain` is
`explain.report.run`, `suggest` is `suggest.run`, `probe` is `host.probe.probe`.

Rules are loaded once per process and rules directory (under a lock: any thread may be first),
so a process checking many launches pays for them once; an edited rule file is read by the
next process. Nothing here writes to stdout or stderr, reads stdin or exits.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Mapping, Sequence
from typing import Any

from h3doctor.api.errors import UsageError, translated
from h3doctor.api.results import ExplainReport, Hardware, LintReport, Report, Suggestions

__all__ = ["check", "explain", "lint", "probe", "suggest"]

SEVERITIES = ("error", "warning", "info")
REQUEST_KEYS = ("quality", "steps", "resolution", "seconds")  # a recipe's `request:`, check's --request-*
PREFERENCES = ("speed", "memory", "balanced")

_rules_lock = threading.Lock()
_rules: dict[tuple[str | None, bool], Any] = {}


def _loaded_rules(rules_dir: str | os.PathLike[str] | None, *, examples: bool) -> Any:
    """The rules of `rules_dir` (None: the shipped ones), loaded the first time they are asked for."""
    key = (_path("rules_dir", rules_dir), examples)
    found = _rules.get(key)
    if found is None:
        with _rules_lock:
            found = _rules.get(key)
            if found is None:
                from h3doctor.engine.ruleset import load_rules

                found = _rules[key] = load_rules(key[0], examples=examples)
    return found


def check(launch: Sequence[str] | os.PathLike[str] | None = None, *, recipe: str | os.PathLike[str] | None = None,
          profile: str | None = None, hardware: Hardware | None = None, sglang_version: str | None = None,
          env: Mapping[str, str] | None = None, fail_on: str = "error", request: Mapping[str, Any] | None = None,
          rules_dir: str | os.PathLike[str] | None = None, use_probe_cache: bool = True) -> Report:
    """Check one launch, as `h3doctor check` does.

    `launch` is the command as words (`["sglang", "serve", "MiniMaxAI/MiniMax-H3", "--num-gpus",
    "4"]`, or bare sglang flags, read as `sglang serve` flags); a path (`pathlib.Path`) or
    `recipe=` names a recipe file instead. A single string is refused: split it first
    (`shlex.split`). The hardware is `profile` (a built-in name such as "4xH200", `<N>x<GPU>`, or a
    profile file), or `hardware` (from `probe()`), or else this host, probed. `sglang_version`:
    the release to judge for (default: a recipe's, the installed sglang's, else the newest
    verified). `env`: the environment the launch starts in (default this process's). `fail_on`:
    the lowest severity that fails ("error", "warning", "info"). `request`: the requests you will
    make, as a recipe's `request:` (quality, steps, resolution "WIDTHxHEIGHT", seconds).

    Raises `UsageError` or `InputError` (exit 2) where the CLI exits 2, `InternalError` (3) on a bug.
    """
    with translated():
        tokens, recipe = _launch_words(launch, recipe)
        if profile is not None and hardware is not None:
            raise UsageError("give profile= or hardware=, not both")
        if hardware is not None and not isinstance(hardware, Hardware):
            raise UsageError(f"hardware= takes what probe() returns, not {type(hardware).__name__}")
        _one_of("fail_on", fail_on, SEVERITIES)
        from h3doctor.request import CheckRequest, run

        outcome = run(CheckRequest(
            tokens=tokens, profile=_text("profile", profile), recipe=recipe,
            sglang_version=_text("sglang_version", sglang_version),
            rules_dir=_path("rules_dir", rules_dir), use_probe_cache=use_probe_cache, intent=_intent(request),
            hardware=(lambda launch_env: hardware._for_launch(launch_env, use_probe_cache)) if hardware is not None else None,
            env=_environment(env), rules=_loaded_rules(rules_dir, examples=False),
            offer_all_gpus=True))  # as `h3doctor check` does: its JSON's summary offers the launch using idle GPUs
        return Report(outcome.result, fail_on, tuple(outcome.tokens))


def lint(paths: Sequence[str | os.PathLike[str]] = (".",), *, config: str | os.PathLike[str] | None = None,
         no_config: bool = False, targets: Sequence[str] = (), fail_on: str | None = None,
         sglang_version: str | None = None, rules_dir: str | os.PathLike[str] | None = None) -> LintReport:
    """Lint launch files, as `h3doctor lint PATHS` does (recipes, sglang `--config` files,
    Kubernetes manifests, compose files, shell scripts; directories walked, `.gitignore` kept).

    `config`: the lint configuration file (default: `.h3doctor.yaml` or `[tool.h3doctor]` in
    pyproject.toml, from the working directory upward; `no_config=True` reads none). `targets`:
    profiles every launch must pass on. Nothing is rewritten (the CLI's `--fix` is not offered).
    """
    with translated():
        if isinstance(paths, (str, bytes, os.PathLike)):
            raise UsageError("paths is a list of files, directories or globs, e.g. ['deploy/']")
        names = [_path("every path", p) for p in _words("paths", paths, kind=(str, os.PathLike))]
        if "-" in names:
            raise UsageError("the API does not read standard input: write the text to a file and lint that")
        if fail_on is not None:
            _one_of("fail_on", fail_on, SEVERITIES)
        from h3doctor.lint.run import LintOptions, lint as run_lint

        code, report, notes = run_lint(names or ["."], LintOptions(
            targets=tuple(_words("targets", targets)), fail_on=fail_on, config_path=_path("config", config),
            no_config=no_config, sglang_version=_text("sglang_version", sglang_version),
            rules_dir=_path("rules_dir", rules_dir)))
        return LintReport(report.data, code, tuple(notes))


def explain(text: str | os.PathLike[str], *, launch: Sequence[str] | None = None, profile: str | None = None,
            sglang_version: str | None = None, request: Mapping[str, Any] | None = None,
            rules_dir: str | os.PathLike[str] | None = None, use_probe_cache: bool = True) -> ExplainReport:
    """Explain an error sglang printed, or a whole log, as `h3doctor explain` does: the rule each
    error is, why, and with the launch (`launch`, or found in the log) the corrected command.

    `text` is the error text; a path (`pathlib.Path`) is read as a log file (`--log`). `profile`
    is the hardware for the check of the launch (without it, this host is probed).
    """
    with translated():
        from h3doctor.explain import source
        from h3doctor.explain.report import ExplainRequest, run

        if isinstance(text, os.PathLike):
            read = source.from_file(os.fspath(text))
        elif isinstance(text, str):
            read = source.from_argument(text)
        else:
            raise UsageError(f"text is the error text (str) or a log file's path, not {type(text).__name__}")
        words = [] if launch is None else _words("launch", launch)
        report = run(ExplainRequest(read, words, profile=_text("profile", profile),
                                    sglang_version=_text("sglang_version", sglang_version),
                                    rules_dir=_path("rules_dir", rules_dir), use_probe_cache=use_probe_cache,
                                    intent=_intent(request),
                                    rules=_loaded_rules(rules_dir, examples=True)))
        return ExplainReport(report.as_dict())


def suggest(profile: str | None = None, prefer: str = "balanced", *, model: str = "MiniMaxAI/MiniMax-H3",
            variant: str | None = None, request: str | None = None, quantization: str | None = None,
            runner_ups: int = 3, sglang_version: str | None = None, rules_dir: str | os.PathLike[str] | None = None,
            use_probe_cache: bool = True) -> Suggestions:
    """The best MiniMax-H3 launch for this hardware, as `h3doctor suggest` finds it.

    `profile`: the hardware (without it, this host is probed). `prefer`: "speed", "memory" or
    "balanced" (docs/suggest.md). `request`: the requests you will make, "WIDTHxHEIGHTxSECONDSs"
    (e.g. "1344x768x5s").
    """
    with translated():
        if isinstance(runner_ups, bool) or not isinstance(runner_ups, int):
            raise UsageError(f"runner_ups is a whole number, not {type(runner_ups).__name__}")
        from h3doctor.suggest import SuggestRequest, run

        data = run(SuggestRequest(profile=_text("profile", profile), model=_text("model", model),
                                  variant=_text("variant", variant), prefer=_text("prefer", prefer),
                                  request=_text("request", request), quantization=_text("quantization", quantization),
                                  sglang_version=_text("sglang_version", sglang_version),
                                  rules_dir=_path("rules_dir", rules_dir), use_probe_cache=use_probe_cache,
                                  runner_ups=runner_ups))
        return Suggestions(data)


def probe(*, use_cache: bool = True, refresh: bool = False, timeout: float | None = None) -> Hardware:
    """This host as sglang would see it, as `h3doctor probe` reports it. torch, when installed,
    is imported only in the probe's child process (with `timeout` seconds, default 30), never
    in this one; the result is cached for 10 minutes (`use_cache=False`: neither read nor written).
    """
    with translated():
        if timeout is not None and (isinstance(timeout, bool) or not isinstance(timeout, (int, float))):
            raise UsageError(f"timeout is a number of seconds, not {type(timeout).__name__}")
        from h3doctor.host.probe import probe as run_probe
        from h3doctor.launch.hook import status

        settings = dict(os.environ)
        result = run_probe(settings, use_cache=use_cache, refresh=refresh, timeout=timeout)
        # the CLI's JSON holds whether the shell hook is active in the calling shell: the same here
        return Hardware({**result.as_dict(), "hook": status(settings)}, result.facts, settings)


def _launch_words(launch: Any, recipe: Any) -> tuple[list[str], str | None]:
    """(the launch's words, the recipe's path): one of the two, given one way."""
    if isinstance(launch, os.PathLike):
        if recipe is not None:
            raise UsageError("give the recipe once: as the launch or as recipe=")
        return [], _path("launch", launch)
    if isinstance(launch, (str, bytes)):
        raise UsageError("give the launch as a list of words (shlex.split(command)), or a recipe as a "
                         "pathlib.Path or recipe=")
    words = [] if launch is None else _words("launch", launch)
    return words, _path("recipe", recipe)


def _words(name: str, words: Any, kind: type | tuple[type, ...] = str) -> list[Any]:
    """A list (or tuple) of str, e.g. a launch's words: never one string, split by accident."""
    if isinstance(words, (str, bytes)) or not isinstance(words, Sequence):
        raise UsageError(f"{name} is a list of words (shlex.split(command)), not {type(words).__name__}")
    out = list(words)
    for word in out:
        if not isinstance(word, kind):
            raise UsageError(f"every word of {name} is a str, not {type(word).__name__}")
    return out


def _path(name: str, value: Any) -> str | None:
    """A path given as str or os.PathLike, as text (None stays None)."""
    if value is None:
        return None
    if not isinstance(value, (str, os.PathLike)):
        raise UsageError(f"{name} is a path (str or os.PathLike), not {type(value).__name__}")
    path = os.fspath(value)
    if not isinstance(path, str):
        raise UsageError(f"{name} is a path as text, not {type(path).__name__}")
    return path


def _text(name: str, value: Any) -> str | None:
    if value is not None and not isinstance(value, str):
        raise UsageError(f"{name} is a str, not {type(value).__name__}")
    return value


def _one_of(name: str, value: Any, allowed: tuple[str, ...]) -> None:
    if value not in allowed:
        raise UsageError(f"{name} must be one of {', '.join(allowed)}, got {str(value)[:40]!r}")


def _intent(request: Mapping[str, Any] | None) -> dict[str, Any]:
    """The planned request as the CLI hands it (every key, None where not given)."""
    if request is not None and not isinstance(request, Mapping):
        raise UsageError(f"request is a mapping (quality, steps, resolution, seconds), not {type(request).__name__}")
    given = dict(request or {})
    unknown = sorted(str(k)[:40] for k in given if k not in REQUEST_KEYS)
    if unknown:
        raise UsageError(f"request has no key {', '.join(unknown)}; its keys: {', '.join(REQUEST_KEYS)}")
    return {key: given.get(key) for key in REQUEST_KEYS}


def _environment(env: Mapping[str, str] | None) -> dict[str, str] | None:
    if env is None:
        return None
    if not isinstance(env, Mapping):
        raise UsageError(f"env is a mapping of names to values, not {type(env).__name__}")
    for key, value in env.items():
        if not isinstance(key, str) or not isinstance(value, str):
            raise UsageError(f"env's names and values are str: {str(key)[:40]!r} is not")
    return dict(env)
