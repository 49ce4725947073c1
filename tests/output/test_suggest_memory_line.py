"""suggest's memory line (output/suggest_text.memory_line), from its JSON item: a headroom is said
as one only while it is one; a negative headroom is a shortfall, said once, never "-5.01 GiB headroom"."""

from __future__ import annotations

import re

from h3doctor.output.suggest_text import memory_line

NEGATIVE = re.compile(r"(?<![\w-])-\d")


def _item(headroom, fits, shortfall=None):
    return {"memory": {"peak_typical_gib": 16.61, "capacity_gib": 11.6, "headroom_gib": headroom},
            "fits": fits, "shortfall_gib": shortfall}


def test_a_negative_headroom_is_a_shortfall_said_once():
    line = memory_line(_item(-5.01, False, 5.01))
    assert not NEGATIVE.search(line) and line.count("short") == 1
    assert line.endswith("peak about 16.61 of 11.6 GiB per GPU: does NOT fit, 5.01 GiB short per GPU")
    unjudged = memory_line(_item(-5.01, None))  # the fit not judged: the shortfall is still said, as one
    assert unjudged.endswith("per GPU (5.01 GiB short)") and not NEGATIVE.search(unjudged)


def test_a_headroom_is_said_while_it_is_one():
    assert memory_line(_item(8.37, True)).endswith("GiB per GPU (8.37 GiB headroom)")
    assert memory_line(_item(-0.0, True)).endswith("GiB per GPU (0 GiB headroom)")
