"""A rule's `why` and `fix_note` as explain shows them: filled from the launch's check where it
gives the values, in neutral words where it does not (no launch given or found, a rule the check
of this launch does not report, a value the launch leaves unknown). Never a raw `{path}`: a
placeholder no fragment of unfilled.json covers (a rule from --rules-dir) is shown as `<name>`,
as `h3doctor rule ID` shows it."""

from __future__ import annotations

import json
from collections.abc import Mapping
from functools import cache
from typing import Any

from h3doctor.engine.conditions import placeholders, render, render_generic
from h3doctor.paths import package_dir


@cache
def fragments() -> tuple[tuple[str, str], ...]:
    """(the rule's words with placeholders, the neutral words), longest first so a sentence is
    replaced before a clause inside it."""
    data = json.loads(package_dir("h3doctor.explain").joinpath("unfilled.json").read_text(encoding="utf-8"))
    return tuple(sorted(data["fragments"].items(), key=lambda item: -len(item[0])))


def _unknown(context: Mapping[str, Any], path: str) -> bool:
    return render("{" + path + "}", context, missing=lambda _: "") == ""


def fill(template: str, context: Mapping[str, Any]) -> str:
    """`template` with its whitespace folded, each fragment holding an unknown value in neutral
    words, the rest filled from `context`."""
    text = " ".join(template.split())
    for fragment, neutral in fragments():
        if fragment in text and any(_unknown(context, p) for p in placeholders(fragment)):
            text = text.replace(fragment, neutral)
    return " ".join(render(text, context, missing=lambda path: render_generic("{" + path + "}")).split())
