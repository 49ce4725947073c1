"""`lint -`: the text on standard input linted as a file named by `--stdin-filename` (its name
gives the kind, the configuration's per-path settings and the name in every finding), as ruff
and shellcheck read it. The text is read bounded and linted from a private temporary copy; the
copy's path never reaches the report."""

from __future__ import annotations

import os
import sys
import tempfile
from pathlib import Path

from h3doctor.errors import UsageError
from h3doctor.located import MAX_INPUT_BYTES
from h3doctor.paths import write_atomic

STDIN = "-"


def default_name(text: str) -> str:
    """Without --stdin-filename: a script when it starts with a shebang, else YAML (every other kind is)."""
    return "stdin.sh" if text.startswith("#!") else "stdin.yaml"


def read_stdin(stream=None) -> str:
    stream = stream if stream is not None else sys.stdin
    if stream is None:
        raise UsageError("lint -: standard input is closed")
    buffer = getattr(stream, "buffer", stream)
    try:
        data = buffer.read(MAX_INPUT_BYTES + 1)
    except OSError as exc:  # EIO, EAGAIN (a non-blocking stdin)
        raise UsageError(f"lint -: cannot read standard input: {exc.strerror or type(exc).__name__}",
                         location=STDIN) from None
    if data is None:  # a non-blocking stdin with nothing in it yet
        raise UsageError("lint -: standard input has no data without waiting (non-blocking)", location=STDIN)
    if isinstance(data, str):
        data = data.encode("utf-8", "surrogateescape")
    if len(data) > MAX_INPUT_BYTES:
        raise UsageError(f"lint -: standard input is larger than {MAX_INPUT_BYTES} bytes", location=STDIN)
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise UsageError(f"lint -: standard input is not UTF-8 (byte {exc.start})", location=STDIN) from None


class StdinCopy:
    """A temporary file holding the text, named like `name` (its suffix decides the kind)."""

    def __init__(self, text: str, name: str) -> None:
        self.name = name
        self._dir = tempfile.TemporaryDirectory(prefix="h3doctor-stdin-")
        base = os.path.basename(name) or "stdin.yaml"
        self.path = str(Path(self._dir.name) / base)
        self.write(text)

    def write(self, text: str) -> None:
        self.text = text
        write_atomic(Path(self.path), text)

    def shown(self, text: str) -> str:
        """`text` with the copy's path replaced by the name the user gave."""
        return text.replace(self.path, self.name)

    def close(self) -> None:
        self._dir.cleanup()
