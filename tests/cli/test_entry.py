"""The console entry's shortcut for the shell hook (h3doctor/entry.py): it may only ever answer
"clean" where the full CLI answers clean, quietly, and must leave everything else to the CLI."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from h3doctor.entry import check_fast_path, parse_argv
from h3doctor.options import CHECK_OPTIONS

LAUNCH = ["sglang", "serve", "MiniMaxAI/MiniMax-H3", "--num-gpus", "4"]


def _given(argv):
    """The options parse_argv read that differ from their defaults, and the launch words."""
    parsed = parse_argv(argv)
    if parsed is None:
        return None
    values, words = parsed
    return {opt.name: values[opt.name] for opt in CHECK_OPTIONS if values[opt.name] != opt.default}, words


@pytest.mark.parametrize("argv, expected", [
    (["check", "--hook", "--", *LAUNCH], {"hook": True}),
    (["check", "--hook", "--argv-out", "f", "--profile", "4xH200", "--", *LAUNCH],
     {"hook": True, "argv_out": "f", "profile": "4xH200"}),
    (["check", "--profile=4xH200", "--format", "json", "--", *LAUNCH], {"profile": "4xH200", "format": "json"}),
    (["check", "--fail-on", "warning", "--request-steps", "8", "--request-seconds", "2.5", "--", *LAUNCH],
     {"fail_on": "warning", "request_steps": 8, "request_seconds": 2.5}),
    (["check", "--", *LAUNCH], {}),
])
def test_the_fast_path_reads_checks_options(argv, expected):
    assert _given(argv) == (expected, LAUNCH)


def test_words_after_the_double_dash_are_the_launchs():
    assert _given(["check", "--hook", "--", "--profile", "x"]) == ({"hook": True}, ["--profile", "x"])


@pytest.mark.parametrize("argv", [
    ["check", *LAUNCH],  # no --
    ["check", "--hook", "--"],  # nothing to check
    ["check", "--profle", "4xH200", "--", *LAUNCH],  # no such option: the CLI says so
    ["check", "--profile", "--", *LAUNCH],  # no value
    ["check", "--profile", "a", "--profile", "b", "--", *LAUNCH],  # twice: click keeps the last, the CLI answers
    ["check", "--profile", "", "--", *LAUNCH],
    ["check", "--format", "xml", "--", *LAUNCH],  # no such format: the CLI names them
    ["check", "--request-steps", "many", "--", *LAUNCH],  # not a number
    ["check", "--no-cache=yes", "--", *LAUNCH],
    ["lint", "--", *LAUNCH],
])
def test_anything_the_table_does_not_read_plainly_goes_to_the_full_cli(argv):
    assert parse_argv(argv) is None


@pytest.mark.parametrize("argv", [
    ["check", "--hook", "--", *LAUNCH],  # the hook's own (its shortcut answers only "clean")
    ["check", "--exec", "--allow-unsafe-exec", "--", *LAUNCH],  # what --exec runs is the CLI's to show and judge
    ["check", "--allow-unsafe-exec", "--profile", "4xH200", "--", *LAUNCH],  # a usage error: the CLI's
    ["check", "--profile", "4xH200", "--format", "sarif", "--", *LAUNCH],  # lint's records: the CLI's
    ["check", "--profile", "4xH200", "--output-file", "r.json", "--", *LAUNCH],
])
def test_these_checks_go_to_the_full_cli(argv):
    assert check_fast_path(argv) is None


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
    ["--model-path", "MiniMaxAI/MiniMax-H3", "--profle", "4xH200"],  # an option of h3doctor's misspelt: exit 2
])
@pytest.mark.parametrize("options", [
    ["--profile", "4xH200"],
    ["--profile", "4xH200", "--format", "json"],
    ["--profile", "4xH200", "--fail-on", "warning", "--show-config"],
    ["--profile=4xH200", "--format", "json", "--request-steps", "8", "--request-resolution", "1344x768"],
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


# What the fast path must never import: the CLI's own (Typer and Rich), the loaders behind the rules
# cache (PyYAML, jsonschema), and the standard library that records (h3doctor/record.py) and
# annotation-only names keep off a check (`dataclasses` brings `inspect`, `ast`, `dis`, `tokenize`).
BLOCKED = ("typer", "rich", "jsonschema", "yaml", "dataclasses", "typing", "inspect", "pathlib", "h3doctor.cli")
_BLOCKER = """
import sys
class Blocker:  # a meta-path finder (importlib.abc would import typing itself)
    def find_spec(self, name, path=None, target=None):
        if name in BLOCKED:
            raise ImportError(f"the fast path imported {name}")
        return None
BLOCKED = set(sys.argv[1:])
sys.meta_path.insert(0, Blocker())
"""


@pytest.mark.parametrize("argv, answer", [
    (["check", "--hook", "--profile", "4xH200", "--", *LAUNCH], 0),
    (["check", "--profile", "4xH200", "--", *LAUNCH, "--ring-degree", "2"], 1),
    (["check", "--profile", "4xH200", "--format", "json", "--", *LAUNCH, "--ring-degree", "2"], 1),
    (["check", "--profile", "4xH200", "--fail-on", "info", "--show-config", "--", *LAUNCH], 0),
])
def test_the_fast_path_answers_with_the_cli_typing_dataclasses_inspect_and_pathlib_blocked(tmp_path, argv, answer):
    """Run with an import of any of BLOCKED raising (a meta-path finder in front of all others), the
    fast path still answers: it never needed them (a needed one would turn the answer into None,
    the full CLI's)."""
    env = {**os.environ, "H3DOCTOR_CACHE_DIR": str(tmp_path)}
    subprocess.run([sys.executable, "-m", "h3doctor", "rules"], capture_output=True, timeout=120, env=env)  # warm cache
    code = _BLOCKER + (
        "import io, contextlib\nfrom h3doctor.entry import check_fast_path, hook_fast_path\n"
        f"argv = {argv!r}\n"
        "with contextlib.redirect_stdout(io.StringIO()):\n"
        "    answer = (hook_fast_path if '--hook' in argv else check_fast_path)(argv)\n"
        "print(answer, sorted(m for m in BLOCKED if m in sys.modules))")
    proc = subprocess.run([sys.executable, "-c", code, *BLOCKED], capture_output=True, text=True, env=env, timeout=120)
    assert proc.stdout.split("\n")[0] == f"{answer} []", proc.stderr
