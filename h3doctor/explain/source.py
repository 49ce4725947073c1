"""Where explain's text comes from — the argument, stdin or a log file — bounded like every input.

A log larger than MAX_BYTES is read as its first HEAD_BYTES (where the command line and
server_args are) and its last MAX_BYTES - HEAD_BYTES (where it failed), and the report says so.
Bytes that are not UTF-8 are replaced (a log is often cut mid-character) and counted.
"""

from __future__ import annotations

import errno
import sys
from dataclasses import dataclass

from h3doctor.errors import UsageError
from h3doctor.safeload import excerpt

MAX_BYTES = 16 * 1024 * 1024
HEAD_BYTES = 1024 * 1024


@dataclass(frozen=True)
class Text:
    text: str
    origin: str  # "argument" | "stdin" | the file's path
    size: int  # bytes read
    notes: tuple[str, ...] = ()


def from_argument(text: str) -> Text:
    return from_bytes(text.encode("utf-8", "surrogateescape"), "argument")


def from_bytes(data: bytes, origin: str) -> Text:
    """Text already in memory (an argument, the hook's tail of a server's stderr), within the same
    cap as a file: past it, its head and its tail."""
    if len(data) > MAX_BYTES:
        return _decode(data[:HEAD_BYTES] + b"\n" + data[-(MAX_BYTES - HEAD_BYTES):], origin, True)
    return _decode(data, origin, False)


def from_stdin() -> Text:
    stream = getattr(sys.stdin, "buffer", None)
    if stream is None:
        raise UsageError("stdin cannot be read (closed)", location="-")
    try:
        data = stream.read(MAX_BYTES + 1)
        if data is None:  # a non-blocking stdin with nothing in it yet
            raise BlockingIOError(errno.EAGAIN, "it has no data without waiting (non-blocking)")
        if len(data) > MAX_BYTES:
            tail = bytearray(data[HEAD_BYTES:])
            while True:  # keep the newest bytes: the failure is at the end
                chunk = stream.read(1 << 20)
                if chunk is None:
                    raise BlockingIOError(errno.EAGAIN, "it has no data without waiting (non-blocking)")
                if not chunk:
                    break
                tail.extend(chunk)
                del tail[: max(0, len(tail) - (MAX_BYTES - HEAD_BYTES))]
            return _decode(data[:HEAD_BYTES] + b"\n" + bytes(tail), "stdin", True)
    except OSError as exc:
        raise UsageError(f"cannot read stdin: {exc.strerror or type(exc).__name__}", location="-") from None
    return _decode(data, "stdin", False)


def from_file(path: str) -> Text:
    """A log file, opened by the one reader: a regular file only (a pipe is read as `-`), never
    waited on; a log past the cap is read as its head and its tail."""
    from h3doctor.safeload import LoadError, open_regular

    where = excerpt(path, 160)
    try:
        fh, size = open_regular(path, what="log")
    except LoadError as exc:
        raise UsageError(exc.message + (" (pipe a stream in as `-`)" if "regular" in exc.message else ""),
                         location=where) from None
    try:
        with fh:
            if size > MAX_BYTES:
                head = fh.read(HEAD_BYTES)
                fh.seek(size - (MAX_BYTES - HEAD_BYTES))
                return _decode(head + b"\n" + fh.read(MAX_BYTES - HEAD_BYTES), where, True)
            data = fh.read(MAX_BYTES + 1)
    except OSError as exc:
        raise UsageError(f"cannot read the log: {exc.strerror or type(exc).__name__}", location=where) from None
    return _decode(data[:MAX_BYTES], where, len(data) > MAX_BYTES)


def _decode(data: bytes, origin: str, cut: bool) -> Text:
    text = data.decode("utf-8", "replace")
    notes = []
    if cut:
        notes.append(f"larger than {MAX_BYTES // (1024 * 1024)} MiB: read its first {HEAD_BYTES // (1024 * 1024)} MiB "
                     f"and its last {(MAX_BYTES - HEAD_BYTES) // (1024 * 1024)} MiB")
    bad = text.count("\ufffd")
    if bad:
        notes.append(f"{bad} byte sequence(s) that are not UTF-8 were replaced")
    return Text(text, origin, len(data), tuple(notes))
