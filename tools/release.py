#!/usr/bin/env python3
"""Add (or re-add) one sglang release to h3doctor's data, and check that every release is whole.

    python tools/release.py add 0.5.24 --venv $VENV           # the whole release, from its wheel
    python tools/release.py add 0.5.24 --from 0.5.23          # offline: a copy of 0.5.23 to review
    python tools/release.py add 0.5.23 --no-flagtable         # everything but the flag table (no venv)
    python tools/release.py check                             # exit 1 on any missing piece of any release

Maintainer tool; the package only reads what it writes. Each release is one folder,
`h3doctor/sglang/releasedata/X/` (flags.json, where.json, memory.json, manifest.json); what
every release must hold, and who owns each piece, is `releasedata/manifest.json`. For release X
(previous: the newest known release below it, or --from) `add`

1. downloads the wheels of X and the previous release (`pip download --no-deps`, unless
   --wheel/--previous-wheel are given) and unpacks their `sglang/` sources; with --from and no
   wheel it works offline: the generated files are copies of the previous release's, marked
   in X's manifest as copies to regenerate;
2. builds X's flag table (tools/flagtable/extract.py, in --venv; skipped with --no-flagtable;
   offline: the previous table, unless X already has one);
3. writes X's sampling facts (tools/flagtable/sampling.py, X/sampling.json) and rebuilds the flag history
   (tools/flagtable/history.py) from every flag table;
4. writes X's where.json: every rule that applies to X with its sglang file:line in X, carried
   over from the previous release's lines by a line diff (tools/flagtable/where.py); lines a
   person recorded (`reviewed`) are kept; a line that cannot be carried is reported, never
   guessed, and its rule does not judge X until a person records it;
5. writes `docs/releases/X-review.md`: each changed hunk of the files the rules cite, with the
   rules that cite it (the list a person must re-read), and the rules whose line needs a person;
6. copies the previous release's attention-backends.json (a person's) and, without the wheel,
   sampling.json into X's folder, each marked in X's manifest as a copy to check or regenerate;
7. writes X's manifest.json and prints what a person still owns (the checklist).

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

FORMAT_VERSION = 1
GENERATOR = "tools/release.py"
RELEASEDATA = "h3doctor/sglang/releasedata"  # one folder per release, relative to the repository
SGLANG = "h3doctor/sglang"  # the keyed files' paths in the manifest are relative to it
DONE = "done"


def folder(version: str, root: Path = REPO) -> Path:
    return root / RELEASEDATA / version


def manifest(root: Path = REPO) -> dict[str, Any]:
    """What every release must hold (releasedata/manifest.json)."""
    return json.loads((root / RELEASEDATA / "manifest.json").read_text(encoding="utf-8"))


# ----------------------------------------------------------------------------- inputs

def rule_anchors(root: Path = REPO) -> list[dict[str, str]]:
    """Each rule's id, release range and own `sglang.where` (the line in the newest release of
    its range, as the rule was written)."""
    out = []
    for path in sorted((root / "rules").glob("H3D*.yaml")):
        data = yaml.safe_load(path.read_text(encoding="utf-8"))
        out.append({"id": data["id"], "versions": data["sglang"]["versions"], "where": data["sglang"]["where"]})
    return out


def known_releases(root: Path = REPO) -> list[str]:
    """Every release folder (a folder named like 0.5.23, whatever it holds)."""
    return sorted((p.name for p in (root / RELEASEDATA).iterdir() if p.is_dir() and re.fullmatch(r"\d+\.\d+\.\d+", p.name)),
                  key=key)


def previous_release(version: str, root: Path = REPO) -> str | None:
    older = [r for r in known_releases(root) if key(r) < key(version)]
    return older[-1] if older else None


def read_where(version: str, root: Path = REPO) -> dict[str, Any]:
    path = folder(version, root) / "where.json"
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
           f"h3doctor's rules cite (their `where`, releasedata/{previous}/where.json and {version}/where.json). "
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
                     root: Path = REPO) -> dict[str, str]:
    """{repo-relative file: text} for X's where.json and the review (nothing written)."""
    releases = sorted(set(known_releases(root)) | {version}, key=key)
    previous = previous_release(version, root)
    rules = rule_anchors(root)
    prev_lines = lines_of(read_where(previous, root)) if previous else {}
    reviewed = read_where(version, root).get("reviewed", {})
    derived, kept, notes = derive_where(version, previous, rules, prev_lines=prev_lines, reviewed=reviewed,
                                        old=old, new=new, releases=releases)
    return {
        f"{RELEASEDATA}/{version}/where.json": where_json(version, previous, derived, kept),
        f"docs/releases/{version}-review.md": review_markdown(
            version, previous, prev_lines=prev_lines, new_lines={**derived, **kept}, notes=notes,
            old=old, new=new),
    }


def copied_where(version: str, previous: str, root: Path = REPO) -> str:
    """X's where.json with no source to diff (`add --from` offline): each rule that applies to X
    keeps its line in `previous` (the state in X's manifest says the lines are copies)."""
    prev = read_where(previous, root)
    applying = {r["id"] for r in rule_anchors(root) if in_range(version, r["versions"])}
    kept = {rid: line for rid, line in prev.get("reviewed", {}).items() if rid in applying}
    derived = {rid: line for rid, line in prev.get("where", {}).items() if rid in applying and rid not in kept}
    return where_json(version, previous, derived, kept)


def missing_data(version: str, root: Path = REPO) -> list[str]:
    """What `version` lacks of the data releasedata/manifest.json requires, and what its own
    manifest.json says is not done (empty: complete)."""
    spec, here = manifest(root), folder(version, root)
    own_path = here / "manifest.json"
    own = json.loads(own_path.read_text(encoding="utf-8"))["files"] if own_path.is_file() else {}
    missing = [] if own_path.is_file() else [f"{version}/manifest.json: missing"]
    required = {f["file"] for f in spec["files"] if key(version) >= key(f["since"])}
    for name in sorted(required | set(own)):
        if not (here / name).is_file():
            missing.append(f"{version}/{name}: missing")
        elif own_path.is_file() and name not in own:
            missing.append(f"{version}/manifest.json: {name} is not listed")
        elif own.get(name, {}).get("state", DONE) != DONE:
            missing.append(f"{version}/{name}: {own[name]['state']}")
    present = {p.name for p in here.iterdir()} - {"manifest.json"} if here.is_dir() else set()
    missing += [f"{version}/{name}: not in releasedata/manifest.json" for name in sorted(present - required - set(own))]
    for keyed in spec["keyed"]:  # the flag history: rebuilt from every release's flags.json
        if key(version) < key(keyed["since"]):
            continue
        entries = json.loads((root / SGLANG / keyed["file"]).read_text(encoding="utf-8"))[keyed["key"]]
        if version not in entries:
            missing.append(f"{keyed['file']}: no entry for {version}")
    return missing


# the files of a release add copies from the previous one when nothing generated them (flags.json
# and where.json have their own copies, above; memory.json is never copied: docs/memory.md)
_COPIED = ("attention-backends.json", "sampling.json")


def copy_previous(version: str, previous: str | None, root: Path = REPO) -> dict[str, str]:
    """Each of `_COPIED` the release requires and does not hold yet: the previous release's file,
    named for `version`, its state in X's manifest saying what a person still owes it. Returns
    {file: state} for the files copied."""
    states = {}
    here, spec = folder(version, root), manifest(root)
    for entry in spec["files"]:
        name = entry["file"]
        if name not in _COPIED or key(version) < key(entry["since"]) or (here / name).is_file() or not previous:
            continue
        source = folder(previous, root) / name
        if not source.is_file():
            continue
        data = json.loads(source.read_text(encoding="utf-8"))
        data["sglang_version"] = version
        (here / name).write_text(json.dumps(data, indent=1, ensure_ascii=False, sort_keys=name == "sampling.json") + "\n",
                                 encoding="utf-8")
        how = (f"re-run tools/release.py add {version} with the wheel" if entry["owner"] == "generated"
               else f"check it against {version}'s source ({entry['by']})")
        states[name] = f"a copy of {previous}'s: {how}"
    return states


def manifest_json(version: str, states: dict[str, str], root: Path = REPO) -> str:
    """X's own manifest.json: each file X holds, its role, its owner and its state (`done`, or
    what is still to do). A person sets a reviewed file's state to `done` once it is checked."""
    own_path = folder(version, root) / "manifest.json"
    before = json.loads(own_path.read_text(encoding="utf-8"))["files"] if own_path.is_file() else {}
    files = {}
    for spec in manifest(root)["files"]:
        name = spec["file"]
        if not (folder(version, root) / name).is_file():
            continue
        state = states.get(name) or before.get(name, {}).get("state", DONE)
        files[name] = {"role": spec["role"], "owner": spec["owner"], "by": spec["by"], "state": state}
    data = {"sglang_version": version, "generator": GENERATOR,
            "note": "This release's files (releasedata/manifest.json says what every release holds). "
                    "`state`: done, or what is still to do; tools/release.py check fails until each is done.",
            "files": files}
    return json.dumps(data, indent=1, ensure_ascii=False) + "\n"


def checklist(version: str, previous: str | None, root: Path = REPO) -> list[str]:
    """What a person owns in adding `version`: the missing and unfinished pieces first, then the
    shared files to re-read."""
    spec = manifest(root)
    owners = {f"{version}/{f['file']}": f"{f['owner']} by {f['by']}" for f in spec["files"]}
    items = [f"{item} ({owners[item.split(':')[0]]})" if item.split(":")[0] in owners else item
             for item in missing_data(version, root)]
    items += [line.replace("{release}", version) for line in spec["checklist"]]
    return items


def check(root: Path = REPO) -> list[str]:
    """Every missing or unfinished piece of every release (empty: all whole)."""
    return [item for version in known_releases(root) for item in missing_data(version, root)]


def unpack(wheel: Path, into: Path) -> Path:
    with zipfile.ZipFile(wheel) as zf:
        zf.extractall(into, [n for n in zf.namelist() if n.startswith("sglang/") and n.endswith(".py")])
    return into


def fetch_wheel(version: str, into: Path) -> Path:
    subprocess.run([sys.executable, "-m", "pip", "download", "--quiet", "--no-deps", f"sglang=={version}",
                    "-d", str(into)], check=True)
    return next(into.glob(f"sglang-{version}-*.whl"))


def record_fixture(old: wherelib.TreeSource, new: wherelib.TreeSource, version: str,
                   root: Path = REPO) -> bytes:
    """The line digests of every file the rules cite in the two releases (for an offline test)."""
    previous = previous_release(version, root)
    paths = set()
    for release, source in ((previous, old), (version, new)):
        for text in lines_of(read_where(release, root)).values():
            for cited in wherelib.cited_paths(text):
                for prefix in wherelib.PREFIXES:
                    paths.add(prefix + cited)
    files = {s.version: {p: "".join(wherelib.line_digests("\n".join(s.lines(p))))
                         for p in sorted(paths) if s.lines(p) is not None} for s in (old, new)}
    text = json.dumps({"note": "line digests (tools/flagtable/where.py line_digests), no source text",
                       "releases": files}, indent=0, sort_keys=True) + "\n"
    return gzip.compress(text.encode(), mtime=0)


def add(version: str, previous: str | None, *, root: Path = REPO, wheel: Path | None = None,
        previous_wheel: Path | None = None, venv: str | None = None, offline: bool = False,
        fixture: Path | None = None) -> list[str]:
    """Add (or re-add) `version` after `previous`; returns the checklist. Offline (no wheel):
    the generated files are the previous release's, marked as copies in X's manifest."""
    here = folder(version, root)
    here.mkdir(parents=True, exist_ok=True)
    states: dict[str, str] = {}
    new = old = None
    work = Path(tempfile.mkdtemp(prefix="h3doctor-release-"))
    if not offline:
        wheel = wheel or fetch_wheel(version, work)
        new = wherelib.TreeSource(version, unpack(wheel, work / version))
        if previous:
            previous_wheel = previous_wheel or fetch_wheel(previous, work)
            old = wherelib.TreeSource(previous, unpack(previous_wheel, work / previous))
    if venv and wheel:
        subprocess.run([sys.executable, str(REPO / "tools/flagtable/extract.py"), "--wheel", str(wheel),
                        "--venv", venv, "--output", str(here / "flags.json")], check=True)
        states["flags.json"] = DONE
    elif not (here / "flags.json").is_file() and previous:
        table = json.loads((folder(previous, root) / "flags.json").read_text(encoding="utf-8"))
        table["sglang_version"] = version  # the table names its release: judged as X, not as the copied one
        (here / "flags.json").write_text(json.dumps(table, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
        states["flags.json"] = f"a copy of {previous}'s: regenerate (tools/release.py add {version} --venv VENV)"
    if new is not None:
        subprocess.run([sys.executable, str(REPO / "tools/flagtable/sampling.py"), "--source",
                        str(work / version / "sglang"), "--sglang-version", version,
                        "--output", str(here / "sampling.json")], check=True)
        states["sampling.json"] = DONE
        for rel, text in regenerate_where(version, old, new, root=root).items():
            (root / rel).parent.mkdir(parents=True, exist_ok=True)
            (root / rel).write_text(text, encoding="utf-8")
        states["where.json"] = DONE
        if fixture is not None and old is not None:
            fixture.write_bytes(record_fixture(old, new, version, root))
    elif previous:
        (here / "where.json").write_text(copied_where(version, previous, root), encoding="utf-8")
        states["where.json"] = (f"{previous}'s lines, copied without a source diff: re-run tools/release.py add "
                                f"{version} with the wheels, then review docs/releases/{version}-review.md")
    (root / SGLANG / "flagdata" / "flag-history.json").write_text(
        history.render(history.build(root / RELEASEDATA)), encoding="utf-8")
    states.update(copy_previous(version, previous, root))
    (here / "manifest.json").write_text(manifest_json(version, states, root), encoding="utf-8")
    return checklist(version, previous, root)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--root", type=Path, default=REPO, help="the repository to work on (default: this one)")
    sub = ap.add_subparsers(dest="command", required=True)
    add_cmd = sub.add_parser("add", help="add or re-add release X.Y.Z")
    add_cmd.add_argument("version")
    add_cmd.add_argument("--from", dest="previous", help="the release to start from (default: the newest below X)")
    add_cmd.add_argument("--wheel", help="X's wheel (default: pip download)")
    add_cmd.add_argument("--previous-wheel", help="the previous release's wheel (default: pip download)")
    add_cmd.add_argument("--venv", help="the flag-table venv (tools/flagtable/README.md)")
    add_cmd.add_argument("--no-flagtable", action="store_true", help="keep the committed flag table")
    add_cmd.add_argument("--fixture", help="also write the line-digest fixture of the two releases here")
    sub.add_parser("check", help="exit 1 when any release lacks a piece or has one still to do")
    args = ap.parse_args(argv)
    root = args.root.resolve()
    if args.command == "check":
        problems = check(root)
        for line in problems:
            print(line)
        return 1 if problems else 0
    if not re.fullmatch(r"\d+\.\d+\.\d+", args.version):
        ap.error("the release must look like 0.5.24")
    previous = args.previous or previous_release(args.version, root)
    if previous is not None and not (folder(previous, root) / "flags.json").is_file():
        ap.error(f"--from {previous}: no such release folder")
    offline = bool(args.previous) and not args.wheel
    if not offline and not args.no_flagtable and not args.venv:
        ap.error("give --venv for the flag table (or --no-flagtable, or --from A.B.C to work offline)")
    todo = add(args.version, previous, root=root, wheel=Path(args.wheel) if args.wheel else None,
               previous_wheel=Path(args.previous_wheel) if args.previous_wheel else None,
               venv=None if args.no_flagtable else args.venv, offline=offline,
               fixture=Path(args.fixture) if args.fixture else None)
    print(f"sglang {args.version} added after {previous}. What a person owns:")
    for item in todo:
        print(f"- [ ] {item}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
