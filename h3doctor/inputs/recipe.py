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
from h3doctor.yamlpos import yaml_line

MAX_RECIPE_BYTES = 1 << 20


@dataclass(frozen=True)
class Recipe:
    path: str
    command: list[str]
    env: dict[str, str] = field(default_factory=dict)
    profile: str | None = None
    sglang_version: str | None = None
    request: dict[str, Any] = field(default_factory=dict)


def load_recipe(path_text: str) -> Recipe:
    import yaml

    path = Path(path_text)
    if not path.is_file():
        raise UsageError("no such recipe file", location=path_text)
    if path.stat().st_size > MAX_RECIPE_BYTES:
        raise UsageError("recipe file is larger than 1 MiB", location=path_text)
    try:
        text = path.read_text(encoding="utf-8")
        data = yaml.safe_load(text)
    except (OSError, UnicodeDecodeError) as exc:
        raise UsageError(f"cannot read recipe: {exc}", location=path_text) from None
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f"{path_text}:{mark.line + 1}" if mark is not None else path_text
        raise UsageError(f"malformed YAML: {getattr(exc, 'problem', exc)}", location=where) from None
    _validate(data, text, path_text)
    command = data["command"]
    tokens = shlex.split(command) if isinstance(command, str) else list(command)
    env = {k: ("true" if v is True else "false" if v is False else str(v)) for k, v in (data.get("env") or {}).items()}
    base = path.parent
    profile = data.get("profile")
    if profile and ("/" in profile or profile.endswith((".yaml", ".yml", ".json"))):
        profile = str((base / profile).resolve())  # a profile file next to the recipe
    return Recipe(path_text, tokens, env, profile, data.get("sglang_version"), dict(data.get("request") or {}))


def _validate(data: Any, text: str, path_text: str) -> None:
    from jsonschema import Draft202012Validator

    schema = json.loads(resources.files("h3doctor.schema").joinpath("recipe.schema.json").read_text(encoding="utf-8"))
    errors = sorted(Draft202012Validator(schema).iter_errors(data), key=lambda e: list(e.absolute_path))
    if errors:
        err = errors[0]
        line = yaml_line(text, list(err.absolute_path))
        key = "/".join(str(p) for p in err.absolute_path) or "(top level)"
        raise UsageError(f"at {key}: {err.message}", location=f"{path_text}:{line}" if line else path_text)
