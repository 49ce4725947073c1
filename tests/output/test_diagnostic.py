"""One Diagnostic (h3doctor/output/diagnostic.py): every finding writer and the verdict read the
same located record; check builds it without lint, and a recipe's finding is the same diagnostic
whether `check` or `lint` reports it."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

from h3doctor.output.diagnostic import Diagnostic, Location, Suppressed
from h3doctor.output.verdict import verdict

from repo_paths import REPO
SAGE_RING = ("sglang serve MiniMaxAI/MiniMax-H3 --num-gpus 4 --ulysses-degree 2 --ring-degree 2 "
             "--attention-backend sage_attn")
RECIPE = f"""\
    # a broken launch
    targets: [4xH200]
    command: {SAGE_RING}
    """


def _run(code: str, cwd: Path) -> str:
    env = {k: v for k, v in os.environ.items() if not k.startswith("SGLANG_")}
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=cwd, env=env, timeout=120)
    assert proc.returncode == 0, proc.stderr
    return proc.stdout


def test_check_writes_sarif_and_github_without_loading_lint(tmp_path):
    (tmp_path / "r.yaml").write_text(textwrap.dedent(RECIPE), encoding="utf-8")
    code = textwrap.dedent("""\
        import sys
        from h3doctor import cli
        for fmt in ("sarif", "github"):
            for source in (["--recipe", "r.yaml"], ["--profile", "4xH200", "--", *%r.split()]):
                try:
                    cli.app(["check", "--format", fmt, "--output-file", f"out-{fmt}-{len(source)}", *source])
                except SystemExit as exit:
                    assert exit.code == 1, exit.code
        print(sorted(m for m in sys.modules if m.startswith("h3doctor.lint")))
        """) % SAGE_RING
    assert _run(code, tmp_path).strip() == "[]"
    sarif = json.loads((tmp_path / "out-sarif-2").read_text(encoding="utf-8"))
    [result] = sarif["runs"][0]["results"]
    assert result["ruleId"] == "H3D305" and result["locations"][0]["physicalLocation"]["region"]["startLine"] == 3
    assert "title=H3D305::" in (tmp_path / "out-github-2").read_text(encoding="utf-8")


def test_a_recipes_finding_is_one_diagnostic_in_check_and_lint(tmp_path):
    """check --recipe and lint build the diagnostic from the same finding, location and release."""
    (tmp_path / "r.yaml").write_text(textwrap.dedent(RECIPE), encoding="utf-8")

    def results(*args: str) -> list[dict]:
        proc = subprocess.run([sys.executable, "-m", "h3doctor", *args, "--format", "sarif"], capture_output=True,
                              text=True, cwd=tmp_path, timeout=120)
        assert proc.returncode == 1, proc.stderr
        return json.loads(proc.stdout)["runs"][0]["results"]

    [checked] = results("check", "--recipe", "r.yaml")
    [linted] = results("lint", "r.yaml")
    # lint alone reads the file's text: the word's extent and the located fix are its own
    region = linted["locations"][0]["physicalLocation"]["region"]
    assert region.pop("endLine") == region["startLine"] and region.pop("endColumn") > region["startColumn"]
    assert linted.pop("fixes")[0]["properties"]["applicability"] == "safe"
    assert checked == linted


def _diagnostic(**about) -> Diagnostic:
    return Diagnostic("H3D305", "sage-ring", "title", "error", "boom", Location("r.yaml", 3, 10), **about)


def test_the_verdict_honours_a_diagnostics_suppression():
    quiet = _diagnostic(suppression=Suppressed("comment", "on purpose"))
    assert verdict([_diagnostic()], "error") == "fail"
    assert verdict([quiet], "info") == "pass"


def test_each_suppression_source_is_what_sarif_and_json_call_it():
    comment = _diagnostic(suppression=Suppressed("comment", "on purpose")).as_json()["suppressed"]
    recipe = _diagnostic(suppression=Suppressed("recipe", "recipe ignore: x")).as_json()["suppressed"]
    assert comment == {"kind": "inSource", "reason": "on purpose"}
    assert recipe == {"kind": "external", "reason": "recipe ignore: x"}
    assert _diagnostic().as_json()["suppressed"] is None


def test_the_fingerprint_ignores_the_position_and_a_plain_check_has_no_location():
    moved = Diagnostic("H3D305", "sage-ring", "title", "error", "boom", Location("r.yaml", 9, 1))
    assert moved.fingerprint == _diagnostic().fingerprint
    assert moved.fingerprint != _diagnostic(target="4xH200").fingerprint
    plain = Diagnostic("H3D305", "sage-ring", "title", "error", "boom").as_json()
    assert (plain["file"], plain["line"], plain["col"]) == (None, None, None)


def test_the_qualified_message_says_what_cannot_be_verified_and_when_sglang_says_it():
    d = _diagnostic(unknown_facts=("hw.gpu_memory",), cannot_verify_why="the GPU's memory", found_after_fix=True)
    assert d.qualified == "once the first findings are fixed: cannot verify (the GPU's memory): boom"
    assert d.as_json()["cannot_verify"] is True


def test_check_shows_a_long_value_of_the_launch_only_as_a_glimpse_in_sarif_and_github(tmp_path):
    """The glimpse lint gives a value (a secret typed where it does not belong) holds for check's
    diagnostics too: they are built by the same from_finding."""
    token = "ghp_" + "q7" * 18  # 40 characters, as test_untrusted_lint.py's token
    for fmt in ("sarif", "github"):
        proc = subprocess.run([sys.executable, "-m", "h3doctor", "check", "--format", fmt, "--profile", "4xH200", "--",
                               *SAGE_RING.split()[:5], "--attention-backend", token], capture_output=True, text=True,
                              cwd=tmp_path, timeout=120)
        assert proc.returncode == 1 and "H3D304" in proc.stdout, proc.stderr
        assert token.upper() not in proc.stdout.upper(), fmt
