"""One shell splitter (h3doctor/shellsplit.py): the words each caller got from its own splitter
before, on a corpus (the fixture repository's files, the goldens' launches, benchmarks/hostile.py's
launch text) and on generated text; and the bound every entry keeps.

The old engines are the oracles: `shlex.split` (recipes, Dockerfiles, explain's log lines) and the
`shlex.shlex` lexer container_run.py built for a `-c` script. The located scanner moved unchanged
(its callers' own tests hold it); what is checked here is that its fast use inside `split` gives
shlex's words. Deliberate difference: `split(continuations=True)` (recipes) reads a command pasted
with `\\` at its line ends as the shell does, where shlex keeps each escaped newline as a word.
"""

from __future__ import annotations

import importlib.util
import os
import shlex
import sys

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from h3doctor import shellsplit
from h3doctor.errors import UsageError
from repo_paths import REPO, TESTS

SETTINGS = settings(max_examples=int(os.environ.get("H3DOCTOR_PROPERTY_EXAMPLES", "300")), deadline=None,
                    derandomize="H3DOCTOR_PROPERTY_EXAMPLES" not in os.environ,
                    suppress_health_check=[HealthCheck.too_slow])  # a shared, loaded machine


def _old_split(text: str) -> list[str] | type[ValueError]:
    try:
        return shlex.split(text)
    except ValueError:
        return ValueError


def _new_split(text: str, **kw) -> list[str] | type[ValueError]:
    try:
        return shellsplit.split(text, **kw)
    except ValueError:
        return ValueError


def _old_script_tokens(text: str) -> list[str] | type[ValueError]:
    """container_run.py's lexer as it was written before the move."""
    lexer = shlex.shlex(text, posix=True, punctuation_chars=";&|()<>")
    lexer.whitespace_split = True
    lexer.commenters = "#"
    try:
        return list(lexer)
    except ValueError:
        return ValueError


def _new_script_tokens(text: str) -> list[str] | type[ValueError]:
    try:
        return list(shellsplit.script_tokens(text))
    except ValueError:
        return ValueError


def _fixture_texts() -> list[str]:
    """Every line of the fixture repository's text files, and each file whole."""
    texts: list[str] = []
    for path in sorted((TESTS / "fixtures" / "repo").rglob("*")):
        if not path.is_file():
            continue
        try:
            text = path.read_text(encoding="utf-8")
        except (UnicodeDecodeError, OSError):
            continue
        texts.append(text)
        texts.extend(line for line in text.splitlines() if line.strip())
    return texts


def _golden_launches() -> list[list[str]]:
    spec = importlib.util.spec_from_file_location("golden_reports", REPO / "tools" / "golden_reports.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return [launch for _options, launch, _hook in module.CASES.values()]


def _hostile_words() -> list[str]:
    sys.path.insert(0, str(REPO / "benchmarks"))
    try:
        import hostile
    finally:
        sys.path.remove(str(REPO / "benchmarks"))
    return hostile._words_up_to(64 * 1024)  # the 1 MiB recipe's words, at a size shlex reads quickly


def test_the_corpus_splits_as_shlex_split_did():
    texts = _fixture_texts()
    assert len(texts) > 500  # the corpus was read
    differ = [t for t in texts if _new_split(t) != _old_split(t)]
    assert differ == []


def test_the_corpus_scripts_tokenize_as_container_runs_lexer_did():
    texts = [t.replace("\n", ";") for t in _fixture_texts()]
    assert [t for t in texts if _new_script_tokens(t) != _old_script_tokens(t)] == []


def test_the_goldens_launches_read_back_as_their_words():
    for words in _golden_launches():
        line = shlex.join(words)
        assert shellsplit.split(line) == words == shlex.split(line)
        assert [w for w, _s, _e in shellsplit.shell_words(line)] == words


def test_the_hostile_launch_text_splits_as_shlex_split_did():
    words = _hostile_words()
    text = " ".join(words)
    assert shellsplit.split(text) == shlex.split(text) == words
    assert shellsplit.split(text.replace(" ", " \\\n  "), continuations=True) == words  # pasted over lines


# Texts made of the characters where the shell and shlex part ways, and plain ones.
_ALPHABET = st.sampled_from(list("ab-= \t\n'\"\\#$`;|&<>()") + ["--x", "é", "\r", "$'a'", "\\\n"])
_TEXTS = st.lists(_ALPHABET, max_size=30).map("".join)


@SETTINGS
@given(text=_TEXTS)
def test_split_gives_shlex_splits_words_on_any_text(text):
    assert _new_split(text) == _old_split(text)


@SETTINGS
@given(text=_TEXTS)
def test_script_tokens_give_the_old_lexers_tokens_on_any_text(text):
    assert _new_script_tokens(text) == _old_script_tokens(text)


@SETTINGS
@given(text=_TEXTS)
def test_continuations_differ_from_shlex_only_on_a_continued_line(text):
    if "\\\n" not in text:
        assert _new_split(text, continuations=True) == _old_split(text)


def test_a_continued_command_is_one_command_as_the_shell_reads_it():
    text = "sglang serve M \\\n  --num-gpus 4 \\\n  --tp-size 2"
    assert shellsplit.split(text, continuations=True) == ["sglang", "serve", "M", "--num-gpus", "4", "--tp-size", "2"]
    assert "\n" in shlex.split(text)  # shlex keeps each escaped newline as a word: the deliberate difference


# --- the bound --------------------------------------------------------------------------------

@pytest.fixture
def small_bound(monkeypatch):
    monkeypatch.setattr(shellsplit, "MAX_CHARS", 100)
    return "a " * 51  # 102 characters


@pytest.mark.parametrize("entry", [
    shellsplit.split,
    lambda t: shellsplit.split(t, continuations=True),
    shellsplit.shell_commands,
    shellsplit.shell_words,
    lambda t: list(shellsplit.script_tokens(t)),
])
def test_each_entry_refuses_a_text_past_the_bound(small_bound, entry):
    with pytest.raises(shellsplit.Unsupported, match="102 characters, past h3doctor's limit of 100"):
        entry(small_bound)
    entry(small_bound[:100])  # at the bound: read


def test_a_recipe_past_the_bound_is_a_located_usage_error(small_bound, tmp_path):
    from h3doctor.inputs.recipe import load_recipe

    path = tmp_path / "r.yaml"
    path.write_text(f"profile: 4xH200\ncommand: {small_bound}\n")
    with pytest.raises(UsageError) as err:
        load_recipe(str(path))
    assert "past h3doctor's limit" in str(err.value) and err.value.location.endswith(":2:10")


def test_a_container_script_past_the_bound_is_a_usage_error(small_bound):
    from h3doctor.sglang.container_run import script_commands

    with pytest.raises(UsageError, match="not understood .*past h3doctor's limit"):
        script_commands(small_bound)


def test_the_bound_is_above_every_text_a_reader_accepts():
    from h3doctor.explain.source import MAX_BYTES as LOG
    from h3doctor.inputs.helm import MAX_RENDERED_BYTES
    from h3doctor.located import MAX_INPUT_BYTES

    assert shellsplit.MAX_CHARS >= max(LOG, MAX_RENDERED_BYTES, MAX_INPUT_BYTES)


# --- $'…' (ANSI-C quoting), for the line a user typed in bash or zsh ----------------------------

_WORDS = st.lists(st.text(alphabet=st.characters(blacklist_characters="\0", blacklist_categories=("Cs",))
                          | st.sampled_from(["\udc80", "\udcff", "\x1b", "\r", "\n", "'", "\\", "$", "é"]),
                          max_size=12), min_size=1, max_size=6)


@SETTINGS
@given(words=_WORDS)
def test_words_quoted_for_a_shell_read_back_as_themselves(words):
    from h3doctor.shellwords import join

    line = join(words)
    assert [w for w, _s, _e in shellsplit.shell_commands(line, ansi_c=True)[0]] == words


_ANSI_CASES = ["$'\\x41\\101\\u00e9\\U0001F600'", "$'\\e[2K\\r'x", "$'a\\0b'c", "$'\\cA\\z\\q'", "$'it\\'s'",
               "a$'b'\"c\"'d'", "$'\\xff\\xfe'", "$'\\t\\n\\v\\f\\a\\b\\\\\\\"\\?'", "$'\\1234'", "$'\\xg'"]


@pytest.mark.skipif(not os.path.exists("/bin/bash"), reason="bash is the reference here")
def test_ansi_c_words_are_the_ones_bash_makes():
    import subprocess

    for line in _ANSI_CASES:
        out = subprocess.run(["/bin/bash", "--norc", "--noprofile", "-c", f"printf '%s\\0' {line}"],
                             capture_output=True, check=True, env={"LC_ALL": "C.UTF-8"}).stdout  # a UTF-8 terminal
        bash_words = [w.decode("utf-8", "surrogateescape") for w in out.split(b"\0")[:-1]]
        ours = [w for w, _s, _e in shellsplit.shell_commands(line, ansi_c=True)[0]]
        assert ours == bash_words, line


def test_without_ansi_c_a_dollar_quote_is_not_read():
    """A script of any POSIX shell is read without it (dash before 0.5.12 has no `$'…'`): the
    text is not understood (lint notes it, H3DL002), never read as bash would."""
    with pytest.raises(shellsplit.Unsupported):
        shellsplit.shell_commands("x $'a'", keep_expansions=True)
    with pytest.raises(shellsplit.Unsupported):
        shellsplit.shell_commands("x $'a", ansi_c=True)  # an open one is no word either way
