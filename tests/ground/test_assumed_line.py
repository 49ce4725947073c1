"""The report header's "assumed:" line (facts.assumed_line): a host fact not known is named among
the unknowns, never a size "unknown GiB"; a profile that gives every fact reads as before."""

from __future__ import annotations

from h3doctor.facts import assumed_line, facts_from_mapping
from h3doctor.host.profiles import load_profile


def test_a_size_not_known_is_named_among_the_unknowns():
    hw = facts_from_mapping({"platform": "cuda", "device_name": "NVIDIA H100 80GB HBM3", "host_memory_gib": 64.0,
                             "flash_attn": True}, "test")
    line = assumed_line(hw, stack=False)
    assert "unknown GiB" not in line
    assert line.startswith("RAM 64 GiB; has FlashAttention; unknown: /dev/shm, free disk, free spill disk, ffmpeg+ffprobe")
    nothing = assumed_line(facts_from_mapping({"platform": "cuda"}, "test"), stack=False)
    assert "unknown: RAM, /dev/shm, free disk, free spill disk, " in nothing and "GiB" not in nothing


def test_a_profile_that_gives_every_fact_reads_as_before():
    assert assumed_line(load_profile("4xH200"), stack=False) == (
        "RAM 2015 GiB, /dev/shm 1007.5 GiB, disk 1000 GiB free, spill 1000 GiB free; has ffmpeg+ffprobe, "
        "libx264+aac, FlashAttention, FA kernel, Hub token")
