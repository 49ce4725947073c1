"""h3doctor.api: the same reports and exit codes as the CLI, its errors, thread safety, imports.

Each report is compared with the real console entry's stdout (`python -m h3doctor ... --format
json`): byte for byte for check (also through a recipe, `VAR=value` words, a planned request and
the probe), lint, explain and suggest. test_api_conformance.py compares check over the goldens.
"""

from __future__ import annotations

import dataclasses
import json
import os
import re
import subprocess
import sys
import threading
from pathlib import Path

import pytest

from h3doctor import api
from h3doctor.api import commands
from repo_paths import REPO

ROOT = REPO
LAUNCH = ["sglang", "serve", "MiniMaxAI/MiniMax-H3", "--num-gpus", "4"]
FAILING = [*LAUNCH, "--ulysses-degree", "2", "--ring-degree", "2", "--attention-backend", "sage_attn"]


@pytest.fixture
def env(tmp_path):
    """This process's environment for the CLI, with its own cache and no sglang or GPU variables."""
    keep = {k: v for k, v in os.environ.items()
            if not k.startswith(("SGLANG_", "CUDA_", "HIP_", "ROCR_", "H3DOCTOR_", "FORCE_COLOR"))}
    keep.update({"H3DOCTOR_CACHE_DIR": str(tmp_path / "cache"), "NO_COLOR": "1"})
    return keep


def run_cli(args: list[str], env: dict[str, str], cwd: Path | None = None) -> tuple[int, str, str]:
    proc = subprocess.run([sys.executable, "-m", "h3doctor", *args], capture_output=True, text=True, env=env,
                          cwd=cwd, timeout=120)
    return proc.returncode, proc.stdout, proc.stderr


# statvfs figures read now: another process on this machine moves them between the two reads compared
LIVE_FIGURES = ("disk_free_gib", "shm_free_gib", "spill_free_gib")


# a message quoting them: H3D416's free disk and how far the download falls short of it
LIVE_IN_TEXT = re.compile(r"[0-9.]+ GiB (free|short)")


def steady(data):
    """`data` (a report or the probe's JSON) with the live free-space figures masked, in the facts,
    in the probe's lines for them (their value, its words and the reasons) and in the messages that quote them."""
    if isinstance(data, list):
        return [steady(item) for item in data]
    if isinstance(data, str):
        return LIVE_IN_TEXT.sub(r"<live> GiB \1", data)
    if not isinstance(data, dict):
        return data
    live_line = data.get("fact") in ("disk_free_gib", "shm_gib", "spill_free_gib")
    return {k: "<live>" if k in LIVE_FIGURES or live_line and k in ("value", "says", "reason", "why") else steady(v)
            for k, v in data.items()}


def run_api(code: str, env: dict[str, str], cwd: Path | None = None) -> str:
    """`code` run in a fresh process in `env` (what the API reads from os.environ), its stdout."""
    proc = subprocess.run([sys.executable, "-c", "from h3doctor import api\n" + code], capture_output=True,
                          text=True, env=env, cwd=cwd, timeout=120)
    assert proc.returncode == 0, proc.stderr
    return proc.stdout


# --- the same reports as the CLI ------------------------------------------------------------------

CHECKS = [  # (the CLI's options, api.check's keywords), each with the launch after them
    (["--profile", "4xH200"], {"profile": "4xH200"}, LAUNCH),
    (["--profile", "4xH200"], {"profile": "4xH200"}, FAILING),
    (["--profile", "cpu", "--fail-on", "warning"], {"profile": "cpu", "fail_on": "warning"}, LAUNCH),  # a warning only
    (["--profile", "4xH200", "--sglang-version", "0.5.20"], {"profile": "4xH200", "sglang_version": "0.5.20"}, FAILING),
    (["--profile", "4xH200", "--request-resolution", "1344x768", "--request-seconds", "5"],
     {"profile": "4xH200", "request": {"resolution": "1344x768", "seconds": 5}}, LAUNCH),
    (["--profile", "4xH200"], {"profile": "4xH200"}, ["CUDA_VISIBLE_DEVICES=0,1", "SGLANG_X=1", *LAUNCH]),
    (["--profile", "m3-max"], {"profile": "m3-max"}, ["sglang", "serve", "MiniMaxAI/MiniMax-H3", "--enable-torch-compile"]),
]


def test_check_is_the_console_entrys_json_and_exit_code(env):
    script = "import json, sys\n" + "".join(
        f"r = api.check({words!r}, **{kw!r}); sys.stdout.write(json.dumps([r.to_json(), r.exit_code]) + '\\n')\n"
        for _, kw, words in CHECKS)
    answers = [json.loads(line) for line in run_api(script, env).splitlines()]
    for (options, _, words), (text, code) in zip(CHECKS, answers, strict=True):
        assert run_cli(["check", *options, "--format", "json", "--", *words], env)[:2] == (code, text)
    assert {code for _, code in answers} == {0, 1}


def test_check_of_a_recipe_is_the_cli_s(env, tmp_path):
    recipe = ROOT / "examples" / "broken-recipe.yaml"
    code, out, _ = run_cli(["check", "--recipe", str(recipe), "--format", "json"], env)
    script = (f"import pathlib; a = api.check(pathlib.Path({str(recipe)!r})); b = api.check(recipe={str(recipe)!r})\n"
              "assert a.to_json() == b.to_json(); print(a.exit_code); print(a.to_json(), end='')")
    first, text = run_api(script, env).split("\n", 1)
    assert (int(first), text) == (code, out) and code == 1


def test_check_with_the_probed_hardware_is_the_cli_s_without_a_profile(env, tmp_path):
    """probe() once, then check(hardware=...): the CLI's check without --profile, also for a launch
    that selects fewer devices (CUDA_VISIBLE_DEVICES=0): the probe then answers for that launch."""
    from tests.host.test_probe import H200, fakes

    env = {**env, "PYTHONPATH": fakes(tmp_path, torch={"cuda": "13.0", "devices": H200})}
    launches = [LAUNCH, ["CUDA_VISIBLE_DEVICES=0", *LAUNCH]]
    cli_probe = json.loads(run_cli(["probe", "--no-cache", "--format", "json"], env)[1])
    # the child probes counted: the launch in this environment is judged on `hw`, not probed again
    script = ("import json; import h3doctor.host.probe as p; runs = []; real = p.run_child\n"
              "p.run_child = lambda *a, **k: runs.append(1) or real(*a, **k)\n"
              "hw = api.probe(use_cache=False); print(json.dumps(hw.to_dict()))\n"
              + "".join(f"print(json.dumps(api.check({w!r}, hardware=hw).to_json()))\n" for w in launches)
              + "print(len(runs))\n")
    lines = run_api(script, {**env, "H3DOCTOR_CACHE_DIR": str(tmp_path / "api-cache")}).splitlines()
    assert lines.pop() == "2"  # probe(), then the launch with CUDA_VISIBLE_DEVICES=0 only
    probed = json.loads(lines[0])
    for data in (probed, cli_probe):
        for timing in ("elapsed_s", "child_elapsed_s"):
            data["probe"].pop(timing)  # how long each took
    assert steady(probed) == steady(cli_probe) and probed["facts"]["gpu_count"] == 4
    gpus = []
    for words, line in zip(launches, lines[1:], strict=True):
        code, out, _ = run_cli(["check", "--format", "json", "--", *words], env)
        assert steady(json.loads(json.loads(line))) == steady(json.loads(out))
        gpus.append(json.loads(out)["hardware"]["gpu_count"])
    assert gpus == [4, 1]  # the launch selecting one GPU was judged on the one it sees


def test_lint_is_the_cli_s(env, tmp_path):
    for name in ("broken-recipe.yaml", "h3-4xh200-speed.yaml", "k8s", "compose"):
        src = ROOT / "examples" / name
        dest = tmp_path / "repo" / name
        if src.is_dir():
            import shutil

            shutil.copytree(src, dest)
        else:
            dest.parent.mkdir(parents=True, exist_ok=True)
            dest.write_text(src.read_text(encoding="utf-8"), encoding="utf-8")
    repo = tmp_path / "repo"
    runs = [(["."], {}), (["h3-4xh200-speed.yaml"], {"targets": ["1xH100"]}), (["k8s"], {"fail_on": "warning"})]
    script = "import json\n" + "".join(
        f"r = api.lint({paths!r}, no_config=True, **{kw!r}); print(json.dumps([r.to_json(), r.exit_code]))\n"
        for paths, kw in runs)
    answers = [json.loads(line) for line in run_api(script, env, cwd=repo).splitlines()]
    codes = []
    for (paths, kw), (text, code) in zip(runs, answers, strict=True):
        options = [o for t in kw.get("targets", ()) for o in ("--target", t)]
        options += ["--fail-on", kw["fail_on"]] if "fail_on" in kw else []
        assert run_cli(["lint", "--no-config", "--format", "json", *options, *paths], env, cwd=repo)[:2] == (code, text)
        codes.append(code)
    assert codes[0] == 1


EXPLAINS = [
    ("ValueError: MiniMax-H3 ring parallelism requires the FlashAttention backend for the transformer", FAILING),
    ("KeyError: 'SDPA'", None),
    ("nothing sglang ever printed", None),
]


def test_explain_is_the_cli_s(env):
    script = "import json\n" + "".join(
        f"r = api.explain({text!r}, launch={words!r}, profile='4xH200'); print(json.dumps([r.to_json(), r.exit_code]))\n"
        for text, words in EXPLAINS)
    answers = [json.loads(line) for line in run_api(script, env).splitlines()]
    for (text, words), (out, code) in zip(EXPLAINS, answers, strict=True):
        args = ["explain", "--profile", "4xH200", "--format", "json", text] + (["--", *words] if words else [])
        assert run_cli(args, env)[:2] == (code, out)
    assert [code for _, code in answers] == [0, 0, 1]


def test_explain_of_a_log_file_is_the_cli_s(env, tmp_path):
    log = tmp_path / "server.log"
    log.write_text("INFO starting\nValueError: MiniMax-H3 ring parallelism requires the FlashAttention backend "
                   "for the transformer\n", encoding="utf-8")
    out = run_api(f"import pathlib; print(api.explain(pathlib.Path({str(log)!r}), profile='4xH200').to_json(), end='')", env)
    assert run_cli(["explain", "--log", str(log), "--profile", "4xH200", "--format", "json"], env)[1] == out


def test_suggest_is_the_cli_s(env):
    """The same text but for the search's own duration (`search.elapsed_s`), which is the same length."""
    out = run_api("r = api.suggest('4xH200', 'speed', runner_ups=1); print(r.exit_code); print(r.to_json(), end='')", env)
    code, text = out.split("\n", 1)
    cli_code, cli_text, _ = run_cli(["suggest", "--profile", "4xH200", "--prefer", "speed", "--runner-ups", "1",
                                     "--format", "json"], env)
    ours, theirs = json.loads(text), json.loads(cli_text)
    elapsed = [f'"elapsed_s": {json.dumps(data["search"].pop("elapsed_s"))}' for data in (ours, theirs)]
    assert (int(code), text.replace(elapsed[0], elapsed[1])) == (cli_code, cli_text)
    assert ours == theirs and ours["best"]["argv"][:2] == ["sglang", "serve"]


# --- the published schemas ----------------------------------------------------------------------

def _schema(name: str):
    import jsonschema

    from h3doctor.paths import package_dir

    text = package_dir("h3doctor.schema").joinpath(f"{name}.schema.json").read_text(encoding="utf-8")
    return jsonschema.Draft202012Validator(json.loads(text))


def test_every_result_validates_against_its_published_schema(tmp_path):
    (tmp_path / "r.yaml").write_text((ROOT / "examples" / "broken-recipe.yaml").read_text(encoding="utf-8"))
    results = {
        "report": api.check(FAILING, profile="4xH200"),
        "lint-report": api.lint([str(tmp_path)], no_config=True),
        "explain": api.explain("KeyError: 'SDPA'", launch=FAILING, profile="4xH200"),
        "suggest": api.suggest("1xH100", "memory", runner_ups=0),
    }
    for name, result in results.items():
        errors = [e.message for e in _schema(name).iter_errors(result.to_dict())]
        assert not errors, (name, errors[:3])


# --- results are frozen ---------------------------------------------------------------------------

def test_results_are_frozen_and_to_dict_hands_out_a_copy(tmp_path):
    report = api.check(FAILING, profile="4xH200")
    with pytest.raises(dataclasses.FrozenInstanceError):
        report.fail_on = "info"
    data = report.to_dict()
    data["findings"].clear()
    data["verdict"] = "pass"
    assert report.to_dict()["findings"] and report.verdict == "fail" and report.exit_code == 1
    assert [f.rule for f in report.findings] == [f["rule"] for f in report.to_dict()["findings"]]
    assert report.corrected_argv == report.to_dict()["corrected_argv"] and report.fix_status == "fixed"
    explained = api.explain("KeyError: 'SDPA'")
    copy = explained.to_dict()
    copy["matches"].clear()
    assert explained.to_dict()["matches"] and explained.explained and explained.rules


# --- errors: the CLI's exit codes and messages ------------------------------------------------------

ERRORS = [  # (api call, the CLI's arguments for the same mistake or None, the error class)
    (lambda: api.check(LAUNCH, profile="no-such-profile"), ["check", "--profile", "no-such-profile", "--", *LAUNCH],
     api.InputError),
    (lambda: api.check(recipe="no-such-recipe.yaml"), ["check", "--recipe", "no-such-recipe.yaml"], api.InputError),
    (lambda: api.check(LAUNCH, profile="4xH200", sglang_version="0.4.0"),
     ["check", "--profile", "4xH200", "--sglang-version", "0.4.0", "--", *LAUNCH], api.InputError),
    (lambda: api.check([], profile="4xH200"), ["check", "--profile", "4xH200"], api.UsageError),
    (lambda: api.check(LAUNCH, profile="4xH200", request={"resolution": "big"}),
     ["check", "--profile", "4xH200", "--request-resolution", "big", "--", *LAUNCH], api.UsageError),
    (lambda: api.check(LAUNCH, profile="4xH200", rules_dir="no-such-dir"),
     ["check", "--profile", "4xH200", "--rules-dir", "no-such-dir", "--", *LAUNCH], api.InputError),
    (lambda: api.lint(["x"], config="no-such-config.yaml"), ["lint", "--config", "no-such-config.yaml", "x"],
     api.InputError),
    (lambda: api.suggest("4xH200", "fastest"), ["suggest", "--profile", "4xH200", "--prefer", "fastest"], None),
    (lambda: api.suggest("4xH200", request="huge"), ["suggest", "--profile", "4xH200", "--request", "huge"],
     api.UsageError),
    (lambda: api.explain(Path("no-such.log")), ["explain", "--log", "no-such.log"], api.InputError),
]


@pytest.mark.parametrize("call, args, kind", ERRORS)
def test_an_error_carries_the_cli_s_exit_code_and_message(call, args, kind, env, tmp_path):
    with pytest.raises(api.H3DoctorError) as caught:
        call()
    err = caught.value
    assert kind is None or type(err) is kind
    assert err.exit_code == 2 and isinstance(err.__cause__, Exception) or err.__cause__ is None
    code, _, stderr = run_cli(args, env, cwd=Path.cwd())
    assert code == err.exit_code
    if kind is not None:  # the CLI's own usage errors (click's, a choice it refuses) have click's words
        assert stderr.splitlines()[0] == f"error: {err}"


@pytest.mark.parametrize("call, says", [
    (lambda: api.check("sglang serve MiniMaxAI/MiniMax-H3", profile="4xH200"), "list of words"),
    (lambda: api.check([*LAUNCH, 4], profile="4xH200"), "is a str"),
    (lambda: api.check(LAUNCH, recipe=ROOT / "examples" / "broken-recipe.yaml"), "not both"),
    (lambda: api.check(Path("r.yaml"), recipe="r.yaml"), "once"),
    (lambda: api.check(LAUNCH, profile="4xH200", hardware=object()), "not both"),
    (lambda: api.check(LAUNCH, hardware=object()), "what probe() returns"),
    (lambda: api.check(LAUNCH, profile="4xH200", fail_on="fatal"), "fail_on must be one of"),
    (lambda: api.check(LAUNCH, profile="4xH200", request={"width": 3}), "no key width"),
    (lambda: api.check(LAUNCH, profile="4xH200", env={"A": 1}), "are str"),
    (lambda: api.check(LAUNCH, profile="4xH200", env=[("A", "1")]), "mapping"),
    (lambda: api.check(LAUNCH, profile=4), "profile is a str"),
    (lambda: api.check([*LAUNCH, "a\0b"], profile="4xH200"), "NUL byte"),
    (lambda: api.lint("deploy/"), "is a list"),
    (lambda: api.lint(["-"]), "standard input"),
    (lambda: api.explain(b"KeyError: 'SDPA'"), "not bytes"),
    (lambda: api.explain("x", launch="sglang serve"), "list of words"),
    (lambda: api.suggest("4xH200", runner_ups="3"), "whole number"),
    (lambda: api.suggest("4xH200", runner_ups=11), "between 0 and 10"),
    (lambda: api.check(LAUNCH, profile="4xH200", rules_dir=3), "rules_dir is a path"),
    (lambda: api.check(recipe=b"r.yaml"), "recipe is a path"),
    (lambda: api.check(LAUNCH, profile="4xH200", request=[("steps", 4)]), "request is a mapping"),
    (lambda: api.check(iter(LAUNCH), profile="4xH200"), "list of words"),
    (lambda: api.lint([3]), "is a str"),
    (lambda: api.lint(["."], targets="4xH200"), "list of words"),
    (lambda: api.lint(["."], config=3), "config is a path"),
    (lambda: api.probe(timeout="5"), "number of seconds"),
    (lambda: api.check(["--num-gpus", "1"] * 30_000, profile="4xH200"), "words"),  # past the 50,000-word budget
])
def test_a_call_the_api_cannot_take_is_a_usage_error(call, says):
    with pytest.raises(api.UsageError) as caught:
        call()
    assert says in caught.value.message and caught.value.exit_code == 2


def test_a_bug_is_an_internal_error_with_exit_code_3(monkeypatch):
    from h3doctor.engine.judge import Judge

    def broken(*args, **kwargs):
        raise ZeroDivisionError("boom")

    monkeypatch.setattr(Judge, "check", broken)
    with pytest.raises(api.InternalError) as caught:
        api.check(LAUNCH, profile="4xH200")
    assert caught.value.exit_code == 3 and isinstance(caught.value.__cause__, ZeroDivisionError)
    assert isinstance(caught.value, api.H3DoctorError)


def test_the_api_errors_are_h3doctors_errors_too():
    from h3doctor import errors

    with pytest.raises(errors.H3DoctorError):
        api.check(LAUNCH, profile="no-such-profile")


# --- threads, rules loaded once ---------------------------------------------------------------------

THREAD_LAUNCHES = [LAUNCH, FAILING, [*LAUNCH, "--ring-degree", "2"], ["sglang", "serve", "MiniMaxAI/MiniMax-H3"],
                   [*LAUNCH, "--attention-backend", "torch_sdpa", "--enable-torch-compile"],
                   ["sglang", "generate", "--model-path", "MiniMaxAI/MiniMax-H3", "--prompt", "a cat"]]
THREAD_PROFILES = ["4xH200", "1xH100", "m3-max", "8xH100"]


def test_checks_from_eight_threads_are_the_serial_checks(monkeypatch):
    loads = []
    import h3doctor.engine.ruleset as ruleset

    real = ruleset.load_rules
    monkeypatch.setattr(ruleset, "load_rules", lambda *a, **k: loads.append(a) or real(*a, **k))
    monkeypatch.setattr(commands, "_rules", {})  # a fresh process: no rules loaded yet
    jobs = [(words, profile) for words in THREAD_LAUNCHES for profile in THREAD_PROFILES]
    serial = {}
    results: dict[int, list] = {}
    start = threading.Barrier(8)

    def work(n: int) -> None:
        start.wait()  # all eight ask for the rules at once
        results[n] = [api.check(words, profile=p).to_json() for words, p in jobs[n % len(jobs):] + jobs[:n % len(jobs)]]

    threads = [threading.Thread(target=work, args=(n,)) for n in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(loads) == 1  # the rules were loaded once, for all eight
    for words, p in jobs:
        serial[tuple(words), p] = api.check(words, profile=p).to_json()
    for n in range(8):
        rotated = jobs[n % len(jobs):] + jobs[:n % len(jobs)]
        assert results[n] == [serial[tuple(w), p] for w, p in rotated]
    assert len(loads) == 1


# --- imports ----------------------------------------------------------------------------------------

BLOCKER = """
import sys
class Blocker:
    def find_spec(self, name, path=None, target=None):
        if name.split('.')[0] in ('torch', 'typer', 'rich', 'click'):
            raise ImportError('blocked: ' + name)
        return None
sys.meta_path.insert(0, Blocker())
"""


def test_the_api_imports_and_runs_without_torch_typer_or_rich(env, tmp_path):
    (tmp_path / "r.yaml").write_text((ROOT / "examples" / "broken-recipe.yaml").read_text(encoding="utf-8"))
    code = BLOCKER + f"""
import h3doctor.api as api
print(sorted(m for m in sys.modules if m.split('.')[0] in ('torch', 'typer', 'rich', 'click')))
print(api.check({FAILING!r}, profile='4xH200').verdict)
print(api.lint([{str(tmp_path)!r}], no_config=True).exit_code)
print(api.explain("KeyError: 'SDPA'", launch={FAILING!r}, profile='4xH200').exit_code)
print(api.suggest('4xH200', runner_ups=0).status)
print(sorted(m for m in sys.modules if m.split('.')[0] in ('torch', 'typer', 'rich', 'click')))
"""
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.split("\n")[:6] == ["[]", "fail", "1", "0", "fits", "[]"]


def test_env_is_the_environment_the_launch_starts_in(env):
    """`env=` stands for the CLI's own environment: the same report as the CLI run in it, and not
    this process's (which has no SGLANG_ variable the fixture's has)."""
    launch_env = {**env, "SGLANG_DIFFUSION_DISABLE_AUTO_RESIDENCY": "1"}
    ours = api.check(LAUNCH, profile="1xH100", env=launch_env)
    assert (ours.exit_code, ours.to_json()) == run_cli(["check", "--profile", "1xH100", "--format", "json", "--", *LAUNCH],
                                                       launch_env)[:2]
    assert ours.to_dict()["effective_config"]["environment"] == {"SGLANG_DIFFUSION_DISABLE_AUTO_RESIDENCY": "1"}
    assert api.check(LAUNCH, profile="1xH100", env=env).to_dict() != ours.to_dict()
