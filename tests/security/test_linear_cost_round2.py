"""Issue 27, item 7: hostile inputs a second review found super-linear (explain, check, lint), each
held linear by counting the work rather than timing it (benchmarks/hostile.py measures the time)."""

from __future__ import annotations

import difflib

from hypothesis import given, settings
from hypothesis import strategies as st

from h3doctor import tokendiff
from h3doctor.engine.check import check
from h3doctor.host.profiles import load_profile

LAUNCH = ["sglang", "serve", "MiniMaxAI/MiniMax-H3", "--num-gpus", "4"]


# --- check: the change list is not difflib over the whole command ---------------------------

def _counting_matcher(monkeypatch) -> list[int]:
    """The lengths difflib's SequenceMatcher is asked to compare, word lists only."""
    sizes: list[int] = []
    real = difflib.SequenceMatcher

    class Counting(real):
        def __init__(self, isjunk=None, a="", b="", autojunk=True):
            if isinstance(a, (list, tuple)):
                sizes.append(max(len(a), len(b)))
            super().__init__(isjunk, a, b, autojunk)
    monkeypatch.setattr(difflib, "SequenceMatcher", Counting)
    return sizes


def test_repeated_abbreviations_are_respelt_without_difflib_over_the_command(rules, table, monkeypatch):
    sizes = _counting_matcher(monkeypatch)
    result = check(LAUNCH + ["--tp", "1"] * 400, load_profile("4xH200"), rules, table, {})
    assert result.corrected_argv == LAUNCH + ["--tp-size", "1"] * 400
    [step] = [s for s in result.fix_steps if s.rule.id == "H3D021"]
    assert [(c.removed, c.added) for c in step.changes] == [(("--tp",), ("--tp-size",))] * 400  # difflib's answer
    assert max(sizes, default=0) <= tokendiff.MAX_MATCHED_WORDS


def test_thousands_of_repeated_flags_and_one_unknown_diff_only_the_middle(rules, table, monkeypatch):
    sizes = _counting_matcher(monkeypatch)
    result = check(LAUNCH + ["--port", "1"] * 3000 + ["--bogus", "x"], load_profile("4xH200"), rules, table, {})
    assert result.corrected_argv == LAUNCH + ["--port", "1"] * 3000
    assert max(sizes, default=0) <= tokendiff.MAX_MATCHED_WORDS


words = st.lists(st.sampled_from(["--tp", "1", "--port", "--tp-size", "x"]), max_size=12)


@settings(max_examples=300, deadline=None)
@given(words, words)
def test_the_diff_is_always_a_valid_alignment(a, b):
    ops = tokendiff.opcodes(a, b)
    # a valid alignment: contiguous, covering both, equal runs equal
    assert [o[1] for o in ops[1:]] == [o[2] for o in ops[:-1]] and [o[3] for o in ops[1:]] == [o[4] for o in ops[:-1]]
    if ops:
        assert (ops[0][1], ops[0][3], ops[-1][2], ops[-1][4]) == (0, 0, len(a), len(b))
    assert all(a[i1:i2] == b[j1:j2] for tag, i1, i2, j1, j2 in ops if tag == "equal")
    assert not any(a[i1:i2] == b[j1:j2] for tag, i1, i2, j1, j2 in ops if tag != "equal")


def test_a_long_middle_is_told_apart_word_by_word_or_replaced_whole():
    n = tokendiff.MAX_MATCHED_WORDS + 10
    a, b = ["--tp", "1"] * n, ["--tp-size", "1"] * n
    ops = tokendiff.opcodes(a, b)
    assert [o for o in ops if o[0] == "replace"] == [("replace", 2 * k, 2 * k + 1, 2 * k, 2 * k + 1) for k in range(n)]
    assert tokendiff.opcodes(a, b[:-2] + ["x"]) == [("replace", 0, 2 * n, 0, 2 * n - 1)]


# --- check: a weights shard's header is read only up to its limit ------------------------------

def test_a_header_past_the_limit_is_unread_and_its_body_never_read(tmp_path, monkeypatch):
    from h3doctor.sglang import safetensors_header as sh

    shard = tmp_path / "big.safetensors"
    length = sh.MAX_HEADER_BYTES + 1
    with shard.open("wb") as fh:
        fh.write(length.to_bytes(8, "little") + b"{" + b" " * (length - 2) + b"}")
    read: list[int] = []
    real_open = sh.open_regular

    def counting_open(*args, **kwargs):
        fh, info = real_open(*args, **kwargs)
        real_read = fh.read
        fh.read = lambda n=-1: read.append(n) or real_read(n)
        return fh, info
    monkeypatch.setattr(sh, "open_regular", counting_open)
    checkpoint = sh.checkpoint_formats(str(shard))
    assert checkpoint.formats == frozenset() and len(checkpoint.unread) == 1
    assert "larger than h3doctor reads" in checkpoint.unread[0]
    assert read == [8]  # the length only: the 4 MiB body is not read
    assert sh.MAX_HEADER_BYTES <= 8 << 20  # parsed, a header takes ~13x its size: the 150 MB budget


# --- explain: a command line is searched from a bounded stretch before its program -------------

class _Recording:
    def __init__(self, regex, calls):
        self.regex, self.calls = regex, calls

    def search(self, line, pos=0):
        self.calls.append(len(line) - pos)  # the characters the search may start in
        return self.regex.search(line, pos)


def test_a_long_line_of_assignments_is_not_searched_from_every_start(monkeypatch):
    from h3doctor.explain import logread

    calls: list[int] = []
    monkeypatch.setattr(logread, "_COMMAND", _Recording(logread._COMMAND, calls))
    assert logread.read_log("a= " * 21_000 + "sglang\n").commands == []
    assert calls == []  # no program: the command search is not run at all
    log = logread.read_log("a= " * 21_000 + "A=1 sglang serve MiniMaxAI/MiniMax-H3 --num-gpus 4\n")
    [found] = log.commands
    assert found.text.endswith("a= A=1 sglang serve MiniMaxAI/MiniMax-H3 --num-gpus 4")
    assert len(found.text) < logread.MAX_ENV_CHARS + 100
    assert calls and max(calls) <= logread.MAX_ENV_CHARS + 100


def test_the_bounded_search_finds_what_the_whole_search_finds_on_ordinary_lines():
    from h3doctor.explain import logread

    for line in ("$ CUDA_VISIBLE_DEVICES=0,1 sglang serve M --tp-size 2", "root# python3 -m sglang.launch_server --model M",
                 "run: X=1 Y=2 python3.11 -m sglang.cli.main serve M", "xsglang serve M", "sglang serves", "+sglang generate M"):
        whole = logread._COMMAND.search(line)
        bounded = logread._command(line)
        assert (whole and whole.group("cmd")) == (bounded and bounded.group("cmd")), line


# --- lint: the launches judged per file are capped, and the cap is said ----------------------

def test_launches_past_the_per_file_cap_are_not_judged_and_a_located_note_says_so(tmp_path, monkeypatch):
    from h3doctor.lint import session as lint_session
    from h3doctor.lint.config import LintConfig

    monkeypatch.setattr(lint_session, "MAX_LAUNCHES_PER_FILE", 3)
    script = tmp_path / "many.sh"
    script.write_text("#!/bin/bash\n" + "sglang serve MiniMaxAI/MiniMax-H3 --num-gpus 4 --bogus-flag 1\n" * 5,
                      encoding="utf-8")
    run = lint_session.LintSession(LintConfig(root=tmp_path), cli_targets=("4xH200",)).run([str(script)])
    judged = {r.location.line for r in run.records if r.rule.startswith("H3D0") or r.rule.startswith("H3D1")}
    [note] = [r for r in run.records if r.rule == "H3DL010"]
    assert (note.severity, note.location.line) == ("warning", 5)  # the 4th launch, on line 5, is the first unjudged
    assert "past launch 3 of this file (5 launches)" in note.message
    assert judged and max(judged) <= 4 and len(run.files[0].launches) == 3
