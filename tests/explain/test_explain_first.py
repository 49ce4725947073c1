"""issue 31 item 5, explain first things first: the confirmed rule first; H3D012 only for a flag
of another release; `sglang generate` logs rebuilt as generate; the release placed from what the
log names (a version line, an image tag, an install path), the span said when it cannot be
narrowed. (The corpus over the conformance goldens is tests/explain/test_explain.py's.)"""

from __future__ import annotations

import json

from h3doctor.engine.ruleset import load_rules
from h3doctor.explain import source
from h3doctor.explain.report import ExplainRequest, run

RULES = load_rules()
LAUNCH = ["sglang", "serve", "MiniMaxAI/MiniMax-H3", "--num-gpus", "4"]


def explain(text: str, *launch: str, **options) -> dict:
    return run(ExplainRequest(source.from_argument(text), list(launch), rules=RULES, profile="4xH200",
                              **options)).as_dict()


def rules_of(data: dict) -> list[str]:
    return [m["rule"] for m in data["matches"]]


def test_a_flag_no_release_has_is_h3d020_alone():
    assert rules_of(explain("error: unrecognized arguments: --not-a-flag-anywhere")) == ["H3D020"]


def test_a_flag_of_another_release_keeps_h3d012():
    data = explain("error: unrecognized arguments: --server-warmup", sglang_version="0.5.23")  # 0.5.16-0.5.17 only
    assert "H3D012" in rules_of(data)


def test_with_the_launch_the_rule_its_check_reports_comes_first():
    data = explain("error: unrecognized arguments: --server-warmup", *LAUNCH, "--server-warmup")
    assert data["matches"][0]["confirmed"] is True
    typo = explain("error: unrecognized arguments: --num-gpuss 4", *LAUNCH[:3], "--num-gpuss", "4")
    assert rules_of(typo)[0] == "H3D020" and "H3D012" not in rules_of(typo)


def _server_args_log(*frames: str) -> str:
    args = {"model_path": "MiniMaxAI/MiniMax-H3", "num_gpus": 4, "tp_size": 3}
    return "\n".join([f"[12-01 23:41:15] server_args: {json.dumps(args)}", "Traceback (most recent call last):", *frames,
                      "ValueError: num_gpus (4) must be divisible by (dp_size * tp_size) = 3"])


def test_a_generate_log_is_rebuilt_as_generate_and_a_serve_log_as_serve():
    generate = explain(_server_args_log(
        '  File "/opt/venv/lib/python3.12/site-packages/sglang/multimodal_gen/runtime/entrypoints/cli/generate.py", '
        'line 88, in generate_cmd'))
    assert generate["launch"]["argv"][:4] == ["sglang", "generate", "--model-path", "MiniMaxAI/MiniMax-H3"]
    serve = explain(_server_args_log('  File "/opt/venv/lib/python3.12/site-packages/sglang/cli/serve.py", line 42'))
    assert serve["launch"]["argv"][:3] == ["sglang", "serve", "MiniMaxAI/MiniMax-H3"]


MESSAGE = "ValueError: num_gpus (4) must be divisible by (dp_size * tp_size) = 3"


def test_the_release_is_placed_from_an_install_path_an_image_tag_or_a_version_line():
    for line in ('  File "/usr/lib/python3/dist-packages/sglang-0.5.21.dist-info/RECORD"',
                 "$ docker run --gpus all lmsysorg/sglang:v0.5.21-cu129 sglang serve MiniMaxAI/MiniMax-H3",
                 "[2026-12-01 23:41:15] sglang version: 0.5.21"):
        release = explain(f"{line}\n{MESSAGE}")["release"]
        assert release["version"] == "0.5.21" and release["inferred"], line


def test_a_log_naming_two_releases_or_an_unknown_one_is_not_placed_by_them():
    assert explain(f"sglang-0.5.21.dist-info\nlmsysorg/sglang:v0.5.22\n{MESSAGE}")["release"]["version"] != "0.5.21"
    assert explain(f"sglang version: 9.9.9\n{MESSAGE}")["release"]["version"] is None


def test_the_span_is_said_when_the_release_cannot_be_narrowed():
    why = explain(MESSAGE)["release"]["why"]
    assert "0.5.17" in why and "0.5.23" in why and "--sglang-version" in why


def test_the_confirmed_rule_is_put_before_an_earlier_or_lower_numbered_one():
    from h3doctor.explain.match import Match
    from h3doctor.explain.report import first_things_first

    shared = [Match("H3D109", True, "message", ("0.5.23",), {}, 3, "x"), Match("H3D130", True, "message", ("0.5.23",), {}, 3, "x"),
              Match("H3D010", True, "wording", ("0.5.23",), {}, 1, "y")]
    assert [m.rule for m in first_things_first(list(shared), {"H3D130"}, "0.5.23")] == ["H3D130", "H3D010", "H3D109"]
