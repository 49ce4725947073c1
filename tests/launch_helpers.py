"""A stand-in `sglang` for the exec and hook tests: it records its argv, PID and environment and
exits with the status it is told to (STUB_EXIT), or kills itself with a signal (STUB_SIGNAL)."""

from __future__ import annotations

import json
import os
import stat
import sys
from pathlib import Path

STUB = """#!{python}
import json, os, signal, sys
record = {{"argv": sys.argv[1:], "pid": os.getpid(),
          "env": {{k: v for k, v in os.environ.items() if k.startswith(("SGLANG_", "STUB_VAR"))}}}}
if os.path.exists("/proc/self/environ"):  # as started, before this Python's own C-locale coercion
    block = open("/proc/self/environ", "rb").read().split(b"\\0")
    record["startup_env"] = dict(os.fsdecode(e).partition("=")[::2] for e in block if b"=" in e)
with open(os.environ["STUB_RECORD"], "a", encoding="utf-8") as fh:
    fh.write(json.dumps(record) + "\\n")
if os.environ.get("STUB_STDERR"):  # what a failing server prints last (hook-tail explains it)
    sys.stderr.write(os.environ["STUB_STDERR"] + "\\n")
    sys.stderr.flush()
if os.environ.get("STUB_WAIT"):  # a running server: says so, then waits for a signal (Ctrl-C kills it)
    signal.signal(signal.SIGINT, signal.SIG_DFL)
    sys.stderr.write("STUB-SERVING\\n")
    sys.stderr.flush()
    signal.pause()
if os.environ.get("STUB_SIGNAL"):
    os.kill(os.getpid(), int(os.environ["STUB_SIGNAL"]))
sys.exit(int(os.environ.get("STUB_EXIT", "0")))
"""


class StubSglang:
    def __init__(self, root: Path) -> None:
        self.bin = root / "bin"
        self.bin.mkdir(parents=True, exist_ok=True)
        self.record = root / "record.jsonl"
        path = self.bin / "sglang"
        path.write_text(STUB.format(python=sys.executable), encoding="utf-8")
        path.chmod(path.stat().st_mode | stat.S_IXUSR | stat.S_IXGRP | stat.S_IXOTH)

    def env(self, **extra: str) -> dict[str, str]:
        """This process's environment without sglang's variables, the stub first on PATH, and
        h3doctor (this interpreter's) reachable."""
        env = {k: v for k, v in os.environ.items() if not k.startswith(("SGLANG_", "H3DOCTOR_"))}
        env["PATH"] = os.pathsep.join([str(self.bin), str(Path(sys.executable).parent), env.get("PATH", "")])
        env.update({"STUB_RECORD": str(self.record), "NO_COLOR": "1", "COLUMNS": "200"})
        env.update(extra)
        return env

    def calls(self) -> list[dict]:
        if not self.record.exists():
            return []
        return [json.loads(line) for line in self.record.read_text(encoding="utf-8").splitlines()]

    def reset(self) -> None:
        if self.record.exists():
            self.record.unlink()
