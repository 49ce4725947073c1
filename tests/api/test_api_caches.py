"""What a check keeps between calls for speed (benchmarks/README.md, "API throughput") is only
what cannot change: the process's environment is read again once it changed, a profile file is
read on every call, and a shared built-in profile is the same facts as a fresh read."""

from __future__ import annotations

import json
import os

from h3doctor import api
from h3doctor.host import profiles
from h3doctor.paths import package_path
from h3doctor.request import process_environment

H3 = ["sglang", "serve", "MiniMaxAI/MiniMax-H3", "--num-gpus", "4"]


def test_the_process_environment_is_read_again_once_it_changes(monkeypatch):
    monkeypatch.delenv("H3DOCTOR_TEST_VAR", raising=False)
    assert "H3DOCTOR_TEST_VAR" not in process_environment()
    monkeypatch.setenv("H3DOCTOR_TEST_VAR", "one")
    assert process_environment()["H3DOCTOR_TEST_VAR"] == "one"
    monkeypatch.setenv("H3DOCTOR_TEST_VAR", "two")
    assert process_environment()["H3DOCTOR_TEST_VAR"] == "two"
    monkeypatch.delenv("H3DOCTOR_TEST_VAR")
    assert "H3DOCTOR_TEST_VAR" not in process_environment()
    assert process_environment() == dict(os.environ)
    process_environment()["H3DOCTOR_TEST_VAR"] = "a caller's change"  # a copy each time
    assert "H3DOCTOR_TEST_VAR" not in process_environment()


def test_a_check_sees_the_environment_as_it_is_at_the_call(monkeypatch):
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "0,1,2,3")
    before = api.check(H3, profile="4xH200").to_dict()
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "0")
    after = api.check(H3, profile="4xH200").to_dict()
    assert before["verdict"] == "pass" and after["verdict"] == "fail"


def test_a_profile_file_is_read_on_every_call(tmp_path):
    path = tmp_path / "box.json"
    with open(package_path("h3doctor.host.builtin_profiles", "4xH200.json"), encoding="utf-8") as f:
        facts = json.load(f)
    path.write_text(json.dumps(facts))
    assert api.check(H3, profile=str(path)).verdict == "pass"
    path.write_text(json.dumps({**facts, "gpu_count": 2}))
    assert api.check(H3, profile=str(path)).verdict == "fail"


def test_a_shared_built_in_profile_is_the_fresh_read():
    for name in ("4xH200", "8xH100", "2xA100-80GB"):
        data, origin = profiles.profile_mapping(name)
        assert profiles.load_profile(name) == profiles.facts_from_mapping(data, origin)
