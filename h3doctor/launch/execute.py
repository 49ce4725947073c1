"""Replace h3doctor with the real command, so the exit status and the signals are the server's own.

`os.execvpe` keeps the process (its PID, terminal and signal disposition) and never returns; its
argv is exactly the words given, and nothing runs through a shell. Python's buffered stdio is
not flushed by exec, so it is flushed first. Windows has no exec that replaces the process
(os.execvp spawns and returns at once, python/cpython#101191), so there the command runs as a
child and its exit status is passed on.
"""

from __future__ import annotations

import os
import sys

from h3doctor.errors import UsageError

TYPE_CHECKING = False  # typing is not imported at run time (start-up: record.py)
if TYPE_CHECKING:
    from typing import Mapping, MutableMapping

_COERCED = ("C.UTF-8", "C.utf8", "UTF-8")  # what CPython sets LC_CTYPE to in the C locale (PEP 538)
COMMAND_NOT_FOUND = 127  # as a shell reports a program it cannot find
NOT_EXECUTABLE = 126  # as a shell reports a program it cannot run


def undo_locale_coercion(environ: MutableMapping[str, str] = os.environ) -> None:
    """Give back the LC_CTYPE this process was started with.

    CPython started in the C or POSIX locale sets LC_CTYPE=C.UTF-8 (or C.utf8, UTF-8) in its own
    environment (PEP 538), and every program it starts would inherit that, `check --exec`'s server
    included. h3doctor's own text streams are set up by then and keep their encoding; the
    environment it hands on is again the one it was given. Linux keeps the environment a process
    started with in /proc/self/environ; elsewhere the coercion is recognised by its sign, the
    UTF-8 mode Python turns on only in the C locale, and LC_CTYPE is removed (the C locale again,
    unless it was set to a locale name that LANG overrides)."""
    value = environ.get("LC_CTYPE")
    if value not in _COERCED:
        return
    original = _startup_value(b"LC_CTYPE")
    if original is _UNKNOWN:
        explicit = (os.environ.get("PYTHONUTF8") or "0") != "0" or "utf8" in getattr(sys, "_xoptions", {})
        if not sys.flags.utf8_mode or explicit or os.environ.get("PYTHONCOERCECLOCALE") == "0" or os.environ.get("LC_ALL"):
            return
        original = None
    if original is None:
        del environ["LC_CTYPE"]
    elif original != value:
        environ["LC_CTYPE"] = original


_UNKNOWN = object()


def _startup_value(name: bytes) -> object:
    """A variable as this process was started with it: its value, None when it was not set, or
    _UNKNOWN where the system does not say (no /proc)."""
    try:
        with open("/proc/self/environ", "rb") as fh:
            block = fh.read(1 << 22)
    except OSError:
        return _UNKNOWN
    for entry in block.split(b"\0"):
        key, sep, val = entry.partition(b"=")
        if sep and key == name:
            return os.fsdecode(val)
    return None


def replace_process(argv: list[str], env: Mapping[str, str]) -> int:
    """Run argv in place of this process. Returns only when it could not be started: the exit
    status a shell would give (127 not found, 126 found but not runnable), after saying why on
    stderr in a shell's words."""
    if not argv:
        raise UsageError("nothing to launch: the command has no program word")
    refused = cannot_start(argv[0], env.get("PATH", os.defpath))  # the PATH the program is looked up in
    if refused is not None:
        status, reason = refused
        sys.stderr.write(f"h3doctor: {reason}\n")
        return status
    sys.stdout.flush()
    sys.stderr.flush()
    try:
        if os.name == "nt":  # pragma: no cover - POSIX CI
            import subprocess

            return subprocess.call(argv, env=dict(env))
        os.execvpe(argv[0], argv, dict(env))
    except OSError as exc:  # not an executable format, a missing interpreter, ...
        sys.stderr.write(f"h3doctor: {argv[0]}: {exc.strerror or exc}\n")
        return NOT_EXECUTABLE
    raise AssertionError("os.execvpe returned")  # pragma: no cover


def _names_a_file(program: str) -> bool:
    """A word with a slash is that file, never looked up on PATH (execvpe, bash)."""
    return "/" in program or bool(os.altsep and os.altsep in program)


def locate(program: str, search_path: str) -> str | None:
    """The absolute path of the file exec starts for `program` (a word with a slash is that file;
    a bare name the first executable of that name on `search_path`, as execvpe looks it up), or
    None when there is none. Relative PATH entries are taken from the current directory, as exec does."""
    import shutil

    if _names_a_file(program):
        return os.path.abspath(program) if os.path.lexists(program) else None
    found = shutil.which(program, path=search_path)
    return os.path.abspath(found) if found else None


def cannot_start(program: str, search_path: str) -> tuple[int, str] | None:
    """Why a shell would refuse to start `program`, as (exit status, what it says), or None when
    it can start. As bash: a word with a slash is that file (missing: 127 "No such file or
    directory"; a directory: 126 "Is a directory"; no execute bit: 126 "Permission denied"); a bare
    name is the first executable file of that name on PATH, else the first plain file of that name
    (126 "Permission denied", naming the file), else 127 "command not found". Directories on PATH
    named like the program are passed over."""
    import shutil

    if _names_a_file(program):
        if not os.path.lexists(program):
            return COMMAND_NOT_FOUND, f"{program}: No such file or directory"
        if os.path.isdir(program):
            return NOT_EXECUTABLE, f"{program}: Is a directory"
        if not os.access(program, os.X_OK):
            return NOT_EXECUTABLE, f"{program}: Permission denied"
        return None
    if shutil.which(program, path=search_path) is not None:
        return None
    for folder in search_path.split(os.pathsep):
        candidate = os.path.join(folder or ".", program)
        if os.path.isfile(candidate):
            return NOT_EXECUTABLE, f"{candidate}: Permission denied"
    return COMMAND_NOT_FOUND, f"{program}: command not found"
