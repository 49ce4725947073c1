"""No exit 3 on hostile bytes (issue 27, item 8): every input reader that could raise on them gives
a located error with a documented exit code instead. (A file name that is not UTF-8 is in
tests/output/test_inert_output.py, with the formats that show it.)"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

from h3doctor.errors import UsageError
from repo_paths import REPO

PACKAGE = REPO / "h3doctor"
H200 = json.loads((PACKAGE / "host" / "builtin_profiles" / "4xH200.json").read_text(encoding="utf-8"))


def run(*args: str, cwd: Path, env: dict | None = None, stdin=subprocess.DEVNULL) -> subprocess.CompletedProcess:
    full = {k: v for k, v in os.environ.items() if not k.startswith("SGLANG_")}
    full.update({"NO_COLOR": "1", "COLUMNS": "200", **(env or {})})
    return subprocess.run([sys.executable, "-m", "h3doctor", *args], capture_output=True, text=True, cwd=cwd,
                          env=full, stdin=stdin, timeout=120)


def usage_error(proc: subprocess.CompletedProcess, location: str, words: str) -> None:
    assert proc.returncode == 2, (proc.returncode, proc.stderr)
    assert "Traceback" not in proc.stderr and "internal error" not in proc.stderr
    assert proc.stderr.startswith(f"error: {location}") and words in proc.stderr, proc.stderr


# --- digits: str.isdigit() is true of '²' and '٩' -------------------------------------------------

@pytest.mark.parametrize("cc", ["².0", "9.²", "٩.0", "9.٠"])
def test_a_profile_capability_in_other_digits_is_a_located_usage_error(tmp_path, cc):
    (tmp_path / "p.json").write_text(json.dumps({**H200, "compute_capability": cc}), encoding="utf-8")
    proc = run("check", "--profile", "./p.json", "--", "sglang", "serve", "MiniMaxAI/MiniMax-H3", cwd=tmp_path)
    usage_error(proc, "./p.json", "compute_capability")


def test_a_gpu_count_in_other_digits_is_no_profile(tmp_path):
    """`\\d` in a str pattern matches '٤' and int() reads it: h3doctor's own names take ASCII digits."""
    proc = run("check", "--profile", "٤xH200", "--", "sglang", "serve", "MiniMaxAI/MiniMax-H3", cwd=tmp_path)
    usage_error(proc, "--profile", "no such hardware profile")


def test_no_bare_isdigit_on_input_in_the_package():
    """Every digit test goes through h3doctor/digits.py (ASCII digits only): a bare `.isdigit()`,
    `.isnumeric()` or `.isdecimal()` elsewhere is the class of '²'."""
    bare = re.compile(r"\.(isdigit|isnumeric|isdecimal)\(\)")
    found = [f"{p.relative_to(PACKAGE)}:{n}" for p in PACKAGE.rglob("*.py") if p.name != "digits.py"
             for n, line in enumerate(p.read_text(encoding="utf-8").splitlines(), 1) if bare.search(line)]
    assert found == []


# --- NUL: no program or environment can hold one ---------------------------------------------------

@pytest.fixture
def fake_sglang(tmp_path):
    bindir = tmp_path / "bin"
    bindir.mkdir()
    marker = tmp_path / "started"
    (bindir / "sglang").write_text(f"#!/bin/sh\ntouch {marker}\n", encoding="utf-8")
    (bindir / "sglang").chmod(0o755)
    return {"PATH": f"{bindir}{os.pathsep}{os.environ.get('PATH', '')}"}, marker


@pytest.mark.parametrize("recipe, where, words", [
    ('command: "sglang serve MiniMaxAI/MiniMax-H3 --served-model-name a\\0b"\n', "r.yaml:2:", "word 5 holds a NUL"),
    ('command: [sglang, serve, MiniMaxAI/MiniMax-H3, "--served-model-name=\\0"]\n', "r.yaml:2:", "word 4 holds a NUL"),
    ('command: sglang serve MiniMaxAI/MiniMax-H3\nenv:\n  CUDA_VISIBLE_DEVICES: "0\\0"\n', "r.yaml:4:", "CUDA_VISIBLE_DEVICES holds a NUL"),
])
def test_a_nul_in_a_recipe_is_a_located_usage_error_before_exec(tmp_path, fake_sglang, recipe, where, words):
    env, marker = fake_sglang
    (tmp_path / "r.yaml").write_text("targets: [4xH200]\n" + recipe, encoding="utf-8")
    for extra in ([], ["--exec"]):
        usage_error(run("check", "--recipe", "r.yaml", *extra, cwd=tmp_path, env=env), where, words)
    assert not marker.exists()
    proc = run("lint", "--format", "json", "r.yaml", cwd=tmp_path)
    [finding] = json.loads(proc.stdout)["findings"]
    assert proc.returncode == 1 and words in finding["message"] and f"r.yaml:{finding['line']}:".startswith(where)


def test_a_nul_in_an_env_file_is_a_located_usage_error(tmp_path, fake_sglang):
    env, marker = fake_sglang
    (tmp_path / "e.env").write_bytes(b"A=1\nB=2\x00x\n")
    proc = run("check", "--profile", "4xH200", "--exec", "--", "docker", "run", "--env-file", "e.env",
               "lmsysorg/sglang:v0.5.23", "sglang", "serve", "MiniMaxAI/MiniMax-H3", cwd=tmp_path, env=env)
    usage_error(proc, "e.env:2", "NUL")
    assert not marker.exists()


@given(word=st.text(st.characters(blacklist_categories=("Cs",)), max_size=12) | st.sampled_from(["\0", "a\0", "²", "\udcff"]))
@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
def test_any_recipe_word_or_env_value_loads_or_is_a_located_usage_error(tmp_path, word):
    from h3doctor.inputs.recipe import load_recipe

    text = json.dumps({"targets": ["4xH200"], "command": ["sglang", "serve", "MiniMaxAI/MiniMax-H3", word],
                       "env": {"A": word}})
    path = tmp_path / "r.yaml"
    path.write_bytes(text.encode("utf-8", "surrogatepass"))
    try:
        recipe = load_recipe(str(path))
    except UsageError as exc:
        assert exc.location and exc.location.startswith(str(path)), exc
        return
    assert "\0" not in "".join(recipe.command) + "".join(recipe.env.values())


# --- files that refuse a non-blocking read ---------------------------------------------------------

def test_the_one_reader_never_hands_a_caller_none(monkeypatch):
    """A descriptor with nothing to give without waiting (as /proc/kmsg, which calls itself a
    regular file: here a pipe the reader is told is one) is a located read error, never None."""
    import stat

    from h3doctor.safeload import LoadError, read_bounded, read_head

    r, w = os.pipe()
    monkeypatch.setattr(stat, "S_ISREG", lambda mode: True)
    try:
        for read in (lambda p: read_bounded(p, max_bytes=100, what="profile"), lambda p: read_head(p, max_bytes=8, what="x")):
            with pytest.raises(LoadError, match="without waiting"):
                read(f"/proc/self/fd/{r}")
    finally:
        os.close(r)
        os.close(w)


@pytest.mark.skipif(not os.access("/proc/kmsg", os.R_OK), reason="needs a readable /proc/kmsg (root, Linux)")
def test_proc_kmsg_is_a_located_error_in_check_lint_and_explain(tmp_path):
    (tmp_path / "k.yaml").symlink_to("/proc/kmsg")
    usage_error(run("check", "--profile", "/proc/kmsg", "--", "sglang", "serve", "MiniMaxAI/MiniMax-H3", cwd=tmp_path),
                "/proc/kmsg", "cannot read")
    usage_error(run("explain", "--log", "/proc/kmsg", cwd=tmp_path), "/proc/kmsg", "cannot read")
    proc = run("lint", "--format", "json", "/proc/kmsg", cwd=tmp_path)  # named: read, and a located error
    assert proc.returncode == 1 and "cannot read" in json.loads(proc.stdout)["findings"][0]["message"]
    # a link to it from the linted tree leaves the repository: never opened (docs/security.md, lint's confinement)
    proc = run("lint", "--format", "json", "--fail-on", "warning", "k.yaml", cwd=tmp_path)
    assert proc.returncode == 1 and json.loads(proc.stdout)["findings"][0]["rule"] == "H3DL006"


@pytest.mark.parametrize("command", [["explain", "-"], ["lint", "-"]])
def test_a_non_blocking_empty_stdin_is_a_located_error(tmp_path, command):
    r, w = os.pipe()
    os.set_blocking(r, False)
    try:
        proc = run(*command, cwd=tmp_path, stdin=r)
    finally:
        os.close(r)
        os.close(w)
    usage_error(proc, "-", "without waiting")


# --- TOML nested past tomllib's recursion ------------------------------------------------------------

@pytest.mark.skipif(sys.version_info < (3, 11), reason="tomllib")
def test_a_deeply_nested_pyproject_toml_is_a_located_usage_error(tmp_path):
    (tmp_path / "pyproject.toml").write_text("[tool.h3doctor]\nx = " + "[" * 100_000 + "]" * 100_000 + "\n",
                                             encoding="utf-8")
    (tmp_path / "a.sh").write_text("sglang serve MiniMaxAI/MiniMax-H3\n", encoding="utf-8")
    usage_error(run("lint", "--target", "4xH200", "a.sh", cwd=tmp_path), str(tmp_path / "pyproject.toml"), "nested deeper")
    (tmp_path / "pyproject.toml").write_text("[tool.h3doctor]\nx = " + "[" * 70 + "]" * 70 + "\n", encoding="utf-8")
    usage_error(run("lint", "--target", "4xH200", "a.sh", cwd=tmp_path), str(tmp_path / "pyproject.toml"), "nested deeper")
