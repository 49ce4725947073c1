"""A launch recipe: the command, its environment, the target hardware and the requests planned,
in one YAML file that CI can lint (`h3doctor check --recipe FILE`, `h3doctor lint FILE`).

Read through `loading` (bounded, located); validated against schema/recipe.schema.json; errors
name the file, line and column.
"""

from __future__ import annotations

import functools
import json
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from h3doctor import shellsplit
from h3doctor.errors import UsageError
from h3doctor.inputs.launch import Ignore, Launch, Segment
from h3doctor.located import Document, load_file
from h3doctor.paths import package_dir
from h3doctor.safeload import excerpt
from h3doctor.shellsplit import Unsupported, shell_words
from h3doctor.yamlpos import schema_message

MAX_RECIPE_BYTES = 1 << 20
RECIPE_KEYS = frozenset({"description", "sglang_version", "profile", "targets", "command", "env", "request", "ignore"})


@dataclass(frozen=True)
class Recipe:
    path: str
    command: list[str]
    env: dict[str, str] = field(default_factory=dict)
    profile: str | None = None
    sglang_version: str | None = None
    request: dict[str, Any] = field(default_factory=dict)
    targets: tuple[str, ...] = ()
    ignores: tuple[Ignore, ...] = ()
    doc: Document | None = None

    @property
    def all_targets(self) -> tuple[str, ...]:
        """`profile` and then `targets`, each once."""
        out = ([self.profile] if self.profile else []) + [t for t in self.targets if t != self.profile]
        return tuple(out)


@functools.lru_cache(maxsize=1)
def schema() -> dict[str, Any]:
    return json.loads(package_dir("h3doctor.schema").joinpath("recipe.schema.json").read_text(encoding="utf-8"))


@functools.lru_cache(maxsize=1)
def _validator():  # built once: a lint run validates every recipe with it
    from jsonschema import Draft202012Validator

    return Draft202012Validator(schema())


def load_recipe(path_text: str) -> Recipe:
    path = Path(path_text)
    if not path.is_file():
        raise UsageError("no such recipe file", location=path_text)
    docs = load_file(path_text, max_bytes=MAX_RECIPE_BYTES, what="recipe")
    if len(docs) != 1:
        raise UsageError("a recipe is one YAML document (a mapping with `command:`)" if docs else "the recipe is empty",
                         location=path_text)
    [doc] = docs
    return recipe_from(doc)


def recipe_from(doc: Document) -> Recipe:
    data, path_text = doc.data, doc.origin
    _validate(doc)
    command = data["command"]
    try:
        tokens = shellsplit.split(command, continuations=True) if isinstance(command, str) else list(command)
    except ValueError as exc:  # an unbalanced quote or a trailing backslash
        raise UsageError(f"command: {exc} (as a shell would read it)", location=f"{path_text}:{doc.pos(('command',))}") from None
    env = {k: ("true" if v is True else "false" if v is False else str(v)) for k, v in (data.get("env") or {}).items()}
    _no_nul(tokens, env, doc, listed=not isinstance(command, str))
    return Recipe(
        path_text, tokens, env, _profile(data.get("profile"), doc, ("profile",)), data.get("sglang_version"),
        dict(data.get("request") or {}),
        tuple(_profile(t, doc, ("targets", n)) for n, t in enumerate(data.get("targets") or ())),
        tuple(Ignore(i["rule"], i["reason"], doc.pos(("ignore", n))) for n, i in enumerate(data.get("ignore") or ())),
        doc,
    )


def _no_nul(tokens: list[str], env: dict[str, str], doc: Document, *, listed: bool) -> None:
    """A NUL byte cannot be in a program's argument or environment (execve ends the string there,
    and Python refuses it), so a recipe holding one is a located usage error before anything
    runs, not a traceback at the probe or at --exec (nor a word read as a script's "$@" marker)."""
    for n, word in enumerate(tokens):
        if "\0" in word:
            where = doc.pos(("command", n) if listed else ("command",))
            raise UsageError(f"command: word {n + 1} holds a NUL byte, which no program can be given",
                             location=f"{doc.origin}:{where}")
    for name, value in env.items():
        if "\0" in value:
            raise UsageError(f"env: {name} holds a NUL byte, which no environment can hold",
                             location=f"{doc.origin}:{doc.pos(('env', name))}")


def _profile(value: str | None, doc: Document, key: tuple) -> str | None:
    """A built-in name as it is; a profile file relative to the recipe, inside the recipe's own
    directory tree (a recipe from a pull request must not make h3doctor read files elsewhere:
    such a profile is given on the command line with --profile)."""
    where = f"{doc.origin}:{doc.pos(key)}"
    if value and "\0" in value:
        raise UsageError("profile: the value contains a NUL byte", location=where)
    if not value or not ("/" in value or "\\" in value or value.endswith((".yaml", ".yml", ".json"))):
        return value
    base = Path(doc.origin).parent.resolve()
    try:
        target = (base / value).resolve()
    except (OSError, RuntimeError, ValueError) as exc:
        raise UsageError(f"profile: cannot resolve the path ({type(exc).__name__})", location=where) from None
    if not target.is_relative_to(base):
        raise UsageError("profile: the path leaves the recipe's directory; give a profile from elsewhere on the "
                         "command line (--profile FILE)", location=where)
    return str(target)


def recipe_launch(recipe: Recipe) -> Launch:
    """The recipe as a located launch: each token's line and column in the file."""
    doc = recipe.doc
    assert doc is not None
    command = doc.data["command"]
    if isinstance(command, str):
        try:
            words = shell_words(command)
        except Unsupported:
            words = []
        if [w for w, _s, _e in words] == recipe.command:
            spans = [(s, e) for _w, s, e in words]
            token_pos = [doc.offset_pos(("command",), s) for s, _e in spans]
        else:  # shlex read it differently (e.g. a `#` or `$` in a word): locate at the value
            spans, token_pos = [], [doc.pos(("command",))] * len(recipe.command)
        segment = Segment("string", ("command",), 0, spans)
    else:
        token_pos = [doc.pos(("command", i)) for i in range(len(command))]
        segment = Segment("list", ("command",), 0, [(i, i + 1) for i in range(len(command))])
    return Launch(
        path=recipe.path, kind="recipe", label="recipe", tokens=list(recipe.command), pos=doc.pos(("command",)),
        token_pos=token_pos, env=dict(recipe.env), segments=[segment] if segment.spans else [], doc=doc,
        targets=recipe.all_targets, ignores=list(recipe.ignores), sglang_version=recipe.sglang_version,
        intent=dict(recipe.request),
    )


_ENV_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_ENV_VALUE_TYPES = ["string", "number", "boolean"]


def _validate(doc: Document) -> None:
    """The recipe schema's first error (in path order, as jsonschema sorts them), located. `env`
    is checked here entry by entry (a dict lookup and a regex each), the rest by jsonschema: its
    per-entry cost (~20 us) made a large `env:` the slowest part of a recipe."""
    data = doc.data
    env = data.get("env", {}) if isinstance(data, dict) else {}
    rest = {k: v for k, v in data.items() if k != "env"} if isinstance(data, dict) and "env" in data else data
    errors = [(list(e.absolute_path), e) for e in _validator().iter_errors(rest)]
    env_error = _env_error(env)
    if env_error is not None:
        errors.append(env_error)
    if not errors:
        return
    path, err = min(errors, key=lambda pe: pe[0])
    path = tuple(path)
    key = "/".join(excerpt(p, 40) for p in path) or "(top level)"
    where = doc.key_pos(path + (err.bad_key,)) if getattr(err, "bad_key", None) is not None else doc.pos(path)
    if err.validator == "additionalProperties" and isinstance(err.instance, dict):
        # point at the first key the schema does not know, not at the mapping that holds it
        allowed = err.schema.get("properties", {})
        extra = [k for k in err.instance if k not in allowed]
        if extra:
            where = doc.key_pos((*path, extra[0]))
    raise UsageError(f"at {key}: {schema_message(err)}", location=f"{doc.origin}:{where}")


@dataclass(frozen=True)
class _EnvError:
    """One error of the schema's `env` entry, in the shape schema_message reads."""

    validator: str
    validator_value: Any
    instance: Any
    bad_key: str | None = None
    schema: dict = field(default_factory=dict)


def _env_error(env: Any) -> tuple[list, _EnvError] | None:
    """(path, error) of `env` as recipe.schema.json's `env` says: a mapping whose names match
    `propertyNames` and whose values are strings, numbers or booleans. A bad name is reported
    first (jsonschema's path for it is `env` itself), then the bad value first in key order."""
    env_schema = schema()["properties"]["env"]
    if not isinstance(env, dict):
        return ["env"], _EnvError("type", env_schema["type"], env)
    pattern = env_schema["propertyNames"]["pattern"]
    for name in env:
        if not _ENV_NAME.fullmatch(name):
            return ["env"], _EnvError("pattern", pattern, name, bad_key=name)
    bad = [name for name, value in env.items() if value is None or not isinstance(value, (str, int, float))]
    if bad:
        name = min(bad)
        return ["env", name], _EnvError("type", _ENV_VALUE_TYPES, env[name])
    return None
