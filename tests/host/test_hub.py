"""The Hub token and the host spill folder (host/hub.py): huggingface_hub's order of token sources,
a token file read bounded and never shown, the spill folder's free space; the probe's lines."""

from __future__ import annotations

import json
import os

import pytest

from h3doctor.host import hub
from h3doctor.host.probe import system_facts
from h3doctor.host.probe_facts import build

SECRET = "hf_" + "S3cr3tT0k3nV4lu3" * 2


def test_hf_token_first_then_the_old_name_then_the_file(tmp_path):
    (tmp_path / "token").write_text(SECRET)
    env = {"HF_HOME": str(tmp_path)}
    assert hub.hub_token({**env, "HF_TOKEN": SECRET}) == (True, "$HF_TOKEN")
    assert hub.hub_token({**env, "HUGGING_FACE_HUB_TOKEN": SECRET}) == (True, "$HUGGING_FACE_HUB_TOKEN")
    assert hub.hub_token(env) == (True, str(tmp_path / "token"))


def test_an_empty_variable_falls_through_and_a_blank_file_is_no_token(tmp_path):
    (tmp_path / "token").write_text(" \n")
    present, source = hub.hub_token({"HF_HOME": str(tmp_path), "HF_TOKEN": ""})
    assert present is False and source == str(tmp_path / "token")


def test_no_token_anywhere_is_false_not_unknown(tmp_path):
    present, source = hub.hub_token({"HF_HOME": str(tmp_path)})
    assert present is False and "HF_TOKEN" in source


def test_hf_token_path_and_xdg_cache_home(tmp_path):
    (tmp_path / "elsewhere").write_text(SECRET)
    assert hub.hub_token({"HF_TOKEN_PATH": str(tmp_path / "elsewhere")})[0] is True
    (tmp_path / "huggingface").mkdir()
    (tmp_path / "huggingface" / "token").write_text(SECRET)
    assert hub.hub_token({"XDG_CACHE_HOME": str(tmp_path)})[0] is True
    assert hub.hub_token({"HOME": str(tmp_path / "home")})[0] is False


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="FIFOs")
def test_a_token_file_that_cannot_be_read_is_unknown_and_a_fifo_does_not_hang(tmp_path):
    os.mkfifo(tmp_path / "token")
    assert hub.hub_token({"HF_HOME": str(tmp_path)})[0] is None
    os.remove(tmp_path / "token")
    (tmp_path / "token").mkdir()
    assert hub.hub_token({"HF_HOME": str(tmp_path)})[0] is None


def test_an_oversized_token_file_is_unknown(tmp_path):
    (tmp_path / "token").write_text("x" * (hub._TOKEN_BYTES + 1))
    assert hub.hub_token({"HF_HOME": str(tmp_path)})[0] is None


def test_the_spill_folder_default_and_variable():
    assert hub.spill_dir({"HOME": "/home/u"}) == "/home/u/.cache/sglang/diffusion/host_spill"
    assert hub.spill_dir({"HOME": "/home/u", "SGLANG_DIFFUSION_HOST_SPILL_DIR": "~/spill"}) == "/home/u/spill"


def test_the_probe_measures_the_spill_folder_s_nearest_parent(tmp_path):
    facts = system_facts({"HOME": str(tmp_path), "SGLANG_DIFFUSION_HOST_SPILL_DIR": str(tmp_path / "a" / "b")})
    assert facts["spill_free"] is not None and facts["spill_measured"] == str(tmp_path)


def test_the_token_never_reaches_the_probe_s_facts_lines_or_json(tmp_path):
    (tmp_path / "token").write_text(SECRET)
    for env in ({"HF_HOME": str(tmp_path)}, {"HF_HOME": str(tmp_path), "HF_TOKEN": SECRET}):
        host = system_facts(env)
        result = build({}, {"outcome": "ok"}, host, env)
        assert result.facts.hf_token is True and result.line("hf_token").status == "ok"
        said = json.dumps(result.as_dict(), default=str) + repr(result.facts) + json.dumps(host, default=str)
        assert SECRET not in said and "S3cr3t" not in said


def test_real_hub_facts_on_this_machine():
    # this machine's token sources, Hugging Face cache and spill folder (CI too): no network, no GPU;
    # each read, or unknown with its reason
    from tests.engine.test_download import H3, run

    host = system_facts(dict(os.environ))
    assert host["hf_token"] in (True, False, None) and host["hf_token_source"]
    assert host["spill_free"] is not None and host["spill_reason"] == "statvfs"
    found, ctx = run(H3, hf_cache_dir=host["hf_cache"], disk_free_gib=host["disk_free"] / 2**30)
    assert ctx["derived.host.hub_snapshot"] in ("absent", "present", "complete", "incomplete")
    assert ctx["derived.download_need_gib"] is not None and ctx["derived.host.download_short_gib"] is not None
