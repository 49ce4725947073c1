"""A small sample of the fault and fuzz run (tools/fuzz/fuzz.py) in CI; the long run and its
figures are in docs/reliability.md."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from repo_paths import REPO

ROOT = REPO


def test_fuzz_sample_finds_no_problem(tmp_path):
    proc = subprocess.run([sys.executable, str(ROOT / "tools" / "fuzz" / "fuzz.py"), "--cases", "60", "--seed", "3",
                           "--out", str(tmp_path)], capture_output=True, text=True, timeout=600)
    summary = json.loads((tmp_path / "summary.json").read_text())
    assert summary["cases"] == 60 and sum(summary["exit_codes"].values()) == 60
    assert summary["problems"] == {}, (summary, proc.stdout[-2000:], proc.stderr[-2000:])
    assert proc.returncode == 0


def test_fuzz_checks_catch_what_they_look_for():
    sys.path.insert(0, str(ROOT / "tools" / "fuzz"))
    import fuzz

    case = fuzz.Case("recipe")
    case.args = ["check", "--recipe", "r.yaml", "--format", "json"]
    case.files = {"r.yaml": b""}
    base = {"code": 2, "elapsed_s": 0.1, "cpu_s": 0.1, "rss_mb": 50, "killed": False, "stdout": b"", "stderr": b"error: r.yaml:1: bad"}
    assert fuzz.problems_of(case, base) == []
    assert fuzz.problems_of(case, {**base, "code": 3}) == ["internal-error"]
    assert fuzz.problems_of(case, {**base, "code": 120}) == ["exit-120"]
    assert fuzz.problems_of(case, {**base, "cpu_s": 6.0}) == ["slow"]
    assert fuzz.problems_of(case, {**base, "elapsed_s": 6.0}) == []  # wall time alone is the machine's load
    assert fuzz.problems_of(case, {**base, "rss_mb": 300}) == ["memory"]
    assert fuzz.problems_of(case, {**base, "stderr": b"error: bad"}) == ["unlocated-usage-error"]
    assert "canary-printed" in fuzz.problems_of(case, {**base, "stderr": f"r.yaml {fuzz.CANARY}".encode()})
    assert "traceback" in fuzz.problems_of(case, {**base, "stderr": b"r.yaml Traceback (most recent call last)"})
    report = {"findings": [{"rule": "H3D305"}], "command": {"argv": ["sglang", "serve", "M", "--a", "x"]},
              "corrected_argv": ["sglang", "serve", "M", "--a", "y"], "nearest_argv": None,
              "fix_steps": [{"rule": "H3D305", "found_after_fix": False, "changes": [{"removed": ["x"], "added": ["y"]}]}]}
    ok = {**base, "code": 1, "stdout": json.dumps(report).encode()}
    assert fuzz.problems_of(case, ok) == []
    report["fix_steps"][0]["changes"] = []
    assert fuzz.problems_of(case, {**ok, "stdout": json.dumps(report).encode()}) == ["unnamed-change"]
    assert fuzz.problems_of(case, {**ok, "stdout": b'{"findings": NaN}'}) == ["json-not-json"]
