"""The effective configuration is resolved as sglang resolves it (catalog 1.4, 2.B, section 3)."""

from __future__ import annotations


def cfg(result):
    return result.evaluation.effective, result.evaluation.context


def test_num_gpus_four_resolves_ulysses_four(run_check):  # 1.4 consequences
    eff, _ = cfg(run_check("sglang serve MiniMaxAI/MiniMax-H3 --num-gpus 4"))
    assert (eff["sp_degree"], eff["ulysses_degree"], eff["ring_degree"], eff["tp_size"]) == (4, 4, 1, 1)


def test_sp_two_goes_through_kv_gather(run_check):  # 1.4 step 5 and 7
    eff, _ = cfg(run_check("sglang serve MiniMaxAI/MiniMax-H3 --num-gpus 2", "8xH200"))
    assert eff["kv_gather_degree"] == 2 and eff["ulysses_degree"] == 2


def test_ring_sets_fa(run_check):  # 1.4: ring > 1 with no backend -> fa
    eff, ctx = cfg(run_check("sglang serve MiniMaxAI/MiniMax-H3 --num-gpus 4 --ulysses-degree 2 --ring-degree 2"))
    assert eff["attention_backend"] == "fa" and ctx["derived.transformer_backend"] == "fa"


def test_auto_mode_below_120_gib_streams_the_dit(run_check):  # 2.B auto on CUDA
    _, ctx = cfg(run_check("sglang serve MiniMaxAI/MiniMax-H3", "1xH100"))
    assert ctx["derived.residency"] == {
        "transformer": "layerwise-offload", "text_encoder": "layerwise-offload",
        "video_vae": "layerwise-offload", "audio_vae": "resident",  # the layerwise vae group excludes audio_vae
    }


def test_a_dmd_schedule_keeps_the_dit_out_of_auto_layerwise(run_check):  # auto_tune.py:769
    # sglang auto-enables DiT layerwise offload only without a DMD schedule: with one, the DiT stays
    # on the component offload the adjust phase chose, the other groups still stream layer by layer
    _, ctx = cfg(run_check("sglang serve MiniMaxAI/MiniMax-H3 --dmd-denoising-steps 1000", "1xH100"))
    assert ctx["args.layerwise_offload_components"] == ["text_encoder", "image_encoder", "vae"]
    assert ctx["derived.residency"]["transformer"] == "component-offload"
    _, plain = cfg(run_check("sglang serve MiniMaxAI/MiniMax-H3", "1xH100"))
    assert plain["derived.residency"]["transformer"] == "layerwise-offload"


def test_auto_mode_at_or_above_120_gib_keeps_everything_resident(run_check):  # 2.B
    _, ctx = cfg(run_check("sglang serve MiniMaxAI/MiniMax-H3", "1xH200"))
    assert set(ctx["derived.residency"].values()) == {"resident"}


def test_mps_defaults(run_check):  # 2.B: MPS -> dit/text component offload, VAEs resident
    _, ctx = cfg(run_check("sglang serve MiniMaxAI/MiniMax-H3", "m3-max"))
    assert ctx["derived.residency"]["video_vae"] == "resident"
    assert ctx["derived.residency"]["transformer"] == "component-offload"


def test_explicit_resident_beats_layerwise_list(run_check):  # 4.1.3: canonical residency wins
    result = run_check("sglang serve MiniMaxAI/MiniMax-H3 --layerwise-offload-components all "
                       "--component-residency transformer=resident", "m3-max")
    assert result.evaluation.context["derived.mps_layerwise_missing"] == ["transformer"]


def test_vdn_defaults_to_hybrid_backend(run_check):  # 3.1
    eff, ctx = cfg(run_check("sglang serve OpenVDN/vdn-minimax-h3"))
    assert eff["attention_backend"] == "hybrid_window_attn_h3"


def test_vdn_on_blackwell_rewrites_quantization(run_check):  # M silent mutation
    eff, _ = cfg(run_check("sglang serve OpenVDN/vdn-minimax-h3 --num-gpus 4", "4xB200"))
    assert eff["quantization"] == "mxfp8"


def test_fasth3_default_vsa_on_h200_not_on_l40s(run_check):  # 1.2 step 6 / 2.D
    _, ctx = cfg(run_check("sglang serve FastVideo/FastVideo-FastH3-8-Step-V2", "1xH200"))
    assert ctx["derived.transformer_backend"] == "video_sparse_attn_h3"
    _, ctx = cfg(run_check("sglang serve FastVideo/FastVideo-FastH3-8-Step-V2", "1xL40S"))
    assert ctx["derived.transformer_backend"] is None


def test_dit_runtime_backend_by_capability(run_check):  # 3.2 CUDA table
    for profile, expected in (("1xH200", "fa"), ("1xRTX5090", "torch_sdpa"), ("4xB200", "dynamic_cudnn_sdpa")):
        _, ctx = cfg(run_check("sglang serve MiniMaxAI/MiniMax-H3", profile))
        assert ctx["derived.dit_backend"] == expected, profile


def test_not_an_h3_launch_is_a_note(run_check):
    result = run_check("sglang serve Wan-AI/Wan2.1-T2V-1.3B-Diffusers")
    assert result.evaluation.family.family is None and result.evaluation.findings == []


def test_family_matching(run_check):  # 1.5
    cases = {
        "MiniMax/MiniMax-H3": "h3",
        "/models/MiniMax-H3": "h3",
        "/cache/models--OpenVDN--vdn-minimax-h3/snapshots/abc": "vdn",
        "FastVideo/FastVideo-FastH3-Omni-8-Step-V1": "fh3o",
    }
    for path, key in cases.items():
        result = run_check(f"sglang serve {path}")
        assert result.evaluation.family.family.key == key, path


def test_the_backend_suggestion_skips_difflib_only_where_difflib_finds_nothing():
    """suggest_backend answers "fa" without difflib when no backend passes difflib's quick_ratio
    bound; the answer is difflib's own for names near and far from a backend."""
    import difflib

    from h3doctor.sglang.resolve import ATTENTION_BACKENDS, BACKEND_ALIASES, may_be_close, suggest_backend

    words = ["none", "None", "", "fa3", "flash_attn", "sage_atn", "torch_sdp", "sdpa2", "xx", "video_sparse_attn",
             "sparse", "aiter", "ait", "fa4", "sage-attn", "TORCH_SDPA", "flashinfer", "sliding_tile_attn"]
    for word in words + [b[:-1] for b in ATTENTION_BACKENDS] + [b + "x" for b in ATTENTION_BACKENDS]:
        key = str(word).strip().lower().replace("-", "_")
        if key in BACKEND_ALIASES or key in ATTENTION_BACKENDS:
            continue
        close = difflib.get_close_matches(key, ATTENTION_BACKENDS, n=1, cutoff=0.8)
        assert suggest_backend(word) == (close[0] if close else "fa"), word
        for b in ATTENTION_BACKENDS:
            assert may_be_close(key, b, 0.8) == (difflib.SequenceMatcher(None, key, b).quick_ratio() >= 0.8)
    assert suggest_backend(None) == "fa"


def test_the_variant_suggestion_is_difflibs_own_with_or_without_difflib():
    import difflib

    from h3doctor.engine.derivations.model_load import _variant_suggestion

    variants = {"fl2va": "FL2VA", "ref2va": "REF2VA", "distilled": "D", "base": "B"}
    for word in [None, "", "none", "fl2a", "ref2", "distiled", "bas", "xyz", "flva", "REF-2VA"]:
        key = (str(word).lower() if word is not None else "").replace("-", "").replace("_", "")
        if key in ("t2va", "t2v", "text2va", "fl2v", "flf2va", "i2va", "ref2v", "r2va", "reference"):
            continue
        close = difflib.get_close_matches(key, list(variants), n=1, cutoff=0.6)
        assert _variant_suggestion(word, variants) == (close[0] if close else None), word
