"""On Apple MPS the model's weights are compared with the unified memory the GPU and the CPU share,
and the finding says what will happen (engine/derivations/memory._unified): never "the GPU's memory
is not known" under a header that gives the memory, nor a GPU host's advice alone. The fit stays
"cannot verify": what the first forward adds on MPS is not modelled."""

from __future__ import annotations

import shlex

import pytest

from h3doctor.engine.check import check
from h3doctor.host.profiles import load_profile
from h3doctor.record import replace
from h3doctor.sglang.flagtable import load_flag_table

MPS_LAUNCH = ("sglang serve MiniMaxAI/MiniMax-H3 "
              "--layerwise-offload-components transformer text_encoder video_vae audio_vae")


@pytest.fixture(scope="module")
def table():
    return load_flag_table("0.5.23")


def _h3d543(rules, table, **facts):
    hw = replace(load_profile("m3-max"), **facts)
    findings = {f.rule.id: f for f in check(shlex.split(MPS_LAUNCH), hw, rules, table, {}).evaluation.findings}
    assert "H3D991" not in findings  # the derivation did not fail
    return findings["H3D543"]


def test_weights_that_fit_in_unified_memory_leave_the_rest_said(rules, table):
    f = _h3d543(rules, table)
    assert f.cannot_verify and "not known" not in f.message
    assert "weights (about 115.5 GiB) fit in the 128 GiB of unified memory" in f.message
    assert "leaving 12.5 GiB" in f.message


def test_weights_over_unified_memory_say_what_will_happen(rules, table):
    f = _h3d543(rules, table, host_memory_gib=64)
    assert "more than the 64 GiB of unified memory" in f.message and "page weights out to disk" in f.message


def test_an_unknown_memory_is_said_and_not_guessed(rules, table):
    f = _h3d543(rules, table, host_memory_gib=None, gpu_memory_gib=None, gpu_free_gib=None)
    assert "memory is not known" in f.message and "GiB of unified memory" not in f.message
