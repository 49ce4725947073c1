"""A launch recipe: the command, its environment, the target hardware and the requests planned,
in one YAML file that CI can lint (`h3doctor check --recipe FILE`).

Validated against schema/recipe.schema.json; errors name the file and the line.
"""

from __future__ import annotations

import json
import shlex
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path
from typing import Any

from h3doctor.errors import UsageError
from h3doctor.safeload import excerpt, load_yaml, read_bounded
from h3doctor.yamlpos import schema_message, yaml_line

MAX_RECIPE_BYTES = 1 << 20


@dataclass(frozen=True)
class Recipe:
    path: str
    command: list[str]
    env: dict[str, str] = field(default_factory=dict)
    profile: str | None = None
    sglang_version: str | None = None
    request: dict[str, Any] = field(default_factory=dict)
    lines: dict[str, int] = field(default_factory=dict)  # line of each top-level key, for located errors


def load_recipe(path_text: str) -> Recipe:
    text = read_bounded(path_text, max_bytes=MAX_RECIPE_BYTES, what="recipe")
    data = load_yaml(text, origin=path_text)
    _validate(data, text, path_text)
    lines = {key: yaml_line(text, [key]) for key in ("command", "profile", "sglang_version")}
    command = data["command"]
    try:
        tokens = shlex.split(command) if isinstance(command, str) else list(command)
    except ValueError as exc:  # an unbalanced quote or a trailing backslash
        raise UsageError(f"command: {exc} (as a shell would read it)", location=_line(path_text, lines["command"])) from None
    env = {k: ("true" if v is True else "false" if v is False else str(v)) for k, v in (data.get("env") or {}).items()}
    profile = _profile(data.get("profile"), path_text, lines["profile"])
    return Recipe(path_text, tokens, env, profile, data.get("sglang_version"), dict(data.get("request") or {}),
                  {k: v for k, v in lines.items() if v is not None})


def _line(path_text: str, line: int | None) -> str:
    return f"{path_text}:{line}" if line else path_text


def _profile(value: str | None, path_text: str, line: int | None) -> str | None:
    """A built-in name as it is; a profile file relative to the recipe, inside the recipe's own
    directory tree (a recipe from a pull request must not make h3doctor read files elsewhere:
    such a profile is given on the command line with --profile)."""
    if value and "\0" in value:
        raise UsageError("profile: the value contains a NUL byte", location=_line(path_text, line))
    if not value or not ("/" in value or "\\" in value or value.endswith((".yaml", ".yml", ".json"))):
        return value
    base = Path(path_text).parent.resolve()
    try:
        target = (base / value).resolve()
    except (OSError, RuntimeError, ValueError) as exc:
        raise UsageError(f"profile: cannot resolve the path ({type(exc).__name__})", location=_line(path_text, line)) from None
    if not target.is_relative_to(base):
        raise UsageError("profile: the path leaves the recipe's directory; give a profile from elsewhere on the "
                         "command line (--profile FILE)", location=_line(path_text, line))
    return str(target)


def _validate(data: Any, text: str, path_text: str) -> None:
    from jsonschema import Draft202012Validator

    schema = json.loads(resources.files("h3doctor.schema").joinpath("recipe.schema.json").read_text(encoding="utf-8"))
    errors = sorted(Draft202012Validator(schema).iter_errors(data), key=lambda e: list(e.absolute_path))
    if errors:
        err = errors[0]
        line = yaml_line(text, list(err.absolute_path))
        key = "/".join(excerpt(p, 40) for p in err.absolute_path) or "(top level)"
        raise UsageError(f"at {key}: {schema_message(err)}", location=_line(path_text, line))
