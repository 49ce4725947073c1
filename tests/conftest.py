"""Shared fixtures: the shipped rules, the 0.5.23 flag table, and a CLI runner on data, not Rich."""

from __future__ import annotations

import json
import os
import shlex
import subprocess
import sys

import pytest

from h3doctor.engine.check import check
from h3doctor.engine.ruleset import load_rules
from h3doctor.host.profiles import load_profile
from h3doctor.sglang.flagtable import load_flag_table


@pytest.fixture(scope="session")
def rules():
    return load_rules()


@pytest.fixture(scope="session")
def table():
    return load_flag_table("0.5.23")


@pytest.fixture
def run_check(rules, table):
    """check(command string, profile name) -> CheckResult, with a clean sglang environment."""

    def _run(command: str, profile: str = "4xH200", env: dict | None = None):
        return check(shlex.split(command), load_profile(profile), rules, table, env or {})

    return _run


def finding_ids(result) -> list[str]:
    return [f.rule.id for f in result.evaluation.findings]


@pytest.fixture
def cli():
    """Run the real console entry point in a subprocess; returns (exit code, parsed JSON or text, stderr)."""

    def _cli(*args: str, json_output: bool = True, env: dict | None = None):
        argv = [sys.executable, "-m", "h3doctor", *args]
        if json_output and args and args[0] == "check":
            argv[4:4] = ["--format", "json"]
        full_env = {k: v for k, v in os.environ.items() if not k.startswith("SGLANG_")}
        full_env.update({"NO_COLOR": "1", "COLUMNS": "200"})
        full_env.update(env or {})
        proc = subprocess.run(argv, capture_output=True, text=True, env=full_env, timeout=60)
        out = proc.stdout
        if json_output and out.strip().startswith("{"):
            out = json.loads(out)
        return proc.returncode, out, proc.stderr

    return _cli
