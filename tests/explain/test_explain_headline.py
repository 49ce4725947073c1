"""explain says the check of the launch in check's own first line (output/verdict.summary): the
same verdict and words as `check` on that launch — "likely to fail" for a warning that predicts an
OOM, never "no error" beside it — in its JSON (`check_summary`, schema-valid) and its text."""

from __future__ import annotations

import io
import json
import shlex

from jsonschema import Draft202012Validator

from h3doctor.engine.check import check
from h3doctor.explain import source
from h3doctor.explain.report import ExplainRequest, run
from h3doctor.host.profiles import load_profile
from h3doctor.output.explain_text import explain_report
from h3doctor.output.json_report import build
from h3doctor.output.markup import PlainConsole
from h3doctor.paths import package_dir

LAUNCH = "sglang serve MiniMaxAI/MiniMax-H3"
OOM = ("torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB. GPU 0 has a total capacity of "
       "11.6 GiB of which 0.5 GiB is free.")


def test_explain_gives_the_checks_own_headline(rules, table):
    report = run(ExplainRequest(source.from_argument(OOM), shlex.split(LAUNCH), profile="1xRTX4070", rules=rules))
    data = report.as_dict()
    schema = json.loads(package_dir("h3doctor.schema").joinpath("explain.schema.json").read_text())
    Draft202012Validator(schema).validate(data)
    checked = build(check(shlex.split(LAUNCH), load_profile("1xRTX4070"), rules, table, {}))["summary"]
    assert data["check_summary"] == {"verdict": checked["verdict"], "text": checked["text"]}
    assert data["check_summary"]["verdict"] == "likely-fail"
    buf = io.StringIO()
    explain_report(report, PlainConsole(buf, None), buf)
    line = next(ln for ln in buf.getvalue().splitlines() if "check on this launch" in ln)
    assert line == f"! check on this launch: {checked['text']}; found H3D641 (fix status: no-fix)"


def test_without_a_launch_there_is_no_headline(rules):
    data = run(ExplainRequest(source.from_argument("KeyError: 'SDPA'"), [], rules=rules)).as_dict()
    assert data["check_summary"] is None
