"""The memory bar (output/memory_bar.py): one bar per group of identical GPUs, a legend naming
each part's character and GiB, the stage, capacity marked and the overflow in its own character
and style; readable without colour; within 80 columns. Tested through its data and plain text."""

from __future__ import annotations

import io

import pytest

from h3doctor.output import memory_bar
from h3doctor.output.markup import PlainConsole
from h3doctor.output.wrap import cells

OVER = {"capacity_gib": 31.4, "context_gib": 0.75, "peak_stage": "decode", "peak_typical_gib": 126.46,
        "load_by_component_gib": {"transformer": 61.73, "text_encoder": 47.97, "video_vae": 5.2, "audio_vae": 0.56},
        "stage_active_gib": {"decode": 0.0}}
FITS = {"capacity_gib": 23.6, "context_gib": 0.75, "peak_stage": "denoise", "peak_typical_gib": 16.6,
        "load_by_component_gib": {"transformer": 0.17, "text_encoder": 0.35, "video_vae": 0.69, "audio_vae": 0.56},
        "stage_active_gib": {"denoise": 3.84}}


def _draw(memory, width=80, **gpus) -> list[str]:
    buf = io.StringIO()
    memory_bar.draw(memory, PlainConsole(buf, width), **gpus)
    return buf.getvalue().splitlines()


@pytest.mark.parametrize("memory", [OVER, FITS, {**FITS, "capacity_gib": None}], ids=["over", "fits", "unknown"])
@pytest.mark.parametrize("width", [80, 120, None])
def test_every_line_fits_and_every_part_is_in_bar_and_legend(memory, width):
    lines = _draw(memory, width, gpus_used=2, gpus_present=4)
    assert width is None or all(cells(line) <= width for line in lines), lines
    parts = memory_bar.segments(memory)
    bar = lines[1]
    text = "\n".join(lines[2:])
    for name, gib in parts:
        char = memory_bar._LOOK[name][0]
        # every part has at least a cell, however small (past the capacity, every cell is the overflow's)
        assert char in bar or memory is OVER, name
        assert f"{char} {memory_bar._LABEL[name]} {gib:g} GiB" in text, name  # and a legend entry
    assert "None" not in "\n".join(lines)


def test_each_part_has_its_own_character_so_colour_is_never_the_only_cue():
    chars = [char for char, _ in memory_bar._LOOK.values()] + [memory_bar.CAPACITY_MARK[0]]
    assert len(set(chars)) == len(chars)
    # the 16 standard colours that stay readable on a light and a dark background alike
    assert not any(word in style for _, style in memory_bar._LOOK.values() for word in ("white", "yellow", "bright"))


def test_capacity_is_marked_and_the_overflow_is_past_it_in_its_own_style():
    bar = memory_bar.bar_cells(memory_bar.segments(OVER), OVER["capacity_gib"])
    mark = bar.index("capacity")
    assert set(bar[mark + 1:]) == {"over"} and "over" not in bar[:mark]
    # the mark stands at the capacity's share of the whole: 31.4 of 126.46 GiB
    assert mark == round(memory_bar.WIDTH * 31.4 / 126.46)
    fits = memory_bar.bar_cells(memory_bar.segments(FITS), FITS["capacity_gib"])
    assert fits[-1] == "capacity" and "over" not in fits and len(fits) == memory_bar.WIDTH + 1


def test_the_stage_and_each_group_of_gpus_are_said():
    lines = _draw(FITS, 80, gpus_used=1, gpus_present=2)
    assert "the denoise stage" in lines[0] and "23.6 GiB free" in lines[0]
    assert lines[1].startswith("  1 GPU ")
    assert lines[-1].startswith("  1 GPU ") and "idle" in lines[-1]
    assert not any("idle" in line for line in _draw(FITS, 80, gpus_used=4, gpus_present=4))


def test_a_capacity_not_known_is_said_in_words():
    lines = _draw({**FITS, "capacity_gib": None})
    assert "not known" in lines[0] and "capacity" not in memory_bar.bar_cells(memory_bar.segments(FITS), None)
