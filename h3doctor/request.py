"""What the CLI asks for, turned into one check: hardware, rules, parser table, environment.

Keeps `cli.check` to options in, report out. A recipe supplies the command, its environment,
the hardware and the planned requests; options given on the command line win over it.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from h3doctor.engine.results import CheckResult
from h3doctor.errors import UsageError
from h3doctor.safeload import excerpt


@dataclass
class CheckRequest:
    tokens: list[str]
    profile: str | None = None
    recipe: str | None = None
    sglang_version: str | None = None
    rules_dir: str | None = None
    use_probe_cache: bool = True
    intent: dict[str, Any] = field(default_factory=dict)


def run(request: CheckRequest) -> CheckResult:
    from h3doctor.engine.check import check
    from h3doctor.engine.ruleset import load_rules, version_in_range
    from h3doctor.sglang.flagtable import DEFAULT_SGLANG_VERSION, load_flag_table

    tokens, env, profile, version, intent = list(request.tokens), dict(os.environ), request.profile, request.sglang_version, dict(request.intent)
    recipe = None
    if request.recipe:
        from h3doctor.inputs.recipe import load_recipe

        recipe = load_recipe(request.recipe)
        if tokens:
            raise UsageError("give the launch either in the recipe or on the command line, not both")
        tokens = recipe.command
        env.update(recipe.env)
        profile = profile or recipe.profile
        version = version or recipe.sglang_version
        intent = {**recipe.request, **{k: v for k, v in intent.items() if v is not None}}
    if not tokens:
        raise UsageError("no launch to check: give sglang flags, `-- sglang serve MODEL [flags]`, or --recipe FILE")
    from_recipe = recipe if recipe is not None and request.profile is None and recipe.profile else None
    with _located(from_recipe, "profile", "--profile" if request.profile is not None else None):
        hw = _hardware(profile, tokens, env, request.use_probe_cache, from_recipe is not None)
    with _located(recipe if request.sglang_version is None else None, "sglang_version",
                  "--sglang-version" if request.sglang_version is not None else None):
        table = load_flag_table(version or DEFAULT_SGLANG_VERSION)
    rules = load_rules(Path(request.rules_dir) if request.rules_dir else None)
    if not any(version_in_range(table.sglang_version, r.versions) for r in rules):
        # a release with a parser table but no verified rules would pass everything: refuse
        raise UsageError(f"no rule is verified for sglang {table.sglang_version}; h3doctor cannot judge that release yet")
    return check(tokens, hw, rules, table, env, intent)


@contextmanager
def _located(recipe: Any, key: str, flag: str | None = None) -> Iterator[None]:
    """An error about a value the recipe gave (no such profile, unknown release) points at its
    line; one about an option's value names the option."""
    try:
        yield
    except UsageError as exc:
        if exc.location is not None or (recipe is None and flag is None):
            raise
        if recipe is None:
            raise UsageError(exc.message, location=flag, hint=exc.hint) from None
        line = recipe.lines.get(key)
        raise UsageError(f"{key}: {exc.message}", location=f"{recipe.path}:{line}" if line else recipe.path,
                         hint=exc.hint) from None


def _hardware(profile: str | None, tokens: list[str], env: dict[str, str], use_cache: bool, from_recipe: bool = False):
    if profile is not None:
        from h3doctor.host.profiles import builtin_profile_names, load_profile

        if from_recipe and profile not in builtin_profile_names() and not os.path.isabs(profile):
            # a bare name in a recipe is a built-in profile; a file is named by its path (./lab.yaml)
            names = ", ".join(builtin_profile_names())
            raise UsageError(f"no built-in profile {excerpt(profile)!r} (a profile file is named by its path "
                             f"relative to the recipe, e.g. ./{excerpt(profile)}.yaml); built-in profiles: {names}")
        return load_profile(profile)
    from h3doctor.host.probe import facts_for_check
    from h3doctor.sglang.argv import split_command

    _n, _entry, _given, command_env = split_command(tokens)
    return facts_for_check({**env, **command_env}, use_cache=use_cache)
