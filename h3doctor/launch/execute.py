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
from typing import Mapping

from h3doctor.errors import UsageError

COMMAND_NOT_FOUND = 127  # as a shell reports a program it cannot find
NOT_EXECUTABLE = 126  # as a shell reports a program it cannot run


def replace_process(argv: list[str], env: Mapping[str, str]) -> int:
    """Run argv in place of this process. Returns only when it could not be started: the exit
    status a shell would give (127 not found, 126 not executable), after saying why on stderr."""
    if not argv:
        raise UsageError("nothing to launch: the command has no program word")
    import shutil

    if shutil.which(argv[0], path=env.get("PATH", os.defpath)) is None:  # the PATH the program is looked up in
        sys.stderr.write(f"h3doctor: {argv[0]}: command not found\n")
        return COMMAND_NOT_FOUND
    sys.stdout.flush()
    sys.stderr.flush()
    try:
        if os.name == "nt":  # pragma: no cover - POSIX CI
            import subprocess

            return subprocess.call(argv, env=dict(env))
        os.execvpe(argv[0], argv, dict(env))
    except OSError as exc:  # permission denied, not an executable format, a missing interpreter, ...
        sys.stderr.write(f"h3doctor: {argv[0]}: {exc.strerror or exc}\n")
        return NOT_EXECUTABLE
    raise AssertionError("os.execvpe returned")  # pragma: no cover
