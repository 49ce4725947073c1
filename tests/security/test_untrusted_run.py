"""Nothing from an input runs before `--exec`: a recipe's `env:`, `VAR=value` words in front of a
launch, relative paths and the directory a recipe sits in never reach a process h3doctor starts to
judge the launch (the probe child), and never set h3doctor's own settings. Every hostile file is
built in tmp_path; the payloads write a marker file when (and only when) they run.

The probe child runs against fake torch and NVML modules found through h3doctor's own PYTHONPATH
(the user's environment, which the probe keeps): fast, and with GPUs for CUDA_VISIBLE_DEVICES."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from h3doctor.host import probe as probe_mod
from tests.host.test_probe import H200, fakes
from repo_paths import REPO

LAUNCH = "sglang serve MiniMaxAI/MiniMax-H3 --num-gpus 4"
# Every variable that makes Python or the dynamic loader (or a shell) load a file it names.
RUNS_CODE = ("PYTHONPATH", "PYTHONHOME", "PYTHONSTARTUP", "PYTHONUSERBASE", "PYTHONEXECUTABLE", "PYTHONPLATLIBDIR",
             "PYTHONSAFEPATH", "PYTHONNOUSERSITE", "PYTHONINSPECT", "PYTHONWARNINGS", "PYTHONBREAKPOINT",
             "LD_PRELOAD", "LD_LIBRARY_PATH", "LD_AUDIT", "DYLD_INSERT_LIBRARIES", "DYLD_LIBRARY_PATH",
             "DYLD_FRAMEWORK_PATH", "BASH_ENV", "ENV", "PATH", "PERL5LIB", "NODE_OPTIONS")

PAYLOAD = "import pathlib\npathlib.Path({marker!r}).write_text('ran')\n"


def plant(root: Path, marker: Path) -> Path:
    """A directory whose sitecustomize.py, usercustomize.py, torch and pynvml packages run the payload."""
    root.mkdir(parents=True, exist_ok=True)
    code = PAYLOAD.format(marker=str(marker))
    for name in ("sitecustomize.py", "usercustomize.py", "pynvml.py"):
        (root / name).write_text(code, encoding="utf-8")
    (root / "torch").mkdir(exist_ok=True)
    (root / "torch" / "__init__.py").write_text(code, encoding="utf-8")
    return root


@pytest.fixture
def host(tmp_path):
    """h3doctor's own environment: a 4xH200 host (fake torch and NVML on its PYTHONPATH), its own
    cache directory, no sglang or device variables."""
    keep = {k: v for k, v in os.environ.items()
            if not k.startswith(("SGLANG_", "CUDA_", "HIP_", "ROCR_", "H3DOCTOR_", "PYTHON"))}
    return {**keep, "PYTHONPATH": fakes(tmp_path, torch={"cuda": "13.0", "devices": H200}, nvml={"devices": H200}),
            "H3DOCTOR_CACHE_DIR": str(tmp_path / "own-cache"), "NO_COLOR": "1", "COLUMNS": "200"}


def h3doctor(*args: str, env: dict, cwd: Path) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "h3doctor", *args], capture_output=True, text=True, env=env,
                          cwd=cwd, timeout=120, stdin=subprocess.DEVNULL)


def check_json(recipe: Path, env: dict, cwd: Path, *extra: str) -> dict:
    proc = h3doctor("check", "--format", "json", "--recipe", str(recipe), *extra, env=env, cwd=cwd)
    assert proc.returncode in (0, 1), proc.stderr
    return json.loads(proc.stdout)


def write_recipe(path: Path, command: str, env: dict[str, str]) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    lines = [f"command: {command}", "env:"] + [f"  {k}: {json.dumps(v)}" for k, v in env.items()]
    path.write_text("\n".join(lines) + "\n" if env else f"command: {command}\n", encoding="utf-8")
    return path


# -- reproducer: a recipe's env, VAR=value words and relative paths run nothing ----------------

@pytest.mark.parametrize("how", ["env", "env-relative", "words", "words-relative", "home", "startup", "userbase"])
def test_a_recipe_runs_no_code_in_the_probe(tmp_path, host, how):
    marker = tmp_path / "ran"
    plant(tmp_path / "work" / "evil", marker)
    env, command = {}, LAUNCH
    if how == "env":
        env = {"PYTHONPATH": "./evil"}
    elif how == "env-relative":
        env = {"PYTHONPATH": "evil"}  # relative to wherever the child starts
    elif how == "words":
        command = f"PYTHONPATH=./evil {LAUNCH}"
    elif how == "words-relative":
        command = f"PYTHONPATH=evil:{tmp_path / 'work' / 'evil'} {LAUNCH}"
    elif how == "home":
        env = {"PYTHONHOME": str(tmp_path / "work" / "evil")}
    elif how == "startup":
        env = {"PYTHONSTARTUP": str(tmp_path / "work" / "evil" / "sitecustomize.py"), "PYTHONINSPECT": "1"}
    else:
        base = tmp_path / "work" / "evil"
        plant(base / "lib" / f"python{sys.version_info[0]}.{sys.version_info[1]}" / "site-packages", marker)
        env = {"PYTHONUSERBASE": str(base)}
    recipe = write_recipe(tmp_path / "work" / "r.yaml", command, env)
    data = check_json(recipe, host, tmp_path / "work", "--no-cache")
    assert not marker.exists(), "code from the recipe ran before anything was launched"
    hw = data["hardware"]
    assert hw["platform"] == "cuda" and hw["gpu_count"] == 4  # the probe itself worked (the user's fakes)
    assert set(env or {"PYTHONPATH": ""}) <= set(hw["probe_env_not_applied"])


@pytest.mark.parametrize("prefix", [["PYTHONPATH=./evil"], ["env", "LD_PRELOAD=./evil/x.so", "PYTHONPATH=evil"]])
def test_a_pasted_launch_line_runs_no_code_in_the_probe(tmp_path, host, prefix):
    marker = tmp_path / "ran"
    plant(tmp_path / "evil", marker)
    proc = h3doctor("check", "--format", "json", "--no-cache", "--", *prefix, *LAUNCH.split(), env=host, cwd=tmp_path)
    assert proc.returncode in (0, 1), proc.stderr
    assert not marker.exists()
    assert "PYTHONPATH" in json.loads(proc.stdout)["hardware"]["probe_env_not_applied"]


def test_the_recipes_directory_and_the_current_one_are_never_imported_from(tmp_path, host):
    marker = tmp_path / "ran"
    work = plant(tmp_path / "work", marker)  # the current directory
    recipe = write_recipe(plant(tmp_path / "pr", marker) / "r.yaml", LAUNCH, {})  # the recipe's
    host = {k: v for k, v in host.items() if k != "PYTHONPATH"}  # the child looks for the real torch, not these
    data = check_json(recipe, host, work, "--no-cache")
    assert not marker.exists()
    assert data["hardware"]["probe_env_not_applied"] == []


def test_an_empty_pythonpath_entry_does_not_reach_the_current_directory(tmp_path, host, monkeypatch):
    """`PYTHONPATH=:/x` (an empty entry: the current directory) in h3doctor's own environment: the
    child starts in an empty directory of its own, so that entry finds nothing of the user's."""
    marker = tmp_path / "ran"
    monkeypatch.chdir(plant(tmp_path / "checkout", marker))
    child_env = {**host, "PYTHONPATH": os.pathsep + host["PYTHONPATH"]}
    obs, run = probe_mod.run_child(child_env, 60.0)
    assert run["outcome"] == "ok", run
    assert not marker.exists()
    assert obs["torch"]["ok"] and obs["nvml"]["count"] == 4  # the user's own PYTHONPATH entries still count


def test_only_platform_variables_reach_the_child():
    base = {"PATH": "/usr/bin", "PYTHONPATH": "/opt/mine", "CUDA_VISIBLE_DEVICES": "0,1", "HIP_VISIBLE_DEVICES": "0"}
    launch = {**{name: "./evil" for name in RUNS_CODE}, "CUDA_VISIBLE_DEVICES": "1",
              "SGLANG_DIFFUSION_PLATFORM_OVERRIDE": "cuda", "H3DOCTOR_CACHE_DIR": "./c", "SGLANG_OTHER": "x"}
    child, withheld = probe_mod.child_environment(base, launch)
    assert child == {"PATH": "/usr/bin", "PYTHONPATH": "/opt/mine", "CUDA_VISIBLE_DEVICES": "1",
                     "SGLANG_DIFFUSION_PLATFORM_OVERRIDE": "cuda"}  # HIP_VISIBLE_DEVICES: the launch unsets it
    assert set(RUNS_CODE) | {"H3DOCTOR_CACHE_DIR", "SGLANG_OTHER"} == set(withheld)
    assert "CUDA_VISIBLE_DEVICES" not in withheld and "HIP_VISIBLE_DEVICES" not in withheld
    assert not set(probe_mod.LAUNCH_ENV_APPLIED) & set(RUNS_CODE)


def test_device_selection_from_the_launch_still_counts(tmp_path, host):
    recipe = write_recipe(tmp_path / "r.yaml", LAUNCH, {"CUDA_VISIBLE_DEVICES": "0,1", "PYTHONPATH": "./evil"})
    data = check_json(recipe, host, tmp_path, "--no-cache")
    assert data["hardware"]["gpu_count"] == 2
    assert data["hardware"]["probe_env_not_applied"] == ["PYTHONPATH"]
    words = write_recipe(tmp_path / "w.yaml", f"CUDA_VISIBLE_DEVICES=3 {LAUNCH}", {})
    assert check_json(words, host, tmp_path, "--no-cache")["hardware"]["gpu_count"] == 1


def test_the_text_report_says_what_the_probe_did_not_apply(tmp_path, host):
    recipe = write_recipe(tmp_path / "r.yaml", f"LD_PRELOAD=./evil.so {LAUNCH}", {"PYTHONPATH": "./evil"})
    proc = h3doctor("check", "--no-cache", "--recipe", str(recipe), env=host, cwd=tmp_path)
    assert proc.returncode in (0, 1), proc.stderr
    assert "the probe of this host ran without the launch's LD_PRELOAD, PYTHONPATH" in proc.stdout
    profiled = h3doctor("check", "--format", "json", "--profile", "4xH200", "--recipe", str(recipe), env=host, cwd=tmp_path)
    assert json.loads(profiled.stdout)["hardware"]["probe_env_not_applied"] == []  # nothing was probed


# -- reproducer: the recipe's env does not set h3doctor's own settings ---------------------------

def test_a_recipe_cannot_set_h3doctors_own_settings(tmp_path, host):
    recipe = write_recipe(tmp_path / "r.yaml", f"H3DOCTOR_PROBE_CACHE_TTL=0 {LAUNCH}",
                          {"H3DOCTOR_CACHE_DIR": "./planted-cache", "H3DOCTOR_PROBE_TIMEOUT": "0.001"})
    data = check_json(recipe, host, tmp_path)
    assert not (tmp_path / "planted-cache").exists()  # no directory created or written
    assert data["hardware"]["platform"] == "cuda"  # a 1 ms timeout would have left the platform unknown
    assert {"H3DOCTOR_CACHE_DIR", "H3DOCTOR_PROBE_TIMEOUT", "H3DOCTOR_PROBE_CACHE_TTL"} <= set(
        data["hardware"]["probe_env_not_applied"])
    assert list((tmp_path / "own-cache").glob("probe-*.json"))  # the process's cache directory was used
    again = check_json(recipe, host, tmp_path)  # ... and read: the recipe's TTL of 0 is not applied either
    assert again["hardware"]["source"].endswith("cached") or "cached" in again["hardware"]["source"]


def test_the_cache_key_is_the_environment_the_child_ran_with(tmp_path, monkeypatch):
    seen: list[dict] = []
    observations = {"plugins": [], "nvidia_procfs": {"gpus": [], "jetson": False},
                    "torch": {"ok": True, "version": "2.13.0", "cuda": None, "hip": None},
                    "mps": {"available": False}, "xpu": {"available": False, "count": 0},
                    "amdsmi": {"available": False, "missing": True, "why": "no"}, "nvml": {"ok": False, "missing": True},
                    "torch_cuda": {"available": False, "count": 0}, "npu": {"error": "no npu"},
                    "musa": {"available": False, "why": "no"}}

    def fake_child(env, timeout):
        seen.append(dict(env))
        return dict(observations), {"outcome": "ok", "elapsed_s": 0.1}

    monkeypatch.setattr(probe_mod, "run_child", fake_child)
    own = {"PATH": os.environ.get("PATH", ""), "H3DOCTOR_CACHE_DIR": str(tmp_path / "cache")}
    first = probe_mod.probe(own, launch={**own, "PYTHONPATH": "./evil", "LD_PRELOAD": "x.so"})
    assert "PYTHONPATH" not in seen[0] and "LD_PRELOAD" not in seen[0]
    assert first.run["env_not_applied"] == ["LD_PRELOAD", "PYTHONPATH"]
    # a variable the child never got does not make a new entry: the same child, the same key
    assert probe_mod.probe(own, launch={**own, "PYTHONPATH": "./other"}).run["cached"] is True
    # one it did get does
    assert probe_mod.probe(own, launch={**own, "CUDA_VISIBLE_DEVICES": "1"}).run["cached"] is False
    assert seen[-1]["CUDA_VISIBLE_DEVICES"] == "1" and len(seen) == 2


# -- the GitHub Action: inputs are data to bash ----------------------------------------------------

HOSTILE_INPUTS = {"paths": "--fix $(touch pwned)\n`touch pwned` * \"q\"\n\n", "targets": "4xH200 ;touch${IFS}pwned",
                  "fail-on": "warning\"; touch pwned; echo \"", "version": "x; touch pwned", "upload-sarif": "true"}


def _action_env(step: dict, inputs: dict[str, str]) -> dict[str, str]:
    """A step's `env:` with each `${{ inputs.NAME }}` as GitHub would fill it in."""
    import re

    out = {}
    for key, expr in (step.get("env") or {}).items():
        m = re.fullmatch(r"\$\{\{\s*inputs\.([a-z-]+)\s*\}\}", str(expr))
        out[key] = inputs[m.group(1)] if m else ""
    return out


def test_action_inputs_reach_bash_only_through_the_environment(tmp_path):
    import yaml

    action = yaml.safe_load((REPO / "action.yml").read_text(encoding="utf-8"))
    steps = action["runs"]["steps"]
    for step in steps:
        assert "${{" not in step.get("run", ""), f"an expression spliced into the script of {step.get('name')!r}"
    bindir = tmp_path / "bin"
    bindir.mkdir()
    record = tmp_path / "argv.jsonl"
    fake = bindir / "h3doctor"
    fake.write_text(f"#!{sys.executable}\nimport json, sys\n"
                    f"open({str(record)!r}, 'a').write(json.dumps(sys.argv[1:]) + '\\n')\nsys.exit(1)\n", encoding="utf-8")
    fake.chmod(0o755)
    (tmp_path / "a.yaml").write_text("x: 1\n", encoding="utf-8")  # a file the `*` would match, were it expanded
    lint = next(step for step in steps if step.get("id") == "lint")
    runner_temp = tmp_path / "runner-temp"
    runner_temp.mkdir()
    env = {"PATH": f"{bindir}{os.pathsep}{os.environ.get('PATH', '')}", "GITHUB_OUTPUT": str(tmp_path / "out"),
           "RUNNER_TEMP": str(runner_temp), **_action_env(lint, HOSTILE_INPUTS)}
    proc = subprocess.run(["bash", "--noprofile", "--norc", "-eo", "pipefail", "-c", lint["run"]], cwd=tmp_path, env=env,
                          capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr
    assert not (tmp_path / "pwned").exists()
    words = ["--fix $(touch pwned)", '`touch pwned` * "q"']  # one path a line, spaces and all
    options = ["--target", "4xH200", "--target", ";touch${IFS}pwned", "--fail-on", HOSTILE_INPUTS["fail-on"]]
    calls = [json.loads(line) for line in record.read_text(encoding="utf-8").splitlines()]
    [sarif] = runner_temp.glob("h3doctor-lint.*/h3doctor.sarif")  # written by the step's fallback
    assert calls == [["lint", *options, "--format", "sarif", "--output-file", str(sarif), "--", *words],
                     ["lint", *options, "--format", "github", "--", *words]]
    assert (tmp_path / "out").read_text(encoding="utf-8").splitlines()[-1] == "exit-code=1"
    verdict = next(step for step in steps if step.get("name") == "Verdict")
    for output, code in (("1", 1), ("0", 0), ("", None)):  # no recorded exit code is never a pass
        proc = subprocess.run(["bash", "--noprofile", "--norc", "-eo", "pipefail", "-c", verdict["run"]],
                              env={**env, "H3D_LINT_EXIT": output}, capture_output=True, timeout=60)
        assert proc.returncode == code if code is not None else proc.returncode != 0
