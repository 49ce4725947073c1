"""The whole path of adding a release, on a made-up one: in a copy of the package, 0.5.24 is added
with `tools/release.py add 0.5.24 --from 0.5.23` (offline) and its flag table gets one flag
0.5.23 does not have. Then h3doctor, run from that copy, accepts the flag on 0.5.24, rejects a
misspelling of it, judges 0.5.24 with every rule that judges 0.5.23 -- and no rule file changed.
`tools/release.py check` lists what a person still owns for 0.5.24, and nothing else."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from repo_paths import REPO

ROOT = REPO
sys.path.insert(0, str(ROOT / "tools"))

import release  # noqa: E402  (tools/release.py)

NEW_FLAG = "--made-up-flag"
LAUNCH = ["sglang", "serve", "MiniMaxAI/MiniMax-H3", "--num-gpus", "4"]


@pytest.fixture(scope="module")
def copy(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("repo")
    shutil.copytree(ROOT / "h3doctor", root / "h3doctor", ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copytree(ROOT / "rules", root / "rules")
    assert release.main(["--root", str(root), "add", "0.5.24", "--from", "0.5.23"]) == 0
    flags = root / "h3doctor/sglang/releasedata/0.5.24/flags.json"
    table = json.loads(flags.read_text(encoding="utf-8"))
    [model] = [a for a in table["actions"] if a.get("option_strings") == ["--enable-torch-compile"]]
    assert table["sglang_version"] == "0.5.24"  # the copy names its own release
    table["actions"].append({**model, "option_strings": [NEW_FLAG], "dest": "made_up_flag", "help": "made up"})
    table["dataclass_defaults"]["made_up_flag"] = False
    flags.write_text(json.dumps(table, indent=1), encoding="utf-8")
    assert release.main(["--root", str(root), "add", "0.5.24", "--from", "0.5.23"]) == 0  # keeps the table, rebuilds the history
    return root


def _run(copy: Path, *args: str) -> subprocess.CompletedProcess:
    environ = {k: v for k, v in os.environ.items() if not k.startswith(("SGLANG_", "H3DOCTOR_"))}
    environ.update({"PYTHONPATH": str(copy), "H3DOCTOR_RULES_DIR": str(copy / "rules"),
                    "XDG_CACHE_HOME": str(copy / "cache"), "NO_COLOR": "1"})
    return subprocess.run([sys.executable, *args], capture_output=True, text=True, env=environ, cwd=copy, timeout=120)


def _check(copy: Path, version: str, *flags: str) -> tuple[int, dict]:
    proc = _run(copy, "-m", "h3doctor", "check", "--sglang-version", version, "--profile", "4xH200",
                "--format", "json", "--", *LAUNCH, *flags)
    assert proc.returncode in (0, 1), proc.stderr
    return proc.returncode, json.loads(proc.stdout)


def test_no_rule_file_changes_and_the_copy_is_the_package_it_runs(copy):
    assert {p.name: p.read_bytes() for p in (copy / "rules").glob("*.yaml")} == \
        {p.name: p.read_bytes() for p in (ROOT / "rules").glob("*.yaml")}
    proc = _run(copy, "-c", "import h3doctor.sglang.release_files as f; print(f.__file__, f.known()[-1])")
    assert proc.stdout.split() == [str(copy / "h3doctor/sglang/release_files.py"), "0.5.24"], proc.stderr


def test_the_new_release_accepts_its_flag_and_rejects_a_misspelling(copy):
    code, report = _check(copy, "0.5.24", NEW_FLAG)
    assert report["sglang_version"] == "0.5.24"
    assert not [f for f in report["findings"] if NEW_FLAG in f["message"]], report["findings"]
    code, report = _check(copy, "0.5.24", "--made-up-flga")
    assert code == 1 and [f["rule"] for f in report["findings"] if "--made-up-flga" in f["message"]] == ["H3D020"]
    code, report = _check(copy, "0.5.23", NEW_FLAG)  # the older release names where the flag comes from
    assert code == 1 and any(f["rule"] == "H3D012" and "0.5.24" in f["why"] for f in report["findings"])


def test_every_rule_that_judges_the_release_it_copies_judges_the_new_one(copy):
    code = ("import json; from h3doctor.engine.ruleset import load_rules; rs = load_rules(use_cache=False); "
            "print(json.dumps({v: sorted(r.id for r in rs if r.in_release(v)) for v in ('0.5.23', '0.5.24')}))")
    proc = _run(copy, "-c", code)
    judged = json.loads(proc.stdout)
    assert judged["0.5.24"] == judged["0.5.23"] and len(judged["0.5.23"]) > 150


def test_the_same_launch_finds_the_same_on_both_but_the_memory_model_the_copy_lacks(copy):
    """memory.json is a person's (calibrated or a lower bound): not copied, so 0.5.24's fit is
    "cannot verify" (H3D543), never judged by another release's constants."""
    found = {v: {f["rule"] for f in _check(copy, v, "--performance-mode", "speed")[1]["findings"]} for v in ("0.5.23", "0.5.24")}
    assert found["0.5.24"] - found["0.5.23"] == {"H3D543"}
    assert not (found["0.5.23"] - found["0.5.24"]) - {"H3D540", "H3D542", "H3D640", "H3D641", "H3D642"}


def test_the_check_lists_what_a_person_still_owns_for_the_new_release_only(copy, capsys):
    assert release.main(["--root", str(copy), "check"]) == 1
    problems = capsys.readouterr().out.splitlines()
    assert problems and all("0.5.24" in p for p in problems)
    assert any(p.startswith("0.5.24/flags.json: a copy of 0.5.23's") for p in problems)
    assert any(p.startswith("0.5.24/where.json: 0.5.23's lines, copied") for p in problems)
    assert "0.5.24/memory.json: missing" in problems
    assert any(p.startswith("0.5.24/attention-backends.json: a copy of 0.5.23's: check it") for p in problems)
    assert any(p.startswith("0.5.24/sampling.json: a copy of 0.5.23's: re-run") for p in problems)


def test_the_new_release_reads_its_own_attention_backend_and_sampling_files(copy, tmp_path):
    """Each is read from the release's own folder: the copy in 0.5.24 (edited here) is what 0.5.24
    judges with, and 0.5.23 keeps its own."""
    other = tmp_path / "repo"  # edited: the module's copy stays as the tool left it
    shutil.copytree(copy, other, ignore=shutil.ignore_patterns("cache"))
    copy = other
    for name, edit in (("attention-backends.json", lambda d: d["vsa_h3"].update(capabilities=[80])),
                       ("sampling.json", lambda d: d["families"]["fh3"].update({"class": "MadeUpSamplingParams"}))):
        path = copy / "h3doctor/sglang/releasedata/0.5.24" / name
        data = json.loads(path.read_text(encoding="utf-8"))
        edit(data)
        path.write_text(json.dumps(data), encoding="utf-8")
    code = ("import json; from h3doctor.sglang import releases, sampling; "
            "print(json.dumps({v: [releases.attention_backend_facts(v)['vsa_h3']['capabilities'], "
            "sampling.family(v, 'fh3')['class']] for v in ('0.5.23', '0.5.24')}))")
    proc = _run(copy, "-c", code)
    read = json.loads(proc.stdout)
    assert read["0.5.24"] == [[80], "MadeUpSamplingParams"]
    assert read["0.5.23"][0] != [80] and read["0.5.23"][1] != "MadeUpSamplingParams"


def test_a_rule_whose_line_was_not_carried_does_not_judge_the_new_release(copy, tmp_path):
    """The tool could not carry H3D305's line and nobody has recorded it: 0.5.24 is not judged by
    H3D305, and a launch it would fail on is "cannot verify" (H3D921), never a pass."""
    other = tmp_path / "repo"
    shutil.copytree(copy, other, ignore=shutil.ignore_patterns("cache"))
    where = other / "h3doctor/sglang/releasedata/0.5.24/where.json"
    data = json.loads(where.read_text(encoding="utf-8"))
    for part in ("where", "reviewed"):
        data[part].pop("H3D305", None)
    where.write_text(json.dumps(data), encoding="utf-8")
    launch = ("--ulysses-degree", "2", "--ring-degree", "2", "--attention-backend", "sage_attn")
    on_23 = {f["rule"] for f in _check(other, "0.5.23", *launch)[1]["findings"]}
    code, report = _check(other, "0.5.24", *launch)
    on_24 = {f["rule"]: f for f in report["findings"]}
    assert "H3D305" not in on_24 and code == 1
    assert on_24["H3D921"]["severity"] == "warning" and on_24["H3D921"]["message"].startswith("cannot verify for sglang 0.5.24")
    assert "H3D305" in on_23 and on_23 - set(on_24) == {"H3D305"}
