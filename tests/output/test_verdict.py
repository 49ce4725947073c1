"""One verdict (h3doctor/output/verdict.py): lint's report, each of its launches, and the exit code
agree on pass/fail, suppressions and --fail-on included; check's report and exit code read it too."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path

from h3doctor.output.verdict import failing, verdict
from repo_paths import REPO


# 4xH200 with Ulysses x ring and SageAttention: H3D305 (an error) is the launch's only finding
SAGE_RING = ("sglang serve MiniMaxAI/MiniMax-H3 --num-gpus 4 --ulysses-degree 2 --ring-degree 2 "
             "--attention-backend sage_attn")


def lint(tmp_path: Path, recipe: str, *options: str) -> tuple[int, dict]:
    path = tmp_path / "r.yaml"
    path.write_text(textwrap.dedent(recipe), encoding="utf-8")
    proc = subprocess.run([sys.executable, "-m", "h3doctor", "lint", "--format", "json", *options, str(path)],
                          capture_output=True, text=True, cwd=tmp_path, timeout=120)
    assert proc.returncode in (0, 1), proc.stderr
    return proc.returncode, json.loads(proc.stdout)


def launch_verdicts(report: dict) -> list[str]:
    return [r["verdict"] for f in report["files"] for launch in f["launches"] for r in launch["results"]]


def test_a_suppressed_error_passes_the_report_its_launch_and_the_exit_code(tmp_path):
    code, report = lint(tmp_path, f"""\
        targets: [4xH200]
        command: {SAGE_RING}  # h3doctor: ignore[H3D305] benchmarking sage on purpose
        """)
    assert [f["rule"] for f in report["findings"] if f["suppressed"]] == ["H3D305"]
    assert (code, report["verdict"], launch_verdicts(report)) == (0, "pass", ["pass"])


def test_an_error_the_configuration_ignores_passes_its_launch_too(tmp_path):
    (tmp_path / ".h3doctor.yaml").write_text("ignore: [H3D305]\n", encoding="utf-8")
    code, report = lint(tmp_path, f"targets: [4xH200]\ncommand: {SAGE_RING}\n")
    assert (code, report["verdict"], launch_verdicts(report)) == (0, "pass", ["pass"])


def test_the_same_error_unsuppressed_fails_all_three(tmp_path):
    code, report = lint(tmp_path, f"targets: [4xH200]\ncommand: {SAGE_RING}\n")
    assert (code, report["verdict"], launch_verdicts(report)) == (1, "fail", ["fail"])


def test_fail_on_sets_the_bar_and_a_suppression_lifts_a_finding_over_it():
    class F:
        def __init__(self, severity, suppressed=None):
            self.severity, self.suppressed = severity, suppressed

    warning, error, quiet = F("warning"), F("error"), F("error", "suppressed inline")
    assert failing([warning, error, quiet], "error") == [error]
    assert failing([warning, error, quiet], "warning") == [warning, error]
    assert verdict([warning], "error") == "pass" and verdict([warning], "warning") == "fail"
    assert verdict([quiet], "info") == "pass"

    class Engine:  # the engine's findings have no suppression field: never suppressed
        severity = "error"

    assert verdict([Engine()], "error") == "fail"
