"""Launches in SkyPilot task YAML: the `run:` script read by the shell reader (inputs/shell.py),
with `envs` as its environment and `resources.accelerators` as the targets it is judged on.

`accelerators` is `H200:4`, `H200` (one), a set or mapping of alternatives (`{H100:8, A100-80GB:8}`,
`{L4, A10g}`), or a list in order of preference; `resources.any_of` / `ordered` list alternatives
too. Each alternative is a `<N>x<GPU>` target of h3doctor's GPU catalog (SkyPilot's names mapped
onto it where they differ: SkyPilot's `A100` is the 40 GB part), and its count is the grant when
every alternative asks for the same number. The session builds each target's profile: an
accelerator the catalog does not know is named there (H3DL005), not guessed at.
An `envs` value left empty (`null`, to be given with `--env` at launch) is not known here.
`resources.image_id: docker:IMAGE` is the container the run script runs in: its tag is the sglang
release (as a manifest's `image:`); a VM image, or one per region, says nothing of the release.

`$NAME` / `${NAME}` in the run script is what SkyPilot exports there: an `envs` (or `secrets`)
value, `SKYPILOT_NUM_GPUS_PER_NODE` (when every accelerator alternative asks for the same count),
`SKYPILOT_NUM_NODES` (`num_nodes`, 1 if unset) and `SKYPILOT_NODE_RANK` (0, on one node). A name
the task leaves empty (`null` or `""`: required at `sky launch --env`), one it does not bind, or
one the script assigns itself is named in a note and that launch is not judged, never guessed at.
"""

from __future__ import annotations

import re
from typing import Any

from h3doctor.inputs.launch import Launch, Note
from h3doctor.inputs.yamlscripts import launches_in_string
from h3doctor.located import Document, Pos

TASK_KEYS = frozenset({"resources", "envs", "setup", "num_nodes", "service", "file_mounts", "workdir", "secrets"})
# SkyPilot's accelerator names where h3doctor's catalog (host/gpus.json) spells them differently
_SKYPILOT_NAMES = {"a100": "A100-40GB", "a10080gb": "A100", "a10080gbsxm": "A100", "h100mega": "H100"}


def is_task(keys: set[str]) -> bool:
    return "run" in keys and bool(keys & TASK_KEYS)


def read_task(doc: Document) -> tuple[list[Launch], list[Note]]:
    data = doc.data
    notes: list[Note] = []
    run = data.get("run")
    if not isinstance(run, str):
        return [], notes
    targets, counts = _targets(data.get("resources"), doc, notes)
    envs = {str(k): _text(v) for k, v in (data.get("envs") or {}).items() if v is not None} \
        if isinstance(data.get("envs"), dict) else {}
    launches, script_notes = launches_in_string(doc, ("run",), "skypilot", "run", _variables(data, run, counts))
    notes += script_notes
    for launch in launches:
        launch.env = {**envs, **launch.env}
        launch.targets = targets
        launch.gpu_count = counts[0] if len(set(counts)) == 1 else None
        launch.image, launch.image_pos = _image(data.get("resources"), doc)
    return launches, notes


def _image(resources: Any, doc: Document) -> tuple[str | None, Pos | None]:
    """`resources.image_id: docker:IMAGE`: the container the task runs in (SkyPilot's docker
    prefix). SkyPilot's own Task writes it as `{null: docker:IMAGE}` (per region; null: any); images
    that differ by region name no one release."""
    image = resources.get("image_id") if isinstance(resources, dict) else None
    if isinstance(image, dict):
        found = {v for v in image.values() if isinstance(v, str)}
        image = found.pop() if len(found) == 1 and len(image) == 1 else None
    if isinstance(image, str) and image.startswith("docker:") and image[len("docker:"):].strip():
        return image[len("docker:"):].strip(), doc.pos(("resources", "image_id"))
    return None, None


# what the script itself may set (then its value there is the script's, not the task's)
_ASSIGNED = re.compile(r"\b([A-Za-z_][A-Za-z0-9_]*)\+?=|\b(?:for|read|unset|export|local|declare|typeset|readonly)"
                       r"(?:\s+-\S+)*\s+([A-Za-z_][A-Za-z0-9_]*)")


def _variables(data: dict[str, Any], run: str, counts: list[int]) -> dict[str, str | None]:
    """What `$NAME` is in the run script; None: declared, but only given at launch."""
    out: dict[str, str | None] = {}
    nodes = data.get("num_nodes", 1)
    nodes = nodes if isinstance(nodes, int) and not isinstance(nodes, bool) else None
    if nodes is not None:
        out["SKYPILOT_NUM_NODES"] = str(nodes)
        if nodes == 1:
            out["SKYPILOT_NODE_RANK"] = "0"
    if counts and len(set(counts)) == 1:
        out["SKYPILOT_NUM_GPUS_PER_NODE"] = str(counts[0])
    for key in ("envs", "secrets"):
        if isinstance(data.get(key), dict):
            for name, value in data[key].items():
                out[str(name)] = None if value is None or value == "" else _text(value)
    for m in _ASSIGNED.finditer(run):
        out.pop(m.group(1) or m.group(2), None)
    return out


def _text(value: Any) -> str:
    return str(value).lower() if isinstance(value, bool) else str(value)


def _targets(resources: Any, doc: Document, notes: list[Note]) -> tuple[tuple[str, ...], list[int]]:
    if not isinstance(resources, dict):
        return (), []
    alternatives = [resources] + [r for key in ("any_of", "ordered") for r in (resources.get(key) or [])
                                  if isinstance(r, dict)]
    targets: list[str] = []
    counts: list[int] = []
    for alt in alternatives:
        for name, count in _accelerators(alt.get("accelerators")):
            if count < 1:  # a fraction of a GPU: no catalog profile holds it
                notes.append(Note(doc.origin, doc.pos(("resources", "accelerators")),
                                  f"accelerator {name!r}: a fraction of a GPU is not judged"))
                continue
            target = f"{count}x{_SKYPILOT_NAMES.get(name.replace('-', '').replace('_', '').lower(), name)}"
            if target not in targets:
                targets.append(target)
                counts.append(count)
    return tuple(targets), counts


def _accelerators(value: Any) -> list[tuple[str, int]]:
    if isinstance(value, str):
        return [_one(value)] if value.strip() else []
    if isinstance(value, dict):  # a mapping of name: count, or a set ({H100, A100}: null values)
        return [_one(f"{k}:{v}" if v is not None else str(k)) for k, v in value.items()]
    if isinstance(value, list):
        return [_one(str(v)) for v in value if isinstance(v, (str, int))]
    return []


def _one(text: str) -> tuple[str, int]:
    name, _, count = text.strip().partition(":")
    count = count.strip()
    try:
        number = float(count) if count else 1.0
    except ValueError:
        return name.strip(), 0
    return name.strip(), int(number) if number.is_integer() else 0
