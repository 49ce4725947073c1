"""Which kind of input a file is, and its launches: one entry point for `lint`.

Kinds: `recipe` (h3doctor's own), `sglang-config` (sglang's `--config` file), `kubernetes`,
`compose`, `shell`. A kind can be forced (per-path `kind:` in `.h3doctor.yaml`); otherwise it is
recognised from the content (and the name, for shell scripts and compose files).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from h3doctor.inputs.compose import is_compose, read_compose
from h3doctor.inputs.kubernetes import is_manifest, read_manifests
from h3doctor.inputs.launch import Launch, Note
from h3doctor.inputs.recipe import looks_like_recipe, recipe_from, recipe_launch
from h3doctor.inputs.sglang_config import looks_like_sglang_config, read_config
from h3doctor.inputs.shell import is_shell_script, read_script
from h3doctor.located import MAX_INPUT_BYTES, Pos, load_json, load_yaml
from h3doctor.safeload import LoadError, read_bounded

KINDS = ("recipe", "sglang-config", "kubernetes", "compose", "shell")
_DATA_SUFFIXES = (".yaml", ".yml", ".json")


@dataclass
class InputFile:
    path: str
    kind: str | None  # None: not a launch input
    launches: list[Launch] = field(default_factory=list)
    notes: list[Note] = field(default_factory=list)
    text: str = ""


def candidate(path: str) -> bool:
    """Worth opening when a directory is walked."""
    return path.endswith(_DATA_SUFFIXES + (".sh", ".bash"))


def read_input(path: str, *, known_fields: set[str], kind: str | None = None,
               max_bytes: int = MAX_INPUT_BYTES) -> InputFile:
    """Raises LoadError for a file that cannot be read as its kind (malformed, too large, hostile)."""
    text = read_bounded(path, max_bytes=max_bytes, what="input", pipes=False)
    if kind == "shell" or (kind is None and not path.endswith(_DATA_SUFFIXES) and is_shell_script(path, text)):
        launches, notes = read_script(path, text)
        return InputFile(path, "shell", launches, notes, text)
    if kind is None and not path.endswith(_DATA_SUFFIXES):
        return InputFile(path, None, text=text)
    try:
        docs = [load_json(text, path)] if path.endswith(".json") else load_yaml(text, path)
    except LoadError:
        if "{{" in text:
            return InputFile(path, "kubernetes", notes=[Note(path, Pos(1, 1), "Helm template syntax ({{ }}): "
                                                              "render the chart first (helm template); not judged")],
                             text=text)
        raise
    docs = [d for d in docs if d.data is not None]
    first = docs[0].data if docs else None
    if kind is None:
        if len(docs) == 1 and looks_like_recipe(first):
            kind = "recipe"
        elif any(is_manifest(d.data) for d in docs):
            kind = "kubernetes"
        elif len(docs) == 1 and is_compose(first, path):
            kind = "compose"
        elif len(docs) == 1 and looks_like_sglang_config(first, known_fields):
            kind = "sglang-config"
        else:
            return InputFile(path, None, text=text)
    if kind == "kubernetes":
        launches, notes = read_manifests(docs, text)
    elif not docs:
        raise LoadError(f"empty file; expected a {kind}", location=path)
    elif len(docs) > 1:
        raise LoadError(f"a {kind} is one YAML document, found {len(docs)}", location=f"{path}:{docs[1].start}")
    elif kind == "recipe":
        launches, notes = [recipe_launch(recipe_from(docs[0]))], []
    elif kind == "compose":
        launches, notes = read_compose(docs[0])
    else:
        if not isinstance(first, dict):
            raise LoadError("an sglang config file is a mapping of ServerArgs fields", location=path)
        launches, notes = read_config(docs[0])
    return InputFile(path, kind, launches, notes, text)
