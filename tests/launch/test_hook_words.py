"""The hook's words in a real shell (issue 31 item 4): a launch that starts with warnings prints
at most five lines, the last of them the `h3doctor check` command of the full report; a server the
hook started that exits non-zero is explained (docs/security.md "Bars, the hook's words and manners")."""

from __future__ import annotations

import shlex
import subprocess

import pytest

from h3doctor.output.wrap import cells
from tests.launch.test_hook import CLEAN, PROFILE, run_hook, shell, stub  # noqa: F401 - fixtures

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
