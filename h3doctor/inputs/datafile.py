"""The text of a YAML/JSON file lint was given, when it may hold a launch.

A repository's data files are mostly not launches: `package-lock.json` and a Grafana dashboard are
larger than lint's 1 MiB limit, a Windows editor saves YAML as UTF-16. lint's size and encoding
limits are for launch inputs; a file that breaks one is read only as far as telling whether it has
a launch's shape takes (its first MiB, the event parser on its first document, inputs/sniff.py)
and, when it has one, a scan of its bytes for sglang (bounded memory, linear time). A file with a
launch's shape that mentions sglang is refused as before (H3DL003: not judged, never passed);
the others are skipped quietly, with the reason `lint --verbose` prints.
"""

from __future__ import annotations

import codecs
from typing import Callable

from h3doctor.inputs.sniff import first_shape
from h3doctor.safeload import LimitExceeded, decode_text, open_regular, read_head

_CHUNK = 1 << 20
_BOMS = ((codecs.BOM_UTF32_LE, "utf-32"), (codecs.BOM_UTF32_BE, "utf-32"), (codecs.BOM_UTF8, "utf-8-sig"),
         (codecs.BOM_UTF16_LE, "utf-16"), (codecs.BOM_UTF16_BE, "utf-16"))
_NEEDLES = tuple("sglang".encode(e) for e in ("utf-8", "utf-16-le", "utf-16-be", "utf-32-le", "utf-32-be"))


def data_text(path: str, max_bytes: int, kind_of: Callable[[object, str], str | None]) -> tuple[str | None, str | None]:
    """(the file's text, None), or (None, why it is skipped). `kind_of(shape, text)` is the launch
    kind a first document's shape claims (sniff.claimed_kind). Raises LoadError for a file that
    cannot be read at all (a FIFO, no permission) and for a launch-shaped one past a limit."""
    head = read_head(path, max_bytes=max_bytes + 1, what="input")
    over = len(head) > max_bytes
    if not over:
        try:
            return head.decode("utf-8"), None
        except UnicodeDecodeError:
            pass
    text, encoding = _decoded(head[:max_bytes])
    shape = first_shape(text, partial=over)
    kind = kind_of(shape, "sglang serve")  # the shape alone: is it a launch's?
    limit = f"larger than {max_bytes >> 20} MiB" if over else f"not UTF-8 text ({encoding})"
    if kind is None and shape is not None and (shape.keys or not shape.mapping):
        return None, f"{limit}, and its first document has no launch's shape"
    what = f"a {kind} file" if kind else "its first MiB shows no shape, and it mentions sglang"
    if kind != "sglang-config" and not _mentions_sglang(path, head, over):
        return None, f"{limit}, and it does not mention sglang"
    if over:
        raise LimitExceeded(f"input is {limit}, h3doctor's limit: {what}; not judged", location=path, path=path)
    if encoding == "UTF-8":
        decode_text(head, path, what="input")  # the byte and line that is not UTF-8
    raise LimitExceeded(f"input is {limit}: {what}; not judged (save it as UTF-8)", location=path, path=path)


def _decoded(data: bytes) -> tuple[str, str]:
    """The text as well as it can be told: by its byte-order mark, else UTF-8 with bad bytes replaced."""
    for bom, encoding in _BOMS:
        if data.startswith(bom):
            return data.decode(encoding, "replace"), encoding.replace("-sig", "").upper()
    return data.decode("utf-8", "replace"), "UTF-8"


def _mentions_sglang(path: str, head: bytes, over: bool) -> bool:
    """Whether the file's bytes name sglang anywhere (in UTF-8, UTF-16 or UTF-32), read in chunks."""
    if not over:
        return any(n in head.lower() for n in _NEEDLES)
    fh, _size = open_regular(path, what="input")
    keep = max(len(n) for n in _NEEDLES)
    tail = b""
    with fh:
        while True:
            chunk = fh.read(_CHUNK)
            if not chunk:
                return False
            window = (tail + chunk).lower()
            if any(n in window for n in _NEEDLES):
                return True
            tail = window[-keep:]
