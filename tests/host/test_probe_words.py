"""`h3doctor probe` and `h3doctor doctor` speak one vocabulary (issue 31): each fact's name and its
value in words come from host/doctor.py (`label`, `said`), in the probe's JSON as in the doctor's,
and the probe's text prints them folded to the width — "cgroup memory limit: none", never
"cgroup memory.max: yes"."""

from __future__ import annotations

import io

import pytest

from h3doctor.host.doctor import report
from h3doctor.host.probe_facts import build
from h3doctor.output.markup import PlainConsole
from h3doctor.output.probe_text import probe_report
from h3doctor.output.wrap import cells
from tests.host.test_doctor import _machine
from tests.host.test_probe import HOST, NOTHING

CPU_HOST = build(NOTHING | {"nvml": {"ok": False, "missing": True}, "torch_cuda": {"available": False, "count": 0}},
                 {"outcome": "ok"}, HOST, {})


@pytest.mark.parametrize("result", [CPU_HOST, _machine(True), _machine(False, unlimited=None)],
                         ids=["cpu-host", "shared-unlimited", "unread-cgroup"])
def test_the_probe_names_and_says_each_fact_as_the_doctor_does(result):
    probe = {c["fact"]: (c["label"], c["says"], c["why"]) for c in result.as_dict()["checks"]}
    doctor = {c["fact"]: (c["label"], c["says"], c["why"]) for c in report(result)["checks"]
              if c["fact"] != "probe"}
    for fact, (label, says, why) in probe.items():  # the doctor may add to a reason (_matters); never change the words
        assert (label, says) == doctor[fact][:2] and doctor[fact][2].startswith(why), fact
    assert all(says not in ("", "—") for _, says, _ in probe.values())


def test_the_cgroup_fact_is_a_limit_said_in_words():
    checks = {c["fact"]: c for c in _machine(True).as_dict()["checks"]}
    assert (checks["cgroup_memory_unlimited"]["label"], checks["cgroup_memory_unlimited"]["says"]) == (
        "cgroup memory limit", "none")
    limited = {c["fact"]: c for c in _machine(True, unlimited=False).as_dict()["checks"]}
    assert limited["cgroup_memory_unlimited"]["says"] == "set"


@pytest.mark.parametrize("width", [80, 120])
def test_the_probes_text_is_each_fact_in_the_doctors_words_within_the_width(width):
    data = {**CPU_HOST.as_dict(), "hook": {"active": False, "loaded": False, "reason": "not loaded in this shell " * 8}}
    buf = io.StringIO()
    probe_report(data, PlainConsole(buf, width))
    text = buf.getvalue()
    assert all(cells(line) <= width for line in text.splitlines()), text
    flat = " ".join(text.split())
    for c in data["checks"]:
        assert f"{c['label']}: {c['says']}" in flat, c["fact"]
    assert "memory.max: yes" not in flat and "shell hook: inactive" in flat
