"""YAML and JSON documents with positions: the values lint (and a recipe) reads, and where each starts.

A thin layer over `h3doctor.safeload`, the one reader: the file is read by its `read_bounded`,
YAML is composed and checked by its `compose_yaml` (every limit: size, depth before any
recursive composer, values with aliases expanded, string keys, finite numbers), JSON is read by
its `load_json`. What this layer adds is only what lint needs beside the values: a `Document`
keeps where each value and each mapping key starts (1-based line and column), by path, and
where inside a string scalar an offset falls. Errors are safeload's `LoadError`, located to
`file:line:col`.

Values are plain Python (dict, list, str, int, float, bool, None); YAML timestamps stay the
strings the user wrote; tags other than the core schema's scalars are refused.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from h3doctor.safeload import LoadError, compose_yaml, excerpt, read_bounded
from h3doctor.safeload import load_json as _load_json

MAX_INPUT_BYTES = 1 << 20
# Nodes, keys counted, after alias expansion (safeload's budget counts every node): the ~100,000
# values lint read before the two loaders were one.
MAX_NODES = 200_000


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
    raw_lines: tuple[str, ...] = ()  # the source lines of the value (block scalars: below the header;
    # multi-line flow scalars: from the scalar's first character, its opening quote, to its end)
    indent: int = 0
    end: Pos | None = None  # where the scalar's source text ends


@dataclass
class Document:
    origin: str
    data: Any
    start: Pos = Pos(1, 1)
    index: int = 0  # position in a multi-document stream
    values: dict[tuple, Pos] = field(default_factory=dict)
    keys: dict[tuple, Pos] = field(default_factory=dict)
    scalars: dict[tuple, Scalar] = field(default_factory=dict)
    _aligned: dict[tuple, list[int] | None] = field(default_factory=dict, repr=False, compare=False)

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
        if scalar.raw_lines:  # a plain or quoted string over several lines: folded, maybe escaped
            path = tuple(path)
            if path not in self._aligned:
                self._aligned[path] = _align(self._value(path), scalar)
            at = self._aligned[path]
            if at is not None and 0 <= offset < len(at):
                return _source_pos(scalar, at[offset])
        return scalar.pos

    def _value(self, path: tuple) -> str:
        value = self.data
        for key in path:
            value = value[key]
        return value if isinstance(value, str) else ""


def _align(value: str, scalar: Scalar) -> list[int] | None:
    """The offset in the scalar's source (its raw lines joined by LF) of each character of its
    value. YAML folds a multi-line flow scalar (a line break and the indentation after it become
    one space, or nothing after an escaping `\\`), drops one quote of `''` and reads `\\` escapes:
    every other character of the value is the next one like it in the source, so the first match
    in order is its place; a blank of the value that the source does not have there is the folded
    line break. None when the value is not found in the source that way."""
    source = "\n".join(scalar.raw_lines)
    at, i = [], 1 if scalar.style in ("'", '"') else 0
    for c in value:
        if c in " \t\n":
            at.append(i)
            if i < len(source) and source[i] == c:
                i += 1
            continue
        j = source.find(c, i)
        if j < 0:
            return None
        at.append(j)
        i = j + 1
    return at


def _source_pos(scalar: Scalar, offset: int) -> Pos:
    line, col = 0, offset
    while line < len(scalar.raw_lines) - 1 and col > len(scalar.raw_lines[line]):
        col -= len(scalar.raw_lines[line]) + 1
        line += 1
    return Pos(scalar.pos.line + line, (scalar.pos.col if line == 0 else 1) + col)


def load_file(path: str, *, max_bytes: int = MAX_INPUT_BYTES, multi: bool = False, what: str = "input") -> list[Document]:
    """A `.json` file as JSON (as sglang reads it), anything else as YAML (every document if `multi`)."""
    text = read_bounded(path, max_bytes=max_bytes, what=what)
    if path.endswith(".json"):
        return [load_json(text, path)]
    docs = load_yaml(text, path)
    if not multi and len(docs) > 1:
        raise LoadError("expected one YAML document, found several", location=f"{path}:{docs[1].start}")
    return docs


def load_yaml(text: str, origin: str) -> list[Document]:
    """Every document of a YAML stream, with positions."""
    docs = []
    lines = text.splitlines()
    for index, node in enumerate(compose_yaml(text, origin=origin, max_nodes=MAX_NODES)):
        doc = Document(origin, None, _pos(node.start_mark), index)
        doc.data = _Builder(origin, lines).build(node, (), doc)
        docs.append(doc)
    return docs


def load_json(text: str, origin: str) -> Document:
    """JSON as `json.loads` reads it (sglang's reader), within safeload's limits; positions come
    from composing the same text as YAML (JSON is YAML's flow style) when that works."""
    doc = Document(origin, _load_json(text, origin=origin, columns=True))
    try:
        located = load_yaml(text, origin)
    except LoadError:
        return doc  # valid JSON that YAML cannot compose (e.g. tabs): values without columns
    if located:
        doc.values, doc.keys, doc.scalars = located[0].values, located[0].keys, located[0].scalars
    return doc


def _pos(mark: Any) -> Pos:
    return Pos(mark.line + 1, mark.column + 1)


_STR = "tag:yaml.org,2002:str"
_SCALAR_TAGS = {
    "tag:yaml.org,2002:str", "tag:yaml.org,2002:int", "tag:yaml.org,2002:float", "tag:yaml.org,2002:bool",
    "tag:yaml.org,2002:null", "tag:yaml.org,2002:timestamp",
}


class _Builder:
    """Turns composed nodes (checked by safeload: depth and size are bounded) into plain values with positions."""

    def __init__(self, origin: str, lines: list[str]) -> None:
        import yaml

        self.yaml = yaml
        self.origin = origin
        self.lines = lines
        self.constructor = yaml.constructor.SafeConstructor()

    def fail(self, node: Any, message: str) -> LoadError:
        return LoadError(message, location=f"{self.origin}:{_pos(node.start_mark)}")

    def build(self, node: Any, path: tuple, doc: Document, record: bool = True) -> Any:
        yaml = self.yaml
        if record:
            doc.values.setdefault(path, _pos(node.start_mark))
        if isinstance(node, yaml.ScalarNode):
            value = self.scalar(node)
            if record and isinstance(value, str):
                doc.scalars.setdefault(path, self.scalar_place(node))
            return value
        if isinstance(node, yaml.SequenceNode):
            return [self.build(item, path + (i,), doc, record) for i, item in enumerate(node.value)]
        if isinstance(node, yaml.MappingNode):
            out: dict[str, Any] = {}
            merged: list[Any] = []
            for key_node, value_node in node.value:
                if key_node.tag == "tag:yaml.org,2002:merge":
                    merged.append(value_node)
                    continue
                key = key_node.value  # safeload let only string keys through
                if record:
                    doc.keys[path + (key,)] = _pos(key_node.start_mark)
                out[key] = self.build(value_node, path + (key,), doc, record)
            for source in merged:  # `<<: *anchor` — explicit keys win, as YAML's merge key says
                sources = source.value if isinstance(source, yaml.SequenceNode) else [source]
                for src in sources:
                    if not isinstance(src, yaml.MappingNode):
                        raise self.fail(src, "a merge key (<<) must name a mapping")
                    value = self.build(src, path, doc, record=False)
                    for k, v in value.items():
                        if k not in out:
                            out[k] = v
                            doc.values.setdefault(path + (k,), _pos(src.start_mark))
            return out
        raise self.fail(node, f"unsupported YAML node {type(node).__name__}")

    def scalar(self, node: Any) -> Any:
        tag = node.tag
        if tag not in _SCALAR_TAGS:
            raise self.fail(node, f"unsupported YAML tag {tag} on {excerpt(node.value, 40)!r}")
        if tag in (_STR, "tag:yaml.org,2002:timestamp"):
            return node.value  # a timestamp stays as the user typed it
        try:
            if tag == "tag:yaml.org,2002:int":
                return self.constructor.construct_yaml_int(node)
            if tag == "tag:yaml.org,2002:bool":
                return self.constructor.construct_yaml_bool(node)
            if tag == "tag:yaml.org,2002:null":
                return None
            return self.constructor.construct_yaml_float(node)  # finite: safeload checked
        except (ValueError, self.yaml.YAMLError):
            raise self.fail(node, f"cannot read the number {excerpt(node.value, 40)!r}") from None

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
            return Scalar(_pos(start), style, False, tuple(ln[indent:] for ln in raw), indent, _pos(end))
        if start.line == end.line:
            return Scalar(_pos(start), style, True, end=_pos(end))
        raw = list(self.lines[start.line:end.line + 1])
        if raw:
            raw[-1] = raw[-1][:end.column] if len(raw) > 1 else raw[-1]
            raw[0] = raw[0][start.column:]
        return Scalar(_pos(start), style, False, tuple(raw), end=_pos(end))
