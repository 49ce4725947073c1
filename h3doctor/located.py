"""YAML and JSON documents with positions: the values lint (and a recipe) reads, and where each starts.

A thin layer over `h3doctor.safeload`, the one reader: the file is read by its `read_bounded`,
YAML's events come from its `yaml_events` (parsed once; nesting and the node budget checked as
they come, before anything is built), JSON is read by its `load_json`. Values and positions are
built here in the same pass over the events, with the checks that need the values: aliases
counted each time they expand, string keys, finite numbers, the core schema's scalar tags. What
this layer adds is only what lint needs beside the values: a `Document` keeps where each value
and each mapping key starts (1-based line and column), by path, and where inside a string scalar
an offset falls. Errors are safeload's `LoadError`, located to `file:line:col`.

Values are plain Python (dict, list, str, int, float, bool, None); YAML timestamps stay the
strings the user wrote; tags other than the core schema's scalars are refused.
"""

from __future__ import annotations

import copy
import math
from dataclasses import dataclass, field
from typing import Any

from h3doctor.digits import is_digits
from h3doctor.safeload import MAX_DEPTH, MAX_NODES, LimitExceeded, LoadError, excerpt, read_bounded, too_many_values, yaml_events
from h3doctor.safeload import load_json as _load_json

MAX_INPUT_BYTES = 1 << 20


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
    """Values and where they stand. The position tables hold the parser's marks (0-based line
    and column), turned into `Pos` only when asked: a 1 MiB file holds ~100,000 of them."""

    origin: str
    data: Any
    start: Pos = Pos(1, 1)
    index: int = 0  # position in a multi-document stream
    values: dict[tuple, Any] = field(default_factory=dict)  # path -> mark of the value
    keys: dict[tuple, Any] = field(default_factory=dict)  # path -> mark of its mapping key
    scalars: dict[tuple, tuple] = field(default_factory=dict)  # path -> (start mark, end mark, style) of a string
    text: str = field(default="", repr=False)
    _places: dict[tuple, Scalar] = field(default_factory=dict, repr=False, compare=False)
    _lines: list[str] | None = field(default=None, repr=False, compare=False)
    _aligned: dict[tuple, list[int] | None] = field(default_factory=dict, repr=False, compare=False)

    def pos(self, path: tuple) -> Pos:
        """Where the value at `path` starts; the nearest located ancestor if it has no place of its own."""
        path = tuple(path)
        while path:
            if path in self.values:
                return _pos(self.values[path])
            path = path[:-1]
        return _pos(self.values[()]) if () in self.values else self.start

    def key_pos(self, path: tuple) -> Pos:
        mark = self.keys.get(tuple(path))
        return _pos(mark) if mark is not None else self.pos(path)

    def scalar(self, path: tuple) -> Scalar | None:
        """Where the string value at `path` sits in the source (None: not a string scalar)."""
        path = tuple(path)
        place = self._places.get(path)
        if place is None and path in self.scalars:
            start, end, style = self.scalars[path]
            if start.line != end.line and self._lines is None:  # a block or multi-line scalar: its source lines
                self._lines = self.text.splitlines()
            place = self._places[path] = _scalar_place(self._lines or [], start, end, style)
        return place

    def offset_pos(self, path: tuple, offset: int) -> Pos:
        """Line and column of character `offset` inside the string value at `path`."""
        scalar = self.scalar(path)
        if scalar is None:
            return self.pos(path)
        if scalar.style in (None, "'", '"') and scalar.single_line:
            quote = 0 if scalar.style is None else 1
            return Pos(scalar.pos.line, scalar.pos.col + quote + offset)
        if scalar.style in ("|", ">") and scalar.raw_lines:
            line, rest = _line_col(scalar.raw_lines, offset)
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


def _line_col(raw_lines: tuple[str, ...], offset: int) -> tuple[int, int]:
    """(0-based line, 0-based column) of `offset` in the lines joined by LF; past the end: on the last line."""
    line, col = 0, offset
    while line < len(raw_lines) - 1 and col > len(raw_lines[line]):
        col -= len(raw_lines[line]) + 1
        line += 1
    return line, col


def _source_pos(scalar: Scalar, offset: int) -> Pos:
    line, col = _line_col(scalar.raw_lines, offset)
    return Pos(scalar.pos.line + line, (scalar.pos.col if line == 0 else 1) + col)


def _scalar_place(lines: list[str], start: Any, end: Any, style: str | None) -> Scalar:
    if style in ("|", ">"):
        first = start.line + 1
        # the end mark sits where the next token starts: its line belongs to the scalar only
        # when the mark is not at column 0 (the end of the stream)
        raw = lines[first:end.line + (1 if end.column else 0)]
        while raw and not raw[-1].strip():
            raw = raw[:-1]
        body = [ln for ln in raw if ln.strip()]
        indent = min((len(ln) - len(ln.lstrip(" ")) for ln in body), default=0)
        return Scalar(_pos(start), style, False, tuple(ln[indent:] for ln in raw), indent, _pos(end))
    if start.line == end.line:
        return Scalar(_pos(start), style, True, end=_pos(end))
    raw = list(lines[start.line:end.line + 1])
    if raw:
        raw[-1] = raw[-1][:end.column] if len(raw) > 1 else raw[-1]
        raw[0] = raw[0][start.column:]
    return Scalar(_pos(start), style, False, tuple(raw), end=_pos(end))


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
    """Every document of a YAML stream, with positions: values and positions are built in one
    pass over the parser's events (no node graph; nothing is parsed twice)."""
    return _Builder(origin, text).documents()


def load_json(text: str, origin: str) -> Document:
    """JSON as `json.loads` reads it (sglang's reader), within safeload's limits; positions come
    from composing the same text as YAML (JSON is YAML's flow style) when that works."""
    doc = Document(origin, _load_json(text, origin=origin, columns=True))
    try:
        located = load_yaml(text, origin)
    except LoadError:
        return doc  # valid JSON that YAML cannot compose (e.g. tabs): values without columns
    if located:
        doc.values, doc.keys, doc.scalars, doc.text = located[0].values, located[0].keys, located[0].scalars, text
    return doc


def _pos(mark: Any) -> Pos:
    return Pos(mark.line + 1, mark.column + 1)


_STR = "tag:yaml.org,2002:str"
_MERGE = "tag:yaml.org,2002:merge"
_INT, _FLOAT, _BOOL = "tag:yaml.org,2002:int", "tag:yaml.org,2002:float", "tag:yaml.org,2002:bool"
_NULL, _TIMESTAMP = "tag:yaml.org,2002:null", "tag:yaml.org,2002:timestamp"
_SCALAR_TAGS = frozenset({_STR, _INT, _FLOAT, _BOOL, _NULL, _TIMESTAMP})
_NO_KEY, _MERGE_KEY = object(), object()
_BUILDING = object()  # an anchor whose collection is still open


class _Anchor:
    """What an alias repeats: the value, where it was defined, and for the budgets its size
    (nodes, aliases expanded) and height; `records` are the positions inside it, relative."""

    __slots__ = ("value", "mark", "tag", "size", "height", "records")

    def __init__(self, value: Any, mark: Any, tag: str | None, size: int, height: int, records: list) -> None:
        self.value, self.mark, self.tag, self.size, self.height, self.records = value, mark, tag, size, height, records


class _Frame:
    """A collection being built."""

    __slots__ = ("path", "mark", "value", "is_map", "key", "merges", "record", "anchor", "height", "item_marks")

    def __init__(self, path: tuple, mark: Any, is_map: bool, record: bool, anchor: Any) -> None:
        self.path, self.mark, self.is_map, self.record, self.anchor = path, mark, is_map, record, anchor
        self.value: Any = {} if is_map else []
        self.key: Any = _NO_KEY
        self.merges: list = []
        self.height = 1
        self.item_marks: list | None = None  # a merge source's items, for their positions


class _Builder:
    """Plain values with positions from the parser's events, in one pass. safeload's
    `yaml_events` bounds the nesting and the node count as it parses; this adds what needs the
    values: aliases counted each time they expand (and their depth), string keys, finite numbers,
    core-schema scalar tags only, YAML's merge key."""

    def __init__(self, origin: str, text: str) -> None:
        import yaml
        from yaml.resolver import Resolver

        self.yaml, self.origin, self.text = yaml, origin, text
        self.resolver = Resolver()
        self.implicit = Resolver.yaml_implicit_resolvers  # first character -> the tags it may start
        self.constructor = yaml.constructor.SafeConstructor()
        self.count = 0  # nodes so far, aliases expanded
        self.stack: list[_Frame] = []
        self.anchors: dict[str, Any] = {}
        self.open: list[tuple[int, list, _Frame]] = []  # anchors being built: (base path length, records, frame)
        self.doc: Document | None = None

    def fail(self, mark: Any, message: str, limit: bool = False) -> LoadError:
        return (LimitExceeded if limit else LoadError)(message, location=f"{self.origin}:{_pos(mark)}")

    def documents(self) -> list[Document]:
        from yaml.events import (AliasEvent, DocumentEndEvent, DocumentStartEvent, MappingEndEvent,
                                 MappingStartEvent, ScalarEvent, SequenceEndEvent, SequenceStartEvent)

        docs: list[Document] = []
        for event in yaml_events(self.text, origin=self.origin, max_nodes=MAX_NODES):
            kind = type(event)
            if kind is ScalarEvent:
                self.scalar(event)
            elif kind is MappingEndEvent or kind is SequenceEndEvent:
                self.end()
            elif kind is MappingStartEvent or kind is SequenceStartEvent:
                self.start(event, kind is MappingStartEvent)
            elif kind is AliasEvent:
                self.alias(event)
            elif kind is DocumentStartEvent:
                self.anchors = {}
                self.doc = Document(self.origin, None, index=len(docs), text=self.text)
            elif kind is DocumentEndEvent:
                assert self.doc is not None
                docs.append(self.doc)
        return docs

    # -- where a node goes --------------------------------------------------------------------

    def _is_key(self) -> bool:
        return bool(self.stack) and self.stack[-1].is_map and self.stack[-1].key is _NO_KEY

    def _place(self) -> tuple[tuple, bool]:
        """(path, record) of the value node that starts now."""
        if not self.stack:
            return (), True
        top = self.stack[-1]
        if top.is_map:
            if top.key is _MERGE_KEY:
                return top.path, False  # a merge source: its own positions are not the mapping's
            return top.path + (top.key,), top.record
        return top.path + (len(top.value),), top.record

    def _attach(self, value: Any, mark: Any, height: int, item_marks: list | None = None) -> None:
        if not self.stack:
            assert self.doc is not None
            self.doc.data = value
            self.doc.start = _pos(mark)
            return
        top = self.stack[-1]
        if height >= top.height:
            top.height = height + 1
        if not top.is_map:
            top.value.append(value)
            if top.item_marks is not None:
                top.item_marks.append(mark)
        elif top.key is _MERGE_KEY:
            top.merges.append((value, mark, item_marks))
            top.key = _NO_KEY
        else:
            top.value[top.key] = value
            top.key = _NO_KEY

    def _note(self, kind: str, path: tuple, payload: Any, record: bool) -> None:
        """A position: into the document when recorded, into every anchor being built."""
        if record:
            doc = self.doc
            assert doc is not None
            if kind == "k":
                doc.keys[path] = payload
            else:
                (doc.values if kind == "v" else doc.scalars).setdefault(path, payload)
        for base, records, _frame in self.open:
            records.append((kind, path[base:], payload))

    def _counted(self, mark: Any, nodes: int, height: int, alias: bool = False) -> None:
        """The budgets with aliases expanded (without aliases, yaml_events has refused first)."""
        self.count += nodes
        if self.count > MAX_NODES:
            raise self.fail(mark, too_many_values(MAX_NODES, aliases=True), limit=True)
        if len(self.stack) + height > MAX_DEPTH:
            through = " through aliases" if alias else ""
            raise self.fail(mark, f"nested deeper than {MAX_DEPTH} levels{through} (h3doctor's limit)", limit=True)

    # -- events -------------------------------------------------------------------------------

    def scalar(self, event: Any) -> None:
        mark, value = event.start_mark, event.value
        self.count += 1
        stack = self.stack
        if self.count > MAX_NODES or len(stack) >= MAX_DEPTH:
            self._counted(mark, 0, 1)
        tag = event.tag
        if tag is None or tag == "!":
            if not event.implicit[0] or value[:1] not in self.implicit:
                tag = _STR
            elif is_digits(value):  # what the resolver says of plain digits, sooner
                tag = _INT
            else:
                tag = self.resolver.resolve(self.yaml.ScalarNode, value, event.implicit)
        top = stack[-1] if stack else None
        if top is not None and top.is_map and top.key is _NO_KEY:
            self._key(tag, value, mark, top)
            if event.anchor is not None:
                self._define(event.anchor, _Anchor(value, mark, tag, 1, 1, []), mark)
            return
        if tag != _STR:
            value = self._value(tag, value, mark)
        place = (mark, event.end_mark, event.style or None) if isinstance(value, str) else None
        if top is None:
            path, record = (), True
        elif top.is_map:
            path, record = (top.path, False) if top.key is _MERGE_KEY else (top.path + (top.key,), top.record)
        else:
            path, record = top.path + (len(top.value),), top.record
        if record and not self.open:  # the common case, inline
            doc = self.doc
            doc.values.setdefault(path, mark)
            if place is not None:
                doc.scalars.setdefault(path, place)
        else:
            self._note("v", path, mark, record)
            if place is not None:
                self._note("s", path, place, record)
        if event.anchor is not None:
            records = [("v", (), mark)] + ([("s", (), place)] if place is not None else [])
            self._define(event.anchor, _Anchor(value, mark, tag, 1, 1, records), mark)
        if top is not None and top.is_map and top.key is not _MERGE_KEY:
            top.value[top.key] = value
            top.key = _NO_KEY
            if top.height < 2:
                top.height = 2
        else:
            self._attach(value, mark, 1)

    def _key(self, tag: str, value: Any, mark: Any, top: _Frame) -> None:
        if tag == _MERGE:
            top.key = _MERGE_KEY
            return
        if tag != _STR:
            raise self.fail(mark, f"keys must be strings; {excerpt(value, 40)} is not (quote it)")
        top.key = value
        if top.record and not self.open:
            self.doc.keys[top.path + (value,)] = mark
        else:
            self._note("k", top.path + (value,), mark, top.record)

    def _value(self, tag: str, value: str, mark: Any) -> Any:
        if tag == _STR or tag == _TIMESTAMP:
            return value  # a timestamp stays as the user typed it
        if tag not in _SCALAR_TAGS:
            raise self.fail(mark, f"unsupported YAML tag {excerpt(tag, 80)} on {excerpt(value, 40)!r}")
        if tag == _NULL:
            return None
        try:
            if tag == _INT:
                if is_digits(value) and (value[0] != "0" or value == "0"):
                    return int(value)
                return self.constructor.construct_yaml_int(self.yaml.ScalarNode(tag, value))
            if tag == _BOOL:
                return self.constructor.construct_yaml_bool(self.yaml.ScalarNode(tag, value))
            number = self.constructor.construct_yaml_float(self.yaml.ScalarNode(tag, value))
        except (ValueError, KeyError, self.yaml.YAMLError):
            raise self.fail(mark, f"cannot read the number {excerpt(value, 40)!r}") from None
        if not math.isfinite(number):
            raise self.fail(mark, f"{excerpt(value, 40)} is not a finite number (non-finite numbers are not allowed)")
        return number

    def start(self, event: Any, is_map: bool) -> None:
        mark = event.start_mark
        if self._is_key():
            raise self.fail(mark, "keys must be strings; a collection is not (quote it)")
        self._counted(mark, 1, 1)
        path, record = self._place()
        self._note("v", path, mark, record)
        frame = _Frame(path, mark, is_map, record, event.anchor)
        if not record and not is_map and self.stack and self.stack[-1].key is _MERGE_KEY:
            frame.item_marks = []
        if event.anchor is not None:
            self._define(event.anchor, _BUILDING, mark)
            self.open.append((len(path), [("v", (), mark)], frame))
            frame.anchor = (event.anchor, self.count - 1)
        self.stack.append(frame)

    def end(self) -> None:
        frame = self.stack.pop()
        if frame.is_map and frame.merges:
            self._merge(frame)
        if frame.anchor is not None:
            name, before = frame.anchor
            _base, records, _frame = self.open.pop()
            self.anchors[name] = _Anchor(frame.value, frame.mark, None, self.count - before, frame.height, records)
        self._attach(frame.value, frame.mark, frame.height, frame.item_marks)

    def _merge(self, frame: _Frame) -> None:
        """`<<: *anchor` (or a list of them): keys not given explicitly come from the sources, the first source first."""
        out = frame.value
        for value, mark, item_marks in frame.merges:
            if isinstance(value, list):
                marks = item_marks or []
                sources = [(item, marks[i] if i < len(marks) else mark) for i, item in enumerate(value)]
            else:
                sources = [(value, mark)]
            for src, src_mark in sources:
                if not isinstance(src, dict):
                    raise self.fail(src_mark, "a merge key (<<) must name a mapping")
                for k, v in src.items():
                    if k not in out:
                        out[k] = v
                        self._note("v", frame.path + (k,), src_mark, True)

    def alias(self, event: Any) -> None:
        mark, name = event.start_mark, event.anchor
        anchor = self.anchors.get(name)
        if anchor is None:
            raise self.fail(mark, f"malformed YAML: found undefined alias {excerpt(name, 40)!r}")
        if anchor is _BUILDING:
            raise self.fail(mark, f"the alias *{excerpt(name, 40)} is inside the collection it names "
                                  "(a structure without end; h3doctor's limit)", limit=True)
        self._counted(mark, anchor.size, anchor.height, alias=True)
        if self._is_key():
            if anchor.tag is None:
                raise self.fail(mark, "keys must be strings; a collection is not (quote it)")
            self._key(anchor.tag, anchor.value, anchor.mark, self.stack[-1])
            return
        path, record = self._place()
        for kind, rel, payload in anchor.records:
            self._note(kind, path + rel, payload, record)
        value = copy.deepcopy(anchor.value) if isinstance(anchor.value, (dict, list)) else anchor.value
        self._attach(value, anchor.mark, anchor.height)

    def _define(self, name: str, anchor: Any, mark: Any) -> None:
        if name in self.anchors:
            raise self.fail(mark, f"malformed YAML: found duplicate anchor {excerpt(name, 40)!r}")
        self.anchors[name] = anchor
