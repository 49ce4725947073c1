"""Input others wrote, at hostile sizes and with hostile characters: the cost stays linear in the
input, every echoed value is an excerpt, and what is shown is safe to show (the corrected command
shown is the one that runs, byte for byte). No timings here: benchmarks/hostile.py measures them;
these tests assert the properties that keep them small (call counts, sizes, shared strings)."""

from __future__ import annotations

import json
import os
import random
import shlex
import shutil
import subprocess
import sys
from importlib import resources

import pytest
from jsonschema import Draft202012Validator

from h3doctor.engine import fixes
from h3doctor.engine.check import check
from h3doctor.engine.fixes import Edit, apply_edits
from h3doctor.host.profiles import load_profile
from h3doctor.output import json_report
from h3doctor.sglang import argv as sg_argv
from h3doctor.sglang.argv import parse_command
from h3doctor.shellwords import join, quote, safe_text

LAUNCH = ["sglang", "serve", "MiniMaxAI/MiniMax-H3", "--num-gpus", "4"]


def bogus(n: int) -> list[str]:
    return [w for i in range(n) for w in (f"--bogus{i}", "x")]


def _env() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("SGLANG_")}
    env.update({"NO_COLOR": "1", "COLUMNS": "200"})
    return env


def run_cli(*args, text: bool = True):
    """The real entry point; args may be bytes (an argument that is not UTF-8)."""
    proc = subprocess.run([os.fsencode(sys.executable), b"-m", b"h3doctor", *map(os.fsencode, args)],
                          capture_output=True, env=_env(), timeout=120)
    return proc.returncode, (proc.stdout.decode("utf-8", "surrogateescape") if text else proc.stdout), proc.stderr


# --- 10: unknown flags cost linear time -------------------------------------------------------

def test_did_you_mean_is_bounded_whatever_the_number_of_unknown_flags(table, monkeypatch):
    import difflib

    calls = []
    real = difflib.get_close_matches
    monkeypatch.setattr(difflib, "get_close_matches", lambda *a, **k: calls.append(a[0]) or real(*a, **k))
    counts = {}
    for n in (500, 4000):
        calls.clear()
        cmd = parse_command(LAUNCH + bogus(n) + ["--bogus0", "y"], table)
        counts[n] = len(calls)
        unrecognized = [p for p in cmd.problems if p.kind == "unrecognized"]
        assert len(unrecognized) == n + 1
        # one message shared by every group, cut to an excerpt of sglang's own text
        assert len({id(p.message) for p in unrecognized}) == 1
        message = unrecognized[0].message
        assert message.startswith("error: unrecognized arguments: --bogus0 x --bogus1 x")
        assert len(message) <= sg_argv.ECHO_LIMIT + 80 and message.endswith("more words)")
    assert counts[500] == counts[4000] == sg_argv.SUGGEST_LIMIT  # distinct words, the first 64 only
    assert len(set(calls)) == len(calls)  # memoised: the repeated --bogus0 is not searched again


def test_a_short_unrecognized_message_is_sglangs_text_in_full(table):
    cmd = parse_command(LAUNCH + ["--attention_backend", "fa", "--bogus"], table)
    messages = {p.message for p in cmd.problems if p.kind == "unrecognized"}
    assert messages == {"error: unrecognized arguments: --attention_backend fa --bogus"}
    hints = [p.suggestion for p in cmd.problems if p.kind == "unrecognized"]
    assert hints == ["--attention-backend", None]


def test_the_typo_spelling_is_still_offered_past_the_fuzzy_limit(table):
    cmd = parse_command(LAUNCH + bogus(sg_argv.SUGGEST_LIMIT + 10) + ["--attention_backend", "fa"], table)
    last = [p for p in cmd.problems if p.kind == "unrecognized"][-1]
    assert last.option == "--attention_backend" and last.suggestion == "--attention-backend"


def test_thousands_of_unknown_flags_get_the_launch_without_them(rules, table):
    result = check(LAUNCH + bogus(4000), load_profile("4xH200"), rules, table, {})
    assert result.corrected_argv == LAUNCH
    [finding] = [f for f in result.evaluation.findings if f.rule.id == "H3D020"]
    report = json_report.build(result)
    free_text = [f["message"] for f in report["findings"]] + [c for f in report["findings"] for c in f["changes"]]
    free_text += [c["text"] for s in report["fix_steps"] for c in s["changes"]]
    assert max(map(len, free_text)) < 1000, "a free-text field echoes the whole command"
    # the data stays exact: the words the fix removed, all of them
    [step] = report["fix_steps"]
    assert [w for c in step["changes"] for w in c["removed"]] == bogus(4000)


def _overlaps(a: Edit, b: Edit) -> bool:
    """The clash rule apply_edits documents, pairwise (the reference for the interval structure)."""
    if a.start == a.end and b.start == b.end:
        return a.start == b.start
    if a.start == a.end:
        return b.start < a.start < b.end
    if b.start == b.end:
        return a.start < b.start < a.end
    return a.start < b.end and b.start < a.end


def _reference(cmd, edits):
    chosen = []
    for e in edits:
        if e.start >= 0 and not any(_overlaps(e, c) for c in chosen):
            chosen.append(e)
    args = list(cmd.args)
    for e in sorted(chosen, key=lambda e: (e.start, e.end), reverse=True):
        args[e.start:e.end] = e.tokens
    return args


def test_the_fix_loops_clash_test_keeps_the_first_edit_like_the_pairwise_rule(table):
    cmd = parse_command(LAUNCH + bogus(20), table)
    n = len(cmd.args)
    rng = random.Random(18)
    for _ in range(3000):
        edits = []
        for k in range(rng.randint(1, 12)):
            start = rng.randint(0, n)
            end = start if rng.random() < 0.3 else rng.randint(start, n)
            edits.append(Edit(start, end, [f"T{k}"] * rng.randint(0, 2)))
        got = apply_edits(cmd, edits)
        assert got[cmd.prefix_len:] == _reference(cmd, edits), [(e.start, e.end) for e in edits]


def test_the_clash_test_does_logarithmic_work_per_edit(table, monkeypatch):
    """Every edit is looked at once against a sorted structure, never against every other edit."""
    looked = []
    real = fixes.bisect.bisect_left
    monkeypatch.setattr(fixes.bisect, "bisect_left", lambda *a, **k: looked.append(1) or real(*a, **k))
    for n in (1000, 8000):
        cmd = parse_command(LAUNCH + bogus(n), table)
        looked.clear()
        apply_edits(cmd, [Edit(i, i + 2, []) for i in range(len(cmd.args) - 2 * n, len(cmd.args), 2)])
        assert len(looked) <= 2 * n


def test_a_large_shell_script_in_lint_is_one_launch_corrected(tmp_path):
    script = tmp_path / "launch.sh"
    script.write_text("#!/bin/bash\n" + " ".join(LAUNCH + bogus(3000)) + "\n", encoding="utf-8")  # ~60 KB
    code, out, _ = run_cli("lint", "--format", "json", "--target", "4xH200", str(script))
    report = json.loads(out)
    [launch] = report["files"][0]["launches"]
    assert {r["corrected_command"] for r in launch["results"]} == {join(LAUNCH)}
    assert max(len(f["message"]) for f in report["findings"]) < 1000


def test_a_launch_past_the_word_budget_is_refused_where_it_is_written(tmp_path):
    from h3doctor.sglang.launch_forms import MAX_LAUNCH_WORDS

    over = bogus(MAX_LAUNCH_WORDS // 2)  # with the launch's own words: past the budget
    code, out, err = run_cli("check", "--profile", "4xH200", "--", *LAUNCH, *over)
    assert code == 2 and f"{len(LAUNCH) + len(over):,} words" in err.decode(), err
    recipe = tmp_path / "r.yaml"
    recipe.write_text("targets: [4xH200]\ncommand: " + " ".join(LAUNCH + over) + "\n", encoding="utf-8")
    code, out, err = run_cli("check", "--recipe", str(recipe))
    assert code == 2 and f"{recipe}:2:10: command: the launch has" in err.decode(), err
    script = tmp_path / "s"
    script.mkdir()
    (script / "launch.sh").write_text("#!/bin/bash\n" + " ".join(LAUNCH + over) + "\n", encoding="utf-8")
    code, out, _ = run_cli("lint", "--format", "json", "--target", "4xH200", str(script))
    findings = json.loads(out)["findings"]
    assert code == 1 and [(f["line"], f["severity"]) for f in findings] == [(2, "error")], findings
    assert "words, more than the" in findings[0]["message"]
    # at the budget a launch is judged: the unknown flags are found, not refused
    within = bogus((MAX_LAUNCH_WORDS - len(LAUNCH)) // 2)
    code, out, err = run_cli("check", "--format", "json", "--profile", "4xH200", "--", *LAUNCH, *within)
    assert code == 1 and any(f["rule"] == "H3D020" for f in json.loads(out)["findings"]), err


def test_plain_and_quoted_commands_split_alike_as_shlex_says():
    """A command of plain words is split in one regex pass, any other by the scanner: both give
    shlex's words, and each word's offsets are where it stands in the text."""
    import shlex

    from h3doctor.shellsplit import shell_words

    rng = random.Random(10)
    alphabet = "ab-=/.,:@%+_~^*?!{}[]#é\f \t"
    for n in range(400):
        plain = "".join(rng.choice(alphabet) for _ in range(rng.randint(0, 40))).replace("#", "x#") \
            if n % 2 else " ".join(LAUNCH + bogus(rng.randint(0, 5)))
        for text in (plain, plain + " 'q u'"):
            words = shell_words(text)
            assert [w for w, _s, _e in words] == shlex.split(text, comments=False), text
            assert all(text[s:e] == w for w, s, e in words if "'" not in text[s:e]), text


# --- 11: big env, many keys, a big --config ---------------------------------------------------

def test_a_recipe_with_many_env_entries_or_keys_is_judged_with_a_short_message(tmp_path):
    entries = "".join(f"  VAR_{i}: v{i}\n" for i in range(20_000))
    recipe = tmp_path / "env.yaml"
    recipe.write_text(f"targets: [4xH200]\ncommand: {' '.join(LAUNCH)}\nenv:\n{entries}", encoding="utf-8")
    code, out, err = run_cli("check", "--format", "json", "--recipe", str(recipe))
    assert code in (0, 1, 2) and "Traceback" not in err.decode()
    if code != 2:
        assert json.loads(out)["command"]["argv"][-len(LAUNCH):] == LAUNCH
    keys = "".join(f"key_{i}: {i}\n" for i in range(20_000))
    recipe.write_text(f"targets: [4xH200]\ncommand: {' '.join(LAUNCH)}\n{keys}", encoding="utf-8")
    code, out, err = run_cli("check", "--format", "json", "--recipe", str(recipe))
    assert code == 2 and "Traceback" not in err.decode() and len(err) < 2000, err[:300]


def test_a_config_of_many_keys_is_read_once_and_judged(tmp_path):
    config = tmp_path / "big.json"
    config.write_text(json.dumps({f"k{i}": i for i in range(50_000)} | {"num_gpus": 4}), encoding="utf-8")
    code, out, err = run_cli("check", "--format", "json", "--profile", "4xH200", "--",
                             *LAUNCH[:3], "--config", str(config))
    data = json.loads(out)
    assert "Traceback" not in err.decode() and data["effective_config"]["num_gpus"] == 4
    assert len(out) < 200_000, "the report echoes the file's keys"


# --- 12: control characters and undecodable bytes ----------------------------------------------

HOSTILE = ["\r\x1b[2K", "bell\a", "tab\there", "new\nline", "it's", "\u202egnp.exe", "back\\slash", "", "\x7f"]


@pytest.mark.parametrize("word", HOSTILE)
def test_quote_round_trips_through_bash_and_zsh(word, tmp_path):
    words = ["printf", "%s\\0", word, "--x=" + word, b"raw\xff\xfe".decode("utf-8", "surrogateescape")]
    line = join(words)
    assert line.isprintable() and "\x1b" not in line and "\r" not in line
    expected = b"".join(os.fsencode(w) + b"\0" for w in words[2:])
    for shell in ("bash", "zsh"):
        if shutil.which(shell) is None:
            continue
        got = subprocess.run([shell, "-c", line], capture_output=True, timeout=30).stdout
        assert got == expected, (shell, line)


def test_plain_words_are_quoted_as_shlex_quotes_them():
    import shlex

    for word in ("abc", "a b", "it's", "--x=1", "é", "", "a*b", "$HOME"):
        assert quote(word) == shlex.quote(word)
        assert shlex.split(quote(word)) == [word]


def test_safe_text_makes_control_characters_inert_and_cuts():
    assert safe_text("a\x1b[2Kb\rc\udcff\u202e") == "a\\e[2Kb\\rc\\xff\\u202e"
    assert safe_text("plain text") == "plain text"
    cut = safe_text("x" * 5000, 100)
    assert cut.startswith("x" * 100) and cut.endswith("(4900 more characters)")


def test_the_corrected_command_shown_is_the_one_that_runs(tmp_path):
    model = b"MiniMaxAI/MiniMax-H3"
    hostile_flag = b"--bogus\r\x1b[2K"
    argv = [b"sglang", b"serve", model, b"--num-gpus", b"4", b"--attention-backend", b"fa",
            b"--lora-path", b"/w/lo\xffra\x1b[31m", hostile_flag, b"v\x1b]0;title\x07"]
    code, out, _ = run_cli("check", "--profile", "4xH200", "--", *argv)
    assert "\x1b" not in out and "\r" not in out and "\x07" not in out
    assert "\\e[2K" in out  # the unknown flag is named, escaped, in "sglang says"
    lines = out.splitlines()
    shown = lines[lines.index(next(l for l in lines if l.startswith("Corrected command"))) + 1]
    code, data, _ = run_cli("check", "--format", "json", "--profile", "4xH200", "--", *argv)
    data = json.loads(data)
    assert shown == data["corrected_command"]
    expected = [os.fsencode(w) for w in data["corrected_argv"]]
    assert expected[-1] == b"/w/lo\xffra\x1b[31m" and hostile_flag not in expected
    got = subprocess.run(["bash", "-c", "printf '%s\\0' " + shown], capture_output=True, timeout=30).stdout
    assert got.split(b"\0")[:-1] == expected


def test_lint_text_and_github_lines_escape_what_the_file_holds(tmp_path):
    recipe = tmp_path / "evil\x1b[2K.yaml"  # a file name and (YAML's \\e) a flag holding ESC
    recipe.write_text('targets: [4xH200]\ncommand: "sglang serve MiniMaxAI/MiniMax-H3 --num-gpus 4 --bogus\\e[31m"\n',
                      encoding="utf-8")
    for fmt in ("text", "github"):
        code, out, _ = run_cli("lint", "--format", fmt, "--target", "4xH200", str(tmp_path))
        assert code == 1 and "\x1b" not in out, (fmt, out)
        assert "evil\\e[2K.yaml" in out and "--bogus\\e[31m" in out, out


# --- 13: every echoed value is an excerpt --------------------------------------------------------

def test_a_huge_config_value_gives_a_small_report(tmp_path):
    config = tmp_path / "c.json"
    config.write_text(json.dumps({"num_gpus": "4" + " " * 3_000_000}), encoding="utf-8")
    code, out, _ = run_cli("check", "--format", "json", "--profile", "4xH200", "--", *LAUNCH[:3], "--config", str(config))
    data = json.loads(out)
    assert [f["rule"] for f in data["findings"]] == ["H3D951"]
    assert len(out) < 50_000, f"{len(out)} characters of JSON for one finding"
    code, text, _ = run_cli("check", "--profile", "4xH200", "--", *LAUNCH[:3], "--config", str(config))
    assert len(text) < 20_000


# --- the report schema says exactly what the writer writes ----------------------------------------

def _schema():
    return json.loads(resources.files("h3doctor.schema").joinpath("report.schema.json").read_text())


def _reports(rules, table):
    launches = [
        (LAUNCH + ["--attention-backend", "fa"], "4xH200"),
        (LAUNCH + ["--ring-degree", "2", "--attention-backend", "sage_attn"], "4xH200"),
        (LAUNCH[:3] + ["--model-variant", "hybrid", "--num-gpus", "4"], "4xH200"),
        (["sglang", "serve", "MiniMaxAI/MiniMax-H3"], "m3-max"),
        (["sglang", "serve", "black-forest-labs/FLUX.1-dev"], "cpu"),
        (["env", "A=1", "sglang", "serve", "MiniMaxAI/MiniMax-H3", "--bogus"], "4xH200"),
    ]
    for rule in rules:
        for example in rule.examples:
            if "{" not in example["argv"] and example.get("profile"):
                launches.append((shlex.split(example["argv"]), example["profile"]))
    for argv, profile in launches:
        # through JSON, as the CLI writes it (tuples become arrays)
        yield json.loads(json.dumps(json_report.build(check(argv, load_profile(profile), rules, table, {})), default=str))


def test_real_reports_validate_and_write_every_declared_field(rules, table):
    schema = _schema()
    validator = Draft202012Validator(schema)
    finding = schema["properties"]["findings"]["items"]
    command = schema["properties"]["command"]
    n = 0
    for report in _reports(rules, table):
        n += 1
        assert [e.message for e in validator.iter_errors(report)] == []
        assert set(report) == set(schema["required"]) == set(schema["properties"])
        assert set(report["command"]) == set(command["required"])
        for f in report["findings"]:
            assert set(f) == set(finding["required"])
    assert n > 100


def test_the_schema_rejects_a_report_without_an_always_written_field(rules, table):
    validator = Draft202012Validator(_schema())
    report = next(r for r in _reports(rules, table) if r["findings"])
    for path in (("sglang_version_source",), ("command", "launcher"), ("command", "wrapper"),
                 ("findings", 0, "changes"), ("findings", 0, "catalog_refs"), ("findings", 0, "detail"),
                 ("effective_config", "memory")):
        broken = json.loads(json.dumps(report))
        node = broken
        for key in path[:-1]:
            node = node[key]
        del node[path[-1]]
        assert list(validator.iter_errors(broken)), f"the schema accepts a report without {'.'.join(map(str, path))}"
