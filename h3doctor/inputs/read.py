"""Which kind of input a file is, and its launches: one entry point for `lint`.

Kinds: `recipe` (h3doctor's own), `sglang-config` (sglang's `--config` file), `kubernetes`,
`compose`, `skypilot` (a task YAML with `run:`), `workflow` (a GitHub workflow's `run:` steps), `ansible`
(tasks' `shell:`/`command:`), `makefile` (recipe lines, when the Makefile is named), `markdown` (a Markdown/MDX file's fenced shell
blocks), `notebook` (a Jupyter notebook's shell lines and cells), `shell`, `slurm` (a shell script with `#SBATCH` lines), `dockerfile` (Dockerfile /
Containerfile, by name), `helm` (a chart's `Chart.yaml`, rendered when `helm` is on PATH). A kind can be forced (per-path `kind:` in `.h3doctor.yaml`); otherwise it is
recognised from the content (and the name, for shell scripts and compose files). A file whose
name says no kind (an extensionless Docker entrypoint) is a shell script when its `#!` line runs
a POSIX shell: only its first bytes are read to tell, and anything else — binaries, text without
such a line — is left alone.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field

from h3doctor.inputs.compose import is_compose, read_compose
from h3doctor.inputs.datafile import data_text
from h3doctor.inputs.dockerfile import is_dockerfile_name, looks_like_dockerfile, read_dockerfile
from h3doctor.inputs.helm import is_chart, read_chart
from h3doctor.inputs.kubernetes import is_manifest, read_manifests
from h3doctor.inputs.launch import Launch, Note
from h3doctor.inputs.launch import mentions_sglang as mentions_launch
from h3doctor.inputs.makefile import is_makefile_name, read_makefile
from h3doctor.inputs.markdown import is_doc, read_doc
from h3doctor.inputs.notebook import NOTEBOOK_ALLOWANCE, is_notebook, read_notebook
from h3doctor.inputs.recipe import RECIPE_KEYS, recipe_from, recipe_launch
from h3doctor.inputs.sglang_config import read_config
from h3doctor.inputs.shell import is_shell_script, read_script, shebang_shell
from h3doctor.inputs.skypilot import read_task
from h3doctor.inputs.slurm import is_batch_script, read_batch_script
from h3doctor.inputs.yamlscripts import is_ansible, quoted_on, read_ansible, read_workflow
from h3doctor.inputs.sniff import Shape, claimed_kind, first_shape, mentions_sglang
from h3doctor.errors import UsageError
from h3doctor.located import MAX_INPUT_BYTES, Pos, load_json, load_yaml
from h3doctor.safeload import LoadError, decode_text, read_bounded, read_bounded_bytes, read_head

_DATA_SUFFIXES = (".yaml", ".yml", ".json")
_SCRIPT_SUFFIXES = (".sh", ".bash", ".sbatch", ".slurm")
_SHEBANG_BYTES = 256  # the longest `#!` line a kernel reads (Linux since 5.1)


@dataclass
class InputFile:
    path: str
    kind: str | None  # None: not a launch input
    launches: list[Launch] = field(default_factory=list)
    notes: list[Note] = field(default_factory=list)
    text: str = ""
    skipped: str | None = None  # why a file lint was given is not an input (said by `lint --verbose`)


def candidate(path: str) -> bool:
    """Worth opening when a directory is walked: a known suffix or name, or an extensionless file
    whose first line is a shell's `#!` (read bounded; a FIFO, a device or an unreadable file is not)."""
    if _named_kind(path):
        return True
    if "." in os.path.basename(path):
        return False
    try:
        return _shell_shebang(path)
    except LoadError:  # walked past quietly; named, it is reported
        return False


def _named_kind(path: str) -> bool:
    return (path.endswith(_DATA_SUFFIXES + _SCRIPT_SUFFIXES) or is_dockerfile_name(path) or is_chart(path)
            or is_doc(path) or is_notebook(path))


def _shell_shebang(path: str) -> bool:
    """Raises LoadError for a file that cannot be read (a FIFO, a device, no permission)."""
    head = read_head(path, max_bytes=_SHEBANG_BYTES, what="input")
    first = head.split(b"\n", 1)[0]
    if not first.startswith(b"#!"):  # a binary payload after the line is _sniffed_script's to judge
        return False
    try:
        return shebang_shell(first.decode("utf-8"))
    except UnicodeDecodeError:
        return False


def _sniffed_script(path: str, max_bytes: int) -> str | None:
    """The text of a file that is a shell script by its `#!` line alone, or None where it is not
    text (a binary payload after the line, as in a self-extracting archive) and does not mention
    sglang; one that does is unreadable (cannot verify), never skipped."""
    data = read_bounded_bytes(path, max_bytes=max_bytes, what="input")
    if b"sglang" not in data.lower():
        try:
            return data.decode("utf-8")
        except UnicodeDecodeError:
            return None
    return decode_text(data, path, what="input")


def read_input(path: str, *, known_fields: set[str], kind: str | None = None,
               max_bytes: int = MAX_INPUT_BYTES) -> InputFile:
    """Raises LoadError for a file that cannot be read as its kind (malformed, too large, hostile)."""
    if kind == "makefile" or (kind is None and is_makefile_name(path)):  # named: a walk passes it by
        text = read_bounded(path, max_bytes=max_bytes, what="input")
        if kind is None and not mentions_launch(text):
            return InputFile(path, None, text=text, skipped="a Makefile that runs no sglang launch")
        return InputFile(path, "makefile", *read_makefile(path, text), text)
    if kind is None and not _named_kind(path):  # its first line decides, whether walked or named
        text = _sniffed_script(path, max_bytes) if _shell_shebang(path) else None
        if text is None:
            return InputFile(path, None)
        if is_batch_script(text):
            return InputFile(path, "slurm", *read_batch_script(path, text), text)
        return InputFile(path, "shell", *read_script(path, text), text)
    if kind == "notebook" or (kind is None and is_notebook(path)):  # outputs and all: its own limit
        text = read_bounded(path, max_bytes=max_bytes * NOTEBOOK_ALLOWANCE, what="notebook")
        if kind is None and not mentions_sglang(text):  # not read further, as YAML that is no launch
            return InputFile(path, None, text=text)
        return InputFile(path, "notebook", *read_notebook(path, text), text)
    if kind is None and path.endswith(_DATA_SUFFIXES):  # limits only for a file with a launch's shape
        text, why = data_text(path, max_bytes, lambda shape, said: claimed_kind(shape, said, path, known_fields,
                                                                                RECIPE_KEYS))
        if text is None:
            return InputFile(path, None, skipped=why)
    else:
        text = read_bounded(path, max_bytes=max_bytes, what="input")
    if kind == "markdown" or (kind is None and is_doc(path)):
        if kind is None and not mentions_sglang(text):
            return InputFile(path, None, text=text)
        return InputFile(path, "markdown", *read_doc(path, text), text)
    if kind == "helm" or (kind is None and is_chart(path)):
        launches, notes = read_chart(path, max_bytes=max_bytes)
        return InputFile(path, "helm", launches, notes, text)
    if kind == "dockerfile" or (kind is None and is_dockerfile_name(path) and not path.endswith(_DATA_SUFFIXES)):
        if kind is None and not looks_like_dockerfile(text):
            return InputFile(path, None, text=text)
        launches, notes = read_dockerfile(path, text)
        return InputFile(path, "dockerfile", launches, notes, text)
    if kind == "slurm" or (kind is None and not path.endswith(_DATA_SUFFIXES) and is_batch_script(text)
                           and (path.endswith(_SCRIPT_SUFFIXES) or is_shell_script(path, text))):
        launches, notes = read_batch_script(path, text)
        return InputFile(path, "slurm", launches, notes, text)
    if kind == "shell" or (kind is None and not path.endswith(_DATA_SUFFIXES) and is_shell_script(path, text)):
        launches, notes = read_script(path, text)
        return InputFile(path, "shell", launches, notes, text)
    if kind is None and not path.endswith(_DATA_SUFFIXES):
        return InputFile(path, None, text=text)
    sniffed = kind is None
    if sniffed:
        # decided from the first document before the strict read: a file that is not a launch
        # input is left alone, whatever tags or key types it uses
        kind = _claimed(path, text, known_fields)
        if kind is None:
            return InputFile(path, None, text=text, skipped="its first document has no launch's shape, or the file "
                                                             "does not mention an sglang launch")
    try:
        docs = ([load_json(text, path)] if path.endswith(".json")
                else load_yaml(quoted_on(text) if kind == "workflow" else text, path))
    except LoadError:
        if "{{" in text:
            return InputFile(path, "kubernetes", notes=[Note(path, Pos(1, 1), "Helm template syntax ({{ }}): "
                                                              "render the chart first (helm template); not judged")],
                             text=text)
        raise
    docs = [d for d in docs if d.data is not None]
    first = docs[0].data if docs else None
    if sniffed and (kind == "kubernetes" and not any(is_manifest(d.data) for d in docs)) or (
            kind == "compose" and not (len(docs) == 1 and is_compose(first, path))) or (
            kind == "skypilot" and not isinstance(first, dict)) or (kind == "ansible" and not is_ansible(first)):
        return InputFile(path, None, text=text)
    if kind == "kubernetes":
        launches, notes = read_manifests(docs, text)
    elif not docs:
        raise LoadError(f"empty file; expected a {kind}", location=path)
    elif len(docs) > 1:
        raise LoadError(f"a {kind} is one YAML document, found {len(docs)}", location=f"{path}:{docs[1].start}")
    elif kind == "recipe":
        try:
            launches, notes = [recipe_launch(recipe_from(docs[0]))], []
        except LoadError:
            raise
        except UsageError as exc:  # the recipe's own schema: a located error about this file
            raise LoadError(exc.message, location=exc.location, hint=exc.hint) from None
    elif kind == "compose":
        launches, notes = read_compose(docs[0])
    elif kind == "workflow":
        launches, notes = read_workflow(docs[0])
    elif kind == "ansible":
        launches, notes = read_ansible(docs[0])
    elif kind == "skypilot":
        if not isinstance(first, dict):
            raise LoadError("a SkyPilot task is a mapping", location=path)
        launches, notes = read_task(docs[0])
    else:
        if not isinstance(first, dict):
            raise LoadError("an sglang config file is a mapping of ServerArgs fields", location=path)
        launches, notes = read_config(docs[0])
    return InputFile(path, kind, launches, notes, text)


def _claimed(path: str, text: str, known_fields: set[str]) -> str | None:
    shape = first_shape(text)
    if shape is None and path.endswith(".json"):
        # JSON that YAML's parser cannot read (tabs): sniff it as JSON, within the same limits
        try:
            shape = _json_shape(load_json(text, path).data)
        except LoadError:
            shape = None
    if shape is None:
        # unreadable as YAML: an error (or the Helm note) only where the file speaks of an sglang launch
        if not mentions_sglang(text):
            return None
        return "kubernetes" if "{{" in text else "recipe"
    return claimed_kind(shape, text, path, known_fields, RECIPE_KEYS)


def _json_shape(data: object) -> Shape:
    if not isinstance(data, dict):
        return Shape(mapping=False)
    command = data.get("command")
    scalars = [command] if isinstance(command, str) else [str(c) for c in command] if isinstance(command, list) else []
    return Shape(mapping=True, keys=[str(k) for k in data], command=scalars)
