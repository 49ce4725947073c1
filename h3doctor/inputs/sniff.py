"""Which launch kind a data file claims to be, read from its first document only.

A repository holds YAML that is not a launch — mkdocs (`!!python/name:`), CloudFormation (`!Sub`),
workflows (`on:` is a boolean key in YAML 1.1), error tables with integer keys. lint must be strict
about the files that are launch inputs and quiet about the rest, so the kind is decided before the
strict reader runs: from PyYAML's event stream (nothing is constructed, so no tag can fail and no
key type matters), stopping at the end of the first document. A file is a launch input only when
its first document has a known kind's shape *and* it mentions an sglang launch.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from h3doctor.inputs.launch import mentions_sglang as launch_mentioned
from h3doctor.inputs.skypilot import is_task
from h3doctor.inputs.yamlscripts import is_workflow
from h3doctor.safeload import MAX_NODES

_SGLANG = re.compile(r"sglang", re.IGNORECASE)
# Past the value budget (each node has at most one end event) the strict reader refuses the file
# anyway: the first document is not sniffed further.
_MAX_EVENTS = 2 * MAX_NODES
_MAX_COMMAND_SCALARS = 256


@dataclass
class Shape:
    """The first document's top level: its keys (as written) and the scalars under `command:`."""

    mapping: bool
    keys: list[str] = field(default_factory=list)
    command: list[str] = field(default_factory=list)


def mentions_sglang(text: str) -> bool:
    return _SGLANG.search(text) is not None


def first_shape(text: str, *, partial: bool = False) -> Shape | None:
    """The first YAML document's top-level shape, or None where the text is not YAML the event
    parser can read (the caller decides whether that is an error: only for a launch input).
    With `partial` (the head of a file too large to read), what is read up to the first error."""
    import yaml

    parser = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
    try:
        return _walk(_until_error(yaml.parse(text, Loader=parser)) if partial else yaml.parse(text, Loader=parser))
    except yaml.YAMLError:
        return None


def _until_error(events):
    import yaml

    try:
        yield from events
    except yaml.YAMLError:
        return


def _walk(events) -> Shape | None:
    import yaml

    shape: Shape | None = None
    depth = 0  # collection nesting: 1 is the top-level mapping
    expect_key = False
    current: str | None = None  # the top-level key whose value is being read
    for count, event in enumerate(events):
        if count > _MAX_EVENTS:
            break
        if isinstance(event, yaml.DocumentEndEvent):
            break
        if isinstance(event, (yaml.MappingStartEvent, yaml.SequenceStartEvent)):
            if depth == 0:
                shape = Shape(mapping=isinstance(event, yaml.MappingStartEvent))
                if not shape.mapping:
                    return shape
                expect_key = True
                depth = 1
                continue
            if depth == 1:
                expect_key = False  # a collection value of a top-level key
            depth += 1
            continue
        if isinstance(event, (yaml.MappingEndEvent, yaml.SequenceEndEvent)):
            depth -= 1
            if depth == 1:
                expect_key = True
            elif depth == 0:
                break
            continue
        if isinstance(event, yaml.ScalarEvent):
            if depth == 0:
                return Shape(mapping=False)
            if depth == 1 and expect_key:
                current = event.value
                shape.keys.append(current)
                expect_key = False
            else:
                if current == "command" and len(shape.command) < _MAX_COMMAND_SCALARS:
                    shape.command.append(event.value)
                if depth == 1:
                    expect_key = True
        elif isinstance(event, yaml.AliasEvent) and depth == 1:
            expect_key = not expect_key
    return shape


def claimed_kind(shape: Shape | None, text: str, filename: str, known_fields: set[str],
                 recipe_keys: frozenset[str]) -> str | None:
    """The launch kind the first document claims, or None for a file lint leaves alone."""
    if shape is not None and not shape.mapping:  # a list of plays or tasks: Ansible, when it runs sglang
        return "ansible" if launch_mentioned(text) else None
    if shape is None or not shape.keys:
        return None
    keys = set(shape.keys)
    if is_workflow(keys):
        return "workflow" if launch_mentioned(text) else None
    if "command" in keys and (keys <= recipe_keys or any(_SGLANG.search(s) for s in shape.command)):
        return "recipe"
    if {"apiVersion", "kind"} <= keys:
        return "kubernetes" if mentions_sglang(text) else None
    if "services" in keys:
        return "compose" if mentions_sglang(text) else None
    if is_task(keys):
        return "skypilot" if mentions_sglang(text) else None
    # mostly ServerArgs fields, or near misses of them (a misspelt sglang config is still one);
    # an application's own config that also has a `model_path` key is not (issue 30 item 4)
    known = sum(1 for k in keys if k in known_fields)
    if known * 2 > len(keys) or (len(keys) <= _MAX_NEAR_KEYS and (known + _near_misses(keys, known_fields)) * 2 > len(keys)):
        return "sglang-config"
    return None


_MAX_NEAR_KEYS = 64  # a flat config a person writes; past it, only exact fields count (difflib is quadratic-ish)


def _near_misses(keys: set[str], known_fields: set[str]) -> int:
    import difflib

    return sum(1 for k in keys if k not in known_fields and len(k) < 64
               and difflib.get_close_matches(k, known_fields, n=1, cutoff=0.85))
