"""Per-release judgement: the target release, flags of other releases, rules with release ranges."""

from __future__ import annotations

import re
import shlex

import pytest

from h3doctor.engine.check import check
from h3doctor.engine.conditions import paths_of
from h3doctor.engine.ruleset import load_rules, version_in_range
from h3doctor.errors import UsageError
from h3doctor.host.profiles import load_profile
from h3doctor.sglang import releases
from h3doctor.sglang.argv import DYNAMIC_MAPS
from h3doctor.sglang.flagtable import load_flag_table

RULES = load_rules()
H3 = "sglang serve MiniMaxAI/MiniMax-H3"


def run(argv: str, version: str, profile: str = "4xH200"):
    target = releases.target(version, None)
    return check(shlex.split(argv), load_profile(profile), RULES, load_flag_table(target.table_version), {}, {},
                 release=target)


def fired(result, rule_id):
    return [f for f in result.evaluation.findings if f.rule.id == rule_id]


def test_release_precedence_option_recipe_installed_default():
    assert releases.target("0.5.19", "0.5.18", installed="0.5.21") == releases.Release("0.5.19", "option", "0.5.19")
    assert releases.target(None, "0.5.18", installed="0.5.21").source == "recipe"
    assert releases.target(None, None, installed="0.5.21.post1") == releases.Release("0.5.21", "installed", "0.5.21")
    assert releases.target(None, None, installed=None) == releases.Release("0.5.23", "default", "0.5.23")
    with pytest.raises(UsageError):
        releases.target("banana", None)


def test_flag_added_later_names_the_release_and_is_dropped_for_the_target():
    result = run(f"{H3} --num-gpus 4 --component-residency transformer=resident", "0.5.17")
    [f] = fired(result, "H3D012")
    assert f.message == "error: unrecognized arguments: --component-residency transformer=resident"
    assert "--component-residency was added in sglang 0.5.18" in f.why
    assert result.corrected_command == f"{H3} --num-gpus 4"
    assert any("dropped --component-residency" in n and "0.5.18" in n for n in result.fix_notes)
    assert not fired(result, "H3D020")  # reported once, as a flag of another release


def test_removed_flag_is_translated_to_the_target_spelling():
    result = run(f"{H3} --num-gpus 4 --server-warmup", "0.5.19")
    [f] = fired(result, "H3D012")
    assert "exists only up to sglang 0.5.17 (removed in 0.5.18)" in f.why
    assert result.corrected_command == f"{H3} --num-gpus 4 --warmup-mode server"
    # the same flag on its own release is fine
    assert not fired(run(f"{H3} --num-gpus 4 --server-warmup", "0.5.17"), "H3D012")


@pytest.mark.parametrize("version, present", [("0.5.18", False), ("0.5.19", True), ("0.5.23", True)])
def test_mps_rules_from_0519(version, present):
    result = run(f"{H3} --enable-torch-compile", version, profile="m3-max")
    assert bool(fired(result, "H3D303")) is present
    assert bool(fired(result, "H3D302")) is present


def test_ring_with_sage_attn_first_request_on_0518_launch_on_0519():
    argv = f"{H3} --num-gpus 4 --ulysses-degree 2 --ring-degree 2 --attention-backend sage_attn"
    [old] = fired(run(argv, "0.5.18"), "H3D305")
    assert old.rule.stage == "first-request" and old.rule.sglang_stage == "R"
    assert old.message == "MiniMax H3 ring parallelism requires the FlashAttention backend (matches --ring-degree's general restriction)."
    assert old.rule.where.endswith("dits/minimax_h3.py:490")
    [new] = fired(run(argv, "0.5.19"), "H3D305")
    assert new.rule.stage == "launch" and new.message == "MiniMax-H3 ring parallelism requires the FlashAttention backend for the transformer"
    assert new.rule.where.endswith("minimax_h3.py:257")  # the raise, as sglang's traceback names it


def test_0517_refuses_ring_at_model_load():
    result = run(f"{H3} --num-gpus 4 --ulysses-degree 2 --ring-degree 2", "0.5.17")
    [f] = fired(result, "H3D527")
    assert f.rule.stage == "after-download" and "does not support Ring or mixed USP" in f.message
    assert result.corrected_command == f"{H3} --num-gpus 4 --ulysses-degree 4 --ring-degree 1"


def test_0516_has_no_h3_and_names_the_minimum_release():
    result = run(f"{H3} --num-gpus 4 --layerwise-prefetch-size 2", "0.5.16")
    [f] = fired(result, "H3D003")
    assert f.severity == "error" and "first release that serves it is 0.5.17" in f.message
    assert "needs at least 0.5.19 (for the flag --layerwise-prefetch-size)" in f.message
    assert result.fix_status == "no-fix"
    omni = run("sglang serve FastVideo/FastVideo-FastH3-Omni-8-Step-V1", "0.5.16")
    assert "needs at least 0.5.23" in fired(omni, "H3D003")[0].message


def test_model_registered_later_is_an_error():
    [f] = fired(run("sglang serve OpenVDN/vdn-minimax-h3 --num-gpus 4", "0.5.19"), "H3D004")
    assert f.message.endswith("the first release that does is 0.5.20")
    assert not fired(run("sglang serve OpenVDN/vdn-minimax-h3 --num-gpus 4", "0.5.20"), "H3D004")


def test_clean_on_0523_but_not_on_an_older_release():
    argv = f"{H3} --num-gpus 4 --warmup-num-frames 9 --performance-mode speed"
    new = run(argv, "0.5.23")
    assert [f for f in new.evaluation.findings if f.severity == "error"] == [] and new.fix_status == "clean"
    old = run(argv, "0.5.18")
    assert [f.rule.id for f in old.evaluation.findings if f.severity == "error"] == ["H3D012"]
    assert old.corrected_command == f"{H3} --num-gpus 4 --performance-mode speed"
    assert not [f for f in run(old.corrected_command, "0.5.18").evaluation.findings if f.severity == "error"]


def test_unverified_release_says_which_rule_families_it_cannot_verify():
    result = run(f"{H3} --num-gpus 4", "0.5.20")
    [f] = fired(result, "H3D921")
    assert f.severity == "warning" and f.message.startswith("cannot verify for sglang 0.5.20:")
    # the memory model gives 0.5.20 lower bounds for the load and the first forward (H3D540, H3D640);
    # the host pin budget and the measured workspace are 0.5.23's only; the H3 hook's checks were read;
    # the request step-count check (H3D612) and the fail-open startup warmup (H3D642) were read
    # only in 0.5.23's source
    assert "model load (1 rule)" in f.message and "first request / forward (3 rules)" in f.message
    assert "the H3 model hook" not in f.message
    assert not fired(run(f"{H3} --num-gpus 4", "0.5.23"), "H3D921")


def test_newer_release_is_judged_with_the_newest_verified_and_warned():
    result = run(f"{H3} --num-gpus 4", "0.5.30")
    [f] = fired(result, "H3D920")
    assert "newest verified release (0.5.23)" in f.message
    assert result.evaluation.context["release.version"] == "0.5.30"


# Flags and fields the argparse tables do not hold, with where sglang reads them: sglang serve's
# dispatcher flag (cli/serve.py:26 in 0.5.17, :37 in 0.5.18-0.5.19, :38 from 0.5.21), the
# dynamic --component-<map>.<c> flags (ServerArgs.from_cli_args; argv.DYNAMIC_MAPS).
_NOT_IN_TABLES = {"--model-type"} | {prefix[0].rstrip(".") for _d, prefix, _a, _m in DYNAMIC_MAPS}
_FLAG = re.compile(r"^--[a-z0-9][a-z0-9-]*(\.[a-z0-9_]+)?$")


def _fix_flags(ops):
    for op in ops or ():
        for body in op.values():
            if isinstance(body, dict) and isinstance(body.get("flag"), str):
                yield body["flag"]


def test_every_rule_flag_exists_in_every_release_it_claims():
    """Fix ops name flags and conditions read `args.<dest>`: each must be in the flag table of
    every release the rule claims (args.* also reads ServerArgs fields, so dataclass fields count)."""
    missing = []
    for rule in RULES:
        claimed = [v for v in releases.known_releases() if rule.in_release(v)]
        assert claimed, f"{rule.id} claims no release with a flag table ({rule.versions})"
        flags = {f.split(".")[0] for f in _fix_flags(rule.fix) if _FLAG.match(f)}
        dests = {p.split(".")[1] for p in paths_of(rule.when) if p.startswith("args.")}
        for version in claimed:
            table = load_flag_table(version)
            options = {o for a in table.actions for o in a.option_strings}
            known_dests = {d.split(".")[0] for d in table.by_dest} | set(table.dataclass_defaults)  # vae_config.<field>
            missing += [f"{rule.id} {version} {flag}" for flag in flags if flag not in options | _NOT_IN_TABLES]
            missing += [f"{rule.id} {version} args.{d}" for d in dests if d not in known_dests]
    assert missing == []


def test_verified_absent_ranges_lie_outside_the_claimed_range():
    for rule in RULES:
        if rule.absent:
            absent = [v for v in releases.known_releases() if version_in_range(v, rule.absent)]
            assert absent and not any(version_in_range(v, rule.versions) for v in absent), (rule.id, rule.absent)


def test_a_check_verified_absent_is_not_reported_as_unverified():
    """A rule claimed only for 0.5.23 makes 0.5.20 "cannot verify" its stage; the same rule with
    `sglang.absent` covering 0.5.20 (the source was read: no such check) does not."""
    import dataclasses

    from h3doctor.engine.ruleset import RuleSet

    base = next(r for r in RULES if r.id == "H3D305")
    only_newest = dataclasses.replace(base, versions="==0.5.23", releases=())
    assert RuleSet([only_newest]).unverified("h3", "cuda", "serve", "0.5.20", "0.5.23") == ["the H3 model hook (1 rule)"]
    absent = dataclasses.replace(only_newest, absent=">=0.5.17,<=0.5.22")
    assert RuleSet([absent]).unverified("h3", "cuda", "serve", "0.5.20", "0.5.23") == []


def test_release_overrides_stay_inside_the_rule_range():
    for rule in RULES:
        for entry in rule.releases:
            inside = [v for v in releases.known_releases() if version_in_range(v, entry["versions"])]
            assert inside and all(version_in_range(v, rule.versions) for v in inside), (rule.id, entry["versions"])


def test_attention_backend_names_per_release():
    """Every release with H3 has its AttentionBackendEnum names; the newest matches the model's."""
    from h3doctor.sglang.resolve import ATTENTION_BACKENDS

    with_h3 = [v for v in releases.known_releases() if releases.key(v) >= releases.key(releases.facts()["first_h3"])]
    for version in with_h3:
        assert releases.attention_backends(version), version
    assert releases.attention_backends(with_h3[-1]) == frozenset(ATTENTION_BACKENDS)
    assert releases.attention_backends("9.9.9") is None


@pytest.mark.parametrize("version, keyerror", [("0.5.18", True), ("0.5.19", True), ("0.5.20", False), ("0.5.23", False)])
def test_backend_a_release_does_not_define_is_a_keyerror(version, keyerror):
    """video_sparse_attn_h3 joins AttentionBackendEnum in 0.5.20: before, the H3 hook's lookup raises."""
    [f] = fired(run(f"{H3} --num-gpus 4 --attention-backend video_sparse_attn_h3", version), "H3D304") or [None]
    assert (f is not None) is keyerror
    if keyerror:
        assert f.message == "KeyError: 'VIDEO_SPARSE_ATTN_H3'"
    # a transformer override is normalised (and checked) by the launcher, not by this lookup
    assert not fired(run(f"{H3} --num-gpus 4 --component-attention-backends transformer=fa", version), "H3D304")


@pytest.mark.parametrize("model, version, profile, auto", [
    ("FastVideo/FastVideo-FastH3-4-step-Preview-v1-VSA-DataFree", "0.5.21", "1xH200", False),  # no default yet
    ("FastVideo/FastVideo-FastH3-8-Step-V2", "0.5.22", "1xH200", True),
    ("FastVideo/FastVideo-FastH3-8-Step-V2", "0.5.22", "1xA100", False),  # VSA-H3 runs on 8.0 only from 0.5.23
    ("FastVideo/FastVideo-FastH3-8-Step-V2", "0.5.23", "1xA100", True),
])
def test_fasth3_default_vsa_h3_follows_the_release(model, version, profile, auto):
    ctx = run(f"sglang serve {model}", version, profile=profile).evaluation.context
    assert bool(ctx.get("events.fh3_default_vsa")) is auto
    assert (ctx["derived.transformer_backend"] == "video_sparse_attn_h3") is auto


def test_memory_rules_claim_only_the_releases_whose_memory_is_modelled():
    """A fit rule's range holds releases with a memory model; the verdicts a lower-bound release
    never gives (the measured workspace, the host pin budget) stay the calibrated release's."""
    from h3doctor.sglang.memory import model_for

    bounded_never = ("derived.memory.likely_over", "derived.memory.host_short")
    for rule in RULES:
        read = [p for p in paths_of(rule.when) if p.startswith("derived.memory")]
        if not read:
            continue
        for version in releases.known_releases():
            if not rule.in_release(version):
                continue
            model = model_for(version)
            assert model is not None, f"{rule.id} claims {version}, which has no memory model"
            if not model.exact:
                assert not set(read) & set(bounded_never), f"{rule.id} claims {version}, where {read} is never known"
