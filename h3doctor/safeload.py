"""Bounded, typed reading of every file h3doctor is handed: the one reader.

Profiles, recipes, `--config`, caches and rule files (for `check`) and every input lint opens
go through here, so a hostile or careless file costs a clear, located `LoadError` (a
`UsageError`, exit 2) and never a hang, a memory blow-up or a traceback:

* `open_regular` opens every file non-blocking and refuses anything but a regular file, checked
  on the opened descriptor (a FIFO, a device or a socket never makes h3doctor wait);
  `read_bounded` / `read_bounded_bytes` check the size on that descriptor and read at most that
  much; `follow=False` refuses a symbolic link as well (cache entries);
* the YAML path (`load_yaml` for values, `compose_yaml` for the located node graph that
  `h3doctor.located` turns into values with positions) walks the event stream first
  (iteratively: depth capped before any recursive composer runs), then checks the node graph
  with aliases expanded against a node budget (an alias bomb is refused, not expanded), rejects
  non-string keys and non-finite numbers, and keeps YAML timestamps as the strings the user wrote;
* `load_json` rejects NaN/Infinity (not JSON) and caps depth;
* `excerpt` is the only way a value reaches an error message: short and truncated.

Errors name `file:line`, or `file:line:col` where the caller asks for positions (lint).
PyYAML and the stdlib json do the parsing; only the limits are ours (neither library has them).
"""

from __future__ import annotations

import errno
import io
import json
import math
import os
import re
import reprlib
import stat

from h3doctor.errors import UsageError
from h3doctor.shellwords import safe_text

TYPE_CHECKING = False  # typing is not imported at run time (start-up: record.py)
if TYPE_CHECKING:
    from typing import Any, Iterator

MAX_DEPTH = 64
# The one node budget of every YAML input (profiles, recipes, --config, lint's inputs): scalars,
# collections and mapping keys, aliases counted each time they expand. Nodes, not bytes, bound the
# time: PyYAML's constructor (profiles, --config) costs ~8 us a node even with libyaml, the located
# one-pass builder (recipes, lint) ~3 us, so 50,000 keeps every reader within its 1 s budget;
# sglang's own configs hold < 200 values, a recipe a few dozen.
MAX_NODES = 50_000

_STR_TAG = "tag:yaml.org,2002:str"
_FLOAT_TAG = "tag:yaml.org,2002:float"
_TIMESTAMP_TAG = "tag:yaml.org,2002:timestamp"
_MERGE_TAG = "tag:yaml.org,2002:merge"


class LoadError(UsageError):
    """A file h3doctor cannot read as given (missing, malformed, hostile), located to file:line[:col]."""


class LimitExceeded(LoadError):
    """The input is beyond what h3doctor reads (size, depth, values): h3doctor's limit, not the
    input's fault as its consumer would see it, so the input is not judged (exit 2)."""


class OutsideRepository(LimitExceeded):
    """`lint` was asked to read a file outside the trees it was given (an absolute path, `../`, a
    link resolving elsewhere): not opened, not judged. `path` is the path as the input named it."""


# -- confinement: what `lint` may read --------------------------------------------------------
# `lint` runs on other people's pull requests: every file it opens must be inside the trees it was
# given (its roots). `check` runs on the user's own machine and reads what the user names: no roots.
_ROOTS: list[tuple[tuple[str, ...], frozenset[str]]] = []  # a stack: the innermost block's (roots, inputs)


class confined:
    """`with confined(roots, inputs):` every read through this module (and `refuse_outside`) is
    refused for a path outside `roots` (resolved folders or files); `inputs` are the files lint
    lints, which an input may name by any path (an sglang config file is its own `--config`)."""

    def __init__(self, roots: tuple[str, ...], inputs: tuple[str, ...] = ()) -> None:
        self.roots = tuple(os.path.realpath(r) for r in roots)
        self.inputs = frozenset(os.path.realpath(p) for p in inputs)

    def __enter__(self) -> "confined":
        _ROOTS.append((self.roots, self.inputs))
        return self

    def __exit__(self, *_exc: object) -> None:
        _ROOTS.pop()


_NAMED_FROM: list[str] = []  # a stack: the directory of the file whose launch names a path


class _Pushed:
    """`with` a value on top of a stack (the innermost block's is the one read)."""

    stack: list[Any]

    def __init__(self, value: Any) -> None:
        self.value = value

    def __enter__(self) -> "_Pushed":
        self.stack.append(self.value)
        return self

    def __exit__(self, *_exc: object) -> None:
        self.stack.pop()


class named_from(_Pushed):
    """`with named_from(directory):` a relative path a launch names (its --config, an --env-file)
    is read relative to `directory`, the naming file's own, not the working directory: a
    deployment repository writes `--config server.yaml` beside the manifest, and lint runs from
    anywhere. Confinement applies to the path so resolved."""

    stack = _NAMED_FROM


def resolve_named(path: str) -> str:
    """The file a launch's path names: relative to the naming file's directory inside a
    `named_from` block, else as given (`check`: the user's working directory, as for sglang)."""
    if not _NAMED_FROM or not _NAMED_FROM[-1] or os.path.isabs(os.path.expanduser(path)):
        return path
    return os.path.join(_NAMED_FROM[-1], path)


_MOUNTED: list[dict[str, tuple[str, str]]] = []  # a stack: container path -> (text, where the repository holds it)


class mounted(_Pushed):
    """`with mounted(files):` a path a launch names that its deployment mounts from the repository
    (a Kubernetes ConfigMap key at a container path) is that text, read from the repository, never
    looked up on this machine; `files` maps the container path to (text, its origin)."""

    stack = _MOUNTED


def mounted_file(path: str) -> tuple[str, str] | None:
    """(text, origin) of the mounted file `path` names, or None."""
    if not _MOUNTED or not _MOUNTED[-1] or not path.startswith("/"):
        return None
    import posixpath

    return _MOUNTED[-1].get(posixpath.normpath(path))


def outside_roots(path: Any, *, named: bool = True, from_file: bool = False) -> bool:
    """Whether a `confined` block is active and `path` leaves its roots: where the path, every link
    in it resolved, lies outside every root; and a path an input names (`named`: a --config, an
    --env-file, a model folder) by an absolute path (or `~`) always, inside or not: it names a file
    of the machine the launch runs on, not of the repository. The files lint was given are not
    `named` (their path may be absolute: the roots are made from them). `from_file`: a relative
    path is the naming file's (`resolve_named`), as its reader reads it."""
    if not _ROOTS:
        return False
    name = _name(path)
    if "\0" in name:
        return False  # names nothing; open_regular says so
    roots, inputs = _ROOTS[-1]
    real = os.path.realpath(resolve_named(name) if from_file else name)
    if named and os.path.isabs(os.path.expanduser(name)):
        return real not in inputs
    return not any(real == root or real.startswith(root.rstrip(os.sep) + os.sep) for root in roots)


def refuse_outside(path: Any, *, what: str, named: bool = True, from_file: bool = False) -> None:
    """OutsideRepository for a path `lint` may not read (see `outside_roots`); nothing is opened."""
    if outside_roots(path, named=named, from_file=from_file):
        name = _name(path)
        raise OutsideRepository(f"not judged: {what} {excerpt(name, 120)!r} is outside the repository (an "
                                "absolute path, or a path or link leading out of the trees lint was given); "
                                "not opened", location=_where(name), path=name)


def excerpt(value: Any, limit: int = 80) -> str:
    """A short, printable rendering of a value for an error message (never the whole value)."""
    if isinstance(value, str):
        text = value
    else:
        short = reprlib.Repr()
        short.maxlevel, short.maxdict, short.maxlist, short.maxtuple, short.maxset = 2, 4, 4, 4, 4
        short.maxstring = short.maxother = short.maxlong = limit
        text = short.repr(value)
    text = safe_text(text[: limit * 2])  # the one way input is shown (controls, bidi, undecodable bytes)
    return text if len(text) <= limit else text[: max(limit - 3, 1)] + "..."


GLIMPSE_WHOLE = 8  # a value read from a file is quoted whole in lint's output only up to this length


def glimpse(value: str) -> str:
    """A value read from a file as lint's output may quote it: whole when short, else its first four
    characters and its length (a mistyped port holding a token must not reach a SARIF upload whole)."""
    if len(value) <= GLIMPSE_WHOLE:
        return repr(value)
    return f"{excerpt(value[:4], 8)!r}… ({len(value)} characters)"


_OPEN_FLAGS = os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_CLOEXEC", 0) | getattr(os, "O_BINARY", 0)
_NOFOLLOW = getattr(os, "O_NOFOLLOW", 0)


def open_regular(path: Any, *, what: str, follow: bool = True, max_bytes: int | None = None) -> tuple[Any, int]:
    """(binary file object, size) of a regular file, opened so that nothing can make it wait.

    Every file h3doctor reads is opened here: non-blocking (a FIFO or a device opens at once
    instead of waiting for a writer), and refused unless the opened descriptor is a regular file
    (fstat on the descriptor, not a stat before the open that a swapped file would outrun).
    `follow=False` also refuses a symbolic link (O_NOFOLLOW): for cache entries, whose directory
    others may have planted names in. `max_bytes` refuses a larger file before any read.
    Raises LoadError (a located UsageError) for anything else."""
    name = _name(path)
    where = _where(name)
    if "\0" in name:
        raise LoadError(f"{what}: the path contains a NUL byte", location=where, path=name)
    refuse_outside(name, what=what, named=False)  # the callers of a named path refuse an absolute one first
    try:
        fd = os.open(name, _OPEN_FLAGS | (0 if follow else _NOFOLLOW))
    except FileNotFoundError:
        raise LoadError(f"no such {what} file", location=where, path=name) from None
    except OSError as exc:
        if not follow and exc.errno in (errno.ELOOP, errno.EMLINK) and os.path.islink(name):
            raise LoadError(f"{what} is a symbolic link (not followed here)", location=where, path=name) from None
        raise LoadError(f"cannot read {what}: {exc.strerror or type(exc).__name__}", location=where, path=name) from None
    try:
        info = os.fstat(fd)
        if stat.S_ISDIR(info.st_mode):
            raise LoadError(f"{what} is a directory, not a file", location=where, path=name)
        if not stat.S_ISREG(info.st_mode):  # sglang could read it; h3doctor does not wait on it: not judged
            raise LimitExceeded(f"{what} is not a regular file ({_kind(info.st_mode)}); h3doctor reads only regular files",
                            location=where, path=name)
        if max_bytes is not None and info.st_size > max_bytes:
            raise LimitExceeded(f"{what} is larger than {_size(max_bytes)}, h3doctor's limit ({_size(info.st_size)})",
                                location=where, path=name)
        fh = _Reader(io.FileIO(fd, "rb"))
    except BaseException:
        os.close(fd)
        raise
    return fh, info.st_size


class _Reader(io.BufferedReader):
    """A file opened non-blocking whose read never answers None: a kernel file that calls itself
    regular but has nothing to give without waiting (/proc/kmsg) raises BlockingIOError, an
    OSError every reader already turns into a located error, instead of handing a caller None."""

    def read(self, size: int | None = -1) -> bytes:
        data = super().read(size)
        if data is None:
            raise BlockingIOError(errno.EAGAIN, "it has no data without waiting (a kernel file?)")
        return data


def _kind(mode: int) -> str:
    for test, kind in ((stat.S_ISFIFO, "a FIFO"), (stat.S_ISCHR, "a character device"), (stat.S_ISBLK, "a block device"),
                       (stat.S_ISSOCK, "a socket")):
        if test(mode):
            return kind
    return "not a file"


def read_bounded_bytes(path: Any, *, max_bytes: int, what: str, follow: bool = True) -> bytes:
    """The bytes of a regular file of at most `max_bytes` bytes (`open_regular`'s rules)."""
    data = _read(path, max_bytes + 1, what=what, follow=follow, max_bytes=max_bytes)
    if len(data) > max_bytes:  # grew after the open
        raise LimitExceeded(f"{what} is larger than {_size(max_bytes)}, h3doctor's limit", location=_where(path),
                            path=_name(path))
    return data


def read_head(path: Any, *, max_bytes: int, what: str) -> bytes:
    """At most the first `max_bytes` bytes of a regular file of any size (`open_regular`'s rules):
    enough to tell what a file is (its `#!` line) without reading it."""
    return _read(path, max_bytes, what=what)


def _read(path: Any, size: int, *, what: str, follow: bool = True, max_bytes: int | None = None) -> bytes:
    """At most `size` bytes of the file `open_regular` opens; a read error is a LoadError."""
    fh, _size_now = open_regular(path, what=what, follow=follow, max_bytes=max_bytes)
    try:
        with fh:
            data = fh.read(size)
    except OSError as exc:  # EPERM, EIO, EAGAIN raised by a kernel file
        raise LoadError(f"cannot read {what}: {exc.strerror or type(exc).__name__}", location=_where(path),
                        path=_name(path)) from None
    return data


def _where(path: Any) -> str:
    """A path as an error's location (an excerpt: a hostile name can be long)."""
    return excerpt(_name(path), 160)


def _name(path: Any) -> str:
    return os.fspath(path) if not isinstance(path, str) else path


def read_bounded(path: Any, *, max_bytes: int, what: str, follow: bool = True) -> str:
    """The text of a regular file of at most `max_bytes` bytes, as UTF-8 (`open_regular`'s rules:
    a FIFO, a device or a directory is refused at once, never waited on)."""
    return decode_text(read_bounded_bytes(path, max_bytes=max_bytes, what=what, follow=follow), path, what=what)


def decode_text(data: bytes, path: Any, *, what: str) -> str:
    """`data` (read from `path`) as UTF-8, or a LoadError at the line of the first bad byte."""
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = data[: exc.start].count(b"\n") + 1
        raise LoadError(f"{what} is not UTF-8 text (byte {exc.start})", location=f"{_where(path)}:{line}",
                        path=_name(path)) from None


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

    checks = _Checks(origin, max_depth, max_nodes, string_keys, finite, invalid_dates, columns=False)
    loader_class = _yaml_classes()
    _check_events(text, checks)
    loader = loader_class(text)
    try:
        node = loader.get_single_node()
        if node is None:
            return None
        _check_nodes([node], checks, loader)
        return loader.construct_document(node)
    except yaml.YAMLError as exc:
        raise _yaml_error(exc, checks) from None
    except (ValueError, TypeError, OverflowError) as exc:  # e.g. an int of 5,000 digits
        raise LoadError(f"unreadable YAML value: {excerpt(str(exc), 160)}", location=origin) from None
    finally:
        loader.dispose()


def yaml_events(text: str, *, origin: str, max_depth: int = MAX_DEPTH, max_nodes: int = MAX_NODES,
                columns: bool = True) -> Iterator[Any]:
    """The YAML stream's parser events, each read once, within the limits: collections nested at
    most `max_depth` deep and at most `max_nodes` nodes (scalars, collections, aliases; an alias
    counts once here: a consumer that expands aliases counts the rest). Errors are LoadErrors
    located to line:column (`columns`) or line: for a reader that builds values and positions
    itself in the same pass (h3doctor.located), never composing a node graph."""
    import yaml
    from yaml.events import (AliasEvent, MappingEndEvent, MappingStartEvent, ScalarEvent, SequenceEndEvent,
                             SequenceStartEvent)

    checks = _Checks(origin, max_depth, max_nodes, True, True, "string", columns=columns)
    loader = _yaml_classes()(text)
    get_event = loader.get_event  # None after the stream's end
    leaves, starts, ends = (ScalarEvent, AliasEvent), (MappingStartEvent, SequenceStartEvent), (MappingEndEvent, SequenceEndEvent)
    depth = nodes = 0
    try:
        while True:
            try:
                event = get_event()
            except yaml.YAMLError as exc:
                raise _yaml_error(exc, checks) from None
            if event is None:
                return
            kind = type(event)
            if kind in leaves:
                nodes += 1
            elif kind in starts:
                nodes += 1
                depth += 1
                if depth > max_depth:
                    raise LimitExceeded(f"nested deeper than {max_depth} levels (h3doctor's limit)",
                                        location=checks.at(event.start_mark))
            elif kind in ends:
                depth -= 1
            if nodes > max_nodes:
                raise LimitExceeded(too_many_values(max_nodes), location=checks.at(event.start_mark))
            yield event
    finally:
        loader.dispose()


def too_many_values(max_nodes: int, *, aliases: bool = False) -> str:
    """The one wording of the node budget (safeload's checks and h3doctor.located's)."""
    if aliases:
        return f"more than {max_nodes:,} values with aliases expanded (h3doctor's limit; an alias bomb?)"
    return f"more than {max_nodes:,} values (h3doctor's limit)"


class _Checks:
    """What one YAML read is checked against, and how its errors are located."""

    def __init__(self, origin: str, max_depth: int, max_nodes: int, string_keys: bool, finite: bool,
                 invalid_dates: str, *, columns: bool) -> None:
        self.origin, self.max_depth, self.max_nodes = origin, max_depth, max_nodes
        self.string_keys, self.finite, self.invalid_dates, self.columns = string_keys, finite, invalid_dates, columns

    def at(self, mark: Any) -> str:
        if mark is None:
            return self.origin
        return f"{self.origin}:{mark.line + 1}:{mark.column + 1}" if self.columns else f"{self.origin}:{mark.line + 1}"


def _yaml_error(exc: Any, checks: _Checks) -> LoadError:
    mark = getattr(exc, "problem_mark", None) or getattr(exc, "context_mark", None)
    text = getattr(exc, "problem", None) or getattr(exc, "context", None) or str(exc)
    if "maximum nesting depth" in text:  # libyaml's own cap (1000) met while scanning ahead
        return LimitExceeded(f"nested deeper than {MAX_DEPTH} levels (h3doctor's limit)", location=checks.at(mark))
    return LoadError(f"malformed YAML: {excerpt(text, 160)}", location=checks.at(mark))


def _check_events(text: str, checks: _Checks) -> None:
    """Depth and size from the event stream, before the (recursive) composer runs."""
    for _event in yaml_events(text, origin=checks.origin, max_depth=checks.max_depth, max_nodes=checks.max_nodes,
                              columns=checks.columns):
        pass


def _check_nodes(roots: list[Any], checks: _Checks, loader: Any) -> None:
    """Walk the composed graphs with aliases expanded (iteratively): an alias bomb or a
    self-referencing alias runs into the node budget or the depth cap, never into memory."""
    from yaml.constructor import SafeConstructor
    from yaml.nodes import MappingNode, ScalarNode, SequenceNode

    max_depth, max_nodes = checks.max_depth, checks.max_nodes
    stack = [(root, 1) for root in roots]
    seen = 0
    while stack:
        node, depth = stack.pop()
        seen += 1
        if seen > max_nodes:
            raise LimitExceeded(too_many_values(max_nodes, aliases=True), location=checks.at(node.start_mark))
        if depth > max_depth:
            raise LimitExceeded(f"nested deeper than {max_depth} levels through aliases (h3doctor's limit)",
                                location=checks.at(node.start_mark))
        if isinstance(node, ScalarNode):
            if node.tag == _FLOAT_TAG and checks.finite and not math.isfinite(loader.construct_yaml_float(node)):
                raise LoadError(f"{excerpt(node.value, 40)} is not a finite number (non-finite numbers are not allowed)",
                                location=checks.at(node.start_mark))
            if node.tag == _TIMESTAMP_TAG and checks.invalid_dates == "error":
                try:
                    SafeConstructor.construct_yaml_timestamp(loader, node)
                except ValueError as exc:
                    raise LoadError(f"{excerpt(node.value, 40)}: {exc} (PyYAML reads it as a date)",
                                    location=checks.at(node.start_mark)) from None
        elif isinstance(node, SequenceNode):
            stack.extend((child, depth + 1) for child in node.value)
        elif isinstance(node, MappingNode):
            for key, value in node.value:
                if checks.string_keys and key.tag not in (_STR_TAG, _MERGE_TAG):
                    shown = excerpt(key.value, 40) if isinstance(key, ScalarNode) else "a collection"
                    raise LoadError(f"keys must be strings; {shown} is not (quote it)", location=checks.at(key.start_mark))
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
        raise _NotJSON(f"{excerpt(text, 40)} is not a finite number (non-finite numbers are not allowed)")
    return value


_CONSTANT = re.compile(r"-?\b(?:NaN|Infinity)\b")


def load_json(text: str, *, origin: str, max_depth: int | None = MAX_DEPTH, finite: bool = True,
              columns: bool = False) -> Any:
    """json.loads with NaN/Infinity rejected (`finite`) and depth capped. `max_depth=None`
    leaves only the parser's own cap (~1000 levels, a RecursionError reported as a limit): for a
    file whose content is checked otherwise (a cache with a content hash), at no extra cost.
    `columns` locates errors to line:column (lint) instead of naming the column in the text."""
    try:
        if finite:
            data = json.loads(text, parse_constant=_reject_constant, parse_float=_finite_float)
        else:
            data = json.loads(text)
    except _NotJSON as exc:
        found = _CONSTANT.search(text)
        raise LoadError(str(exc), location=_at_offset(origin, text, found.start(), columns) if found else origin) from None
    except json.JSONDecodeError as exc:
        if columns:
            raise LoadError(f"malformed JSON: {exc.msg}", location=f"{origin}:{exc.lineno}:{exc.colno}") from None
        raise LoadError(f"malformed JSON: {exc.msg} (column {exc.colno})", location=f"{origin}:{exc.lineno}") from None
    except RecursionError:
        levels = "the JSON parser's ~1000" if max_depth is None else str(max_depth)
        raise LimitExceeded(f"nested deeper than {levels} levels (h3doctor's limit)", location=origin) from None
    except ValueError as exc:  # e.g. an integer of more than 4300 digits
        raise LoadError(f"unreadable JSON value: {excerpt(str(exc), 160)}", location=origin) from None
    if max_depth is not None and depth_exceeds(data, max_depth):
        raise LimitExceeded(f"nested deeper than {max_depth} levels (h3doctor's limit)", location=origin)
    return data


def load_toml(text: str, *, origin: str, max_depth: int = MAX_DEPTH) -> dict[str, Any]:
    """tomllib.loads with its failures located (LoadError) and depth capped: a malformed file, an
    integer beyond Python's digit limit and an array nested past tomllib's recursion (a
    RecursionError, as deep JSON) are the file's errors, never a traceback. Python 3.11+ (the
    caller says what a 3.10 does without tomllib)."""
    import tomllib

    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise LoadError(f"malformed TOML: {excerpt(str(exc), 160)}", location=origin) from None
    except RecursionError:
        raise LimitExceeded(f"nested deeper than {max_depth} levels (h3doctor's limit)", location=origin) from None
    except ValueError as exc:  # e.g. an integer of more than 4300 digits
        raise LoadError(f"unreadable TOML value: {excerpt(str(exc), 160)}", location=origin) from None
    if depth_exceeds(data, max_depth):
        raise LimitExceeded(f"nested deeper than {max_depth} levels (h3doctor's limit)", location=origin)
    return data


def _at_offset(origin: str, text: str, offset: int, columns: bool) -> str:
    line = text.count("\n", 0, offset) + 1
    if not columns:
        return f"{origin}:{line}"
    return f"{origin}:{line}:{offset - (text.rfind(chr(10), 0, offset) + 1) + 1}"


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
