"""`h3doctor export vap`, the rules judged on a launch's values (integrations/vap_values.py,
vap_rules.py): the parallel layout sglang resolves, and the other rules no platform decides. The
policy's CEL, run by cel-python, finds what lint finds — the same rules with the same messages —
on generated layouts (a property test) and says nothing where the words are not certain."""

from __future__ import annotations

import pytest
import yaml
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as st

from h3doctor import api
from h3doctor.integrations import vap, vap_values
from h3doctor.sglang import release_files
from h3doctor.sglang.argv import parse_command
from h3doctor.sglang.flagtable import load_flag_table
from h3doctor.sglang.server_args import config_for, family_of, server_args

pytest.importorskip("celpy", reason="cel-python (the test extra) evaluates the policy's CEL")

from cel_policy import compiled  # noqa: E402  (needs celpy)

H3 = "MiniMaxAI/MiniMax-H3"
COVERAGE = vap.coverage()
RELEASES = ["0.5.17", "0.5.18", "0.5.22", "0.5.23"]


def _judged(version: str) -> set[str]:
    return {r for r, by in COVERAGE.items() if by.get(version) == ""}


@pytest.fixture(scope="module")
def errors_policy():
    """object -> {rule: message} the policy of errors gives it (every value rule is an error)."""
    errors = compiled(vap.policies())[0]

    def found(obj: dict) -> dict[str, str]:
        return dict(m.removeprefix("h3doctor ").split(": ", 1) for m in errors.messages(obj))

    return found


def _pod(name: str, words: list[str], version: str) -> dict:
    container = {"name": "server", "image": f"lmsysorg/sglang:v{version}", "command": words[:2], "args": words[2:],
                 "resources": {"limits": {"nvidia.com/gpu": 4}}}
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name}, "spec": {"containers": [container]}}


def _lint(tmp_path, pods: list[dict]) -> dict[str, dict[str, str]]:
    path = tmp_path / "pods.yaml"
    path.write_text(yaml.safe_dump_all(pods, sort_keys=False), encoding="utf-8")
    found: dict[str, dict[str, str]] = {}
    for f in api.lint([str(path)], no_config=True, targets=["4xH200"]).to_dict()["findings"]:
        if f["found_after_fix"]:
            continue  # what sglang would say of lint's corrected launch: not the launch the policy sees
        found.setdefault(f["launch"].split(" ")[0].split("/")[1], {})[f["rule"]] = f["message"]
    return found


def _same(errors_policy, tmp_path, cases: list[tuple[str, list[str]]]) -> None:
    pods = [_pod(f"p{i}", words, version) for i, (version, words) in enumerate(cases)]
    lint = _lint(tmp_path, pods)
    for pod, (version, words) in zip(pods, cases):
        name = pod["metadata"]["name"]
        expected = {r: m for r, m in lint.get(name, {}).items() if r in _judged(version)}
        got = {r: m for r, m in errors_policy(pod).items() if r not in vap.COVERED}
        assert got == expected, (version, " ".join(words[3:]))


_DEGREE = st.sampled_from([None, "0", "1", "2", "3", "4", "8"])
_LAYOUT_FLAGS = {"--num-gpus": _DEGREE, "--tp-size": _DEGREE, "--dp-size": _DEGREE, "--sp-degree": _DEGREE,
                 "--ulysses-degree": _DEGREE, "--ring-degree": _DEGREE, "--kv-gather-degree": _DEGREE,
                 "--cfg-parallel-size": _DEGREE, "--enable-cfg-parallel": st.sampled_from([None, "", "true", "false"]),
                 "--nnodes": st.sampled_from([None, "0", "1", "2"]), "--node-rank": st.sampled_from([None, "0", "1", "3"]),
                 "--dist-init-addr": st.sampled_from([None, "10.0.0.1:5000"]),
                 "--hsdp-replicate-dim": _DEGREE, "--hsdp-shard-dim": _DEGREE,
                 "--lora-alpha": st.sampled_from([None, "-1", "0", "16"])}


@st.composite
def _launch(draw) -> tuple[str, list[str]]:
    version = draw(st.sampled_from(RELEASES))
    options = load_flag_table(version).options_for("serve")
    words = ["sglang", "serve", H3]
    for flag, values in _LAYOUT_FLAGS.items():
        value = draw(values)
        if value is None or flag not in options:
            continue
        words += [flag] if value == "" else [flag, value]
    return version, words


# no shrinking: each example lints and evaluates eight launches, and the message names the launch
@settings(max_examples=4, deadline=None, derandomize=True, phases=[Phase.explicit, Phase.generate],
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.lists(_launch(), min_size=8, max_size=8))
def test_the_policy_finds_what_lint_finds_on_small_layouts(errors_policy, tmp_path, cases):
    _same(errors_policy, tmp_path, cases)


LAYOUTS = [  # each rule the policy judges on values, fired at least once (and clean layouts)
    ("0.5.23", ["--num-gpus", "4", "--ulysses-degree", "2"]),  # H3D228
    ("0.5.23", ["--num-gpus", "3", "--tp-size", "2", "--enable-cfg-parallel"]),  # H3D227, H3D229
    ("0.5.23", ["--num-gpus", "0"]),  # H3D226, H3D249, H3D222, H3D223
    ("0.5.23", ["--nnodes", "2", "--node-rank", "5"]),  # H3D219, H3D220, H3D218
    ("0.5.23", ["--nnodes", "0"]),  # H3D217
    ("0.5.23", ["--num-gpus", "4", "--sp-degree", "0", "--dp-size", "0"]),  # H3D225, H3D227, H3D249
    ("0.5.23", ["--num-gpus", "4", "--dp-size", "3"]),  # H3D224
    ("0.5.23", ["--num-gpus", "4", "--dp-size", "-2"]),  # H3D225's natural number
    ("0.5.23", ["--num-gpus", "4", "--hsdp-shard-dim", "3", "--kv-gather-degree", "0"]),  # H3D223, H3D215
    ("0.5.23", ["--num-gpus", "4", "--kv-gather-degree", "2"]),  # H3D216
    ("0.5.23", ["--lora-alpha", "0"]),  # H3D214
    ("0.5.17", ["--num-gpus", "4", "--dp-size", "2"]),  # H3D244
    ("0.5.23", ["--num-gpus", "4", "--tp-size", "2", "--ulysses-degree", "2"]),  # clean
    ("0.5.23", ["--num-gpus", "2"]),  # clean: sglang's K/V gather on two GPUs
    ("0.5.23", ["--num-gpus", "8", "--cfg-parallel-size", "1", "--enable-cfg-parallel", "false"]),  # clean
]


def test_every_rule_judged_on_values_is_met_and_agrees_with_lint(errors_policy, tmp_path):
    cases = [(v, ["sglang", "serve", H3, *flags]) for v, flags in LAYOUTS]
    _same(errors_policy, tmp_path, cases)
    fired = {r for v, words in cases for r in errors_policy(_pod("x", words, v))}
    assert fired - set(vap.COVERED) == vap.covered() - set(vap.COVERED)


UNCERTAIN = [  # words CEL cannot read for certain: the policy says nothing of the value rules
    ["--num-gpus", "4", "--ulysses-degree", "2", "--config", "c.yaml"],  # the file may set any of them
    ["--num-gpus", "4", "--ulysses-degree", "2", "--ring-degree=2"],  # argparse reads it (4 = 2 x 2: clean); the policy does not
    ["--num-gpus", "4", "--ulysses", "2"],  # an abbreviation sglang drops (H3D021's)
    ["--num-gpus", "4", "--dp", "3", "--dp-size", "1"],  # aliases: which one wins is argparse's
    ["--num-gpus", "4", "--ulysses-degree", "2", "--ulysses-degree", "4"],  # given twice
    ["--num-gpus", "1234567", "--ulysses-degree", "2"],  # more than six digits: a product could leave int64
    ["--num-gpus", "+4", "--ulysses-degree", "2"],  # an int Python reads, not plain digits
    ["--num-gpus", "4", "--ulysses-degree", "2", "--enable-cfg-parallel", "yes"],  # not a boolean sglang takes
]


@pytest.mark.parametrize("flags", UNCERTAIN, ids=[" ".join(f) for f in UNCERTAIN])
def test_words_not_read_for_certain_get_no_value_verdict(errors_policy, flags):
    found = errors_policy(_pod("x", ["sglang", "serve", H3, *flags], "0.5.23"))
    assert set(found) <= set(vap.COVERED), found


@pytest.mark.parametrize("version", [v for v in release_files.known() if v in RELEASES or v == release_files.known()[-1]])
def test_the_flags_read_as_given_are_left_as_given_by_sglangs_resolution(version):
    """vap_values.AS_GIVEN: the resolver (sglang/resolve.py) never changes these on a GPU platform,
    so the policy may read them from the words."""
    from h3doctor.engine.check import evaluate_launch
    from h3doctor.engine.ruleset import load_rules
    from h3doctor.host.profiles import load_profile

    table, hw, rules = load_flag_table(version), load_profile("4xH200"), load_rules()
    options = table.options_for("serve")
    for dest in vap_values.AS_GIVEN:
        flag = next((o for o, a in options.items() if a.dest == dest), None)
        if flag is None:
            continue
        value = "10.0.0.1:5000" if options[flag].type not in ("int", None) or dest == "dist_init_addr" else "3"
        gpus = [] if dest == "num_gpus" else ["--num-gpus", "6"]
        ev = evaluate_launch(["sglang", "serve", H3, *gpus, flag, value], hw, rules, table, {})
        expected = value if dest == "dist_init_addr" else int(value)
        assert ev.effective.get(dest) == expected, (dest, ev.effective.get(dest))


def test_the_model_names_its_config_class_as_sglang_does():
    """H3D229's message names the pipeline config class: vap_values reads it from family_of."""
    table = load_flag_table("0.5.23")
    values = vap_values.Values("0.5.23", vap._Release.models_of("0.5.23"))
    for model, name in zip(values.models, values.classes):
        cmd = parse_command(["sglang", "serve", model], table)
        assert family_of(cmd, server_args(cmd, config_for(cmd, table), table)[0]).family.config_class == name


def test_the_coverage_page_is_the_generators():
    from repo_paths import REPO

    page = (REPO / "docs/integrations/vap-coverage.md").read_text(encoding="utf-8")
    assert page == vap.coverage_markdown(), "regenerate with: python tools/vap_coverage.py"


def test_the_policies_name_what_they_judge_and_leave_out():
    for doc in vap.policies():
        if doc["kind"] != "ValidatingAdmissionPolicy":
            continue
        notes = doc["metadata"]["annotations"]
        assert set(notes["h3doctor/judged"].split()) == vap.covered()
        assert "docs/integrations/vap-coverage.md" in notes["h3doctor/left-out"]


def _bad(words_after_model: list[str], containers: int = 1) -> dict:
    pod = _pod("big", ["sglang", "serve", H3, "--num-gpus", "4", "--ulysses-degree", "2", *words_after_model], "0.5.23")
    pod["spec"]["containers"] = [dict(pod["spec"]["containers"][0], name=f"c{i}") for i in range(containers)]
    return pod


def test_an_object_past_the_policys_bounds_gets_no_verdict(errors_policy):
    """The bounds that keep a hostile object inside Kubernetes' CEL budgets: past them the policy
    says nothing (H3D228 is certain in each, and found within the bounds)."""
    assert "H3D228" in errors_policy(_bad([], containers=vap.MAX_CONTAINERS))
    filler = ["--seed", "1"] * ((vap.MAX_WORDS - 7) // 2)
    assert "H3D228" in errors_policy(_bad(filler))
    assert errors_policy(_bad([], containers=vap.MAX_CONTAINERS + 1)) == {}
    assert errors_policy(_bad(filler + ["--seed", "1"])) == {}
    assert errors_policy(_bad(["--served-model-name", "x" * (vap.MAX_WORD + 1)])) == {}


def test_each_policy_object_stays_far_below_etcds_request_limit():
    """etcd takes a request of at most 1.5 MiB; each object is kept under a third of that."""
    import json

    for doc in vap.policies():
        assert len(json.dumps(doc)) < 512 * 1024, doc["metadata"]["name"]



OPS = ["eq", "ne", "gt", "ge", "lt", "le", "truthy", "falsy", "is_null", "not_null", "multiple_of", "not_multiple_of"]


def test_each_translated_operator_answers_as_the_engines_on_ints_and_none():
    """vap_rules._compare over the policy's ints (None as vap_values.NONE) against the engine's own
    conditions._compare: None compares false, a zero or None divisor divides nothing."""
    import celpy
    from celpy import celtypes

    from h3doctor.engine.conditions import _compare as engine
    from h3doctor.integrations.vap_rules import _compare as translated

    env = celpy.Environment()
    for op in OPS:
        program = env.program(env.compile(translated(op, "l[0]", "l[1]", "x")))
        for left in (None, -3, 0, 1, 2, 4):
            for right in (None, 0, 1, 2):
                ints = [vap_values.NONE if v is None else v for v in (left, right)]
                got = program.evaluate({"l": celtypes.ListType([celtypes.IntType(i) for i in ints])})
                assert bool(got) == engine(op, left, right), (op, left, right)
