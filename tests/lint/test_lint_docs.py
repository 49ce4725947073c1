"""Launches in docs and notebooks (tests/fixtures/repo/docs/*.md|mdx, notebooks/*.ipynb): fenced
shell blocks and notebook shell lines are judged where they stand; prose, output and other
languages are not; `<!-- h3doctor: ignore -->` leaves a block alone; a hostile notebook is a
located error, never a crash."""

from __future__ import annotations

import json

import pytest

from h3doctor.inputs.markdown import shell_view
from h3doctor.inputs.notebook import read_notebook
from h3doctor.lint.run import LintOptions, lint
from h3doctor.output.formats import render
from h3doctor.safeload import LoadError
from tests.lint.test_lint_locations import _copy, _word_at


def _json(repo, monkeypatch, *paths, **kw) -> tuple[int, dict]:
    monkeypatch.chdir(repo)
    code, report, _notes = lint(list(paths), LintOptions(**kw))
    return code, report.data


def _at(report, file) -> list[tuple[str, int, int]]:
    return [(f["rule"], f["line"], f["col"]) for f in report["findings"] if f["file"] == file]


def test_a_readmes_shell_and_console_blocks_are_judged_at_their_words(tmp_path, monkeypatch):
    repo = _copy(tmp_path)
    code, report = _json(repo, monkeypatch, "docs/quickstart.md")
    assert code == 1
    found = {(r, _word_at(repo, "docs/quickstart.md", line, col)) for r, line, col in _at(report, "docs/quickstart.md")}
    # the bash block's continuation line, and the console block's prompted command (not its output)
    assert ("H3D020", "--ulysses_degree") in found and ("H3D228", "--ulysses-degree") in found
    lines = {line for _r, line, _c in _at(report, "docs/quickstart.md")}
    assert 25 not in lines  # the block after <!-- h3doctor: ignore --> is not judged
    assert 39 not in lines  # nor the python block's subprocess call
    assert [l["line"] for l in report["files"][0]["launches"]] == [7, 14, 32]


def test_a_suppression_before_a_block_covers_the_block_and_is_spent(tmp_path, monkeypatch):
    repo = _copy(tmp_path)
    _code, report = _json(repo, monkeypatch, "docs/quickstart.md")
    suppressed = [f for f in report["findings"] if f.get("suppressed")]
    assert [(f["rule"], f["line"]) for f in suppressed] == [("H3D021", 32)]
    assert not any(f["rule"] == "H3DL001" for f in report["findings"])
    text = (repo / "docs/quickstart.md").read_text().replace("ignore[H3D021]", "ignore[H3D999]")
    (repo / "docs/quickstart.md").write_text(text)
    _code, report = _json(repo, monkeypatch, "docs/quickstart.md")
    assert [p for p in _at(report, "docs/quickstart.md") if p[0] == "H3DL001"] == [("H3DL001", 30, 1)]  # once, where written


def test_an_mdx_block_indented_in_a_component_is_judged(tmp_path, monkeypatch):
    repo = _copy(tmp_path)
    _code, report = _json(repo, monkeypatch, "docs/cookbook.mdx")
    found = {(r, _word_at(repo, "docs/cookbook.mdx", line, col)) for r, line, col in _at(report, "docs/cookbook.mdx")}
    assert ("H3D020", "--enable-foo") in found


def test_docs_launches_are_judged_for_the_configured_release(tmp_path, monkeypatch):
    repo = _copy(tmp_path)
    _code, report = _json(repo, monkeypatch, "docs/quickstart.md", sglang_version="0.5.21")
    assert {f.get("sglang_version") for f in report["findings"] if f["rule"].startswith("H3D0")} == {"0.5.21"}


def test_fix_edits_the_block_in_the_document(tmp_path, monkeypatch):
    repo = _copy(tmp_path)
    before = (repo / "docs/quickstart.md").read_text()
    _json(repo, monkeypatch, "docs/quickstart.md", fix=True)
    after = (repo / "docs/quickstart.md").read_text()
    assert "  --ulysses-degree 4\n```" in after and after.count("\n") == before.count("\n")
    assert "fails on purpose:\n\n<!-- h3doctor: ignore -->\n```bash\nsglang serve MiniMaxAI/MiniMax-H3 --num-gpus 4 " \
           "--ulysses_degree 4" in after  # the ignored block is left as written


def test_a_notebooks_bang_lines_and_bash_cells_are_judged_in_the_file(tmp_path, monkeypatch):
    repo = _copy(tmp_path)
    name = "notebooks/serve.ipynb"
    code, report = _json(repo, monkeypatch, name)
    assert code == 1
    launches = report["files"][0]["launches"]
    assert [l["label"] for l in launches] == ["cell 2 line 3", "cell 3 line 3"]
    found = {(r, _word_at(repo, name, line, col)) for r, line, col in _at(report, name)}
    assert ("H3D020", "--ulysses_degree") in found and ("H3D228", "--ulysses-degree") in found
    # an output's text is never a launch; a notebook is never rewritten
    before = (repo / name).read_bytes()
    monkeypatch.chdir(repo)
    _code, fixed, _notes = lint([name], LintOptions(fix=True))
    assert (repo / name).read_bytes() == before
    assert "serve.ipynb: not fixed: a notebook is not rewritten" in render("lint", "text", fixed)


@pytest.mark.parametrize("text, why", [
    ('{"sglang": ', "malformed JSON"),
    ('{"cells": {"sglang": 1}}', "no list of cells"),
    ('{"cells": [{"cell_type": "code", "source": ["!sglang serve", 2]}]}', "not text"),
    ('{"sglang": ' + '{"cells": [' * 5000, "nested deeper"),
    ('{"sglang": ' + '[' * 5000 + ']' * 5000 + '}', "nested deeper"),
], ids=["truncated", "cells-not-a-list", "source-not-text", "unclosed-deep", "too-deep"])
def test_a_hostile_notebook_is_a_located_error(tmp_path, monkeypatch, text, why):
    (tmp_path / "bad.ipynb").write_text(text)
    code, report = _json(tmp_path, monkeypatch, "bad.ipynb", no_config=True, targets=("4xH200",))
    [notice] = report["findings"]
    assert code == 1 and notice["rule"] == "H3DL003" and why in notice["message"] and notice["file"] == "bad.ipynb"


def test_docs_and_notebooks_that_speak_of_no_sglang_launch_are_not_inputs(tmp_path, monkeypatch):
    (tmp_path / "README.md").write_text("# Tools\n\n```bash\nmake test\n```\n")
    (tmp_path / "plot.ipynb").write_text('{"cells": [')  # not even read as JSON
    code, report = _json(tmp_path, monkeypatch, ".", no_config=True)
    assert code == 0 and {f["path"]: f["kind"] for f in report["files"]} == {"README.md": None, "plot.ipynb": None}


def test_a_notebook_past_its_size_limit_is_refused_not_read(tmp_path, monkeypatch):
    from h3doctor.inputs.read import read_input

    (tmp_path / "big.ipynb").write_text('{"cells": [], "x": "' + "a" * 2048 + '"}')
    with pytest.raises(LoadError):
        read_input(str(tmp_path / "big.ipynb"), known_fields=set(), max_bytes=64)


def test_a_shell_view_keeps_every_offset_and_blanks_prose_and_output():
    text = "Run `sglang serve x`:\r\n\r\n```console\r\n$ sglang serve x \\\r\n  --tp 2\r\nok sglang\r\n```\r\n"
    view = shell_view(text)
    assert len(view) == len(text) and view.count("\r\n") == text.count("\r\n")
    assert [line.strip() for line in view.split("\r\n") if line.strip()] == ["sglang serve x \\", "--tp 2"]


def test_a_prompt_pasted_into_a_bash_block_is_not_a_word_and_a_comment_stays_one():
    view = shell_view("```bash\n$ sglang serve x --tp 2\n# sglang serve y\n```\n")
    assert view.split("\n")[1:3] == ["  sglang serve x --tp 2", "# sglang serve y"]


def test_a_notebook_cell_with_source_as_one_string_is_read():
    nb = {"cells": [{"cell_type": "code", "source": "!sglang serve MiniMaxAI/MiniMax-H3 --tp 4\n"}]}
    launches, _notes = read_notebook("n.ipynb", json.dumps(nb))
    assert [l.tokens[:2] for l in launches] == [["sglang", "serve"]] and launches[0].label == "cell 1 line 1"


def test_line_finding_stops_at_the_first_line_not_found():
    from h3doctor.inputs.notebook import _LineFinder

    finder = _LineFinder('[\n "a\\n",\n "b\\n"\n]')
    assert finder.find("a\n") is not None and finder.find("zzz") is None
    assert finder.find("b\n") is None  # not searched again: one failed scan per file, not one per line
