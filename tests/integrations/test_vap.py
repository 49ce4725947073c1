"""`h3doctor export vap`: the generated ValidatingAdmissionPolicy's CEL, evaluated with cel-python on
the fixture repository's manifests and on generated ones, gives the verdicts lint gives for the rules
it covers; where CEL cannot read a word for certain it says nothing (never more than lint). The
objects validate against Kubernetes 1.34's schema (vendored, tests/fixtures/k8s-schema/)."""

from __future__ import annotations

import copy
import subprocess
import sys

import pytest
import yaml

from h3doctor import api
from h3doctor.integrations import vap
from repo_paths import REPO

celpy = pytest.importorskip("celpy", reason="cel-python (the test extra) evaluates the policy's CEL")

from cel_policy import compiled  # noqa: E402  (needs celpy)
from k8s_schema_check import schema_errors  # noqa: E402

K8S = REPO / "tests/fixtures/repo/deploy/k8s"
COVERED = vap.covered()
H3 = "MiniMaxAI/MiniMax-H3"


@pytest.fixture(scope="module")
def judge():
    """object -> the covered rule IDs the two generated policies name for it."""
    policies = compiled(vap.policies())

    def rules(obj: dict) -> set[str]:
        messages = [m for p in policies for m in p.messages(obj)]
        assert all(m.startswith("h3doctor H3D") for m in messages), messages
        return {m.split()[1].rstrip(":") for m in messages}

    return rules


def _lint_rules(paths) -> dict[tuple[str, str], set[str]]:
    """(file name, object 'Kind/name') -> the covered rules lint finds there (suppressed ones too:
    the policy sees no comments), in the launch as written (not after lint's fixes)."""
    report = api.lint([str(p) for p in paths], no_config=True, targets=["4xH200"]).to_dict()
    found: dict[tuple[str, str], set[str]] = {}
    for f in report["findings"]:
        if f.get("launch") and f["rule"] in COVERED and not f["found_after_fix"]:  # the launch as written
            owner = f["launch"].split(" ")[0]
            found.setdefault((f["file"].rsplit("/", 1)[-1], owner), set()).add(f["rule"])
    return found


def _deployment(name: str, words: list[str], image: str = "lmsysorg/sglang:v0.5.23", kind: str = "Deployment",
                env: list | None = None) -> dict:
    container = {"name": "server", "image": image, "command": words[:2], "args": words[2:],
                 "resources": {"limits": {"nvidia.com/gpu": 4}}}
    if env:
        container["env"] = env
    pod = {"spec": {"containers": [container]}}
    spec = {"template": pod} if kind == "Deployment" else {"schedule": "@daily", "jobTemplate": {"spec": {"template": pod}}}
    return {"apiVersion": "apps/v1" if kind == "Deployment" else "batch/v1", "kind": kind,
            "metadata": {"name": name}, "spec": spec}


def _lws(name: str, words: list[str]) -> dict:
    template = _deployment(name, words)["spec"]["template"]
    return {"apiVersion": "leaderworkerset.x-k8s.io/v1", "kind": "LeaderWorkerSet", "metadata": {"name": name},
            "spec": {"leaderWorkerTemplate": {"size": 2, "workerTemplate": template}}}


def _serve(*flags: str) -> list[str]:
    return ["sglang", "serve", H3, "--num-gpus", "4", *flags]


# name, object, the covered rules lint finds (and the policy must find: same verdict)
SAME = [
    ("clean", _deployment("clean", _serve()), set()),
    ("unknown", _deployment("unknown", _serve("--ulysses_degree", "4")), {"H3D020"}),
    ("other-release", _deployment("other-release", _serve("--sleep-on-idle"), "lmsysorg/sglang:v0.5.17-cu126"),
     {"H3D012"}),
    ("newer-flag-ok", _deployment("newer-flag-ok", _serve("--sleep-on-idle")), set()),
    ("ambiguous", _deployment("ambiguous", _serve("--enable")), {"H3D010"}),
    ("choice", _deployment("choice", _serve("--performance-mode", "fast")), {"H3D010"}),
    ("choice-inline", _deployment("choice-inline", _serve("--performance-mode=fast")), {"H3D010"}),
    ("choice-ok", _deployment("choice-ok", _serve("--performance-mode", "speed")), set()),
    ("int", _deployment("int", ["sglang", "serve", H3, "--num-gpus", "four"]), {"H3D010"}),
    ("int-inline", _deployment("int-inline", ["sglang", "serve", H3, "--num-gpus=four"]), {"H3D010"}),
    ("int-other-digits", _deployment("int-other-digits", ["sglang", "serve", H3, "--num-gpus", "\u0664"]), set()),
    ("abbreviation", _deployment("abbreviation", _serve("--tp", "1")), {"H3D021"}),
    ("latest", _deployment("latest", _serve("--ulysses_degree", "4"), "lmsysorg/sglang:latest"), {"H3D020"}),
    ("registry", _deployment("registry", _serve("--ulysses_degree", "4"), "docker.io/lmsysorg/sglang:v0.5.22"),
     {"H3D020"}),
    ("foreign-image", _deployment("foreign-image", _serve("--foo"), "example.org/team/h3:1.0"), {"H3D020"}),
    # an image whose release is not known is judged as the newest verified release, as lint judges it
    ("foreign-image-new-flag", _deployment("foreign-image-new-flag", _serve("--sleep-on-idle"), "example.org/h3:1"),
     set()),
    ("model-path", _deployment("model-path", ["sglang", "serve", "--model-path", H3, "--foo-bar"]), {"H3D020"}),
    ("cronjob", _deployment("cronjob", _serve("--foo-bar"), kind="CronJob"), {"H3D020"}),
    ("lws", _lws("lws", _serve("--foo-bar")), {"H3D020"}),
    ("component-map", _deployment("component-map", _serve("--component-precisions.vae", "fp32")), set()),
]
# Words the policy cannot read for certain: it says nothing, lint judges (and finds) them.
UNREAD = [
    ("kubelet-var", _deployment("kubelet-var", _serve("--performance-mode", "$(MODE)"),
                                env=[{"name": "MODE", "value": "fast"}]), {"H3D010"}),
    ("abbreviation-inline", _deployment("abbreviation-inline", ["sglang", "serve", H3, "--num-gpu=4"]), {"H3D021"}),
    ("script", _deployment("script", ["bash", "-c", f"sglang serve {H3} --num-gpus 4 --foo_bar 1"]), {"H3D020"}),
]


@pytest.fixture(scope="module")
def generated(tmp_path_factory):
    folder = tmp_path_factory.mktemp("vap")
    path = folder / "cases.yaml"
    path.write_text(yaml.safe_dump_all([obj for _n, obj, _r in SAME + UNREAD], sort_keys=False), encoding="utf-8")
    return _lint_rules([path])


@pytest.mark.parametrize("name,obj,expected", SAME, ids=[c[0] for c in SAME])
def test_the_policy_gives_lints_verdict(judge, generated, name, obj, expected):
    lint = generated.get(("cases.yaml", f"{obj['kind']}/{name}"), set())
    assert lint == expected  # the case means what it says
    assert judge(obj) == lint


@pytest.mark.parametrize("name,obj,lint_finds", UNREAD, ids=[c[0] for c in UNREAD])
def test_a_word_cel_cannot_read_for_certain_is_left_to_lint(judge, generated, name, obj, lint_finds):
    assert generated.get(("cases.yaml", f"{obj['kind']}/{name}"), set()) == lint_finds
    assert judge(obj) == set()


def test_the_fixture_repositorys_manifests_get_lints_verdicts(judge):
    files = sorted(K8S.glob("*.yaml"))
    lint = _lint_rules(files)
    judged = {"deployment.yaml", "canary.yaml"}  # every container a plain `sglang serve` word list
    assert lint[("deployment.yaml", "Deployment/h3")] == {"H3D020", "H3D021"}
    for path in files:
        for obj in yaml.safe_load_all(path.read_text(encoding="utf-8")):
            if not isinstance(obj, dict) or obj.get("kind") not in ("Deployment", "Pod", "StatefulSet", "Job"):
                continue
            found = judge(obj)
            expected = lint.get((path.name, f"{obj['kind']}/{obj['metadata']['name']}"), set())
            if path.name in judged:
                assert found == expected, path.name
            else:
                assert found <= expected, path.name  # never more than lint: a script is lint's to read


def test_the_generated_objects_are_valid_kubernetes_objects():
    for deny in (False, True):
        docs = vap.policies(deny=deny)
        assert [d["kind"] for d in docs] == ["ValidatingAdmissionPolicy", "ValidatingAdmissionPolicyBinding"] * 2
        for doc in docs:
            assert schema_errors(doc) == [], doc["metadata"]["name"]
        actions = {d["metadata"]["name"]: d["spec"]["validationActions"] for d in docs if "policyName" in d["spec"]}
        assert actions == {"h3doctor-errors": ["Deny"] if deny else ["Warn", "Audit"],
                           "h3doctor-warnings": ["Warn", "Audit"]}
        assert all(d["spec"]["failurePolicy"] == "Ignore" for d in docs if "validations" in d["spec"])


def test_the_schema_check_can_fail():
    broken = copy.deepcopy(vap.policies()[1])
    broken["spec"]["validationActions"] = "Warn"  # a string where Kubernetes takes a list
    assert schema_errors(broken)


def test_every_message_names_its_rule(judge):
    messages = [v["messageExpression"] for d in vap.policies() if "validations" in d["spec"]
                for v in d["spec"]["validations"]]
    assert messages and all(m.startswith("'h3doctor H3D") for m in messages)


def test_the_command_prints_or_writes_the_policy_and_refuses_a_bad_name(tmp_path):
    out = tmp_path / "vap.yaml"
    run = [sys.executable, "-m", "h3doctor", "export", "vap"]
    printed = subprocess.run(run, capture_output=True, text=True, check=True).stdout
    subprocess.run([*run, "--output", str(out)], capture_output=True, text=True, check=True)
    assert out.read_text(encoding="utf-8") == printed
    assert [d["kind"] for d in yaml.safe_load_all(printed)][0] == "ValidatingAdmissionPolicy"
    bad = subprocess.run([*run, "--name", "Bad Name!"], capture_output=True, text=True)
    assert bad.returncode == 2 and "Traceback" not in bad.stderr and "--name" in bad.stderr
