"""The rule files ship inside the wheel and are found from a regular install, not only a checkout."""

from __future__ import annotations

import subprocess
import sys
import zipfile
from pathlib import Path

import pytest
from repo_paths import REPO



@pytest.fixture(scope="module")
def wheel(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("wheel")
    subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "-q", "-w", str(out), str(REPO)],
                   check=True, capture_output=True, timeout=300)
    [built] = out.glob("h3doctor-*.whl")
    return built


def test_wheel_carries_every_rule_and_data_file(wheel):
    names = zipfile.ZipFile(wheel).namelist()
    shipped = {Path(n).name for n in names if n.startswith("h3doctor/_rules/") and n.endswith(".yaml")}
    assert shipped == {p.name for p in (REPO / "rules").glob("*.yaml")}
    for data in ("h3doctor/sglang/releasedata/0.5.23/flags.json", "h3doctor/schema/rule.schema.json",
                 "h3doctor/host/gpus.json", "h3doctor/schema/config.schema.json", "h3doctor/schema/lint-report.schema.json",
                 "h3doctor/host/builtin_profiles/4xH200.json", "h3doctor/engine/catalog/catalog-0.5.23.tsv",
                 "h3doctor/launch/hook.bash", "h3doctor/launch/hook.zsh", "h3doctor/launch/hook.fish",
                 "h3doctor/suggest/cookbook-0.5.23.json", "h3doctor/schema/suggest.schema.json",
                 "h3doctor/sglang/releasedata/0.5.23/where.json", "h3doctor/sglang/releasedata/manifest.json",
                 "h3doctor/sglang/releasedata/0.5.23/memory.json", "h3doctor/sglang/releasedata/0.5.23/manifest.json",
                 "h3doctor/explain/wordings.json", "h3doctor/schema/explain.schema.json",
                 "h3doctor/py.typed"):
        assert data in names


def test_installed_wheel_finds_its_packaged_rules(wheel, tmp_path):
    site = tmp_path / "site"
    zipfile.ZipFile(wheel).extractall(site)
    code = ("import h3doctor.engine.ruleset as r; d = r.rules_dir(); print(d); "
            "assert d.name == '_rules' and 'site' in str(d), d; print(len(r.load_rules(use_cache=False)))")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=tmp_path,
                          env={"PYTHONPATH": str(site), "PATH": "/usr/bin:/bin"}, timeout=60)
    assert proc.returncode == 0, proc.stderr
    assert int(proc.stdout.split()[-1]) == len(list((REPO / "rules").glob("*.yaml")))


def test_installed_wheel_prints_its_shell_hooks(wheel, tmp_path):
    site = tmp_path / "site"
    zipfile.ZipFile(wheel).extractall(site)
    code = "from h3doctor.launch.hook import init_script; print(init_script('fish'))"
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=tmp_path,
                          env={"PYTHONPATH": str(site), "PATH": "/usr/bin:/bin"}, timeout=60)
    assert proc.returncode == 0, proc.stderr
    assert "function sglang" in proc.stdout
