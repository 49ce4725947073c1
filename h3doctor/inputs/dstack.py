"""Launches in a dstack run configuration (`type: task` or `service`): its `commands` read as one
shell script by the shell reader (inputs/shell.py; dstack runs them in one shell, in order), with
`env` as its environment, `resources.gpu` as the target and `image` as the release.

`resources.gpu` is dstack's GPU spec: `H100:8`, `nvidia:H100:8`, `A100:40GB:2`, `A100,H100:8`
(alternatives), `8` (a count, no name), or its mapping `{name: H100 | [H100, H200], count: 8 |
"1..2" | {min, max}, memory: ...}` (the shape dstack's parsed RunSpec dumps). Each name is a
`<N>x<GPU>` target of h3doctor's GPU catalog. A count that is a range (`1..8`: dstack picks it at
provisioning), no GPU name, or no GPU is not a target: the launch is left unjudged (the caller
says so), never judged on a guess. `$NAME` in a command is an `env` value or what dstack sets
(`DSTACK_GPUS_NUM`, `DSTACK_GPUS_PER_NODE`, `DSTACK_NODES_NUM`, `DSTACK_NODE_RANK` on one node);
an `env` name without a value (given at `dstack apply`) is not known here, and a launch reading it
is noted and not judged (inputs/shell.py).

Each launch's words are located in the `commands` item that holds them (segment path
`("commands", i)`, offsets in that string), so a fix edits that item only.
"""

from __future__ import annotations

import re
from typing import Any

from h3doctor.digits import is_digits
from h3doctor.inputs.launch import Launch, Note, Segment
from h3doctor.inputs.shell import read_script
from h3doctor.located import Document

RUN_TYPES = ("task", "service")
_VENDORS = frozenset({"nvidia", "amd", "google", "tpu", "intel"})
_MEMORY = re.compile(r"^\d+(\.\d+)?(MB|GB|TB)$", re.IGNORECASE)


def read_configuration(doc: Document) -> tuple[list[Launch], list[Note]]:
    """The launches of a run configuration mapping (`doc.data`), and what was not judged."""
    data = doc.data
    commands = data.get("commands") if isinstance(data, dict) else None
    if not isinstance(commands, list) or not all(isinstance(c, str) for c in commands):
        return [], []
    targets, count, why = gpu_targets((data.get("resources") or {}).get("gpu")
                                      if isinstance(data.get("resources"), dict) else None)
    notes = [Note(doc.origin, doc.pos(("resources",)), why)] if why else []
    env = _env(data.get("env"))
    script = "\n".join(commands)
    starts = [sum(len(c) + 1 for c in commands[:i]) for i in range(len(commands))]
    launches, script_notes = read_script(doc.origin, script, _variables(data, env, count))
    notes += [Note(doc.origin, doc.pos(("commands",)), n.message) for n in script_notes]
    image = data.get("image") if isinstance(data.get("image"), str) else None
    for launch in launches:
        spans = launch.segments[0].spans
        item = max(i for i, s in enumerate(starts) if s <= spans[0][0])
        base = starts[item]
        if spans[-1][1] > base + len(commands[item]):  # a launch continued over two items: not edited
            launch.segments = []
        else:
            launch.segments = [Segment("string", ("commands", item), 0, [(s - base, e - base) for s, e in spans])]
        launch.kind, launch.doc, launch.label = "dstack", doc, f"commands[{item}]"
        launch.pos = doc.pos(("commands", item))
        launch.token_pos = [launch.pos] * len(launch.tokens)
        launch.env = {**{k: v for k, v in env.items() if v is not None}, **launch.env}
        launch.targets, launch.gpu_count, launch.image = targets, count, image
    return launches, notes


def gpu_targets(gpu: Any) -> tuple[tuple[str, ...], int | None, str | None]:
    """(the `<N>x<GPU>` targets, the count, why there is none) of dstack's `resources.gpu`."""
    if gpu is None:
        return (), None, "no resources.gpu: no GPU to judge the launch on"
    names, count, memory = _spec(gpu)
    if count is None:
        return (), None, f"resources.gpu {_shown(gpu)}: the GPU count is a range or not a number (dstack picks it " \
                         "when it provisions): not judged"
    if not names:
        return (), count, f"resources.gpu {_shown(gpu)}: no GPU name: not judged"
    return tuple(f"{count}x{_catalog_name(n, memory)}" for n in names), count, None


def _spec(gpu: Any) -> tuple[list[str], int | None, str | None]:
    if isinstance(gpu, bool):
        return [], None, None
    if isinstance(gpu, int):
        return [], gpu, None
    if isinstance(gpu, str):
        names: list[str] = []
        count: Any = 1
        memory = None
        for token in gpu.replace(" ", "").split(":"):
            if token.lower() in _VENDORS:
                continue
            if _MEMORY.match(token.split("..")[0] or "x"):
                memory = token
            elif token[:1].isalpha():
                names = [n for n in token.split(",") if n]
            else:
                count = token
        return names, _count(count), memory
    if isinstance(gpu, dict):
        name = gpu.get("name")
        names = [name] if isinstance(name, str) else [n for n in name if isinstance(n, str)] \
            if isinstance(name, list) else []
        memory = gpu.get("memory")
        memory = memory.get("min") if isinstance(memory, dict) else memory
        return names, _count(gpu.get("count", 1)), memory if isinstance(memory, str) else None
    return [], None, None


def _count(value: Any) -> int | None:
    """A fixed count; None for a range with two ends apart, or anything else."""
    if isinstance(value, dict):
        low, high = value.get("min"), value.get("max")
        return _count(low) if low == high else None
    if isinstance(value, str):
        low, dots, high = value.strip().partition("..")
        if dots:
            return _count(low) if low == high else None
        return int(low) if is_digits(low) else None
    if isinstance(value, int) and not isinstance(value, bool):
        return value
    return None


def _catalog_name(name: str, memory: str | None) -> str:
    """dstack's A100 with 40GB is the catalog's A100-40GB (the catalog's A100 is the 80 GB part)."""
    if name.upper() == "A100" and memory and memory.upper().startswith("40"):
        return "A100-40GB"
    return name


def _env(env: Any) -> dict[str, str | None]:
    """dstack's `env`: a mapping, or a list of `NAME=value` / `NAME` (a value given at apply: None)."""
    if isinstance(env, dict):  # a value dstack's parsed spec holds as a placeholder (given at apply): None
        return {str(k): str(v) if isinstance(v, (str, int, float)) and not isinstance(v, bool) else None
                for k, v in env.items()}
    if isinstance(env, list):
        out: dict[str, str | None] = {}
        for item in env:
            if isinstance(item, str):
                name, eq, value = item.partition("=")
                out[name] = value if eq else None
        return out
    return {}


def _variables(data: dict[str, Any], env: dict[str, str | None], count: int | None) -> dict[str, str | None]:
    nodes = data.get("nodes", 1)
    out: dict[str, str | None] = {}
    if isinstance(nodes, int) and not isinstance(nodes, bool):
        out["DSTACK_NODES_NUM"] = str(nodes)
        if nodes == 1:
            out["DSTACK_NODE_RANK"] = "0"
    if count is not None:
        out["DSTACK_GPUS_PER_NODE"] = str(count)
        if isinstance(nodes, int):
            out["DSTACK_GPUS_NUM"] = str(count * nodes)
    return {**out, **env}


def _shown(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 80 else text[:77] + "..."
