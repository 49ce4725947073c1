"""Boundary values on a default launch, judged as sglang 0.5.23 judges them: the first error a
flag at an edge value gets, in sglang's own words."""

from __future__ import annotations

import pytest

H = "sglang serve MiniMaxAI/MiniMax-H3"


def first(result):
    findings = [f for f in result.evaluation.findings if f.severity == "error"]
    return findings[0] if findings else None


@pytest.mark.parametrize(
    ("flag", "value", "message"),
    [
        ("--kv-cache-quant-sink", "3", "invalid choice: 3 (choose from 0, 1)"),
        ("--log-requests-level", "7", "invalid choice: 7 (choose from 0, 1, 2, 3)"),
        ("--log-requests-level", "-1", "invalid choice: -1 (choose from 0, 1, 2, 3)"),
    ],
)
def test_integer_choices_are_rendered_as_argparse_renders_them(run_check, flag, value, message):
    """argparse prints the converted value's repr and the choices' reprs: numbers, not strings."""
    found = first(run_check(f"{H} {flag} {value}"))
    assert found is not None
    assert found.message == f"error: argument {flag}: {message}"


def test_integer_choice_in_another_spelling_is_accepted(run_check):
    """`01` converts to 1, which is one of the choices: argparse accepts it."""
    assert first(run_check(f"{H} --log-requests-level 01")) is None


@pytest.mark.parametrize("flags", ["--base-gpu-id -1", "--base-gpu-id -1 --num-gpus 2", "--base-gpu-id -3 --performance-mode auto"])
def test_negative_base_gpu_id_fails_in_the_auto_tuner(run_check, flags):
    """The auto-tuner asks GPUs base_gpu_id.. for their free memory; torch refuses index -1."""
    result = run_check(f"{H} {flags}")
    found = first(result)
    assert (found.rule.id, found.message) == ("H3D109", "AssertionError: Invalid device id")
    assert "--base-gpu-id 0" in " ".join(result.corrected_argv)


def test_negative_base_gpu_id_fails_even_when_the_gpu_count_is_unknown(run_check, rules, table):
    from h3doctor.engine.check import check
    from h3doctor.facts import facts_from_mapping

    hw = facts_from_mapping({"platform": "cuda", "gpu_count": None}, "test")
    result = check(["sglang", "serve", "MiniMaxAI/MiniMax-H3", "--base-gpu-id", "-1"], hw, rules, table, {})
    assert "H3D109" in [f.rule.id for f in result.evaluation.findings if f.severity == "error"]


def test_base_gpu_id_zero_passes(run_check):
    assert first(run_check(f"{H} --base-gpu-id 0")) is None


def test_sp_degree_zero_divides_by_zero_first(run_check):
    """sglang computes num_gpus % sp_degree before its own divisibility message."""
    result = run_check(f"{H} --sp-degree 0")
    found = first(result)
    assert (found.rule.id, found.message) == ("H3D249", "ZeroDivisionError: integer modulo by zero")
    assert "--sp-degree" not in " ".join(result.corrected_argv)


@pytest.mark.parametrize(("port", "fallback"), [("70000", "5000-6000 (one at random)"), ("-1", "41 as root, 1049 otherwise")])
def test_unbindable_port_is_moved_by_sglang(run_check, port, fallback):
    """No socket binds a port outside 0-65535; sglang's settle_port moves on to another port without
    an error, so the server listens where nobody asked: a warning, with sglang's log line."""
    result = run_check(f"{H} --port {port}")
    assert first(result) is None
    found = next(f for f in result.evaluation.findings if f.rule.id == "H3D140")
    assert (found.severity, found.message) == ("warning", f"Port {port} was unavailable, using port {fallback} instead")


@pytest.mark.parametrize(
    ("flags", "message"),
    [
        ("--strict-ports --port 70000",
         "HTTP port 70000 is unavailable and --strict-ports is enabled. Either use a different port or disable --strict-ports."),
        ("--port -5000", "Failed to find available port after 100 attempts (started from port -5000)"),
    ],
)
def test_unbindable_port_sglang_cannot_settle_is_an_error(run_check, flags, message):
    found = first(run_check(f"{H} {flags}"))
    assert (found.rule.id, found.message) == ("H3D141", message)


def test_port_in_range_has_no_port_finding(run_check):
    result = run_check(f"{H} --port 65535 --strict-ports")
    assert not [f for f in result.evaluation.findings if f.rule.id in ("H3D140", "H3D141")]


def test_request_with_negative_steps_is_refused_at_the_first_request(rules, table):
    """The launch is fine; the HTTP layer refuses each request with num_inference_steps <= 0."""
    import shlex

    from h3doctor.engine.check import check
    from h3doctor.host.profiles import load_profile

    result = check(shlex.split(f"{H} --num-gpus 4"), load_profile("4xH200"), rules, table, {}, intent={"steps": -5})
    found = first(result)
    assert (found.rule.id, found.rule.stage, found.message) == ("H3D612", "first-request", "num_inference_steps must be positive")
