"""`h3doctor check --exec`: after a clean check h3doctor becomes the command, argv and exit status
and all. A stand-in `sglang` on PATH records what it was started with."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from launch_helpers import StubSglang

CLEAN = ["sglang", "serve", "MiniMaxAI/MiniMax-H3", "--num-gpus", "4"]
FAILING = ["sglang", "serve", "MiniMaxAI/MiniMax-H3", "--num-gpus", "4", "--ring-degree", "2", "--attention-backend", "sage_attn"]


@pytest.fixture
def stub(tmp_path):
    return StubSglang(tmp_path)


def h3doctor(stub: StubSglang, *args: str, env: dict | None = None, **popen) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "h3doctor", *args], capture_output=True, text=True,
                          env=stub.env(**(env or {})), timeout=60, **popen)


def test_clean_launch_becomes_the_command(stub):
    proc = subprocess.Popen([sys.executable, "-m", "h3doctor", "check", "--exec", "--profile", "4xH200", "--", *CLEAN],
                            env=stub.env(STUB_EXIT="7"), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    _out, err = proc.communicate(timeout=60)
    assert proc.returncode == 7, err
    [call] = stub.calls()
    assert call["argv"] == CLEAN[1:]
    assert call["pid"] == proc.pid  # the same process: exec, not a child (nor a shell in between)
    assert "✓ will start" in err  # the report went to stderr; stdout is the server's


def test_signal_is_the_servers_own(stub):
    proc = h3doctor(stub, "check", "--exec", "--profile", "4xH200", "--", *CLEAN, env={"STUB_SIGNAL": str(int(signal.SIGTERM))})
    assert proc.returncode == -signal.SIGTERM


# Words the shell hook and --exec must pass through untouched: no NUL (no argv word can hold one).
WORD = st.text(st.characters(blacklist_characters="\x00", blacklist_categories=("Cs",)), max_size=12)


@settings(max_examples=12, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(extra=st.lists(WORD, max_size=5), status=st.integers(min_value=0, max_value=255))
@example(extra=["--", "--help", "--profile", "cpu", "-h"], status=0)  # h3doctor's own options, after `--`
@example(extra=["a b", "'q'", '"d"', "$HOME", "*", "\\", "x\ny", "ünï", ""], status=255)
def test_argv_and_exit_status_are_identical(stub, extra, status):
    """With --force h3doctor launches whatever it is given, findings or not: argv and status identical."""
    stub.reset()
    argv = CLEAN + extra
    proc = h3doctor(stub, "check", "--exec", "--force", "--profile", "4xH200", "--", *argv, env={"STUB_EXIT": str(status)})
    assert proc.returncode == status, proc.stderr
    [call] = stub.calls()
    assert call["argv"] == argv[1:]


@settings(max_examples=10, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(value=WORD.filter(lambda w: w != ""))
def test_clean_launch_passes_any_flag_value_byte_for_byte(stub, value):
    stub.reset()
    argv = CLEAN + [f"--host={value}"]
    proc = h3doctor(stub, "check", "--exec", "--profile", "4xH200", "--", *argv, env={"STUB_EXIT": "3"})
    assert proc.returncode == 3, proc.stderr
    assert [c["argv"] for c in stub.calls()] == [argv[1:]]


def test_nothing_runs_through_a_shell(stub, tmp_path):
    marker = tmp_path / "marker"
    words = [f"--host=$(touch {marker})", f"--served-model-name=`touch {marker}`;touch {marker}", "--prompt", "*", "|", "&&"]
    proc = h3doctor(stub, "check", "--exec", "--force", "--profile", "4xH200", "--", *CLEAN, *words, cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert stub.calls()[0]["argv"] == CLEAN[1:] + words
    assert not marker.exists()


def test_findings_stop_the_launch(stub):
    proc = h3doctor(stub, "check", "--exec", "--profile", "4xH200", "--", *FAILING)
    assert proc.returncode == 1 and stub.calls() == []
    assert "not launching: H3D228 (error), H3D305 (error)" in proc.stderr
    assert proc.stdout == ""


def test_fail_on_warning_stops_a_launch_with_warnings(stub):
    argv = CLEAN + ["--performance", "speed"]  # H3D021: an abbreviation sglang parses and then drops (a warning)
    proc = h3doctor(stub, "check", "--exec", "--fail-on", "warning", "--profile", "4xH200", "--", *argv)
    assert proc.returncode == 1 and stub.calls() == [] and "H3D021 (warning)" in proc.stderr
    proc = h3doctor(stub, "check", "--exec", "--profile", "4xH200", "--", *argv)
    assert proc.returncode == 0 and [c["argv"] for c in stub.calls()] == [argv[1:]]


@pytest.mark.parametrize("argv,env", [
    (FAILING, {}),
    # the fix is an environment word: it reaches the program's environment, not its argv
    (["sglang", "serve", "MiniMaxAI/MiniMax-H3", "--num-gpus", "4", "--minimax-h3-adaln-online"],
     {"SGLANG_DIFFUSION_MINIMAX_H3_ADALN_GPU_PLANS": "0"}),
])
def test_apply_fixes_runs_exactly_the_corrected_argv(stub, argv, env):
    report = json.loads(h3doctor(stub, "check", "--format", "json", "--profile", "4xH200", "--", *argv, env=env).stdout)
    corrected = report["corrected_argv"]
    assert corrected and corrected != argv
    proc = h3doctor(stub, "check", "--exec", "--apply-fixes", "--profile", "4xH200", "--", *argv, env=env)
    assert proc.returncode == 0, proc.stderr
    [call] = stub.calls()
    words = [w for w in corrected if "=" in w and w.split("=", 1)[0].isupper()]  # leading NAME=value words
    assert call["argv"] == corrected[len(words) + 1 :]
    assert all(call["env"][w.split("=", 1)[0]] == w.split("=", 1)[1] for w in words)
    assert "--apply-fixes: launching the corrected command" in proc.stderr


def test_apply_fixes_refuses_without_a_corrected_command(stub):
    argv = ["sglang", "serve", "MiniMaxAI/MiniMax-H3", "--num-gpus", "1", "--ring-degree", "2", "--model-variant", "hybrid"]
    report = json.loads(h3doctor(stub, "check", "--format", "json", "--profile", "4xH200", "--", *argv).stdout)
    assert report["fix_status"] == "no-fix"
    proc = h3doctor(stub, "check", "--exec", "--apply-fixes", "--profile", "4xH200", "--", *argv)
    assert proc.returncode == 1 and stub.calls() == []
    assert "no corrected command (no-fix)" in proc.stderr


def test_force_launches_the_original_and_says_what_it_ignored(stub):
    proc = h3doctor(stub, "check", "--exec", "--force", "--profile", "4xH200", "--", *FAILING, env={"STUB_EXIT": "5"})
    assert proc.returncode == 5
    assert stub.calls()[0]["argv"] == FAILING[1:]
    assert "--force: launching the command as given, ignoring H3D228 (error), H3D305 (error)" in proc.stderr


def test_missing_sglang_is_127_as_a_shell_says(stub):
    env = stub.env()
    env["PATH"] = str(stub.bin.parent / "empty")  # no sglang anywhere
    proc = subprocess.run([sys.executable, "-m", "h3doctor", "check", "--exec", "--profile", "4xH200", "--", *CLEAN],
                          capture_output=True, text=True, env=env, timeout=60)
    assert proc.returncode == 127
    assert "h3doctor: sglang: command not found" in proc.stderr


def test_wrapper_words_run_as_given(stub):
    """Leading NAME=value words become the environment (the shell's job); `env` and `nohup` are
    programs and run as typed."""
    argv = ["SGLANG_CACHE_DIT_ENABLED=false", "env", "STUB_VAR=1", "nohup", *CLEAN]
    proc = h3doctor(stub, "check", "--exec", "--profile", "4xH200", "--", *argv, stdin=subprocess.DEVNULL)
    assert proc.returncode == 0, proc.stderr
    [call] = stub.calls()
    assert call["argv"] == CLEAN[1:]
    assert call["env"] == {"SGLANG_CACHE_DIT_ENABLED": "false", "STUB_VAR": "1"}


def test_recipe_env_reaches_the_server(stub, tmp_path):
    recipe = tmp_path / "r.yaml"
    recipe.write_text("profile: 4xH200\ncommand: sglang serve MiniMaxAI/MiniMax-H3 --num-gpus 4\n"
                      "env:\n  SGLANG_CACHE_DIT_ENABLED: \"false\"\n", encoding="utf-8")
    proc = h3doctor(stub, "check", "--exec", "--recipe", str(recipe))
    assert proc.returncode == 0, proc.stderr
    [call] = stub.calls()
    assert call["argv"] == CLEAN[1:] and call["env"] == {"SGLANG_CACHE_DIT_ENABLED": "false"}


@pytest.mark.parametrize("args,message", [
    (["--apply-fixes"], "give --exec too"),
    (["--force"], "give --exec too"),
    (["--allow-unsafe-exec"], "give --exec too"),
    (["--exec", "--apply-fixes", "--force"], "not both"),
    (["--exec", "--hook"], "--hook never launches"),
    (["--argv-out", "f"], "--argv-out is for the shell hook"),
])
def test_launch_option_misuse_is_a_usage_error(stub, args, message):
    proc = h3doctor(stub, "check", *args, "--profile", "4xH200", "--", *CLEAN)
    assert proc.returncode == 2 and message in proc.stderr and stub.calls() == []


@pytest.mark.skipif(not os.path.exists("/proc/self/environ"), reason="the stand-in reads its start-up environment from /proc")
@pytest.mark.parametrize("locale", [{"LANG": "C"}, {"LC_CTYPE": "C"}, {"LC_CTYPE": "POSIX", "LANG": "C.UTF-8"},
                                    {"LC_CTYPE": "C.UTF-8"}, {"LC_ALL": "C"}, {}])
def test_exec_passes_the_environment_exactly(stub, tmp_path, locale):
    """The server starts with h3doctor's environment, the recipe's `env` and the leading words, and
    nothing else: not the LC_CTYPE=C.UTF-8 Python sets for itself in the C locale."""
    env = {k: v for k, v in stub.env().items() if not k.startswith(("LC_", "LANG", "PYTHONUTF8", "PYTHONCOERCE"))}
    env.update(locale)
    recipe = tmp_path / "r.yaml"
    recipe.write_text("profile: 4xH200\ncommand: STUB_VAR_WORD=1 sglang serve MiniMaxAI/MiniMax-H3 --num-gpus 4\n"
                      "env:\n  SGLANG_CACHE_DIT_ENABLED: \"false\"\n", encoding="utf-8")
    proc = subprocess.run([sys.executable, "-m", "h3doctor", "check", "--exec", "--recipe", str(recipe)],
                          capture_output=True, text=True, env=env, timeout=60)
    assert proc.returncode == 0, proc.stderr
    [call] = stub.calls()
    assert call["startup_env"] == {**env, "SGLANG_CACHE_DIT_ENABLED": "false", "STUB_VAR_WORD": "1"}


def test_locale_coercion_is_recognised_where_there_is_no_proc(monkeypatch):
    import types

    from h3doctor.launch import execute

    monkeypatch.setattr(execute, "_startup_value", lambda name: execute._UNKNOWN)
    for name in ("PYTHONUTF8", "PYTHONCOERCECLOCALE", "LC_ALL"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setattr(sys, "flags", types.SimpleNamespace(utf8_mode=1))  # what the C locale turns on
    coerced = {"LC_CTYPE": "C.UTF-8", "LANG": "C"}
    execute.undo_locale_coercion(coerced)
    assert coerced == {"LANG": "C"}
    monkeypatch.setattr(sys, "flags", types.SimpleNamespace(utf8_mode=0))  # a UTF-8 locale: set by the user
    chosen = {"LC_CTYPE": "C.UTF-8"}
    execute.undo_locale_coercion(chosen)
    assert chosen == {"LC_CTYPE": "C.UTF-8"}
