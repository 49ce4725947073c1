"""`h3doctor explain`: sglang's own words (bare, in a traceback, in a whole log) -> the rule, how
it matched, the releases whose wording it is, the values captured; the launch -> check's
corrected command. Tested through the report's data (JSON), never Rich's rendering."""

from __future__ import annotations

import json
import shlex
import struct
import sys
from dataclasses import replace
from pathlib import Path

import pytest

from h3doctor.engine.check import check
from h3doctor.engine.ruleset import load_rules
from h3doctor.explain import patterns, source
from h3doctor.explain.report import ExplainRequest, first_things_first, run
from h3doctor.host.profiles import load_profile
from h3doctor.paths import package_dir
from h3doctor.sglang import releases
from h3doctor.sglang.flagtable import load_flag_table
from repo_paths import REPO

ROOT = REPO
sys.path.insert(0, str(ROOT / "tools" / "conformance"))

import compare  # noqa: E402

RULES = load_rules()
BY_ID = {r.id: r for r in RULES}
PATTERNS = patterns.compiled(RULES)
CORPUS_FLOOR = 98.0  # percent of the goldens' error lines explain names the rule check reports for


def explain(text: str, *launch: str, **options) -> dict:
    return run(ExplainRequest(source.from_argument(text), list(launch), rules=RULES, **options)).as_dict()


def named(data: dict) -> set[str]:
    return {m["rule"] for m in data["matches"]}


def traceback_of(exc: str, message: str) -> str:
    """A chained traceback as Python prints it, sglang's exception first."""
    return (f"Traceback (most recent call last):\n"
            f'  File "/opt/venv/lib/python3.12/site-packages/sglang/cli/serve.py", line 42, in serve\n'
            f"    server_args = ServerArgs.from_cli_args(args)\n"
            f"{exc}: {message}\n\nDuring handling of the above exception, another exception occurred:\n\n"
            f"Traceback (most recent call last):\n"
            f'  File "/opt/venv/bin/sglang", line 8, in <module>\n    sys.exit(main())\n'
            f"RuntimeError: launch failed\n")


def log_of(body: str) -> str:
    """A server log around `body`: sglang's timestamps with a rank suffix and colours, CRLF, tqdm
    redraws, another process's lines interleaved."""
    lines = ["\x1b[32m[12-01 23:41:15] Starting MiniMax-H3 server\x1b[0;0m",
             "Loading required modules:  10%|#         | 1/10 [00:01<00:09]\rLoading required modules: 100%|##########| 10/10",
             "(SchedulerProcess pid=4242) [12-01 23:41:16 TP1] waiting for TP0"]
    lines += [f"\x1b[91m[12-01 23:41:17 TP0] {line}\x1b[0;0m" if line else "" for line in body.splitlines()]
    lines += ["[12-01 23:41:18 TP1] Worker 1: Shutdown complete."]
    return "\r\n".join(lines) + "\r\n"


def _exception_form(pattern: patterns.Pattern, rendered: str) -> tuple[str, str]:
    exc_type, message = patterns.normalise(rendered)
    return pattern.exc_type or exc_type or "ValueError", message


# --- every rule's message, as sglang renders it, for each release that prints it -----------------

MESSAGE_CASES = [(p.rule, p) for p in PATTERNS]


def test_every_rule_with_sglang_words_has_a_pattern():
    """A rule sglang has words for is matched by its message or by a wording; the others are listed
    as h3doctor's own words, so none is silently never named."""
    with_pattern = {p.rule for p in PATTERNS}
    missing = [r.id for r in RULES if r.id not in with_pattern and not patterns.own_words(r.id)]
    assert missing == []
    assert len(with_pattern) > 150
    own = patterns.wordings()["own"]
    assert all(rule in BY_ID for rule in own) and not with_pattern & set(own)


def test_wordings_name_rules_that_exist_and_fill_their_whole_message():
    for rule_id in patterns.wordings()["wordings"]:
        assert rule_id in BY_ID, rule_id


@pytest.mark.parametrize("rule_id,pattern", MESSAGE_CASES, ids=[f"{r}::{i}" for i, (r, _) in enumerate(MESSAGE_CASES)])
def test_message_rendered_with_typed_values_is_matched_bare_in_a_traceback_and_in_a_log(rule_id, pattern):
    rendered = pattern.sample()
    if rule_id == "H3D140":  # its words are also a busy port's (causes.json port-moved): only a port past 65535 is it
        rendered = rendered.replace("Port 4 ", "Port 70000 ", 1)
    if rule_id == "H3D012" and rendered.startswith("unrecognized arguments: "):  # only a flag of another release is it
        rendered = "unrecognized arguments: --server-warmup"
    exc, message = _exception_form(pattern, rendered)
    for form in (rendered, f"{exc}: {message}", traceback_of(exc, message), log_of(traceback_of(exc, message))):
        data = explain(form)
        hits = [m for m in data["matches"] if m["rule"] == rule_id]
        assert hits, (rule_id, form[:300], named(data))
        assert set(pattern.releases) <= set(hits[0]["releases"])
        assert hits[0]["how"] == pattern.source
    bare = [m for m in explain(rendered)["matches"] if m["rule"] == rule_id][0]
    assert bare["exact"] is True
    assert len(bare["captured"]) == len({n.rsplit(".", 1)[-1] for n, _ in pattern.holes})


def _failing_examples():
    for rule in RULES:
        if patterns.own_words(rule.id):
            continue
        for ex in rule.examples:
            if ex["expect"] == "fail":
                yield rule, ex


EXAMPLES = list(_failing_examples())


@pytest.mark.parametrize("rule,example", EXAMPLES, ids=[f"{r.id}::{e['name']}" for r, e in EXAMPLES])
def test_message_check_renders_for_the_rule_examples_is_matched(rule, example, tmp_path):
    """The message as check renders it from the example's real values (every release the examples
    judge) names the rule, bare and in a log, with the example's release among the wording's."""
    _, messages = example_messages(rule, example, tmp_path)
    assert messages, "the example no longer fails with its rule"
    release = releases.target(example.get("sglang_version"), None)
    for message in messages:
        for form in (message, log_of(message)):
            data = explain(form)
            hits = [m for m in data["matches"] if m["rule"] == rule.id]
            assert hits, (message[:300], named(data))
            assert release.table_version in hits[0]["releases"]


def example_messages(rule, example, tmp_path) -> tuple[list[str], list[str]]:
    """A failing example's launch (its config and checkpoint files written under tmp_path) and the
    rule's messages as check renders them from it."""
    argv = example["argv"]
    if "config" in example:
        from tests.engine.test_rule_examples import _serialize

        config = tmp_path / example.get("config_name", "config.yaml")
        config.write_text(_serialize(config.suffix, example["config"]))
        argv = argv.replace("{config}", str(config))
    if "checkpoint" in example:
        ckpt = tmp_path / "transformer.safetensors"
        header = json.dumps({"__metadata__": example["checkpoint"]}).encode()
        ckpt.write_bytes(struct.pack("<Q", len(header)) + header)
        argv = argv.replace("{checkpoint}", str(ckpt))
    release = releases.target(example.get("sglang_version"), None)
    hw = replace(load_profile(example["profile"]), **example.get("hw", {}))
    result = check(shlex.split(argv), hw, RULES, load_flag_table(release.table_version), example.get("env", {}),
                   example.get("intent", {}), release=release, deployment=example.get("deployment"))
    messages = [f.message for f in result.evaluation.findings if f.rule.id == rule.id and not f.cannot_verify]
    return shlex.split(argv), messages


# --- the conformance goldens: sglang's own error lines ----------------------------------------------

def _golden_errors(every: int = 1, versions=None):
    """(release, case, the rule check reports first) for the `sglang serve` goldens' errors."""
    for version in versions or releases.known_releases():
        path = compare.goldens_path(version)
        if not path.is_file():
            continue
        doctor = compare.Doctor(version)
        cases = [c for c in compare.read_jsonl(path)[1] if not c.get("ok") and not c.get("env") and c.get("msg")]
        for case in cases[::every]:
            outcome = doctor.run(case)
            if outcome.first is not None:
                yield version, case, outcome.first.rule.id, outcome.finding_ids


def _generate_errors():
    """The same for the `sglang generate` goldens: check's first finding at sglang's step."""
    import record_generate

    version = "0.5.23"
    doctor = record_generate.Doctor(version)
    for case in compare.read_jsonl(Path(str(record_generate.GOLDENS).format(version=version)))[1]:
        if "of" in case or case.get("ok") or not case.get("msg"):
            continue
        outcome = doctor.run(case)
        findings = outcome.launch if case.get("step") in (1, 2, 3) else outcome.sampling
        if findings:  # confirmed: the rules check reports at sglang's step, as for `serve`
            yield version, case, findings[0].rule.id, {f.rule.id for f in findings}


def test_goldens_error_lines_name_the_rule_check_reports(capsys):
    """Every error line sglang printed in the conformance goldens (`serve`, every release, and
    `generate`), as an exception line, names the rule check reports first for that case, and a rule
    check confirms comes first (both goldens); one in 25 also inside a log."""
    corpus = list(_golden_errors()) + list(_generate_errors())
    assert corpus, "no error line in the goldens: the denominator is empty"
    hits, misses, in_log, log_misses, not_first = 0, [], 0, [], []
    for i, (version, case, expected, confirmed) in enumerate(corpus):
        text = f"{case['exc']}: {case['msg']}" if case.get("exc") else case["msg"]
        matches = run(ExplainRequest(source.from_argument(text), [], rules=RULES)).matches
        if expected in {m.rule for m in matches}:
            hits += 1
        else:
            misses.append(f"{version} {case['id']}: {expected} <- {text[:160]!r}")
        # issue 31 item 5: with the launch checked (its findings are `confirmed`, as explain's own
        # check of the launch after `--` reports them), a rule the check confirms is named first
        if confirmed is not None and confirmed & {m.rule for m in matches}:
            first = first_things_first(list(matches), set(confirmed), version)[0].rule
            if first not in confirmed:
                not_first.append(f"{version} {case['id']}: {first} before {expected}")
        if i % 25 == 0:
            in_log += 1
            if expected not in named(explain(log_of(traceback_of(case.get("exc") or "ValueError", case["msg"])))):
                log_misses.append(case["id"])
    pct = 100.0 * hits / len(corpus)
    with capsys.disabled():
        print(f"\n[explain corpus] {hits}/{len(corpus)} golden error lines name check's rule ({pct:.1f}%); "
              f"in a log: {in_log - len(log_misses)}/{in_log}")
    assert hits * 100 >= CORPUS_FLOOR * len(corpus), "\n".join(misses[:40])
    assert not_first == [], not_first[:20]
    assert len(log_misses) * 100 <= (100 - CORPUS_FLOOR) * in_log, log_misses


def test_with_the_launch_the_corrected_command_is_checks():
    """explain's corrected command for the golden cases' launches is the one check proposes."""
    sample = list(_golden_errors(every=40, versions=["0.5.23", "0.5.19"]))
    assert len(sample) >= 20
    fixed = 0
    for version, case, expected_rule, _ in sample:
        argv = ["sglang", "serve", *case["argv"]]
        with compare.case_files(case.get("files")):
            data = explain(f"{case['exc']}: {case['msg']}", *argv, profile=case["profile"], sglang_version=version)
            expected = check(argv, load_profile(case["profile"]), RULES, load_flag_table(version), {},
                             release=releases.target(version, None))
        assert data["corrected_argv"] == expected.corrected_argv, case["id"]
        assert data["fix_status"] == expected.fix_status
        assert expected_rule in {m["rule"] for m in data["matches"] if m["confirmed"]}
        assert data["matches"][0]["confirmed"], case["id"]  # the confirmed rule first, end to end
        fixed += data["corrected_argv"] is not None
    assert fixed > 0


# --- logs: the launch they hold, out-of-memory errors --------------------------------------------------

def test_command_line_in_the_log_is_checked_and_corrected():
    log = log_of("$ sglang serve MiniMaxAI/MiniMax-H3 --num-gpus 4 --attention-backend sdpa\n"
                 + traceback_of("KeyError", "'SDPA'"))
    data = explain(log, profile="4xH200")
    assert data["launch"]["source"] == "command line"
    expected = check(shlex.split("sglang serve MiniMaxAI/MiniMax-H3 --num-gpus 4 --attention-backend sdpa"),
                     load_profile("4xH200"), RULES, load_flag_table(), {})
    assert data["corrected_argv"] == expected.corrected_argv
    assert data["corrected_argv"][-2:] == ["--attention-backend", "torch_sdpa"]
    [hit] = [m for m in data["matches"] if m["rule"] == "H3D304"]
    assert hit["captured"] == {"transformer_backend_upper": "SDPA"} and hit["confirmed"] is True


def test_server_args_line_is_rebuilt_into_the_launch():
    args = {"model_path": "MiniMaxAI/MiniMax-H3", "num_gpus": 4, "tp_size": 3, "attention_backend": None,
            "enable_torch_compile": False, "prompt": "<redacted, len=3>"}
    log = log_of(f"server_args: {json.dumps(args)}\n" + traceback_of(
        "ValueError", "num_gpus (4) must be divisible by (dp_size * tp_size) = 3"))
    data = explain(log, profile="4xH200")
    assert data["launch"]["source"] == "server_args"
    assert data["launch"]["argv"] == ["sglang", "serve", "MiniMaxAI/MiniMax-H3", "--num-gpus", "4", "--tp-size", "3"]
    assert "H3D227" in named(data) and data["corrected_argv"] is not None
    assert any("server_args" in note for note in data["notes"])


@pytest.mark.parametrize("body,phase,rules", [
    ("Loading required modules:  40%\n" + traceback_of("torch.OutOfMemoryError",
     "CUDA out of memory. Tried to allocate 2.00 GiB. GPU 0 has a total capacity of 79.11 GiB of which 1.06 GiB is free."),
     "load", ["H3D540"]),
    ("Warmup requests: 0/1 t2va 1344x768\n" + traceback_of("torch.OutOfMemoryError", "CUDA out of memory. Tried to allocate 8.00 GiB."),
     "warmup", ["H3D640", "H3D642"]),
    ("Warmup requests: 0/1 t2va\nError executing request warmup-0: CUDA out of memory. Tried to allocate 1.00 GiB.",
     "warmup", ["H3D640", "H3D642"]),
    ("The server is fired up and ready to roll!\nError executing request abc: CUDA out of memory. Tried to allocate 1.00 GiB.\n"
     "\nOOM detected. Possible solutions:\n  - If the OOM occurs during loading, or on the first request\n"
     "  Or, open an issue on GitHub https://github.com/sgl-project/sglang/issues/new/choose\n",
     "request", ["H3D640", "H3D641"]),
    ("RuntimeError: MPS backend out of memory (MPS allocated: 17.00 GB, other allocations: 1.00 GB, max allowed: 18.13 GB). "
     "Tried to allocate 256.00 MB on private pool.", None, ["H3D540", "H3D640"]),
])
def test_out_of_memory_maps_to_the_memory_rules_by_phase(body, phase, rules):
    data = explain(log_of(body) if phase else body)  # log_of's own lines say "Loading"
    oom = [m for m in data["matches"] if m["how"] == "oom"]
    assert [m["rule"] for m in oom] == rules
    assert oom[0]["captured"]["phase"] == (phase or "unknown")
    assert oom[0]["exact"] is False


def test_oom_capture_reads_torchs_figures():
    data = explain("torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB. GPU 3 has a total "
                   "capacity of 79.11 GiB of which 1.06 GiB is free.")
    captured = data["matches"][0]["captured"]
    assert captured["tried_to_allocate"] == "2.00 GiB" and captured["gpu"] == "3" and captured["free"] == "1.06 GiB"


def test_sglangs_oom_block_alone_is_not_a_phase():
    """The block names every phase; its words never decide one."""
    data = explain("OOM detected. Possible solutions:\n  - If the OOM occurs during loading, or on the first request\n"
                   "  - If the OOM occurs during runtime:\n    1. Reduce resolution\n")
    assert {m["captured"]["phase"] for m in data["matches"]} == {"unknown"}


# --- reading: normalising, bounds, nothing matched -------------------------------------------------------

def test_argparse_usage_error_and_rank_prefixes():
    text = ("[rank0]: usage: sglang serve [-h] [--model-path MODEL_PATH]\n"
            "[rank0]: sglang serve: error: argument --warmup-mode: invalid choice: 'x' (choose from 'server', 'request', 'off')\n")
    [hit] = [m for m in explain(text)["matches"] if m["rule"] == "H3D010"]
    assert hit["exact"] and hit["captured"]["flag"] == "--warmup-mode" and hit["captured"]["value"] == "'x'"


def test_words_several_rules_print_are_named_for_each_and_the_launch_tells_them_apart():
    text = "sglang serve: error: unrecognized arguments: --component-residency transformer=resident"
    alone = explain(text)
    assert {"H3D012", "H3D020"} <= named(alone) and any("several rules" in n for n in alone["notes"])
    launch = ["sglang", "serve", "MiniMaxAI/MiniMax-H3", "--num-gpus", "4", "--component-residency", "transformer=resident"]
    told = explain(text, *launch, profile="4xH200", sglang_version="0.5.17")
    confirmed = {m["rule"] for m in told["matches"] if m["confirmed"]}
    assert confirmed == {"H3D012"}


def test_repeated_lines_are_one_match_with_a_count():
    line = "ValueError: MPS currently supports only --num-gpus 1"
    data = explain("\n".join(f"[12-01 23:41:1{i} TP{i}] {line}" for i in range(4)))
    [hit] = data["matches"]
    assert hit["rule"] == "H3D117" and hit["count"] == 4 and hit["line"] == 1


def test_nothing_matched_is_said_and_exits_1(cli):
    code, out, _ = cli("explain", "RuntimeError: NCCL error in: ProcessGroupNCCL.cpp:1970, unhandled cuda error", "--format", "json")
    assert code == 1 and out["explained"] is False and out["matches"] == []
    assert out["unmatched"][0]["text"].startswith("RuntimeError: NCCL error")


def test_release_is_inferred_from_wording_only_some_releases_print():
    old = [p for p in PATTERNS if p.rule == "H3D116" and "only supported for flash attention" in p.text]
    assert old, "H3D116's older wording is gone from the rule"
    data = explain("ValueError: " + old[0].sample())
    assert data["release"]["inferred"] is True
    assert data["release"]["version"] == max(old[0].releases, key=releases.key)
    assert data["release"]["version"] != releases.known_releases()[-1]


def test_hostile_input_is_bounded_and_never_crashes(tmp_path, cli):
    big = tmp_path / "big.log"
    with open(big, "wb") as fh:
        fh.write(b"$ sglang serve MiniMaxAI/MiniMax-H3 --num-gpus 4\n")
        fh.write((b"x" * 1023 + b"\n") * (17 * 1024))
        fh.write(b"\xff\xfe ValueError: MPS currently supports only --num-gpus 1\n")
        fh.write(b"ValueError: MPS currently supports only --num-gpus 1\n")
    code, out, err = cli("explain", "--log", str(big), "--format", "json", "--profile", "4xH200")
    assert code == 0, err
    assert any("larger than 16 MiB" in n for n in out["input"]["notes"])
    assert "H3D117" in named(out) and out["launch"]["source"] == "command line"
    for args in (["--log", str(tmp_path)], ["--log", str(tmp_path / "missing.log")], []):
        code, _, err = cli("explain", *args, json_output=False)
        assert code == 2 and "Traceback" not in err and err.startswith("error:")
    data = explain("\x00\x1b]0;title\x07\x1b[2J" + "A" * 70000 + "Error: " + "(" * 5000)
    assert data["explained"] is False
    import subprocess

    proc = subprocess.run([sys.executable, "-m", "h3doctor", "explain", "-", "--format", "json"], timeout=60,
                          input=b"\x00\xff\x1b[31mValueError: MPS currently supports only --num-gpus 1\x1b[0m\r\n",
                          capture_output=True)
    assert proc.returncode == 0 and "H3D117" in named(json.loads(proc.stdout))


def test_text_report_prints_checks_corrected_command(cli):
    code, out, _ = cli("explain", "--profile", "4xH200", "ValueError: num_gpus (1) must be divisible by (dp_size * tp_size) = 2",
                       "--", "sglang", "serve", "MiniMaxAI/MiniMax-H3", "--tp-size", "2", json_output=False)
    code2, data, _ = cli("check", "--profile", "4xH200", "--", "sglang", "serve", "MiniMaxAI/MiniMax-H3", "--tp-size", "2")
    assert code == 0
    assert out.splitlines()[-1] == data["corrected_command"]


def test_json_report_follows_its_schema(cli):
    from jsonschema import Draft202012Validator

    schema = json.loads(package_dir("h3doctor.schema").joinpath("explain.schema.json").read_text())
    code, printed, _ = cli("schema", "explain", json_output=False)
    assert code == 0 and json.loads(printed) == schema
    validator = Draft202012Validator(schema)
    for data in (explain("KeyError: 'SDPA'", "sglang", "serve", "MiniMaxAI/MiniMax-H3", "--attention-backend", "sdpa",
                         profile="4xH200"),
                 explain("torch.OutOfMemoryError: CUDA out of memory."), explain("nothing to see")):
        errors = sorted(validator.iter_errors(json.loads(json.dumps(data))), key=str)
        assert not errors, errors[0]


def test_an_oom_of_unknown_phase_is_read_as_the_memory_rule_the_check_reports():
    """An out-of-memory line that does not say its phase, with a launch whose check reports H3D641
    (it fits at load, not at its request's peak): explain names H3D641, confirmed, not the load-or-
    request guess (H3D540, H3D640) the check contradicts; without a launch the guess stays."""
    oom = "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB."
    launch = ["sglang", "serve", "MiniMaxAI/MiniMax-H3"]
    report = explain(oom, *launch, profile="1xH200", intent={"resolution": "1344x768", "seconds": 12.0})
    assert [(m["rule"], m["confirmed"]) for m in report["matches"]] == [("H3D641", True)]
    assert [m["rule"] for m in explain(oom)["matches"]] == ["H3D540", "H3D640"]
