"""`api.check(...).to_json()` is the CLI's `check --format json` stdout, byte for byte, for the
launches of the conformance goldens (tests/conformance/sglang-<release>[-suite].jsonl), and
`to_dict()` validates against the published report schema.

The CLI runs in this process (the click command Typer builds from h3doctor.cli.app, built once),
exactly as `h3doctor check --profile P --sglang-version V --format json -- sglang serve|generate
ARGV` parses and runs it; test_api.py holds the in-process CLI equal to the real console entry.
Every launch of the newest release's goldens is compared; of each older release's, every
OLDER_STRIDE-th (the API's path does not depend on the release beyond the version it passes on,
and the CLI costs ~8 ms a launch: the whole set would add minutes to the suite).
"""

from __future__ import annotations

import contextlib
import functools
import io
import json
import sys
from pathlib import Path

import pytest

from h3doctor import api
from h3doctor.verified import NEWEST_VERIFIED
from repo_paths import REPO

ROOT = REPO
sys.path.insert(0, str(ROOT / "tools" / "conformance"))

import compare  # noqa: E402

OLDER_STRIDE = 20
CHUNK = 200


def _launches() -> list[tuple[str, str, str, tuple[str, ...], tuple[tuple[str, str], ...]]]:
    """(release, entry, profile, argv, files) of every golden launch compared, without repeats."""
    seen, out = set(), []
    for path in sorted(compare.GOLDENS_DIR.glob("sglang-*.jsonl")):
        if path.stem.endswith("-corrected"):
            continue  # h3doctor's own proposals (see below)
        release = path.stem.split("-")[1]
        meta, cases = compare.read_jsonl(path)
        entry = "generate" if "'generate'" in str(meta.get("entry", "")) else "serve"
        stride = 1 if release == NEWEST_VERIFIED else OLDER_STRIDE
        # a record with "of" is h3doctor's corrected command for another (its own report's)
        for case in [c for c in cases if "of" not in c][::stride]:
            files = tuple((f["name"], f["text"]) for f in case.get("files") or ())
            key = (release, entry, case["profile"], tuple(case["argv"]), files)
            if key not in seen:
                seen.add(key)
                out.append(key)
    return out


LAUNCHES = _launches()
CHUNKS = range((len(LAUNCHES) + CHUNK - 1) // CHUNK)


@functools.lru_cache(maxsize=1)
def _command():
    import typer

    from h3doctor.cli import app

    return typer.main.get_command(app)


def cli_stdout(args: list[str]) -> tuple[int, str]:
    """(exit code, stdout) of the CLI run in this process on `args`."""
    buf = io.StringIO()
    with contextlib.redirect_stdout(buf):
        code = _command().main(args, standalone_mode=False)  # click returns typer.Exit's code here
    return code or 0, buf.getvalue()


@functools.lru_cache(maxsize=1)
def report_schema():
    import jsonschema

    from h3doctor.paths import package_dir

    schema = json.loads(package_dir("h3doctor.schema").joinpath("report.schema.json").read_text(encoding="utf-8"))
    return jsonschema.Draft202012Validator(schema)


def test_the_goldens_give_launches_of_every_release_and_both_entries():
    releases = {launch[0] for launch in LAUNCHES}
    assert releases == {p.stem.split("-")[1] for p in compare.GOLDENS_DIR.glob("sglang-*.jsonl")}
    assert {launch[1] for launch in LAUNCHES} == {"serve", "generate"}
    assert sum(launch[0] == NEWEST_VERIFIED for launch in LAUNCHES) > 2500
    assert any(launch[4] for launch in LAUNCHES)  # launches with a --config file beside them


@pytest.mark.parametrize("chunk", CHUNKS)
def test_api_check_is_the_cli_json_for_every_golden_launch(chunk):
    differ = []
    for release, entry, profile, argv, files in LAUNCHES[chunk * CHUNK:(chunk + 1) * CHUNK]:
        words = ["sglang", entry, *argv]
        with compare.case_files([{"name": n, "text": t} for n, t in files]):
            report = api.check(words, profile=profile, sglang_version=release)
            code, out = cli_stdout(["check", "--profile", profile, "--sglang-version", release,
                                    "--format", "json", "--", *words])
        if (report.to_json(), report.exit_code) != (out, code):
            differ.append((release, profile, words))
        data = report.to_dict()
        assert json.loads(out) == data
        errors = [e.message for e in report_schema().iter_errors(data)]
        assert not errors, (release, profile, words, errors[:3])
    assert not differ, f"{len(differ)} launches differ, first: {differ[:3]}"
