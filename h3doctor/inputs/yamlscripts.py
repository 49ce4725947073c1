"""Shell scripts held in YAML strings, read as scripts where they stand: a SkyPilot task's `run:`,
a GitHub workflow's `run:` steps, an Ansible task's `shell:`/`command:`. Each launch's words are
located in the file (line and column inside the string) and `--fix` edits them there."""

from __future__ import annotations

import re
from typing import Any

from h3doctor.inputs.launch import Launch, Note, Segment
from h3doctor.inputs.shell import read_script
from h3doctor.located import Document

_ANSIBLE_MODULES = ("shell", "command", "ansible.builtin.shell", "ansible.builtin.command")
_ANSIBLE_BLOCKS = ("tasks", "pre_tasks", "post_tasks", "handlers", "block", "rescue", "always")


def launches_in_string(doc: Document, path: tuple, kind: str, label: str,
                       variables: dict[str, str | None] | None = None) -> tuple[list[Launch], list[Note]]:
    """The launches of the script that is the string at `path`, labelled `label line N` (N: the file's)."""
    script = _at(doc.data, path)
    if not isinstance(script, str):
        return [], []
    launches, script_notes = read_script(doc.origin, script, variables)
    starts = [0] + [i + 1 for i, c in enumerate(script) if c == "\n"]
    notes = [Note(doc.origin, doc.offset_pos(path, starts[n.pos.line - 1] + n.pos.col - 1), n.message, n.notice)
             for n in script_notes]
    for launch in launches:
        spans = launch.segments[0].spans
        launch.kind, launch.doc = kind, doc
        launch.pos = doc.offset_pos(path, spans[0][0])
        launch.label = f"{label} line {launch.pos.line}"
        launch.token_pos = [doc.offset_pos(path, s) for s in launch.word_offsets or [s for s, _e in spans]]
        launch.segments = [Segment("string", path, 0, list(spans))]
    return launches, notes


def is_workflow(keys: set[str]) -> bool:
    """A GitHub Actions workflow: `jobs` beside `on` (YAML 1.1 reads an unquoted `on` as true)."""
    return "jobs" in keys and bool(keys & {"on", "True", "true"})


def quoted_on(text: str) -> str:
    """A workflow's text with its top-level `on:` key quoted: YAML 1.1 reads it as the boolean
    true, which lint's strict reader refuses as a key. Only that line changes (two characters
    after its key), so every `run:` word keeps its line and column."""
    return re.sub(r"^on:", '"on":', text, count=1, flags=re.MULTILINE)


def read_workflow(doc: Document) -> tuple[list[Launch], list[Note]]:
    """Each `run:` step of each job (a step's `shell:` other than a POSIX shell is not read)."""
    launches: list[Launch] = []
    notes: list[Note] = []
    jobs = doc.data.get("jobs") if isinstance(doc.data, dict) else None
    for job, spec in (jobs or {}).items() if isinstance(jobs, dict) else ():
        steps = spec.get("steps") if isinstance(spec, dict) else None
        for i, step in enumerate(steps if isinstance(steps, list) else []):
            if isinstance(step, dict) and str(step.get("shell", "bash")).split()[0] in ("bash", "sh"):
                name = step.get("name") if isinstance(step.get("name"), str) else f"step {i + 1}"
                found, said = launches_in_string(doc, ("jobs", job, "steps", i, "run"), "workflow",
                                                 f"job {job} {name[:40]} run")
                launches += found
                notes += said
    return launches, notes


def is_ansible(data: Any) -> bool:
    """A playbook (plays with `hosts`) or a task file: a list of mappings, one running a module."""
    return isinstance(data, list) and any(isinstance(item, dict) and (
        "hosts" in item or any(k in item for k in _ANSIBLE_MODULES + _ANSIBLE_BLOCKS)) for item in data)


def read_ansible(doc: Document) -> tuple[list[Launch], list[Note]]:
    """Each task's `shell:`/`command:` (a string, or its `cmd:`), in plays, blocks and handlers."""
    launches: list[Launch] = []
    notes: list[Note] = []
    stack: list[tuple[tuple, Any]] = [((), doc.data)]
    while stack:
        path, value = stack.pop()
        if isinstance(value, list):
            stack.extend((path + (i,), v) for i, v in reversed(list(enumerate(value))))
            continue
        if not isinstance(value, dict):
            continue
        for module in _ANSIBLE_MODULES:
            arg = value.get(module)
            where = path + (module,) if isinstance(arg, str) else path + (module, "cmd") if isinstance(arg, dict) else None
            if where is not None:
                name = value.get("name") if isinstance(value.get("name"), str) else module
                found, said = launches_in_string(doc, where, "ansible", f"task {name[:40]}")
                launches += found
                notes += said
        stack.extend((path + (k,), value[k]) for k in reversed(_ANSIBLE_BLOCKS) if k in value)
    return launches, notes


def _at(data: Any, path: tuple) -> Any:
    for key in path:
        if isinstance(data, dict):
            data = data.get(key)
        elif isinstance(data, list) and isinstance(key, int) and key < len(data):
            data = data[key]
        else:
            return None
    return data
