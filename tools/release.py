#!/usr/bin/env python3
"""Add (or re-add) one sglang release to h3doctor's data.

    python tools/release.py add 0.5.24 --venv $VENV      # the whole release
    python tools/release.py add 0.5.23 --no-flagtable    # everything but the flag table (no venv)

Maintainer tool; the package only reads what it writes. For release X (previous: the newest
known release below it) it

1. downloads the wheels of X and the previous release (`pip download --no-deps`, unless
   --wheel/--previous-wheel are given) and unpacks their `sglang/` sources;
2. builds X's flag table (tools/flagtable/extract.py, in --venv; skipped with --no-flagtable);
3. merges X's sampling facts (tools/flagtable/sampling.py) and rebuilds the flag history
   (tools/flagtable/history.py) from every flag table;
4. writes `flagdata/where-X.json`: every rule that applies to X with its sglang file:line in X,
   carried over from the previous release's lines by a line diff (tools/flagtable/where.py);
   lines a person recorded (`reviewed`) are kept; a line that cannot be carried is reported,
   never guessed;
5. writes `docs/releases/X-review.md`: each changed hunk of the files the rules cite, with the
   rules that cite it (the list a person must re-read), and the rules whose line needs a person;
6. adds a skeleton (the previous release's entry, marked `unverified`) to every keyed data file
   of flagdata/manifest.json that has no entry for X.

Re-running it for a release already added rewrites the same bytes.
"""

from __future__ import annotations

import argparse
import gzip
import json
import re
import subprocess
import sys
import tempfile
import zipfile
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "tools" / "flagtable"))
sys.path.insert(0, str(REPO))

import history  # noqa: E402  (tools/flagtable)
import where as wherelib  # noqa: E402  (tools/flagtable)
import yaml  # noqa: E402

from h3doctor.sglang.releases import in_range, key  # noqa: E402

FLAGDATA = REPO / "h3doctor" / "sglang" / "flagdata"
RULES = REPO / "rules"
REVIEWS = REPO / "docs" / "releases"
FORMAT_VERSION = 1
GENERATOR = "tools/release.py"


# ----------------------------------------------------------------------------- inputs

def rule_anchors(rules_dir: Path = RULES) -> list[dict[str, str]]:
    """Each rule's id, release range and own `sglang.where` (the line in the newest release of
    its range, as the rule was written)."""
    out = []
    for path in sorted(rules_dir.glob("H3D*.yaml")):
        data = yaml.safe_load(path.read_text(encoding="utf-8"))
        out.append({"id": data["id"], "versions": data["sglang"]["versions"], "where": data["sglang"]["where"]})
    return out


def known_releases(flagdata: Path = FLAGDATA) -> list[str]:
    return sorted({p.name[len("where-"):-len(".json")] for p in flagdata.glob("where-*.json")}
                  | set(history.table_releases(flagdata)), key=key)


def previous_release(version: str, flagdata: Path = FLAGDATA) -> str | None:
    older = [r for r in known_releases(flagdata) if key(r) < key(version)]
    return older[-1] if older else None


def read_where(version: str, flagdata: Path = FLAGDATA) -> dict[str, Any]:
    path = flagdata / f"where-{version}.json"
    return json.loads(path.read_text(encoding="utf-8")) if path.is_file() else {}


def lines_of(data: dict[str, Any]) -> dict[str, str]:
    """Every rule's line in one where-X.json: the derived ones and the ones a person recorded."""
    return {**data.get("where", {}), **data.get("reviewed", {})}


def newest_in_range(versions: str, releases: list[str]) -> str | None:
    inside = [r for r in releases if in_range(r, versions)]
    return inside[-1] if inside else None


# ----------------------------------------------------------------------------- where-X.json

def derive_where(version: str, previous: str | None, rules: list[dict[str, str]], *,
                 prev_lines: dict[str, str], reviewed: dict[str, str],
                 old: wherelib.Source | None, new: wherelib.Source,
                 releases: list[str]) -> tuple[dict[str, str], dict[str, str], dict[str, list[str]]]:
    """(derived lines, recorded lines kept, notes by kind) for the rules that apply to `version`."""
    derived: dict[str, str] = {}
    kept: dict[str, str] = {}
    notes: dict[str, list[str]] = {"person": [], "from_rule": [], "reviewed_differs": [], "ended": []}
    for rule in rules:
        rid = rule["id"]
        applies = in_range(version, rule["versions"])
        before = previous is not None and in_range(previous, rule["versions"]) and rid in prev_lines
        if not applies:
            if before:
                notes["ended"].append(rid)
            continue
        carried, why = (wherelib.map_where(prev_lines[rid], old, new) if before and old is not None
                        else (None, f"no line in {previous}"))
        if rid in reviewed:
            kept[rid] = reviewed[rid]
            if carried is not None and carried != reviewed[rid]:
                notes["reviewed_differs"].append(f"{rid}: recorded {reviewed[rid]!r}, derived {carried!r}")
        elif carried is not None:
            derived[rid] = carried
        elif not before and newest_in_range(rule["versions"], releases) == version:
            derived[rid] = rule["where"]  # a rule new in this release: the line its author wrote
            notes["from_rule"].append(rid)
        else:
            notes["person"].append(f"{rid}: {why} (was {prev_lines.get(rid, '-')!r})")
    return derived, kept, notes


def where_json(version: str, previous: str | None, derived: dict[str, str], kept: dict[str, str]) -> str:
    data = {
        "format_version": FORMAT_VERSION,
        "generator": GENERATOR,
        "sglang_version": version,
        "previous": previous,
        "note": ("Each rule's sglang file:line in this release (paths relative to the sglang package). "
                 "`where`: carried from the previous release's line by a line diff; `reviewed`: "
                 "recorded by a person where that is not possible (kept on re-runs)."),
        "where": dict(sorted(derived.items())),
        "reviewed": dict(sorted(kept.items())),
    }
    return json.dumps(data, indent=1, ensure_ascii=False) + "\n"


# ----------------------------------------------------------------------------- the review

def _span(first: int, count: int) -> str:
    if count == 0:
        return f"after {first - 1}"
    return str(first) if count == 1 else f"{first}-{first + count - 1}"


def review_markdown(version: str, previous: str | None, *, prev_lines: dict[str, str],
                    new_lines: dict[str, str], notes: dict[str, list[str]],
                    old: wherelib.Source | None, new: wherelib.Source) -> str:
    out = [f"# sglang {version}: the validation code that changed since {previous}\n",
           f"Generated by `python tools/release.py add {version}`; do not edit. The files are the ones "
           f"h3doctor's rules cite (their `where`, flagdata/where-{previous}.json and where-{version}.json). "
           f"Every hunk a rule cites (within {wherelib.NEAR} lines) is a check to re-read against the rule; "
           "hunks no rule cites may hold a check no rule covers yet.\n"]

    def section(title: str, items: list[str]) -> None:
        out.append(f"## {title} ({len(items)})\n")
        out.append("\n".join(f"- {i}" for i in items) + "\n" if items else "none\n")

    section("Rules whose line needs a person (record it under `reviewed`)", notes["person"])
    section(f"Rules new in {version} (line from the rule file)", notes["from_rule"])
    section("Recorded lines that differ from the derived one", notes["reviewed_differs"])
    section(f"Rules verified up to {previous} only (extend `sglang.versions` after re-reading)", notes["ended"])

    if old is None:
        return "\n".join(out)
    cites: dict[str, dict[str, dict[str, list[int]]]] = {}  # path -> side -> rule -> lines
    for side, lines, source in (("old", prev_lines, old), ("new", new_lines, new)):
        for rid, text in lines.items():
            for path, nums in wherelib.cited_lines(text, source).items():
                cites.setdefault(path, {"old": {}, "new": {}})[side].setdefault(rid, []).extend(nums)
    out.append("## Changed hunks, by file\n")
    unchanged = []
    for path in sorted(cites):
        if old.lines(path) is None or new.lines(path) is None:
            gone = previous if new.lines(path) is None else version
            out.append(f"### {path}\n\nnot in {gone}: re-read the rules citing it, "
                       f"{', '.join(sorted(set(cites[path]['old']) | set(cites[path]['new'])))}\n")
            continue
        hunks = wherelib.hunks(path, old, new)
        if not hunks:
            unchanged.append(path)
            continue
        cited, uncited = [], []
        for h in hunks:
            rules = sorted({rid for side in ("old", "new") for rid, nums in cites[path][side].items()
                            if wherelib.touches(h, nums, side)})
            row = f"| {_span(*h.old)} | {_span(*h.new)} | {', '.join(rules)} |"
            (cited if rules else uncited).append((row, h))
        out.append(f"### {path}\n\n{len(hunks)} hunks, {len(cited)} cited by a rule\n")
        if cited:
            out.append(f"| {previous} lines | {version} lines | rules |\n| --- | --- | --- |\n"
                       + "\n".join(r for r, _ in cited) + "\n")
        if uncited:
            out.append("no rule cites (" + previous + " lines): "
                       + ", ".join(_span(*h.old) for _, h in uncited) + "\n")
    out.append(f"### Unchanged ({len(unchanged)})\n\n" + "\n".join(f"- {p}" for p in unchanged) + "\n")
    return "\n".join(out)


# ----------------------------------------------------------------------------- steps

def regenerate_where(version: str, old: wherelib.Source | None, new: wherelib.Source, *,
                     flagdata: Path = FLAGDATA, rules_dir: Path = RULES) -> dict[str, str]:
    """{repo-relative file: text} for where-X.json and the review (nothing written)."""
    releases = sorted(set(known_releases(flagdata)) | {version}, key=key)
    previous = previous_release(version, flagdata)
    rules = rule_anchors(rules_dir)
    prev_lines = lines_of(read_where(previous, flagdata)) if previous else {}
    reviewed = read_where(version, flagdata).get("reviewed", {})
    derived, kept, notes = derive_where(version, previous, rules, prev_lines=prev_lines, reviewed=reviewed,
                                        old=old, new=new, releases=releases)
    return {
        f"h3doctor/sglang/flagdata/where-{version}.json": where_json(version, previous, derived, kept),
        f"docs/releases/{version}-review.md": review_markdown(
            version, previous, prev_lines=prev_lines, new_lines={**derived, **kept}, notes=notes,
            old=old, new=new),
    }


def missing_data(version: str, flagdata: Path = FLAGDATA) -> list[str]:
    """What `version` lacks of the data flagdata/manifest.json requires (empty: complete)."""
    manifest = json.loads((flagdata / "manifest.json").read_text(encoding="utf-8"))
    missing = [name for name in (p.format(release=version) for p in manifest["per_release"])
               if not (flagdata / name).is_file()]
    for spec in manifest["keyed"]:
        if key(version) < key(spec["since"]):
            continue
        entries = json.loads((flagdata / spec["file"]).read_text(encoding="utf-8"))[spec["key"]]
        if version not in entries:
            missing.append(f"{spec['file']}: no entry for {version}")
        elif isinstance(entries, dict) and "unverified" in entries[version]:
            missing.append(f"{spec['file']}: the entry for {version} is an unverified skeleton")
    return missing


def add_skeletons(version: str, previous: str | None, flagdata: Path = FLAGDATA) -> list[str]:
    """For each keyed file of manifest.json without an entry for `version`: the previous release's
    entry, marked unverified. Returns the files changed."""
    manifest = json.loads((flagdata / "manifest.json").read_text(encoding="utf-8"))
    changed = []
    for spec in manifest["keyed"]:
        path = flagdata / spec["file"]
        data = json.loads(path.read_text(encoding="utf-8"))
        entries = data[spec["key"]]
        if not isinstance(entries, dict) or version in entries or previous not in entries:
            continue  # lists (flag-history) are rebuilt, not skeletoned
        entries[version] = {**entries[previous], "unverified": f"copied from {previous} by {GENERATOR}"}
        path.write_text(json.dumps(data, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
        changed.append(spec["file"])
    return changed


def unpack(wheel: Path, into: Path) -> Path:
    with zipfile.ZipFile(wheel) as zf:
        zf.extractall(into, [n for n in zf.namelist() if n.startswith("sglang/") and n.endswith(".py")])
    return into


def fetch_wheel(version: str, into: Path) -> Path:
    subprocess.run([sys.executable, "-m", "pip", "download", "--quiet", "--no-deps", f"sglang=={version}",
                    "-d", str(into)], check=True)
    return next(into.glob(f"sglang-{version}-*.whl"))


def record_fixture(old: wherelib.TreeSource, new: wherelib.TreeSource, version: str,
                   flagdata: Path = FLAGDATA) -> bytes:
    """The line digests of every file the rules cite in the two releases (for an offline test)."""
    previous = previous_release(version, flagdata)
    paths = set()
    for release, source in ((previous, old), (version, new)):
        for text in lines_of(read_where(release, flagdata)).values():
            for cited in wherelib.cited_paths(text):
                for prefix in wherelib.PREFIXES:
                    paths.add(prefix + cited)
    files = {s.version: {p: "".join(wherelib.line_digests("\n".join(s.lines(p))))
                         for p in sorted(paths) if s.lines(p) is not None} for s in (old, new)}
    text = json.dumps({"note": "line digests (tools/flagtable/where.py line_digests), no source text",
                       "releases": files}, indent=0, sort_keys=True) + "\n"
    return gzip.compress(text.encode(), mtime=0)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = ap.add_subparsers(dest="command", required=True)
    add = sub.add_parser("add", help="add or re-add release X.Y.Z")
    add.add_argument("version")
    add.add_argument("--wheel", help="X's wheel (default: pip download)")
    add.add_argument("--previous-wheel", help="the previous release's wheel (default: pip download)")
    add.add_argument("--venv", help="the flag-table venv (tools/flagtable/README.md)")
    add.add_argument("--no-flagtable", action="store_true", help="keep the committed flag table")
    add.add_argument("--fixture", help="also write the line-digest fixture of the two releases here")
    args = ap.parse_args(argv)
    if not re.fullmatch(r"\d+\.\d+\.\d+", args.version):
        ap.error("the release must look like 0.5.24")
    if not args.no_flagtable and not args.venv:
        ap.error("give --venv for the flag table (or --no-flagtable)")
    version, previous = args.version, previous_release(args.version)

    work = Path(tempfile.mkdtemp(prefix="h3doctor-release-"))
    wheel = Path(args.wheel) if args.wheel else fetch_wheel(version, work)
    new = wherelib.TreeSource(version, unpack(wheel, work / version))
    old = None
    if previous:
        prev_wheel = Path(args.previous_wheel) if args.previous_wheel else fetch_wheel(previous, work)
        old = wherelib.TreeSource(previous, unpack(prev_wheel, work / previous))

    if not args.no_flagtable:
        subprocess.run([sys.executable, str(REPO / "tools/flagtable/extract.py"), "--wheel", str(wheel),
                        "--venv", args.venv, "--output", str(FLAGDATA / f"sglang-{version}.json")], check=True)
    subprocess.run([sys.executable, str(REPO / "tools/flagtable/sampling.py"), "--source",
                    str(work / version / "sglang"), "--sglang-version", version], check=True)
    (FLAGDATA / "flag-history.json").write_text(history.render(history.build()), encoding="utf-8")
    for rel, text in regenerate_where(version, old, new).items():
        (REPO / rel).parent.mkdir(parents=True, exist_ok=True)
        (REPO / rel).write_text(text, encoding="utf-8")
        print(f"[release] wrote {rel}", file=sys.stderr)
    for name in add_skeletons(version, previous):
        print(f"[release] {name}: skeleton entry for {version} (marked unverified)", file=sys.stderr)
    if args.fixture and old is not None:
        Path(args.fixture).write_bytes(record_fixture(old, new, version))
    return 0


if __name__ == "__main__":
    sys.exit(main())
