"""The hook's words in a real shell (issue 31 item 4): a launch that starts with warnings prints
at most five lines, the last of them the `h3doctor check` command of the full report; a server the
hook started that exits non-zero is explained (docs/security.md "Bars, the hook's words and manners")."""

from __future__ import annotations

import fcntl
import os
import signal
import shlex
import struct
import subprocess
import termios

import pytest

from h3doctor.output.wrap import cells
from tests.launch.test_hook import (CLEAN, INTERACTIVE, LOAD, PROFILE, STATUS, Terminal, run_hook,  # noqa: F401
                                    shell, stub)

WARNED = CLEAN + ["--performance", "speed"]  # an abbreviation sglang ignores: H3D021, a warning


@pytest.mark.parametrize("columns", [80, 200])
def test_a_launch_with_warnings_prints_five_lines_and_the_full_reports_command(shell, stub, columns):  # noqa: F811
    proc = run_hook(shell, stub, WARNED, env={"COLUMNS": str(columns)})
    assert proc.returncode == 0 and [c["argv"] for c in stub.calls()] == [WARNED], proc.stderr
    lines = proc.stderr.splitlines()
    assert 2 <= len(lines) <= 5, proc.stderr
    assert "H3D021" in proc.stderr and "starting sglang" in " ".join(proc.stderr.split())
    prefix = "  full report: "
    assert lines[-1].startswith(prefix)
    assert all(cells(line) <= columns for line in lines[:-1]), lines
    again = shlex.split(lines[-1][len(prefix):])
    assert again[:2] == ["h3doctor", "check"] and "--hook" not in again and "--argv-out" not in again
    # the command is this very check: its full report, with the same finding
    full = subprocess.run(again, capture_output=True, text=True, env=stub.env(), timeout=120)
    assert full.returncode == 0 and "H3D021" in full.stdout and len(full.stdout.splitlines()) > len(lines)


# A message sglang prints (H3D227's) as the last words of a server that exits 1
SGLANG_ERROR = "ValueError: num_gpus (1) must be divisible by (dp_size * tp_size) = 2"
EXPLAINED = b"h3doctor: sglang exited with status 1: H3D227"


def _terminal(shell: str, stub, tmp_path, columns: int, **extra: str) -> Terminal:
    tmp = tmp_path / "tmp"
    tmp.mkdir(exist_ok=True)
    env = stub.env(H3DOCTOR_HOOK_ARGS=PROFILE, TERM="dumb", HOME=str(tmp_path), PS1="$ ", TMPDIR=str(tmp),
                   COLUMNS=str(columns), **extra)
    term = Terminal(INTERACTIVE[shell], env)
    fcntl.ioctl(term.fd, termios.TIOCSWINSZ, struct.pack("HHHH", 40, columns, 0, 0))
    assert term.run(LOAD[shell], STATUS[shell]) == "0"
    return term


def _left_behind(tmp_path) -> list[str]:
    return [p.name for p in (tmp_path / "tmp").iterdir() if p.name.startswith("h3doctor")]  # anything of the hook's


@pytest.mark.parametrize("columns", [80, 200])
def test_a_server_that_exits_non_zero_is_explained_in_one_line(shell, stub, tmp_path, columns):  # noqa: F811
    term = _terminal(shell, stub, tmp_path, columns, STUB_EXIT="1", STUB_STDERR=SGLANG_ERROR)
    try:
        status = term.run("sglang " + " ".join(CLEAN), STATUS[shell])
        out = term.out
        assert status == "1", out.decode(errors="replace")  # $? is the server's own
        assert SGLANG_ERROR.encode() in out  # the server's stderr reached the terminal
        assert out.count(EXPLAINED) == 1, out.decode(errors="replace")
        assert [c["argv"] for c in stub.calls()] == [CLEAN]
    finally:
        term.close()
    assert _left_behind(tmp_path) == []


EXPORT_OFF = {"bash": "export H3DOCTOR_HOOK_EXPLAIN=0", "zsh": "export H3DOCTOR_HOOK_EXPLAIN=0",
              "fish": "set -gx H3DOCTOR_HOOK_EXPLAIN 0"}


def test_no_explanation_when_the_server_succeeds_or_it_is_switched_off(shell, stub, tmp_path):  # noqa: F811
    term = _terminal(shell, stub, tmp_path, 80, STUB_STDERR=SGLANG_ERROR)
    launch = "sglang " + " ".join(CLEAN)
    try:
        assert term.run(f"STUB_EXIT=0 {launch}", STATUS[shell]) == "0"
        assert b"exited with status" not in term.out
        assert term.run(f"STUB_EXIT=42 {launch}", STATUS[shell]) == "42"  # any status but an interrupt
        assert term.out.count(b"h3doctor: sglang exited with status 42: H3D227") == 1
        assert term.run(EXPORT_OFF[shell], STATUS[shell]) == "0"
        assert term.run(f"STUB_EXIT=1 {launch}", STATUS[shell]) == "1"  # $? is still the server's
        assert b"exited with status 1" not in term.out, term.out.decode(errors="replace")
        assert len(stub.calls()) == 3
    finally:
        term.close()


def test_ctrl_c_stops_the_server_explains_nothing_and_leaves_no_file(shell, stub, tmp_path):  # noqa: F811
    term = _terminal(shell, stub, tmp_path, 80, STUB_WAIT="1")
    try:
        term.type(("sglang " + " ".join(CLEAN) + "\n").encode())
        term.wait_for(b"STUB-SERVING")
        term.type(b"\x03")
        status = term.run("true", STATUS[shell])  # the shell is back at its prompt
        assert status == "0" and b"h3doctor: sglang exited" not in term.out, term.out.decode(errors="replace")
        assert b"Traceback" not in term.out
    finally:
        for call in stub.calls():  # a server Ctrl-C missed: a process of this test's own making
            try:
                os.kill(call["pid"], signal.SIGKILL)
            except ProcessLookupError:
                pass
        term.close()
    assert _left_behind(tmp_path) == []
