"""The console entry's shortcut for the shell hook (h3doctor/entry.py): it may only ever answer
"clean" where the full CLI answers clean, quietly, and must leave everything else to the CLI."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from h3doctor.entry import parse_check_argv, parse_hook_argv

LAUNCH = ["sglang", "serve", "MiniMaxAI/MiniMax-H3", "--num-gpus", "4"]


@pytest.mark.parametrize("argv, expected", [
    (["check", "--hook", "--", *LAUNCH], (None, None, LAUNCH)),
    (["check", "--hook", "--argv-out", "f", "--", *LAUNCH], ("f", None, LAUNCH)),
    (["check", "--hook", "--argv-out", "f", "--profile", "4xH200", "--", *LAUNCH], ("f", "4xH200", LAUNCH)),
    (["check", "--hook", "--profile", "4xH200", "--argv-out", "f", "--", *LAUNCH], ("f", "4xH200", LAUNCH)),
    (["check", "--hook", "--", "--profile", "x"], (None, None, ["--profile", "x"])),  # after --: the launch's
])
def test_the_hooks_own_command_lines_take_the_shortcut(argv, expected):
    assert parse_hook_argv(argv) == expected


@pytest.mark.parametrize("argv", [
    ["check", "--", *LAUNCH],  # not the hook
    ["check", "--hook", *LAUNCH],  # no --
    ["check", "--hook", "--"],  # nothing to check
    ["check", "--hook", "--fail-on", "warning", "--", *LAUNCH],  # any other option
    ["check", "--hook", "--profile=4xH200", "--", *LAUNCH],
    ["check", "--hook", "--profile", "--", *LAUNCH],
    ["check", "--hook", "--profile", "a", "--profile", "b", "--", *LAUNCH],
    ["check", "--hook", "--profile", "", "--", *LAUNCH],
    ["lint", "--hook", "--", *LAUNCH],
])
def test_anything_else_goes_to_the_full_cli(argv):
    assert parse_hook_argv(argv) is None


@pytest.mark.parametrize("argv, expected", [
    (["check", "--", *LAUNCH], (None, "text", None, LAUNCH)),
    (["check", "--profile", "4xH200", "--format", "sarif", "--", *LAUNCH], ("4xH200", "sarif", None, LAUNCH)),
    (["check", "--output-file", "r.json", "--format", "json", "--", *LAUNCH], (None, "json", "r.json", LAUNCH)),
])
def test_a_plain_checks_command_line_takes_the_shortcut(argv, expected):
    assert parse_check_argv(argv) == expected


@pytest.mark.parametrize("argv", [
    ["check", *LAUNCH],  # no --
    ["check", "--hook", "--", *LAUNCH],  # the hook's own (its shortcut answers only "clean")
    ["check", "--fail-on", "warning", "--", *LAUNCH],  # any other option
    ["check", "--exec", "--allow-unsafe-exec", "--", *LAUNCH],  # what --exec runs is the CLI's to show and judge
    ["check", "--allow-unsafe-exec", "--profile", "4xH200", "--", *LAUNCH],
    ["check", "--format=json", "--", *LAUNCH],
    ["check", "--format", "--", *LAUNCH],
    ["check", "--profile", "a", "--profile", "b", "--", *LAUNCH],
    ["check", "--"],
    ["lint", "--", *LAUNCH],
])
def test_any_other_check_goes_to_the_full_cli(argv):
    assert parse_check_argv(argv) is None


def _run(entry: str, args: list[str], tmp_path) -> tuple[int, str, str]:
    env = {**os.environ, "H3DOCTOR_CACHE_DIR": str(tmp_path / "cache")}
    code = f"import sys; from h3doctor.{entry} import main; sys.argv = ['h3doctor', *sys.argv[1:]]; main()"
    proc = subprocess.run([sys.executable, "-c", code, *args], capture_output=True, text=True, env=env,
                          cwd=tmp_path, stdin=subprocess.DEVNULL, timeout=120)
    return proc.returncode, proc.stdout, proc.stderr


@pytest.mark.parametrize("launch", [
    LAUNCH,  # clean
    ["sglang", "serve", "MiniMaxAI/MiniMax-H3", "--num-gpus", "4", "--ring-degree", "2", "--ulysses-degree", "2",
     "--attention-backend", "sage_attn"],  # a finding with a corrected command
    ["sglang", "serve", "MiniMaxAI/MiniMax-H3", "--no-such-flag"],  # a parse error
    ["sglang", "serve", "--num-gpus", "4"],  # no model: no fix
    ["PATH=./bin", *LAUNCH],  # a PATH of its own (H3D963, a warning): not clean, so the CLI answers
])
@pytest.mark.parametrize("profile", ["4xH200", "no-such-profile"])
def test_the_entry_answers_as_the_full_cli(tmp_path, launch, profile):
    args = ["check", "--hook", "--argv-out", str(tmp_path / "argv"), "--profile", profile, "--", *launch]
    assert _run("entry", args, tmp_path) == _run("cli", args, tmp_path)


@pytest.mark.parametrize("launch", [
    LAUNCH,  # clean
    ["sglang", "serve", "MiniMaxAI/MiniMax-H3", "--num-gpus", "4", "--ring-degree", "2", "--ulysses-degree", "2",
     "--attention-backend", "sage_attn"],  # an error finding with a corrected command
    ["sglang", "serve", "MiniMaxAI/MiniMax-H3", "--no-such-flag"],  # a parse error
])
@pytest.mark.parametrize("options", [
    ["--profile", "4xH200"],
    ["--profile", "4xH200", "--format", "json"],
    ["--profile", "4xH200", "--format", "sarif"],
    ["--profile", "4xH200", "--format", "github"],
    ["--profile", "4xH200", "--format", "xml"],  # not a format: the CLI says so
    ["--profile", "no-such-profile"],  # an error: the CLI reports it
    ["--profile", "4xH200", "--output-file", "report.txt"],
])
def test_a_plain_check_answers_as_the_full_cli(tmp_path, launch, options):
    args = ["check", *options, "--", *launch]
    answers = []
    for entry in ("entry", "cli"):
        code, out, err = _run(entry, args, tmp_path)
        report = tmp_path / "report.txt"
        answers.append((code, out, err, report.read_text(encoding="utf-8") if report.exists() else None))
        report.unlink(missing_ok=True)
    assert answers[0] == answers[1]


def test_a_plain_check_does_not_load_the_cli(tmp_path):
    code = ("import sys, io, contextlib; from h3doctor.entry import check_fast_path\nbuf = io.StringIO()\n"
            "with contextlib.redirect_stdout(buf):\n"
            f"    answer = check_fast_path(['check', '--profile', '4xH200', '--', *{LAUNCH!r}, '--ring-degree', '2'])\n"
            "print(answer, 'typer' in sys.modules, 'h3doctor.cli' in sys.modules, 'rich' in sys.modules)")
    env = {**os.environ, "H3DOCTOR_CACHE_DIR": str(tmp_path)}
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=120).stdout
    assert out.split() == ["1", "False", "False", "False"]


def test_a_clean_hook_launch_does_not_load_the_cli(tmp_path):
    code = ("import sys; from h3doctor.entry import hook_fast_path; "
            f"print(hook_fast_path(['check', '--hook', '--profile', '4xH200', '--', *{LAUNCH!r}]), "
            "'typer' in sys.modules, 'h3doctor.cli' in sys.modules)")
    env = {**os.environ, "H3DOCTOR_CACHE_DIR": str(tmp_path)}
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=120).stdout
    assert out.split() == ["0", "False", "False"]


def test_the_collector_is_held_off_only_while_the_entry_answers(monkeypatch):
    """The entry raises the garbage collector's first threshold for its own answer, and the full
    CLI (and whoever called the entry) gets Python's thresholds back."""
    import gc

    from h3doctor import cli, entry

    before = gc.get_threshold()
    seen = []
    monkeypatch.setattr(entry, "hook_fast_path", lambda argv: seen.append(gc.get_threshold()) and None)
    monkeypatch.setattr(cli, "main", lambda: seen.append(gc.get_threshold()))
    monkeypatch.setattr(sys, "argv", ["h3doctor", "rules"])
    entry.main()
    assert seen == [(entry._CHECK_GC_THRESHOLD, *before[1:]), before] and gc.get_threshold() == before


def test_a_clean_hook_launch_exits_0_quietly_and_findings_still_go_to_the_cli(tmp_path):
    """The console entry leaves a clean hook launch at once (no interpreter teardown): exit 0,
    nothing written; a launch with findings is still answered by the full CLI (exit 1, its report)."""
    env = {**os.environ, "H3DOCTOR_CACHE_DIR": str(tmp_path)}
    run = ["import sys; from h3doctor.entry import main; sys.argv = ['h3doctor'] + sys.argv[1:]; main()"]
    clean = subprocess.run([sys.executable, "-c", *run, "check", "--hook", "--profile", "4xH200", "--", *LAUNCH],
                           capture_output=True, text=True, env=env, timeout=120)
    assert (clean.returncode, clean.stdout, clean.stderr) == (0, "", "")
    argv_out = tmp_path / "argv"
    found = subprocess.run([sys.executable, "-c", *run, "check", "--hook", "--argv-out", str(argv_out), "--profile",
                            "4xH200", "--", *LAUNCH, "--ring-degree", "2"], capture_output=True, text=True, env=env,
                           timeout=120)
    assert found.returncode == 1 and "H3D228" in found.stdout + found.stderr, found.stderr
