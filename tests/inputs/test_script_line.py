"""A line whose `-c` script holds sglang's flags (inputs/script_line.py): the words the shell gives
sglang, in its order, read through lint's reader, and a corrected command written back where each
word is written — re-read through the same reader to the words that were checked."""

from __future__ import annotations

import pytest

from h3doctor.errors import UsageError
from h3doctor.inputs.script_line import NotWritten, read
from h3doctor.sglang.launch_forms import LaunchWords
from h3doctor.unresolved import has_mark

M = "MiniMaxAI/MiniMax-H3"
DOCKER = ["docker", "run", "--gpus", "all", "lmsysorg/sglang:v0.5.23", "bash", "-lc"]
ISSUE = DOCKER + [f'exec sglang serve --model-path {M} "$@"', "--", "--num-gpus", "4", "--ring-degree", "2"]


def sglang_words(line) -> list[str]:
    """What the judged line gives sglang, read by the launch-form reader check uses."""
    judged = LaunchWords.read(list(line.judged))
    return list(line.judged[judged.form_or_raise().prefix_len:])


def moved(line) -> list[str]:
    return list(line.judged[line.moved_from:])


def test_the_issue_line_gives_sglang_the_script_words_then_its_arguments():
    line = read(ISSUE, {})
    assert moved(line) == ["--model-path", M, "--num-gpus", "4", "--ring-degree", "2"]
    assert sglang_words(line) == moved(line)  # the launch-form reader reads the judged line the same way


@pytest.mark.parametrize("tokens,words", [
    (["bash", "-lc", f'exec sglang serve --model-path {M} "$@" --port 30000', "--", "--num-gpus", "4"],
     ["--model-path", M, "--num-gpus", "4", "--port", "30000"]),  # "$@" in the middle: the shell's order
    (DOCKER + [f'exec sglang serve --model-path "$1" "$@"', "--", M, "--num-gpus", "4"],
     ["--model-path", M, M, "--num-gpus", "4"]),  # $1 and "$@" both give the first argument
    (DOCKER + [f'shift; exec sglang serve --model-path {M} "$@"', "--", "x", "--num-gpus", "4"],
     ["--model-path", M, "--num-gpus", "4"]),
    (DOCKER + [f"exec sglang serve --model-path {M} --num-gpus 4"], ["--model-path", M, "--num-gpus", "4"]),
    (["docker", "run", "--entrypoint", "bash", "img", "-lc", f'sglang serve --model-path {M} "$@"', "--", "--num-gpus",
      "4"], ["--model-path", M, "--num-gpus", "4"]),  # the shell is the entrypoint's value
    (["docker", "run", "-e", "NG=2", "img", "sh", "-c", f'sglang serve --model-path {M} --num-gpus "$NG"'],
     ["--model-path", M, "--num-gpus", "2"]),  # the container's -e value
])
def test_the_words_are_the_shells(tokens, words):
    line = read(tokens, {})
    assert moved(line) == words and sglang_words(line) == words


@pytest.mark.parametrize("tokens", [
    DOCKER + ['exec sglang serve "$@"', "--", "--model-path", M],  # the cookbook's form: read as it always was
    ["sglang", "serve", M],
    DOCKER + ["echo hello"],
])
def test_other_lines_are_left_to_the_launch_form_reader(tokens):
    assert read(tokens, {}) is None


def round_trip(tokens, corrected_moved: list[str]) -> list[str]:
    """The line with the judged words changed to `corrected_moved`, written back and read again."""
    line = read(tokens, {})
    written = line.written_back(list(line.judged[:line.moved_from]) + corrected_moved)
    again = read(written, {})
    assert moved(again) == corrected_moved  # the written line gives sglang exactly the corrected words
    return written


def test_a_flag_in_the_arguments_is_edited_there():
    written = round_trip(ISSUE, ["--model-path", M, "--num-gpus", "4", "--ring-degree", "1"])
    assert written == ISSUE[:-1] + ["1"]


def test_a_flag_after_the_arguments_is_added_to_them():
    written = round_trip(ISSUE, ["--model-path", M, "--num-gpus", "4", "--ring-degree", "2", "--ulysses-degree", "2"])
    assert written == ISSUE + ["--ulysses-degree", "2"]


def test_a_flag_inside_the_script_is_edited_in_its_text_quoted():
    tokens = DOCKER + [f"exec sglang serve --model-path {M} --num-gpus 4 --ring-degree 2"]
    written = round_trip(tokens, ["--model-path", "/my models/it's h3", "--num-gpus", "4", "--ring-degree", "2",
                                  "--ulysses-degree", "2"])
    assert written[:-1] == tokens[:-1]  # the script stays one word
    assert written[-1] == ("exec sglang serve --model-path '/my models/it'\"'\"'s h3' --num-gpus 4 --ring-degree 2 "
                           "--ulysses-degree 2")


def test_a_removed_script_word_leaves_the_script_reading_the_rest():
    tokens = DOCKER + [f"exec sglang serve --model-path {M} --num-gpus 4 --ring-degree 2 # comment"]
    written = round_trip(tokens, ["--model-path", M, "--num-gpus", "4"])
    assert written[-1].startswith(f"exec sglang serve --model-path {M} --num-gpus 4") and "--ring-degree" not in written[-1]


@pytest.mark.parametrize("script,args,changed,says", [
    (f'exec sglang serve --model-path {M} --num-gpus "$1"', ["--", "4"], ["--model-path", M, "--num-gpus", "2"],
     "positional parameter"),
    (f'exec sglang serve --model-path {M} --num-gpus "$NG"', [], ["--model-path", M, "--num-gpus", "2"],
     "expanded by the shell"),
    (f'exec sglang serve --model-path "$1" "$@"', ["--", M, "--num-gpus", "4"], ["--model-path", M, M],
     "reads by position"),  # removing an argument renumbers the ones $1 reads
])
def test_a_word_the_shell_computes_is_never_replaced(script, args, changed, says):
    tokens = ["docker", "run", "-e", "NG=4", "img", "bash", "-lc", script, *args]
    line = read(tokens, {})
    with pytest.raises(NotWritten, match=says):
        line.written_back(list(line.judged[:line.moved_from]) + changed)


def test_a_change_to_the_scripts_program_is_not_written():
    line = read(ISSUE, {})
    with pytest.raises(NotWritten, match="program"):
        line.written_back(list(line.judged[:line.script_at]) + ["other"] + list(line.judged[line.script_at + 1:]))


@pytest.mark.parametrize("script,says", [
    (f"exec sglang serve --model-path {M} --num-gpus '4", "not understood"),  # unterminated quote
    (f"exec sglang serve --model-path {M} --num-gpus $(echo 4", "not understood"),  # unterminated $(
    (f"exec sglang serve --model-path {M} --num-gpus `echo 4", "not understood"),
    (f"exec sglang serve --model-path {M} " + "--num-gpus 4 " * 90_000, "MAX_ARG_STRLEN"),  # 1 MiB
    (f"export X=$3; exec sglang serve --model-path {M}", "reads $3"),
    (f"shift 3; exec sglang serve --model-path {M}", "shifts past"),
])
def test_hostile_scripts_are_usage_errors(script, says):
    with pytest.raises(UsageError, match=says.replace("$", r"\$")):
        read(DOCKER + [script, "--", "a"], {})


def test_a_command_substitution_is_a_word_of_unknown_value():
    line = read(DOCKER + [f"exec sglang serve --model-path {M} --num-gpus $(nproc)"], {})
    assert has_mark(moved(line)[-1]) and line.words[-1].computed


def test_a_change_of_the_scripts_program_words_is_written_in_the_script_as_written():
    """H3D040's fix in a script that holds flags: the judged script's program words, and only
    they, are edited in the script as the line writes it (its `shift N;` is h3doctor's)."""
    tokens = ["bash", "-lc", f'cd /w && exec python3 -m sglang.launch_server --model-path {M} "$@"', "--", "--port", "1"]
    line = read(tokens, {})
    judged = list(line.judged)
    judged[line.script_at] = judged[line.script_at].replace("python3 -m sglang.launch_server", "sglang serve")
    assert line.written_back(judged)[2] == f'cd /w && exec sglang serve --model-path {M} "$@"'
    judged[line.script_at] = judged[line.script_at].replace("cd /w", "cd /x")  # outside the program's words
    with pytest.raises(NotWritten, match="beyond its launch's program"):
        line.written_back(judged)
