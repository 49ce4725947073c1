"""`check --help` lists its options in the option table's panels (issue 31: help grouped), each
option's help whole: tested through the table's data and the rendered help's section headings."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from h3doctor.options import CHECK_OPTIONS, PANELS

VISIBLE = [opt for opt in CHECK_OPTIONS if not opt.hidden]


def test_every_option_of_the_table_is_in_one_panel_and_every_panel_is_used():
    assert all(opt.panel in PANELS for opt in CHECK_OPTIONS), [o.name for o in CHECK_OPTIONS if o.panel not in PANELS]
    assert {opt.panel for opt in CHECK_OPTIONS} == set(PANELS)
    assert all(opt.hidden for opt in CHECK_OPTIONS if opt.panel == "hook")  # the hook's protocol stays out of help


def _sections(columns: int) -> dict[str, list[str]]:
    proc = subprocess.run([sys.executable, "-m", "h3doctor", "check", "--help"], capture_output=True, text=True,
                          timeout=60, env={**os.environ, "COLUMNS": str(columns)})
    assert proc.returncode == 0, proc.stderr
    sections: dict[str, list[str]] = {}
    current = None
    for line in proc.stdout.splitlines():
        if line and not line.startswith(" ") and line.endswith(":"):
            current = sections.setdefault(line[:-1], [])
        elif current is not None:
            current.append(line)
    return sections


@pytest.mark.parametrize("columns", [80, 200])
def test_check_help_lists_the_panels_in_order_each_option_whole_under_its_own(columns):
    """The headings are the table's panels in PANELS' order (the hidden hook's left out), then -h;
    every visible option's spelling and every word of its help are in its panel's section, in
    order. Fails when check's command is not PanelledHelp (one "Options:" section) or the rows'
    rich_help_panel is dropped (all under "Other options")."""
    sections = _sections(columns)
    shown = [heading for key, heading in PANELS.items() if any(o.panel == key for o in VISIBLE)]
    assert list(sections) == ["Arguments", *shown, "Other options"]
    for opt in VISIBLE:
        text = " ".join(" ".join(sections[PANELS[opt.panel]]).split())
        assert all(flag in text for flag in opt.flags), (opt.name, text)
        words = " ".join(opt.help.split())
        assert words in text, (opt.name, words)  # whole, never cut
    assert not any("--hook" in line or "--argv-out" in line for lines in sections.values() for line in lines)
