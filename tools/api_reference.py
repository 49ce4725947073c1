#!/usr/bin/env python3
"""Write docs/api-reference.md, the reference of `h3doctor.api`, from its docstrings.

    python tools/api_reference.py            # rewrite docs/api-reference.md
    python tools/api_reference.py --check    # exit 1 when the page is out of date

Every name in `h3doctor.api.__all__`, in that order: a function with its signature and
docstring; a class with its docstring, its fields (with their `#` comments from the source)
and its public properties and methods with theirs. tests/api/test_api_docs.py holds the page equal
to this output. (pdoc or mkdocstrings would render the same from the docstrings as HTML sites;
a page in the repository, read on GitHub beside the other docs, needs neither.)
"""

from __future__ import annotations

import argparse
import dataclasses
import enum
import inspect
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PAGE = ROOT / "docs" / "api-reference.md"
HEADER = """# h3doctor.api reference

Generated from the docstrings by `python tools/api_reference.py`; do not edit by hand (docs/api.md
is the guide). Results' `to_dict()` objects are described by the published JSON Schemas
(`h3doctor schema report|lint-report|explain|suggest`).
"""


def _doc(obj: object) -> str:
    return inspect.cleandoc(obj.__doc__ or "").strip()


def _field_comments(cls: type) -> dict[str, str]:
    """`name: type = default  # comment` lines of a class's body: the comment per field."""
    out = {}
    for line in inspect.getsource(cls).splitlines():
        code, _, comment = line.partition("  # ")
        name = code.strip().split(":", 1)[0].split("=", 1)[0].strip()
        if comment and name.isidentifier() and (":" in code or "=" in code):
            out[name] = comment.strip()
    return out


def _function(name: str, fn: object) -> list[str]:
    return [f"### `{name}{inspect.signature(fn)}`", "", _doc(fn), ""]


def _class(name: str, cls: type) -> list[str]:
    bases = [b.__name__ for b in cls.__bases__ if b is not object and not b.__name__.startswith("_")]
    out = [f"### class `{name}`" + (f" ({', '.join(bases)})" if bases else ""), "", _doc(cls), ""]
    if isinstance(cls, enum.EnumMeta):
        comments = _field_comments(cls)
        return out + [f"- `{m.name}` = {m.value}" + (f": {comments[m.name]}" if m.name in comments else "")
                      for m in cls] + [""]
    if dataclasses.is_dataclass(cls):
        comments = _field_comments(cls)
        fields = [f for f in dataclasses.fields(cls) if not f.name.startswith("_")]
        out += [f"- `{f.name}: {f.type}`" + (f": {comments[f.name]}" if f.name in comments else "") for f in fields]
    members: list[str] = []
    for attr, value in sorted(vars(cls).items()):
        if attr.startswith("_"):
            continue
        if isinstance(value, property):
            members.append(f"- `{attr}` (property): {' '.join(_doc(value).split())}".rstrip(": "))
        elif inspect.isfunction(value):
            members.append(f"- `{attr}{inspect.signature(value)}`: {' '.join(_doc(value).split())}".rstrip(": "))
    for base in cls.__mro__[1:]:  # public methods a private base gives (to_dict, to_json)
        if base.__module__.startswith("h3doctor.api") and base.__name__.startswith("_"):
            for attr, value in sorted(vars(base).items()):
                if inspect.isfunction(value) and not attr.startswith("_") and attr not in vars(cls) and _doc(value):
                    members.append(f"- `{attr}{inspect.signature(value)}`: {' '.join(_doc(value).split())}")
    out += sorted(set(members), key=members.index)
    return out + [""] if out[-1] else out


def render() -> str:
    from h3doctor import api

    functions = [n for n in api.__all__ if inspect.isfunction(getattr(api, n))]
    classes = [n for n in api.__all__ if inspect.isclass(getattr(api, n))]
    lines = [HEADER, "## Module", "", _doc(api), "", "## Functions", ""]
    for name in functions:
        lines += _function(name, getattr(api, name))
    lines += ["## Results and errors", ""]
    for name in classes:
        lines += _class(name, getattr(api, name))
    return "\n".join(lines).rstrip("\n") + "\n"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--check", action="store_true", help="exit 1 when the page differs from the docstrings")
    args = parser.parse_args()
    text = render()
    if args.check:
        if PAGE.read_text(encoding="utf-8") != text:
            sys.stderr.write("docs/api-reference.md is out of date: run python tools/api_reference.py\n")
            return 1
        return 0
    PAGE.write_text(text, encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
