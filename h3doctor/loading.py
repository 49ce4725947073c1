"""Bounded, typed, position-aware loading of the YAML and JSON files h3doctor reads as input.

Every input reader (recipes, sglang `--config` files, Kubernetes manifests, compose files) loads
through here, so the limits hold for all of them:

* the size cap is checked before a byte is read, and at most that many bytes are read;
* nesting deeper than `MAX_DEPTH` and more than `MAX_NODES` values (aliases counted every time
  they are expanded, so an alias bomb stops early) are refused;
* mapping keys must be strings; `.inf`/`.nan` (and JSON's `NaN`/`Infinity`) are refused;
  YAML timestamps stay strings (as the user typed them); unknown tags are refused;
* every error names `file:line:col` and quotes at most a short, truncated excerpt.

Values are plain Python (dict, list, str, int, float, bool, None). Beside them a `Document`
keeps where each value and each mapping key starts (1-based line and column), by path.

PyYAML's composer is used (its nodes carry marks): libyaml's where nesting is bounded, the
pure-Python one otherwise (see `load_yaml`).
"""

from __future__ import annotations

import json
import math
import os
from dataclasses import dataclass, field
from typing import Any

from h3doctor.errors import UsageError

MAX_INPUT_BYTES = 1 << 20
MAX_DEPTH = 64
MAX_NODES = 100_000
EXCERPT_CHARS = 40



@dataclass(frozen=True)
class Pos:
    line: int  # 1-based
    col: int  # 1-based

    def __str__(self) -> str:
        return f"{self.line}:{self.col}"


@dataclass(frozen=True)
class Scalar:
    """Where a string scalar sits in the source, to map offsets inside it to line and column."""

    pos: Pos
    style: str | None  # None (plain), "'", '"', "|", ">"
    single_line: bool
    raw_lines: tuple[str, ...] = ()  # for block scalars: the source lines of the value
    indent: int = 0


@dataclass
class Document:
    origin: str
    data: Any
    start: Pos = Pos(1, 1)
    index: int = 0  # position in a multi-document stream
    values: dict[tuple, Pos] = field(default_factory=dict)
    keys: dict[tuple, Pos] = field(default_factory=dict)
    scalars: dict[tuple, Scalar] = field(default_factory=dict)

    def pos(self, path: tuple) -> Pos:
        """Where the value at `path` starts; the nearest located ancestor if it has no place of its own."""
        path = tuple(path)
        while path:
            if path in self.values:
                return self.values[path]
            path = path[:-1]
        return self.values.get((), self.start)

    def key_pos(self, path: tuple) -> Pos:
        return self.keys.get(tuple(path)) or self.pos(path)

    def offset_pos(self, path: tuple, offset: int) -> Pos:
        """Line and column of character `offset` inside the string value at `path`."""
        scalar = self.scalars.get(tuple(path))
        if scalar is None:
            return self.pos(path)
        if scalar.style in (None, "'", '"') and scalar.single_line:
            quote = 0 if scalar.style is None else 1
            return Pos(scalar.pos.line, scalar.pos.col + quote + offset)
        if scalar.style in ("|", ">") and scalar.raw_lines:
            line, rest = 0, offset
            while line < len(scalar.raw_lines) - 1 and rest > len(scalar.raw_lines[line]):
                rest -= len(scalar.raw_lines[line]) + 1
                line += 1
            return Pos(scalar.pos.line + 1 + line, scalar.indent + 1 + rest)
        return scalar.pos


class LoadError(UsageError):
    """A malformed, hostile or oversized input file, located to file:line:col."""


def excerpt(value: Any) -> str:
    text = value if isinstance(value, str) else repr(value)
    text = text.replace("\n", "\\n")
    return repr(text if len(text) <= EXCERPT_CHARS else text[:EXCERPT_CHARS] + "…")


def read_bounded(path: str, max_bytes: int = MAX_INPUT_BYTES) -> str:
    """The file's text, refusing (before reading) anything larger than `max_bytes`."""
    try:
        size = os.stat(path).st_size
    except OSError as exc:
        raise LoadError(f"cannot read: {exc.strerror or exc}", location=path) from None
    if not os.path.isfile(path):
        raise LoadError("not a regular file", location=path)
    if size > max_bytes:
        raise LoadError(f"file is larger than {max_bytes // 1024} KiB; not read", location=path)
    try:
        with open(path, "rb") as fh:
            raw = fh.read(max_bytes + 1)
    except OSError as exc:
        raise LoadError(f"cannot read: {exc.strerror or exc}", location=path) from None
    if len(raw) > max_bytes:  # grew while we looked
        raise LoadError(f"file is larger than {max_bytes // 1024} KiB; not read", location=path)
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise LoadError(f"not UTF-8 text (byte {exc.start})", location=path) from None


def load_file(path: str, *, max_bytes: int = MAX_INPUT_BYTES, multi: bool = False) -> list[Document]:
    """A `.json` file as JSON (as sglang reads it), anything else as YAML (every document if `multi`)."""
    text = read_bounded(path, max_bytes)
    if path.endswith(".json"):
        return [load_json(text, path)]
    docs = load_yaml(text, path)
    if not multi and len(docs) > 1:
        raise LoadError("expected one YAML document, found several", location=f"{path}:{docs[1].start}")
    return docs


def load_yaml(text: str, origin: str) -> list[Document]:
    import yaml

    # libyaml's composer is fast but recurses in C; it is used only where the nesting is bounded:
    # block nesting costs its indentation (depth d needs ~d*d/2 bytes: about 1,400 levels in
    # 1 MiB), flow nesting does not, so text with many brackets goes to the pure-Python composer,
    # whose recursion Python itself bounds (RecursionError).
    brackets = text.count("[") + text.count("{")
    loader = getattr(yaml, "CSafeLoader", None) if brackets <= 4 * MAX_DEPTH else None
    try:
        nodes = list(yaml.compose_all(text, Loader=loader or yaml.SafeLoader))
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None) or getattr(exc, "context_mark", None)
        where = f"{origin}:{mark.line + 1}:{mark.column + 1}" if mark is not None else origin
        raise LoadError(f"malformed YAML: {getattr(exc, 'problem', None) or exc}", location=where) from None
    except RecursionError:
        raise LoadError(f"nested deeper than {MAX_DEPTH} levels", location=origin) from None
    lines = text.splitlines()
    docs = []
    for index, node in enumerate(nodes):
        builder = _Builder(origin, lines)
        doc = Document(origin, None, _pos(node.start_mark), index)
        doc.data = builder.build(node, (), 0, doc)
        docs.append(doc)
    return docs


def load_json(text: str, origin: str) -> Document:
    """JSON as `json.loads` reads it (sglang's reader), refusing NaN/Infinity and non-finite floats;
    positions come from composing the same text as YAML (JSON is YAML's flow style) when that works."""

    def refuse_constant(name: str) -> Any:
        raise LoadError(f"non-finite number {name} is not allowed", location=origin)

    try:
        data = json.loads(text, parse_constant=refuse_constant)
    except LoadError:
        raise
    except RecursionError:
        raise LoadError(f"nested deeper than {MAX_DEPTH} levels", location=origin) from None
    except ValueError as exc:
        line, col = getattr(exc, "lineno", None), getattr(exc, "colno", None)
        where = f"{origin}:{line}:{col}" if line else origin
        raise LoadError(f"malformed JSON: {getattr(exc, 'msg', exc)}", location=where) from None
    _check_plain(data, origin, 0)
    doc = Document(origin, data)
    try:
        located = load_yaml(text, origin)
    except LoadError:
        return doc  # valid JSON that YAML cannot compose (e.g. tabs): values without columns
    if located:
        doc.values, doc.keys, doc.scalars = located[0].values, located[0].keys, located[0].scalars
    return doc


def _check_plain(value: Any, origin: str, depth: int) -> None:
    if depth > MAX_DEPTH:
        raise LoadError(f"nested deeper than {MAX_DEPTH} levels", location=origin)
    if isinstance(value, float) and not math.isfinite(value):
        raise LoadError("non-finite number is not allowed", location=origin)
    if isinstance(value, dict):
        for v in value.values():
            _check_plain(v, origin, depth + 1)
    elif isinstance(value, list):
        for v in value:
            _check_plain(v, origin, depth + 1)


def _pos(mark: Any) -> Pos:
    return Pos(mark.line + 1, mark.column + 1)


_STR = "tag:yaml.org,2002:str"
_SCALAR_TAGS = {
    "tag:yaml.org,2002:str", "tag:yaml.org,2002:int", "tag:yaml.org,2002:float", "tag:yaml.org,2002:bool",
    "tag:yaml.org,2002:null", "tag:yaml.org,2002:timestamp",
}


class _Builder:
    """Turns composed nodes into plain values with positions, enforcing the limits."""

    def __init__(self, origin: str, lines: list[str]) -> None:
        import yaml

        self.yaml = yaml
        self.origin = origin
        self.lines = lines
        self.count = 0
        self.constructor = yaml.constructor.SafeConstructor()

    def fail(self, node: Any, message: str) -> LoadError:
        return LoadError(message, location=f"{self.origin}:{_pos(node.start_mark)}")

    def build(self, node: Any, path: tuple, depth: int, doc: Document, record: bool = True) -> Any:
        yaml = self.yaml
        self.count += 1
        if self.count > MAX_NODES:
            raise self.fail(node, f"more than {MAX_NODES} values (aliases expanded); not read")
        if depth > MAX_DEPTH:
            raise self.fail(node, f"nested deeper than {MAX_DEPTH} levels")
        if record:
            doc.values.setdefault(path, _pos(node.start_mark))
        if isinstance(node, yaml.ScalarNode):
            value = self.scalar(node)
            if record and isinstance(value, str):
                doc.scalars.setdefault(path, self.scalar_place(node))
            return value
        if isinstance(node, yaml.SequenceNode):
            return [self.build(item, path + (i,), depth + 1, doc, record) for i, item in enumerate(node.value)]
        if isinstance(node, yaml.MappingNode):
            out: dict[str, Any] = {}
            merged: list[Any] = []
            for key_node, value_node in node.value:
                if key_node.tag == "tag:yaml.org,2002:merge":
                    merged.append(value_node)
                    continue
                key = self.scalar(key_node) if isinstance(key_node, yaml.ScalarNode) else None
                if not isinstance(key, str):
                    shown = excerpt(key) if isinstance(key_node, yaml.ScalarNode) else "a " + type(key_node).__name__
                    raise self.fail(key_node, f"mapping keys must be strings, got {shown}")
                if record:
                    doc.keys[path + (key,)] = _pos(key_node.start_mark)
                out[key] = self.build(value_node, path + (key,), depth + 1, doc, record)
            for source in merged:  # `<<: *anchor` — explicit keys win, as YAML's merge key says
                sources = source.value if isinstance(source, yaml.SequenceNode) else [source]
                for src in sources:
                    if not isinstance(src, yaml.MappingNode):
                        raise self.fail(src, "a merge key (<<) must name a mapping")
                    value = self.build(src, path, depth, doc, record=False)
                    for k, v in value.items():
                        if k not in out:
                            out[k] = v
                            doc.values.setdefault(path + (k,), _pos(src.start_mark))
            return out
        raise self.fail(node, f"unsupported YAML node {type(node).__name__}")

    def scalar(self, node: Any) -> Any:
        tag = node.tag
        if tag not in _SCALAR_TAGS:
            raise self.fail(node, f"unsupported YAML tag {tag} on {excerpt(node.value)}")
        if tag in (_STR, "tag:yaml.org,2002:timestamp"):
            return node.value  # a timestamp stays as the user typed it
        try:
            if tag == "tag:yaml.org,2002:int":
                return self.constructor.construct_yaml_int(node)
            if tag == "tag:yaml.org,2002:bool":
                return self.constructor.construct_yaml_bool(node)
            if tag == "tag:yaml.org,2002:null":
                return None
            value = self.constructor.construct_yaml_float(node)
        except (ValueError, self.yaml.YAMLError):
            raise self.fail(node, f"cannot read the number {excerpt(node.value)}") from None
        if not math.isfinite(value):
            raise self.fail(node, f"non-finite number {excerpt(node.value)} is not allowed")
        return value

    def scalar_place(self, node: Any) -> Scalar:
        start, end = node.start_mark, node.end_mark
        style = node.style or None  # libyaml says "" for plain, PyYAML None
        if style in ("|", ">"):
            first = start.line + 1
            # the end mark sits where the next token starts: its line belongs to the scalar only
            # when the mark is not at column 0 (the end of the stream)
            raw = self.lines[first:end.line + (1 if end.column else 0)]
            while raw and not raw[-1].strip():
                raw = raw[:-1]
            body = [ln for ln in raw if ln.strip()]
            indent = min((len(ln) - len(ln.lstrip(" ")) for ln in body), default=0)
            return Scalar(_pos(start), style, False, tuple(ln[indent:] for ln in raw), indent)
        return Scalar(_pos(start), style, start.line == end.line)
