"""The host memory a launch's pinned layer stores lock, per release (docs/host-facts.md host-10).

`pinned_need_gib` reads how each release pins from `releasedata/X.Y.Z/memory.json` `pinning`:
torch's power-of-two blocks with no budget (0.5.17, 0.5.18), the same blocks under a budget that
counts the unrounded size (0.5.19), in-place pinning at the store's size within the budget (0.5.20
on). Held here on made-up stores, then through `check` on the RTX 5090 + 60 GB launch of
sglang PR #39021.
"""

from __future__ import annotations

import json
import shlex
from dataclasses import replace

import pytest

from h3doctor.engine.check import evaluate_launch
from h3doctor.engine.ruleset import load_rules
from h3doctor.host.profiles import load_profile
from h3doctor.sglang import release_files, releases
from h3doctor.sglang.flagtable import load_flag_table
from h3doctor.sglang.memory import Budget, pinned_need_gib

H3_RELEASES = ("0.5.17", "0.5.18", "0.5.19", "0.5.20", "0.5.21", "0.5.22", "0.5.23")
DIT_BLOCK = 1.2025  # GiB: one MiniMax-H3 DiT block (memory.json weights_gib.dit_block)
TE_LAYER = 0.9082
RULES = load_rules()


def _budget(stores, ranks=1) -> Budget:
    """A Budget carrying only what pinned_need_gib reads: the layer stores and the ranks."""
    return Budget(capacity_gib=None, context_gib=0.0, load_by_component={}, load_gib=None, load_failing_component=None,
                  stage_active_gib={}, peak_stage="denoise", workload=None, activations_live_gib=None,
                  live_margin_gib=0.0, workspace_typical_gib=None, peak_live_gib=None, peak_typical_gib=None,
                  peak_weights_gib=0.0, host_layerwise_gib=0.0, host_spendable_gib=None, fold=None,
                  host_stores=tuple(stores), ranks=ranks)


DIT_AND_TE = [("transformer", 50, DIT_BLOCK), ("text_encoder", 50, TE_LAYER)]


def test_every_h3_release_states_how_it_pins_with_its_sources():
    for version in H3_RELEASES:
        pinning = json.loads(open(release_files.path(version, "memory")).read())["pinning"]
        for key in ("stores", "in_place_min_gib", "budget", "reserve_fraction", "reserve_min_gib", "copy_reserve_gib",
                    "staging_slots", "non_layer_pinned_gib"):
            assert "value" in pinning[key] and pinning[key]["source"], (version, key)
        assert pinning["stores"]["value"] == ("power_of_two" if version < "0.5.20" else "in_place")
        assert pinning["budget"]["value"] == {"0.5.17": "none", "0.5.18": "none", "0.5.19": "unrounded"}.get(version, "exact")
        # the courier's two pinned slots from 0.5.19 (no layer is left on the mapping before it)
        assert pinning["staging_slots"]["value"] == (None if version < "0.5.19" else 2)
        assert pinning["non_layer_pinned_gib"]["value"] == 0.0


@pytest.mark.parametrize("version", ["0.5.17", "0.5.18"])
def test_no_budget_pins_every_store_at_its_power_of_two_on_every_rank(version):
    # 50 DiT blocks x 2 GiB + 50 text-encoder layers x 1 GiB, per rank, whatever the host has
    assert pinned_need_gib(_budget(DIT_AND_TE), version, True, 55.9) == 150.0
    assert pinned_need_gib(_budget(DIT_AND_TE, ranks=4), version, True, None) == 600.0
    # unpinned, every layer is still an anonymous copy, at its own size
    assert pinned_need_gib(_budget(DIT_AND_TE), version, False, 55.9) == pytest.approx(50 * (DIT_BLOCK + TE_LAYER))


def test_0_5_19_books_the_store_and_locks_the_power_of_two():
    # 60 GB of RAM = 55.9 GiB: room min(55.9 - 2.795, 55.9 - 4) = 51.9 GiB -> 43 DiT blocks booked,
    # each locking 2 GiB (86 GiB of layer stores); nothing is left for the text encoder. The 7 DiT
    # blocks and 50 text-encoder layers left on the mapping add each rank's two staging slots per
    # component, rounded too: 2 x 2 GiB + 2 x 1 GiB
    assert pinned_need_gib(_budget(DIT_AND_TE), "0.5.19", True, 55.9) == 86.0 + 6.0
    assert pinned_need_gib(_budget(DIT_AND_TE), "0.5.19", True, 55.9, courier=False) == 86.0
    # each rank plans against its share of the host
    assert pinned_need_gib(_budget(DIT_AND_TE, ranks=2), "0.5.19", True, 111.8) == 2 * 92.0
    # the budget reads the host: unknown host, unknown need; nothing to pin needs no host figure
    assert pinned_need_gib(_budget(DIT_AND_TE), "0.5.19", True, None) is None
    assert pinned_need_gib(_budget([]), "0.5.19", True, None) == 0.0
    # unpinned, what does not fit stays on the checkpoint's mapping: the DiT's 60 GiB do not fit
    # 51.9 GiB, so its layers ship through two pinned 2 GiB slots (pinned whatever the flag says);
    # the text encoder's 45 GiB fit as pageable copies, no slots
    assert pinned_need_gib(_budget(DIT_AND_TE), "0.5.19", False, 55.9) == 4.0
    assert pinned_need_gib(_budget(DIT_AND_TE), "0.5.19", False, 8.0) == 6.0
    assert pinned_need_gib(_budget(DIT_AND_TE), "0.5.19", False, None) is None


def test_staging_slots_only_where_a_component_s_copies_do_not_fit():
    # a host that holds every store pinned leaves nothing on the mapping: no courier, no slots
    assert pinned_need_gib(_budget(DIT_AND_TE), "0.5.19", True, 400.0) == 150.0
    # on 0.5.17 and 0.5.18 no layer is ever left on the mapping
    assert pinned_need_gib(_budget(DIT_AND_TE), "0.5.18", True, 8.0) == 150.0


@pytest.mark.parametrize("version", ["0.5.20", "0.5.21", "0.5.22", "0.5.23"])
def test_in_place_pinning_locks_the_store_s_size_within_the_budget(version):
    need = pinned_need_gib(_budget(DIT_AND_TE), version, True, 55.9, courier=False)
    assert need == pytest.approx(43 * DIT_BLOCK)  # booked = locked, under the 51.9 GiB room
    # the staging slots of the DiT's and the text encoder's mapped layers, in place at their size,
    # come outside the budget
    slots = pinned_need_gib(_budget(DIT_AND_TE), version, True, 55.9) - need
    assert slots == pytest.approx(2 * DIT_BLOCK + 2 * TE_LAYER)
    # a store under 64 MiB is still torch's power of two
    assert pinned_need_gib(_budget([("video_vae", 10, 0.05)]), version, True, 500.0) == pytest.approx(10 * 0.0625)


def _derived(profile: str, argv: str, version: str, env: dict | None = None, **hw):
    release = releases.target(version, None)
    ev = evaluate_launch(shlex.split(argv), replace(load_profile(profile), **hw), RULES, load_flag_table(release.table_version),
                         env or {}, {}, release=release)
    return ev.context, [f for f in ev.findings if f.rule.id == "H3D418"]


PR_39021 = ("1xRTX5090", "sglang serve MiniMaxAI/MiniMax-H3")  # out of the box, on a 60 GB desktop


def test_the_rtx5090_desktop_is_killed_up_to_0_5_19_and_not_from_0_5_20():
    for version, need in (("0.5.17", 150.0), ("0.5.18", 150.0), ("0.5.19", 92.0)):
        ctx, fired = _derived(*PR_39021, version, host_memory_gib=55.9)
        assert ctx["derived.memory.host_pinned_need_gib"] == need and ctx["derived.memory.host_pinned_over"] is True
        assert fired and not fired[0].cannot_verify and f"{need} GiB" in fired[0].message
    for version in ("0.5.20", "0.5.21", "0.5.22", "0.5.23"):
        ctx, fired = _derived(*PR_39021, version, host_memory_gib=55.9)
        assert not fired  # in place within the budget: the layer stores fit (the slots come outside it)


def test_the_staging_slots_tip_the_verdict_on_0_5_19():
    # 8 GiB: 3 DiT blocks booked (6 GiB locked) fit; their slots for the rest do not
    ctx, fired = _derived(*PR_39021, "0.5.19", host_memory_gib=8.0)
    assert ctx["derived.memory.host_pinned_need_gib"] == 12.0 and fired and not fired[0].cannot_verify
    # sglang's own switch turns the courier off, and its slots with it
    ctx, fired = _derived(*PR_39021, "0.5.19", env={"SGLANG_DIFFUSION_DISABLE_MAPPED_COURIER": "1"}, host_memory_gib=8.0)
    assert ctx["derived.memory.host_pinned_need_gib"] == 6.0 and not fired
    # --pin-cpu-memory false pins no store, but the slots all the same: 6 GiB on a 4 GiB host
    ctx, fired = _derived("1xRTX5090", "sglang serve MiniMaxAI/MiniMax-H3 --pin-cpu-memory false", "0.5.19",
                          host_memory_gib=4.0)
    assert ctx["derived.memory.host_pinned_need_gib"] == 6.0 and fired


def test_an_unknown_host_is_cannot_verify_and_says_unknown_never_none():
    ctx, fired = _derived(*PR_39021, "0.5.18", host_memory_gib=None)
    assert ctx["derived.memory.host_pinned_over"] is None
    assert fired and fired[0].cannot_verify and "None" not in fired[0].message


def test_the_least_placement_that_fits_the_gpu_decides_where_the_release_s_placement_is_not_modelled():
    # one H100 holds the DiT and the text encoder component-offloaded: no layer need be pinned
    ctx, fired = _derived("1xH100", "sglang serve MiniMaxAI/MiniMax-H3", "0.5.19", host_memory_gib=55.9)
    assert ctx["derived.memory.host_pinned_need_gib"] == 0.0 and not fired
    # nothing fits one H100 with both resident (speed mode's verified placement): the GPU fails
    # first (H3D540), the host need is unknown
    ctx, fired = _derived("1xH100", "sglang serve MiniMaxAI/MiniMax-H3 --performance-mode speed", "0.5.19",
                          host_memory_gib=55.9)
    assert ctx["derived.memory.host_pinned_over"] is None
