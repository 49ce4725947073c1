"""`h3doctor hook-tail PROGRAM`: the shell hook's relay for the stderr of a server it started
(hook_decide.sh, hook.fish). Every byte goes on to h3doctor's own stderr (the terminal) as it
comes, unchanged; the last TAIL_BYTES are kept in memory. The hook writes `\\0h3doctor-exit N\\n`
after the server has exited; when N is not 0 (and not an interrupt the user typed), the tail is
explained from memory (h3doctor explain, the rules' messages in sglang's words; it is never
written to disk), and explain's answer is said in one line. The relay exits
with N, so `$?` is the server's status; with no marker (the server's side was interrupted) it
exits 130 and explains nothing. SIGINT and SIGQUIT are ignored: Ctrl-C reaches the server, and
the relay reads on to the end, so nothing of the server's last words is lost.
"""

from __future__ import annotations

import os
import re
import signal
import sys

TAIL_BYTES = 1024 * 1024  # the last 1 MiB of the server's stderr: a traceback's end and more
_CHUNK = 65536
_MARKER = re.compile(rb"\0h3doctor-exit (\d{1,3})\n\Z")
INTERRUPTED = 130  # 128 + SIGINT: what a shell reports for a job ended by Ctrl-C
_USER_STOPS = {128 + int(getattr(signal, name)) for name in ("SIGINT", "SIGQUIT") if hasattr(signal, name)}


def relay(source: int, sink: int, keep: int = TAIL_BYTES) -> tuple[bytes, int | None]:
    """Copy `source` to `sink` until end of file, keeping the last `keep` bytes; the status the
    marker at the very end gives (not copied), else None. A sink that fails (closed, full) is
    dropped, never the reading: a server writing to a pipe nobody reads would block."""
    tail = bytearray()
    pending = b""  # bytes from a NUL on, held back until they are known not to be the marker
    while True:
        data = os.read(source, _CHUNK)
        if not data:
            break
        data = pending + data
        cut = data.rfind(b"\0")
        out, pending = (data[:cut], data[cut:]) if cut >= 0 and len(data) - cut <= 24 else (data, b"")
        sink = _write(sink, out)
        tail += out
        if len(tail) > keep:
            del tail[:len(tail) - keep]
    found = _MARKER.match(pending)
    if found is None:
        _write(sink, pending)
        tail += pending
        return bytes(tail[-keep:]), None
    return bytes(tail[-keep:]), int(found.group(1))


def _write(sink: int, data: bytes) -> int:
    while data and sink >= 0:
        try:
            data = data[os.write(sink, data):]
        except InterruptedError:
            continue
        except OSError:
            return -1
    return sink


def summary(tail: bytes, status: int, program: str) -> str:
    """explain's answer for the tail, in one line."""
    from h3doctor.explain import source
    from h3doctor.explain.report import ExplainRequest, run

    report = run(ExplainRequest(source.from_bytes(tail, f"{program}'s stderr")))  # read from memory: never on disk
    said = f"h3doctor: {program} exited with status {status}"
    if not report.matches:
        return (f"{said}; no rule of h3doctor's matches the end of its stderr "
                "(h3doctor explain --log FILE reads a whole log)")
    first = report.matches[0]
    rule = report.rules[first.rule]
    more = f" (and {len(report.matches) - 1} more)" if len(report.matches) > 1 else ""
    return f"{said}: {first.rule}{more}: {rule.title}; h3doctor rule {first.rule} says why and the fix"


def main(argv: list[str]) -> int:
    for name in ("SIGINT", "SIGQUIT"):
        if hasattr(signal, name):
            signal.signal(getattr(signal, name), signal.SIG_IGN)
    program = os.path.basename(argv[0])[:40] if argv else "the server"
    tail, status = relay(0, 2)
    if status is None:
        return INTERRUPTED
    if status != 0 and status not in _USER_STOPS and tail.strip():
        try:
            line = summary(tail, status, program)
        except Exception as exc:  # noqa: BLE001 - the server's status matters more than h3doctor's explanation
            line = f"h3doctor: {program} exited with status {status}; h3doctor could not explain it ({type(exc).__name__})"
        from h3doctor.shellwords import safe_text

        _write(2, (safe_text(line, 600) + "\n").encode(sys.stderr.encoding or "utf-8", "replace"))
    return status
