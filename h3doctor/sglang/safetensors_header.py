"""Read the quantization markers of a .safetensors file from its header, without loading weights.

sglang decides a ComfyUI-serialized checkpoint's quantization from two places
(runtime/utils/quantization_utils.py:116-200): the `_quantization_metadata` JSON in the header's
`__metadata__` (its `layers` map of {"format": ...}), and small `<layer>.comfy_quant` tensors whose
bytes are a JSON marker. Both can be read with the file's own offsets, so no torch and no
safetensors package: the header is 8 bytes of length, then JSON; tensor bytes follow it.
"""

from __future__ import annotations

import functools
import json
import struct
from pathlib import Path

MAX_HEADER_BYTES = 64 << 20
MAX_MARKER_BYTES = 1 << 16
MAX_FILES = 256


class HeaderError(ValueError):
    pass


def _header(fh) -> tuple[dict, int]:
    raw = fh.read(8)
    if len(raw) != 8:
        raise HeaderError("shorter than a safetensors header")
    (length,) = struct.unpack("<Q", raw)
    if length > MAX_HEADER_BYTES:
        raise HeaderError(f"header of {length} bytes is larger than h3doctor reads")
    try:
        header = json.loads(fh.read(length))
    except (ValueError, UnicodeDecodeError) as exc:
        raise HeaderError(f"header is not JSON: {exc}") from None
    if not isinstance(header, dict):
        raise HeaderError("header is not a JSON object")
    return header, 8 + length


def file_formats(path: Path) -> frozenset[str]:
    """The Comfy quantization formats (e.g. convrot_w4a4, asym_w4a8_int8, mxfp8) one file declares."""
    stat = path.stat()
    return _file_formats(str(path), stat.st_mtime_ns, stat.st_size)


@functools.lru_cache(maxsize=512)
def _file_formats(path: str, _mtime_ns: int, _size: int) -> frozenset[str]:
    # cached by path and stat: the fix loop re-checks the launch several times per run
    formats: set[str] = set()
    with open(path, "rb") as fh:
        header, data_start = _header(fh)
        metadata = header.get("__metadata__") or {}
        if isinstance(metadata.get("quant_format"), str):
            formats.add(metadata["quant_format"].lower())
        serialized = metadata.get("_quantization_metadata")
        if isinstance(serialized, str):
            try:
                layers = json.loads(serialized).get("layers", {})
            except (ValueError, AttributeError):
                layers = {}
            formats |= {str(m.get("format")) for m in layers.values() if isinstance(m, dict) and m.get("format")}
        for key, info in header.items():
            if not key.endswith(".comfy_quant") or not isinstance(info, dict):
                continue
            start, end = info.get("data_offsets", (0, 0))
            if not 0 <= end - start <= MAX_MARKER_BYTES:
                continue
            fh.seek(data_start + start)
            try:
                marker = json.loads(fh.read(end - start))
            except (ValueError, UnicodeDecodeError):
                continue
            if isinstance(marker, dict) and marker.get("format"):
                formats.add(str(marker["format"]))
    return frozenset(formats)


def checkpoint_formats(path_text: str) -> tuple[set[str] | None, str]:
    """(formats, how) for a local file or directory of .safetensors; None when it cannot be read."""
    path = Path(path_text).expanduser()
    if path.is_dir():
        files = sorted(path.rglob("*.safetensors"))[:MAX_FILES]
    elif path.is_file() and path.suffix == ".safetensors":
        files = [path]
    else:
        return None, f"{path_text} is not a local .safetensors file or directory"
    formats: set[str] = set()
    try:
        for file in files:
            formats |= file_formats(file)
    except (OSError, HeaderError) as exc:
        return None, f"cannot read {path_text}: {exc}"
    return formats, f"read the headers of {len(files)} file(s)"
