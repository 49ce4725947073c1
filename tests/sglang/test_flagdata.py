"""Facts that the reference catalog (shared/reference/sglang-0.5.23-h3-constraints.md)
states about sglang 0.5.23's diffusion parser, checked against the generated flag table
h3doctor/sglang/releasedata/0.5.23/flags.json (tools/flagtable/extract.py).

Loads the JSON with the standard library only, so it does not depend on the package code.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from repo_paths import REPO

TABLE_PATH = REPO / "h3doctor" / "sglang" / "releasedata" / "0.5.23" / "flags.json"


@pytest.fixture(scope="module")
def data():
    return json.loads(TABLE_PATH.read_text(encoding="utf-8"))


@pytest.fixture(scope="module")
def opt(data):
    """option string -> action entry."""
    return {o: a for a in data["actions"] for o in a["option_strings"]}


def test_header(data):
    assert data["format_version"] == 1
    assert data["sglang_version"] == "0.5.23"
    assert data["generator"] == "tools/flagtable/extract.py"
    # §1.1: serve/generate use a plain argparse.ArgumentParser; allow_abbrev is argparse's default.
    assert data["allow_abbrev"] is True


def test_file_is_canonical_json(data):
    # Sorted keys, indent 1: regeneration gives byte-identical output.
    assert TABLE_PATH.read_text(encoding="utf-8") == json.dumps(data, sort_keys=True, indent=1) + "\n"


def test_option_strings_are_unique(data):
    seen = [o for a in data["actions"] for o in a["option_strings"]]
    assert len(seen) == len(set(seen))


def test_attention_backend_has_no_choices(opt):
    # §1.3: --attention-backend (2362) is str with "no argparse choices".
    a = opt["--attention-backend"]
    assert a["dest"] == "attention_backend"
    assert a["type"] == "str"
    assert a["choices"] is None
    assert a["source"] == "runtime/server_args/server_args.py:2362"


def test_performance_mode_alias_and_choices(opt):
    # §1.3: --performance-mode, --mode (2411); default auto; manual/auto/speed/memory.
    a = opt["--performance-mode"]
    assert a["option_strings"] == ["--performance-mode", "--mode"]
    assert opt["--mode"] is a
    assert a["dest"] == "performance_mode"
    assert a["choices"] == ["manual", "auto", "speed", "memory"]
    assert a["default"] == "auto"


def test_enable_torch_compile_is_store_boolean(opt, data):
    # §1.3: --enable-torch-compile (2614) is StoreBoolean, default False;
    # StoreBoolean takes an optional value (bare flag = true).
    a = opt["--enable-torch-compile"]
    assert a["action"] == "store_boolean"
    assert a["nargs"] == "?"
    assert a["const"] is True
    assert data["dataclass_defaults"]["enable_torch_compile"] is False


@pytest.mark.parametrize(
    "flag",
    [
        "--regional-compile",
        "--enable-cfg-parallel",
        "--enable-breakable-cuda-graph",
        "--dit-layerwise-offload",
        "--dit-cpu-offload",
        "--text-encoder-cpu-offload",
        "--image-encoder-cpu-offload",
        "--vae-cpu-offload",
        "--use-fsdp-inference",
        "--direct-gpu-weight-loading",
        "--minimax-h3-adaln-online",
    ],
)
def test_store_boolean_flags(opt, flag):
    # §1.3: these flags are listed with type StoreBoolean.
    assert opt[flag]["action"] == "store_boolean"


def test_layerwise_offload_alias_shares_dest(opt):
    # §1.3: --layerwise-offload-components, --layerwise-offload-modules (2797), nargs+.
    a = opt["--layerwise-offload-components"]
    b = opt["--layerwise-offload-modules"]
    assert a is b
    assert a["dest"] == "layerwise_offload_components"
    assert a["nargs"] == "+"


@pytest.mark.parametrize("flag", ["--component-residency", "--cpu-offload-components", "--text-encoder-precisions"])
def test_nargs_plus_flags(opt, flag):
    # §1.3: component-residency (2745), cpu-offload-components (2773), text-encoder-precisions (base.py:952) are nargs+.
    assert opt[flag]["nargs"] == "+"


def test_num_gpus_is_int(opt, data):
    # §1.3: --num-gpus (2433) int, default 1.
    a = opt["--num-gpus"]
    assert a["type"] == "int"
    assert data["dataclass_defaults"]["num_gpus"] == 1


@pytest.mark.parametrize(
    "flag,dest",
    [
        ("--tp-size", "tp_size"),
        ("--sp-degree", "sp_degree"),
        ("--ulysses-degree", "ulysses_degree"),
        ("--ring-degree", "ring_degree"),
        ("--kv-gather-degree", "kv_gather_degree"),
        ("--cfg-parallel-size", "cfg_parallel_degree"),
    ],
)
def test_parallel_degrees_are_int_and_unset(opt, data, flag, dest):
    # §1.3 / §1.4: int flags whose default is None ("unset") until _adjust_parallelism.
    a = opt[flag]
    assert a["dest"] == dest
    assert a["type"] == "int"
    assert data["dataclass_defaults"][dest] is None


def test_dp_aliases_share_dest(opt, data):
    # §1.3: --data-parallel-size, --dp-size, --dp (2559) -> dp_size, default 1.
    a = opt["--dp"]
    assert a is opt["--dp-size"] is opt["--data-parallel-size"]
    assert a["dest"] == "dp_size"
    assert a["type"] == "int"
    assert data["dataclass_defaults"]["dp_size"] == 1


def test_pipeline_alias(opt):
    # §1.3: --pipeline, --pipeline-class-name (2340) -> pipeline_class_name.
    assert opt["--pipeline"] is opt["--pipeline-class-name"]
    assert opt["--pipeline"]["dest"] == "pipeline_class_name"


@pytest.mark.parametrize(
    "flag,choices,default",
    [
        ("--backend", ["auto", "sglang", "diffusers"], "auto"),
        ("--encoder-parallel", ["auto", "fold", "dp", "replicate"], "auto"),
        ("--warmup-mode", ["off", "request", "server"], None),
        (
            "--disagg-role",
            ["monolithic", "encoder", "prompt_encoder", "image_encoder", "denoiser", "decoder", "server", "denoising"],
            "monolithic",
        ),
        ("--vae-config.parallel-decode-mode", ["tiled", "patch", "spatial_shard", "spatial", "auto"], None),
        ("--text-encoder-precisions", ["fp32", "fp16", "bf16"], ["fp32"]),
    ],
)
def test_choices(opt, flag, choices, default):
    # §1.3 choices column; §2.A A4 lists these as argparse-checked.
    a = opt[flag]
    assert a["choices"] == choices
    assert a["default"] == default


def test_dataclass_defaults_differ_from_argparse(opt, data):
    # §1.2 step 3: dataclass defaults (not argparse defaults) apply to untyped flags,
    # e.g. pin_cpu_memory=True and vae_cpu_offload=False.
    dd = data["dataclass_defaults"]
    assert dd["pin_cpu_memory"] is True
    assert dd["vae_cpu_offload"] is False
    assert opt["--pin-cpu-memory"]["default"] is False  # argparse default is not what applies
    # §1.3: dit/text-encoder/image-encoder cpu offload default None.
    assert dd["dit_cpu_offload"] is None
    assert dd["text_encoder_cpu_offload"] is None
    assert dd["image_encoder_cpu_offload"] is None


def test_h3_adaln_flags(opt):
    # §1.3: --minimax-h3-adaln-plan-width int 4, -host-cache-gb float 8.0, -cache-path str None.
    assert (opt["--minimax-h3-adaln-plan-width"]["type"], opt["--minimax-h3-adaln-plan-width"]["default"]) == ("int", 4)
    assert (opt["--minimax-h3-adaln-host-cache-gb"]["type"], opt["--minimax-h3-adaln-host-cache-gb"]["default"]) == (
        "float",
        8.0,
    )
    assert opt["--minimax-h3-adaln-cache-path"]["default"] is None


def test_config_only_on_serve_and_generate(data, opt):
    # §1.1: --config is registered for serve/generate, not for launch_server.
    parsers = data["parsers"]
    assert parsers["serve"]["extra"] == ["--config"]
    assert "--config" in parsers["generate"]["extra"]
    assert "--config" not in parsers["launch_server"]["extra"]
    assert parsers["launch_server"]["extra"] == []
    assert opt["--config"]["source"] == "runtime/entrypoints/cli/serve.py:24"


def test_underscore_spelling_is_not_an_option(opt):
    # §1.2 step 3: under serve, --attention_backend is not converted and is unrecognised.
    assert "--attention_backend" not in opt


def test_abbreviation_ambiguity_for_model(opt):
    # §1.1: --model is an ambiguous abbreviation of --model-path/--model-subfolder/--model-variant/--model-id.
    matches = sorted(o for o in opt if o.startswith("--model"))
    assert matches == ["--model-id", "--model-path", "--model-subfolder", "--model-variant"]


def test_removed_config_keys(data):
    # §1.2 step 4 / §2.A A8: decoder_tp, warmup, server_warmup raise "Removed server argument(s)".
    assert data["removed_config_keys"] == ["decoder_tp", "warmup", "server_warmup"]


def test_component_map_flags(data):
    # §1.2 step 2: the dynamic per-component flags parsed out of the unknown args.
    flags = {f["prefix"]: f for f in data["component_map_flags"]}
    assert set(flags) == {
        "--component-paths.",
        "--component-weights-paths.",
        "--component-quantizations.",
        "--component-precisions.",
        "--component-direct-gpu-weight-loading.",
        "--component-quantization-ignored-layers.",
        "--component-attention-backends.",
    }
    assert flags["--component-paths."]["alias"] == "--{c}-path"
    assert flags["--component-weights-paths."]["alias"] == "--{c}-weights-path"
    assert flags["--component-quantizations."]["alias"] == "--{c}-quantization"
    for prefix in ("--component-precisions.", "--component-direct-gpu-weight-loading.",
                   "--component-quantization-ignored-layers.", "--component-attention-backends."):
        assert flags[prefix]["alias"] is None
    # "--component-direct-gpu-weight-loading.<c> [true|false]"; "ignored-layers.<c> L..."
    assert flags["--component-direct-gpu-weight-loading."]["value"] == "bool_optional"
    assert flags["--component-quantization-ignored-layers."]["value"] == "many"
    for prefix in ("--component-paths.", "--component-weights-paths.", "--component-quantizations.",
                   "--component-precisions.", "--component-attention-backends."):
        assert flags[prefix]["value"] == "one"
    for f in flags.values():
        assert f["dest"] == f["prefix"][2:-1].replace("-", "_")
        assert f["dest"] in data["dataclass_defaults"]


def test_transformer_weights_path_is_a_real_option(opt, data):
    # §1.3: --transformer-weights-path (nunchaku.py:179) is an argparse option, so the
    # dynamic alias --<c>-weights-path (§1.2 step 2) never sees c=transformer.
    assert opt["--transformer-weights-path"]["dest"] == "transformer_weights_path"
    assert opt["--transformer-weights-path"]["source"] == "configs/quantization/nunchaku.py:179"
    weights = next(f for f in data["component_map_flags"] if f["prefix"] == "--component-weights-paths.")
    assert weights["alias_shadowed_by_parser"] == {"--transformer-weights-path": "transformer_weights_path"}


def test_config_keys_are_dataclass_fields(data):
    # §1.2 step 4: --config keys are ServerArgs field names (underscores) plus PipelineConfig keys.
    dd = data["dataclass_defaults"]
    for key in ("num_gpus", "attention_backend", "layerwise_offload_components",
                "enable_torch_compile", "component_attention_backends"):
        assert key in dd
    assert "vae_config" in data["pipeline_config_fields"]
    assert "text_encoder_precisions" in data["pipeline_config_fields"]


def test_the_known_releases_are_the_flag_history_releases():
    """releases.known_releases() lists the flag tables' files (cheap on every check); the generated
    flag history must name exactly those releases, in the same order."""
    from h3doctor.sglang import releases

    assert releases.known_releases() == sorted(releases.history()["releases"], key=releases.key)
    assert releases.known_releases()[0] == "0.5.16" and "0.5.23" in releases.known_releases()
