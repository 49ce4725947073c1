"""Bounded, typed reading of the files h3doctor is handed: profiles, recipes, `--config`, caches.

Every file a user (or a damaged cache) gives h3doctor goes through here, so a hostile or
careless one costs a clear, located `UsageError` and never a hang, a memory blow-up or a
traceback:

* `read_bounded` checks the size with stat before it reads, and reads at most that much;
* `load_yaml` walks the event stream first (iteratively: depth capped before any recursive
  composer runs), then checks the node graph with aliases expanded against a node budget (an
  alias bomb is refused, not expanded), rejects non-string keys and non-finite numbers, and
  keeps YAML timestamps as the strings the user wrote;
* `load_json` rejects NaN/Infinity (not JSON) and caps depth;
* `excerpt` is the only way a value reaches an error message: short and truncated.

PyYAML and the stdlib json do the parsing; only the limits are ours (neither library has them).
"""

from __future__ import annotations

import json
import math
import os
import re
import reprlib
import stat
from typing import Any

from h3doctor.errors import UsageError

MAX_DEPTH = 64
# Values (after alias expansion). Building each costs PyYAML ~10 us in Python even with libyaml,
# so this, not the byte size, bounds the time: 50k is ~0.5 s; sglang's own configs hold < 200.
MAX_NODES = 50_000

_STR_TAG = "tag:yaml.org,2002:str"
_FLOAT_TAG = "tag:yaml.org,2002:float"
_TIMESTAMP_TAG = "tag:yaml.org,2002:timestamp"
_MERGE_TAG = "tag:yaml.org,2002:merge"


class LimitExceeded(UsageError):
    """The input is beyond what h3doctor reads (size, depth, values): h3doctor's limit, not the
    input's fault as its consumer would see it, so the input is not judged (exit 2)."""


def excerpt(value: Any, limit: int = 80) -> str:
    """A short, printable rendering of a value for an error message (never the whole value)."""
    if isinstance(value, str):
        text = value
    else:
        short = reprlib.Repr()
        short.maxlevel, short.maxdict, short.maxlist, short.maxtuple, short.maxset = 2, 4, 4, 4, 4
        short.maxstring = short.maxother = short.maxlong = limit
        text = short.repr(value)
    text = text[: limit * 2]
    if not text.isprintable():
        text = text.encode("unicode_escape", "backslashreplace").decode("ascii")
    return text if len(text) <= limit else text[: max(limit - 3, 1)] + "..."


def read_bounded(path: Any, *, max_bytes: int, what: str) -> str:
    """The text of a regular file (or pipe) of at most `max_bytes` bytes, as UTF-8.

    The size is checked with stat before anything is read; a pipe is read up to the limit."""
    name = os.fspath(path) if not isinstance(path, str) else path
    where = excerpt(name, 160)
    if "\0" in name:
        raise UsageError(f"{what}: the path contains a NUL byte", location=where)
    try:
        info = os.stat(name)
        if stat.S_ISDIR(info.st_mode):
            raise UsageError(f"{what} is a directory, not a file", location=where)
        if not (stat.S_ISREG(info.st_mode) or stat.S_ISFIFO(info.st_mode)):
            raise UsageError(f"{what} is not a regular file", location=where)
        if info.st_size > max_bytes:
            raise LimitExceeded(f"{what} is larger than h3doctor's limit of {_size(max_bytes)} ({_size(info.st_size)})", location=where)
        with open(name, "rb") as fh:
            data = fh.read(max_bytes + 1)
    except FileNotFoundError:
        raise UsageError(f"no such {what} file", location=where) from None
    except OSError as exc:
        raise UsageError(f"cannot read {what}: {exc.strerror or type(exc).__name__}", location=where) from None
    if len(data) > max_bytes:
        raise LimitExceeded(f"{what} is larger than h3doctor's limit of {_size(max_bytes)}", location=where)
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = data[: exc.start].count(b"\n") + 1
        raise UsageError(f"{what} is not UTF-8 text (byte {exc.start})", location=f"{where}:{line}") from None


def _size(n: int) -> str:
    return f"{n / (1 << 20):g} MiB" if n >= 1 << 20 else f"{n / 1024:g} KiB" if n >= 1024 else f"{n} bytes"


# -- YAML ------------------------------------------------------------------------------------

def _yaml_classes():
    """The loader class, built on first use: a cached check never imports PyYAML."""
    import yaml
    from yaml.constructor import SafeConstructor
    from yaml.resolver import Resolver

    global _LOADER
    if _LOADER is None:
        class _Constructor(SafeConstructor):
            """SafeConstructor with timestamps kept as the text the user wrote."""

        _Constructor.add_constructor(_TIMESTAMP_TAG, SafeConstructor.construct_yaml_str)
        parser = getattr(getattr(yaml, "cyaml", None), "CParser", None)
        if parser is not None:  # libyaml: ~30x faster on big files
            class _Loader(parser, _Constructor, Resolver):  # type: ignore[valid-type,misc]
                def __init__(self, stream):
                    parser.__init__(self, stream)
                    _Constructor.__init__(self)
                    Resolver.__init__(self)
        else:  # pragma: no cover - PyYAML without libyaml
            from yaml.composer import Composer
            from yaml.parser import Parser
            from yaml.reader import Reader
            from yaml.scanner import Scanner

            class _Loader(Reader, Scanner, Parser, Composer, _Constructor, Resolver):  # type: ignore[no-redef]
                def __init__(self, stream):
                    Reader.__init__(self, stream)
                    Scanner.__init__(self)
                    Parser.__init__(self)
                    Composer.__init__(self)
                    _Constructor.__init__(self)
                    Resolver.__init__(self)
        _LOADER = _Loader
    return _LOADER


_LOADER: Any = None


def load_yaml(text: str, *, origin: str, max_depth: int = MAX_DEPTH, max_nodes: int = MAX_NODES,
              string_keys: bool = True, finite: bool = True, invalid_dates: str = "string") -> Any:
    """One YAML document, safely: SafeLoader semantics within the limits above.

    `string_keys=False` / `finite=False` let a reader that must see what PyYAML gives sglang
    (`--config`) keep non-string keys and .inf/.nan; `invalid_dates="error"` reports a
    timestamp that is not a real date (2001-02-30) as PyYAML's ValueError would."""
    import yaml

    loader_class = _yaml_classes()
    _check_events(text, origin, max_depth, max_nodes, loader_class)
    loader = loader_class(text)
    try:
        node = loader.get_single_node()
        if node is None:
            return None
        _check_nodes(node, origin, max_depth, max_nodes, string_keys, finite, invalid_dates, loader)
        return loader.construct_document(node)
    except yaml.YAMLError as exc:
        raise _yaml_error(exc, origin) from None
    except (ValueError, TypeError, OverflowError) as exc:  # e.g. an int of 5,000 digits
        raise UsageError(f"unreadable YAML value: {excerpt(str(exc), 160)}", location=origin) from None
    finally:
        loader.dispose()


def _yaml_error(exc: Any, origin: str) -> UsageError:
    mark = getattr(exc, "problem_mark", None) or getattr(exc, "context_mark", None)
    text = getattr(exc, "problem", None) or getattr(exc, "context", None) or str(exc)
    if "maximum nesting depth" in text:  # libyaml's own cap (1000) met while scanning ahead
        return LimitExceeded(f"nested deeper than {MAX_DEPTH} levels (h3doctor's limit)", location=_at(origin, mark))
    return UsageError(f"malformed YAML: {excerpt(text, 160)}", location=_at(origin, mark))


def _at(origin: str, mark: Any) -> str:
    return f"{origin}:{mark.line + 1}" if mark is not None else origin


def _check_events(text: str, origin: str, max_depth: int, max_nodes: int, loader_class: Any) -> None:
    """Depth and size from the event stream: flat, so nesting costs no recursion here."""
    import yaml
    from yaml.events import CollectionEndEvent, CollectionStartEvent

    depth = events = 0
    loader = loader_class(text)
    try:
        while loader.check_event():
            event = loader.get_event()
            if isinstance(event, CollectionStartEvent):
                depth += 1
                if depth > max_depth:
                    raise LimitExceeded(f"nested deeper than {max_depth} levels (h3doctor's limit)", location=_at(origin, event.start_mark))
            elif isinstance(event, CollectionEndEvent):
                depth -= 1
            events += 1
            if events > max_nodes:
                raise LimitExceeded(f"more than {max_nodes} values (h3doctor's limit)", location=_at(origin, event.start_mark))
    except yaml.YAMLError as exc:
        raise _yaml_error(exc, origin) from None
    finally:
        loader.dispose()


def _check_nodes(root: Any, origin: str, max_depth: int, max_nodes: int, string_keys: bool, finite: bool,
                 invalid_dates: str, loader: Any) -> None:
    """Walk the composed graph with aliases expanded (iteratively): an alias bomb or a
    self-referencing alias runs into the node budget or the depth cap, never into memory."""
    from yaml.constructor import SafeConstructor
    from yaml.nodes import MappingNode, ScalarNode, SequenceNode

    stack = [(root, 1)]
    seen = 0
    while stack:
        node, depth = stack.pop()
        seen += 1
        if seen > max_nodes:
            raise LimitExceeded(f"aliases expand to more than {max_nodes} values (h3doctor's limit; an alias bomb?)",
                             location=_at(origin, node.start_mark))
        if depth > max_depth:
            raise LimitExceeded(f"nested deeper than {max_depth} levels through aliases (h3doctor's limit)",
                             location=_at(origin, node.start_mark))
        if isinstance(node, ScalarNode):
            if node.tag == _FLOAT_TAG and finite and not math.isfinite(loader.construct_yaml_float(node)):
                raise UsageError(f"{excerpt(node.value, 40)} is not a finite number", location=_at(origin, node.start_mark))
            if node.tag == _TIMESTAMP_TAG and invalid_dates == "error":
                try:
                    SafeConstructor.construct_yaml_timestamp(loader, node)
                except ValueError as exc:
                    raise UsageError(f"{excerpt(node.value, 40)}: {exc} (PyYAML reads it as a date)",
                                     location=_at(origin, node.start_mark)) from None
        elif isinstance(node, SequenceNode):
            stack.extend((child, depth + 1) for child in node.value)
        elif isinstance(node, MappingNode):
            for key, value in node.value:
                if string_keys and key.tag not in (_STR_TAG, _MERGE_TAG):
                    shown = excerpt(key.value, 40) if isinstance(key, ScalarNode) else "a collection"
                    raise UsageError(f"keys must be strings; {shown} is not (quote it)", location=_at(origin, key.start_mark))
                stack.append((key, depth + 1))
                stack.append((value, depth + 1))


# -- JSON ------------------------------------------------------------------------------------

class _NotJSON(ValueError):
    pass


def _reject_constant(name: str) -> Any:
    raise _NotJSON(f"{name} is not JSON (non-finite numbers are not allowed)")


def _finite_float(text: str) -> float:
    value = float(text)
    if not math.isfinite(value):
        raise _NotJSON(f"{excerpt(text, 40)} is not a finite number")
    return value


_CONSTANT = re.compile(r"-?\b(?:NaN|Infinity)\b")


def load_json(text: str, *, origin: str, max_depth: int | None = MAX_DEPTH, finite: bool = True) -> Any:
    """json.loads with NaN/Infinity rejected (`finite`) and depth capped. `max_depth=None`
    leaves only the parser's own cap (~1000 levels, a RecursionError reported as a limit): for a
    file whose content is checked otherwise (a cache with a content hash), at no extra cost."""
    try:
        if finite:
            data = json.loads(text, parse_constant=_reject_constant, parse_float=_finite_float)
        else:
            data = json.loads(text)
    except _NotJSON as exc:
        found = _CONSTANT.search(text)
        line = text.count("\n", 0, found.start()) + 1 if found else None
        raise UsageError(str(exc), location=f"{origin}:{line}" if line else origin) from None
    except json.JSONDecodeError as exc:
        raise UsageError(f"malformed JSON: {exc.msg} (column {exc.colno})", location=f"{origin}:{exc.lineno}") from None
    except RecursionError:
        levels = "the JSON parser's ~1000" if max_depth is None else str(max_depth)
        raise LimitExceeded(f"nested deeper than {levels} levels (h3doctor's limit)", location=origin) from None
    except ValueError as exc:  # e.g. an integer of more than 4300 digits
        raise UsageError(f"unreadable JSON value: {excerpt(str(exc), 160)}", location=origin) from None
    if max_depth is not None and depth_exceeds(data, max_depth):
        raise LimitExceeded(f"nested deeper than {max_depth} levels (h3doctor's limit)", location=origin)
    return data


def depth_exceeds(data: Any, max_depth: int = MAX_DEPTH) -> bool:
    """Whether containers nest deeper than `max_depth` (iterative: any depth is safe to ask)."""
    stack = [(data, 1)]
    while stack:
        value, depth = stack.pop()
        if isinstance(value, dict):
            children = list(value.values())
        elif isinstance(value, list):
            children = value
        else:
            continue
        if depth > max_depth:
            return True
        stack.extend((child, depth + 1) for child in children)
    return False
