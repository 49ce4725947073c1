"""Read the quantization markers of a .safetensors file from its header, without loading weights.

sglang decides a ComfyUI-serialized checkpoint's quantization from two places
(runtime/utils/quantization_utils.py:116-200): the `_quantization_metadata` JSON in the header's
`__metadata__` (its `layers` map of {"format": ...}), and small `<layer>.comfy_quant` tensors whose
bytes are a JSON marker. Both can be read with the file's own offsets, so no torch and no
safetensors package: the header is 8 bytes of length, then JSON; tensor bytes follow it.
"""

from __future__ import annotations

import functools
import os
import struct
from collections import deque

from h3doctor.errors import UsageError
from h3doctor.record import record
from h3doctor.safeload import LimitExceeded, excerpt, load_json, open_regular, outside_roots

TYPE_CHECKING = False  # pathlib is imported only for a local weights path (start-up: record.py)
if TYPE_CHECKING:
    from pathlib import Path

# safetensors itself reads headers up to 100 MB, but parsed JSON takes ~13 times its size: a 56 MiB
# header cost 738 MB. A real shard's header is a few hundred KiB (one entry per tensor); past this
# one the file is not read and its quantization is unknown (H3D935), never absent
MAX_HEADER_BYTES = 4 << 20
MAX_MARKER_BYTES = 1 << 16
MAX_FILES = 256
# directory entries the walk looks at (files and folders alike): a folder named by mistake
# (`/`, a home directory) costs this much and no more
MAX_WALK_ENTRIES = 20_000
# a real header nests three levels ({tensor: {shape: [...]}}); deeper is not a header
MAX_HEADER_DEPTH = 16


class HeaderError(ValueError):
    pass


def _json(raw: bytes, what: str):
    try:
        return load_json(raw.decode("utf-8"), origin=what, max_depth=MAX_HEADER_DEPTH, finite=False)
    except UnicodeDecodeError as exc:
        raise HeaderError(f"{what} is not UTF-8 (byte {exc.start})") from None
    except UsageError as exc:
        raise HeaderError(f"{what}: {exc.message}") from None


def _header(fh) -> tuple[dict, int]:
    raw = fh.read(8)
    if len(raw) != 8:
        raise HeaderError("shorter than a safetensors header")
    (length,) = struct.unpack("<Q", raw)
    if length > MAX_HEADER_BYTES:
        raise HeaderError(f"header of {length} bytes is larger than h3doctor reads")
    body = fh.read(length)
    if len(body) != length:
        raise HeaderError(f"header of {length} bytes, but the file ends after {len(body)}")
    header = _json(body, "header")
    if not isinstance(header, dict):
        raise HeaderError("header is not a JSON object")
    return header, 8 + length


def file_formats(path: Path) -> frozenset[str]:
    """The Comfy quantization formats (e.g. convrot_w4a4, asym_w4a8_int8, mxfp8) one file declares.
    HeaderError when the file cannot be read as a safetensors header within h3doctor's limits."""
    try:
        stat = path.stat()
    except (OSError, ValueError) as exc:
        raise HeaderError(f"cannot read it: {getattr(exc, 'strerror', None) or type(exc).__name__}") from None
    return _file_formats(str(path), stat.st_mtime_ns, stat.st_size)


@functools.lru_cache(maxsize=512)
def _file_formats(path: str, _mtime_ns: int, _size: int) -> frozenset[str]:
    # cached by path and stat: the fix loop re-checks the launch several times per run
    try:
        fh, _ = open_regular(path, what="weights file")  # non-blocking, regular files only
    except UsageError as exc:
        raise HeaderError(exc.message) from None
    formats: set[str] = set()
    with fh:
        try:
            header, data_start = _header(fh)
        except OSError as exc:  # EIO, EPERM, or nothing without waiting (safeload's reader)
            raise HeaderError(f"cannot read it: {exc.strerror or type(exc).__name__}") from None
        metadata = header.get("__metadata__") or {}
        if not isinstance(metadata, dict):
            raise HeaderError("__metadata__ is not a JSON object")
        if isinstance(metadata.get("quant_format"), str):
            formats.add(metadata["quant_format"].lower())
        serialized = metadata.get("_quantization_metadata")
        if isinstance(serialized, str):
            try:
                layers = _json(serialized.encode(), "_quantization_metadata").get("layers", {})
            except (HeaderError, AttributeError):
                layers = {}
            if isinstance(layers, dict):
                formats |= {str(m.get("format")) for m in layers.values() if isinstance(m, dict) and m.get("format")}
        for key, info in header.items():
            if not key.endswith(".comfy_quant") or not isinstance(info, dict):
                continue
            offsets = info.get("data_offsets", (0, 0))
            if not (isinstance(offsets, (list, tuple)) and len(offsets) == 2
                    and all(isinstance(o, int) and not isinstance(o, bool) for o in offsets)):
                continue
            start, end = offsets
            if not (0 <= start and 0 <= end - start <= MAX_MARKER_BYTES):
                continue
            fh.seek(data_start + start)
            try:
                marker = _json(fh.read(end - start), "marker")
            except HeaderError:
                continue
            if isinstance(marker, dict) and marker.get("format"):
                formats.add(str(marker["format"]))
    return frozenset(formats)


@record(frozen=True)
class Checkpoint:
    """What the headers of a local checkpoint say: `formats` from every file that could be read
    (None: the path is not a local .safetensors file or folder), `unread` the files (or the rest
    of the folder) whose facts are unknown, each "name: why", and how it was read."""
    formats: frozenset[str] | None
    unread: tuple[str, ...]
    how: str


def _walk(top: Path) -> tuple[list[Path], list[str]]:
    """The .safetensors files under `top`, breadth-first, each folder's entries in name order,
    at most MAX_FILES of them and MAX_WALK_ENTRIES entries looked at; folder links are not
    followed (a link to `/` or a cycle costs nothing). (files, what could not be walked: a
    folder that cannot be listed, or the rest of the tree once a cap is reached)."""
    found: list[Path] = []
    skipped: list[str] = []
    queue: deque[Path] = deque([top])
    budget = MAX_WALK_ENTRIES
    while queue:
        folder = queue.popleft()
        names: list[tuple[str, bool]] = []
        try:
            with os.scandir(folder) as it:
                for entry in it:
                    budget -= 1
                    if budget < 0:
                        skipped.append(f"the rest of {excerpt(str(top), 160)}: not read, more than {MAX_WALK_ENTRIES} "
                                       "entries under the folder (h3doctor's limit)")
                        return sorted(found), skipped
                    try:
                        is_dir = entry.is_dir(follow_symlinks=False)
                    except OSError:
                        is_dir = False
                    names.append((entry.name, is_dir))
        except OSError as exc:
            skipped.append(f"{excerpt(str(folder), 160)}: cannot be listed ({exc.strerror or type(exc).__name__})")
            continue
        for name, is_dir in sorted(names):
            if is_dir:
                queue.append(folder / name)
            elif name.endswith(".safetensors"):
                if len(found) == MAX_FILES:
                    skipped.append(f"the rest of {excerpt(str(top), 160)}: not read, more than {MAX_FILES} "
                                   f".safetensors files (h3doctor reads {MAX_FILES})")
                    return sorted(found), skipped
                found.append(folder / name)
    return sorted(found), skipped


def checkpoint_formats(path_text: str) -> Checkpoint:
    """The quantization formats a local .safetensors file or folder declares, file by file: an
    unreadable file (garbage, a header beyond the limits, a FIFO) or a folder walked only in
    part makes its facts unknown (`unread`), never absent."""
    from pathlib import Path  # with a local weights path only: pathlib stays off the check's path

    path = Path(path_text).expanduser()
    if outside_roots(path_text):  # under lint: not looked at, so its facts are unknown (cannot verify)
        return Checkpoint(frozenset(), (f"{excerpt(path_text, 160)}: not read, outside the repository",),
                          "read no header: outside the repository")
    try:
        is_dir, is_file = path.is_dir(), path.suffix == ".safetensors" and os.path.lexists(path)
    except (OSError, ValueError):
        is_dir = is_file = False
    if is_dir:
        files, skipped = _walk(path)
    elif is_file:
        files, skipped = [path], []
    else:
        return Checkpoint(None, (), f"{path_text} is not a local .safetensors file or directory")
    formats: set[str] = set()
    unread: list[str] = []
    for file in files:
        try:
            formats |= file_formats(file)
        except (HeaderError, LimitExceeded, RecursionError, MemoryError) as exc:
            unread.append(f"{excerpt(str(file), 160)}: {excerpt(str(exc) or type(exc).__name__, 120)}")
    how = f"read the headers of {len(files) - len(unread)} of {len(files)} file(s)"
    unread += skipped
    return Checkpoint(frozenset(formats), tuple(unread), how)
