"""stdout and stderr as the commands see them (installed by `cli.main`, the error boundary).

A reader that stops reading (`h3doctor rules | head -1`: a broken pipe) is a quiet end of the
output: later writes are dropped and the command exits with its own code, as Unix filters do.
A closed stream or a full disk becomes one OutputError (exit 2) instead of a traceback or
Python's exit 120 at shutdown; an encoding that cannot show the report's symbols
(PYTHONIOENCODING=ascii, Latin-1) gets ASCII stand-ins, and '?' for anything else.
"""

from __future__ import annotations

import os

from h3doctor.errors import H3DoctorError


class OutputError(H3DoctorError):
    """stdout or stderr cannot be written: closed, a broken pipe, a full disk."""


# What the report prints outside ASCII, for terminals and pipes that cannot encode it.
_ASCII = str.maketrans({"✓": "+", "✗": "x", "—": "-", "…": "...", "×": "x", "≥": ">=", "≤": "<=", "→": "->",
                        # the memory bar's characters (output/memory_bar.py), each still its own
                        "█": "#", "▓": "@", "▒": "%", "░": ":", "≡": "=", "≈": "~", "▪": "*", "▫": "o", "·": ".",
                        "┃": "|"})


class Output:
    """One guarded stream: the first failure is raised as an OutputError, later writes too."""

    def __init__(self, stream, name: str):
        self._stream, self._name, self._failed = stream, name, False
        self._reader_gone = False  # a broken pipe: everything written from now on is dropped
        encoding = getattr(stream, "encoding", None) or "ascii"
        try:
            "✓✗—…×≥≤→".encode(encoding)
            self._ascii = False
        except (UnicodeEncodeError, LookupError):
            self._ascii = True
            try:
                stream.reconfigure(errors="replace")  # anything else outside the encoding: '?'
            except (AttributeError, ValueError, OSError):
                pass

    @property
    def encoding(self) -> str:
        return getattr(self._stream, "encoding", None) or "utf-8"

    def write(self, text: str) -> int:
        if self._ascii:
            text = text.translate(_ASCII)
        return self._guard(lambda: self._stream.write(text))

    def flush(self) -> None:
        self._guard(lambda: self._stream.flush())

    @property
    def failed(self) -> bool:
        return self._failed

    def _guard(self, action):
        if self._reader_gone:
            return None
        if self._failed:
            raise OutputError(f"cannot write to {self._name}")
        if self._stream is None:
            self._failed = True
            raise OutputError(f"cannot write to {self._name}: it is closed")
        try:
            return action()
        except BrokenPipeError:
            self._reader_gone = True
            self._silence()
            return None
        except (OSError, ValueError) as exc:  # ValueError: I/O operation on closed file
            self._failed = True
            self._silence()
            reason = exc.strerror if isinstance(exc, OSError) and exc.strerror else str(exc)
            raise OutputError(f"cannot write to {self._name}: {reason}") from None

    def _silence(self) -> None:
        """Point the descriptor at /dev/null, so Python's own flush at exit has somewhere to go."""
        try:
            fd = self._stream.fileno()
            null = os.open(os.devnull, os.O_WRONLY)
            os.dup2(null, fd)
            os.close(null)
        except (OSError, ValueError, AttributeError):
            pass

    def isatty(self) -> bool:
        try:
            return bool(self._stream is not None and self._stream.isatty())
        except (OSError, ValueError):
            return False

    def __getattr__(self, name: str):
        if self._stream is None:
            raise AttributeError(name)
        return getattr(self._stream, name)
