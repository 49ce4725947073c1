"""lint's, explain's and suggest's text folded to the terminal's width at word boundaries, as
check's is (output/lines.py): no line wider than $COLUMNS but a command to paste, which is never
folded (docs/security.md "Bars, the hook's words and manners")."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys

import pytest

from h3doctor.output.wrap import cells
from repo_paths import REPO

LONG_LINE = ("ValueError: num_gpus (1) must be divisible by (dp_size * tp_size) = 2 "
             "while the scheduler of rank 0 was starting the model runner on this host")
LAUNCH = ["sglang", "serve", "MiniMaxAI/MiniMax-H3", "--tp-size", "2"]
COMMANDS = {
    "lint": ["lint", str(REPO / "examples"), "--no-config"],
    "explain": ["explain", "--profile", "4xH200", LONG_LINE, "--", *LAUNCH],
    "suggest": ["suggest", "--profile", "4xH200", "--runner-ups", "2"],
}


def _run(args: list[str], columns: int | None, tmp_path) -> str:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("SGLANG_", "FORCE_COLOR", "COLUMNS"))}
    env.update({"H3DOCTOR_CACHE_DIR": str(tmp_path / "cache"), "NO_COLOR": "1"})
    if columns is not None:
        env["COLUMNS"] = str(columns)
    done = subprocess.run([sys.executable, "-m", "h3doctor", *args], capture_output=True, text=True, env=env,
                          timeout=120, cwd=tmp_path)
    assert done.returncode in (0, 1), done.stderr
    return re.sub(r"[0-9]+\.[0-9]+ s;", "0 s;", done.stdout)  # suggest's search time differs from run to run


def _commands(command: str, data: dict) -> set[str]:
    """The lines of the text report that carry a command to paste: exempt from the width."""
    if command == "lint":
        return {result["corrected_command"] for file in data["files"] for launch in file["launches"]
                for result in launch["results"] if result["corrected_command"]}
    if command == "explain":
        return {" ".join(LAUNCH), data["corrected_command"]} - {None}
    return {"    " + item["command"] for item in [data["best"], *data["runner_ups"]]}


def _exempt(line: str, commands: set[str]) -> bool:
    # lint's corrected command ends its own `path:line: corrected for TARGET: ` line
    return any(line == c or line.endswith(": " + c) for c in commands)


@pytest.fixture(scope="module")
def reports(tmp_path_factory):
    """Each command's JSON (for its commands) and its text at 80 and 120 columns and unfolded."""
    tmp = tmp_path_factory.mktemp("fold")
    out = {}
    for command, args in COMMANDS.items():
        split = args.index("--") if "--" in args else len(args)
        data = json.loads(_run([*args[:split], "--format", "json", *args[split:]], None, tmp))
        out[command] = (data, {width: _run(args, width, tmp) for width in (80, 120, None)})
    return out


@pytest.mark.parametrize("command", sorted(COMMANDS))
@pytest.mark.parametrize("width", [80, 120])
def test_no_line_but_a_command_exceeds_the_width(command, width, reports):
    data, texts = reports[command]
    commands = _commands(command, data)
    too_wide = [line for line in texts[width].splitlines() if cells(line) > width and not _exempt(line, commands)]
    assert not too_wide, too_wide
    # something was folded (the case is long enough to be a test) and every command is there whole
    assert max(cells(line) for line in texts[None].splitlines()) > width
    assert all(any(c in line for line in texts[width].splitlines()) for c in commands), commands


@pytest.mark.parametrize("command", sorted(COMMANDS))
def test_folding_changes_only_where_lines_break(command, reports):
    """The words of the report are the same at every width: only the line breaks differ."""
    _, texts = reports[command]
    assert texts[80].split() == texts[None].split() == texts[120].split()
