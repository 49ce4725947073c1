"""`h3doctor admission`: AdmissionReview v1 requests as the API server sends them, over real HTTPS
(a self-signed certificate from the openssl CLI, an http.client client trusting only it).
Verdicts are read from the JSON answers, never from timing."""

from __future__ import annotations

import copy
import json
import socket
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from admission_helpers import OPENSSL, Webhook, review
from h3doctor.integrations.kubernetes_admission import server as server_module
from h3doctor.inputs.gpu_labels import gpu_choices
from h3doctor.lint.targets import catalog_name
from h3doctor.integrations.kubernetes_admission.judge import Judge
from h3doctor.integrations.kubernetes_admission.warnings import MAX_CHARS
from repo_paths import REPO

pytestmark = pytest.mark.skipif(OPENSSL is None, reason="the openssl CLI makes the test certificate")
ROOT = REPO
DEPLOYMENT = yaml.safe_load((ROOT / "tests/fixtures/repo/deploy/k8s/deployment.yaml").read_text())
H100 = {"nvidia.com/gpu.product": "NVIDIA-H100-80GB-HBM3"}


@pytest.fixture(scope="module")
def judge():
    return Judge()


@pytest.fixture(scope="module")
def webhook(tmp_path_factory, judge):
    hook = Webhook(tmp_path_factory.mktemp("warn"), judge=judge)
    yield hook
    hook.close()


@pytest.fixture(scope="module")
def deny_hook(tmp_path_factory, judge):
    hook = Webhook(tmp_path_factory.mktemp("deny"), deny=True, judge=judge)
    yield hook
    hook.close()


def deployment(args=None, node_selector=None, shm=False):
    obj = copy.deepcopy(DEPLOYMENT)
    spec = obj["spec"]["template"]["spec"]
    if args is not None:
        spec["containers"][0]["args"] = args
    if node_selector is not None:
        spec["nodeSelector"] = node_selector
    if shm:  # a memory-backed /dev/shm for the ranks (without one a pod has the runtime's 64 MiB: H3D415)
        spec["volumes"] = [{"name": "dshm", "emptyDir": {"medium": "Memory", "sizeLimit": "16Gi"}}]
        spec["containers"][0]["volumeMounts"] = [{"name": "dshm", "mountPath": "/dev/shm"}]
    return obj


GOOD = ["MiniMaxAI/MiniMax-H3", "--num-gpus", "4", "--ulysses-degree", "4"]
BAD = ["MiniMaxAI/MiniMax-H3", "--num-gpus", "4", "--ulysses-degree", "2", "--ring-degree", "2",
       "--attention-backend", "sage_attn"]


def rules_of(response):
    return {w.split()[1] for w in response.get("warnings", []) if w.split()[1].startswith("H3D")}


def test_warn_mode_allows_with_sglangs_message_as_a_warning(webhook):
    status, answer = webhook.review(deployment(BAD, H100))
    assert status == 200 and answer["kind"] == "AdmissionReview" and answer["apiVersion"] == "admission.k8s.io/v1"
    response = answer["response"]
    assert response["allowed"] is True
    assert "H3D305" in rules_of(response)
    assert any("requires the FlashAttention backend" in w for w in response["warnings"])


def test_deny_mode_refuses_a_launch_sglang_would_fail_and_allows_a_good_one(deny_hook):
    _, bad = deny_hook.review(deployment(BAD, H100))
    assert bad["response"]["allowed"] is False and bad["response"]["status"]["code"] == 403
    assert "H3D305" in bad["response"]["status"]["message"] or "H3D" in bad["response"]["status"]["message"]
    _, good = deny_hook.review(deployment(GOOD, H100, shm=True))
    assert good["response"]["allowed"] is True and not rules_of(good["response"])
    _, no_shm = deny_hook.review(deployment(GOOD, H100))  # the same pod in the runtime's 64 MiB /dev/shm
    assert no_shm["response"]["allowed"] is False and "H3D415" in no_shm["response"]["status"]["message"]


def test_the_uid_is_answered_and_update_and_dry_run_are_judged_as_create(webhook):
    request = review(deployment(BAD, H100))
    _, created = webhook.post(json.dumps(request).encode())
    assert created["response"]["uid"] == request["request"]["uid"]
    _, updated = webhook.review(deployment(BAD, H100), operation="UPDATE")
    _, dry = webhook.review(deployment(BAD, H100), dry_run=True)
    assert updated["response"]["warnings"] == dry["response"]["warnings"] == created["response"]["warnings"]


def test_delete_and_a_pod_without_sglang_pass_untouched(webhook, deny_hook):
    _, deleted = deny_hook.review(deployment(BAD, H100), operation="DELETE")
    assert deleted["response"] == {"uid": deleted["response"]["uid"], "allowed": True}
    nginx = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "web"},
             "spec": {"containers": [{"name": "web", "image": "nginx:1.27", "args": ["nginx", "-g", "daemon off;"]}]}}
    _, answer = deny_hook.review(nginx)
    assert answer["response"] == {"uid": answer["response"]["uid"], "allowed": True}


def test_without_a_gpu_label_hardware_rules_cannot_verify_and_never_pass(webhook):
    _, unlabelled = webhook.review(deployment(GOOD))
    said = unlabelled["response"]["warnings"]
    assert any("cannot verify" in w and "no GPU type" in w for w in said)
    _, labelled = webhook.review(deployment(GOOD, H100))
    assert not any("cannot verify" in w for w in labelled["response"].get("warnings", []))


def test_a_gpu_the_catalog_does_not_know_is_said_not_guessed(webhook):
    _, mig = webhook.review(deployment(GOOD, {"nvidia.com/gpu.product": "NVIDIA-A100-SXM4-40GB-MIG-1g.5gb"}))
    assert any("cannot verify" in w and "not in h3doctor's catalog" in w for w in mig["response"]["warnings"])


def test_the_gpu_comes_from_required_affinity_and_the_count_from_the_limit(judge):
    obj = deployment(["MiniMaxAI/MiniMax-H3", "--num-gpus", "8"])
    spec = obj["spec"]["template"]["spec"]
    spec["affinity"] = {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [
        {"matchExpressions": [{"key": "cloud.google.com/gke-accelerator", "operator": "In",
                               "values": ["nvidia-h100-80gb"]}]}]}}}
    verdict = judge.judge(obj)  # 8 GPUs asked for, 4 granted by the limit
    assert not any("cannot verify" in w for w in verdict.warnings)
    assert verdict.failing, verdict.warnings


def test_gpu_labels_name_a_catalog_gpu_only_when_unambiguous():
    assert catalog_name("NVIDIA-H100-80GB-HBM3") == "H100"
    assert catalog_name("nvidia-tesla-a100") == "A100-40GB"  # GKE's name for the 40 GB card
    assert catalog_name("a100") is None  # Karpenter without its memory label: either card
    assert catalog_name("a100", "40960") == "A100-40GB"
    assert catalog_name("NVIDIA-A100-SXM4-40GB-SHARED") is None
    preferred = {"affinity": {"nodeAffinity": {"preferredDuringSchedulingIgnoredDuringExecution": [
        {"weight": 1, "preference": {"matchExpressions": [
            {"key": "nvidia.com/gpu.product", "operator": "In", "values": ["NVIDIA-H100-80GB-HBM3"]}]}}]}}}
    assert gpu_choices(preferred) == []  # a preference schedules anywhere


def test_warnings_are_one_printable_line_of_at_most_120_characters(webhook):
    for value in ("x" * 500, "a\x1b[31mred\x07"):
        _, answer = webhook.review(deployment(GOOD + ["--attention-backend", value], H100))
        said = answer["response"]["warnings"]
        assert said and all(len(w) <= MAX_CHARS and w.isprintable() for w in said)


def test_a_file_the_launch_names_is_never_read_on_the_webhooks_machine(webhook, tmp_path):
    planted = tmp_path / "server.yaml"
    planted.write_text("num_gpus: 8\n")
    _, answer = webhook.review(deployment(GOOD + ["--config", str(planted)], H100))
    assert any("not judged: names a file of the node (not read)" in w for w in answer["response"]["warnings"])


def test_a_jobset_is_read_through_its_pod_templates(judge):
    template = deployment(BAD, H100)["spec"]["template"]
    jobset = {"apiVersion": "jobset.x-k8s.io/v1alpha2", "kind": "JobSet", "metadata": {"name": "js"},
              "spec": {"replicatedJobs": [{"name": "w", "template": {"spec": {"template": template}}}]}}
    assert any(f.startswith("H3D305") for f in judge.judge(jobset).failing)


def test_a_leaderworkerset_is_read_by_lints_reader(judge):
    lws = {"apiVersion": "leaderworkerset.x-k8s.io/v1", "kind": "LeaderWorkerSet", "metadata": {"name": "h3"},
           "spec": {"leaderWorkerTemplate": {"size": 1, "workerTemplate": deployment(BAD, H100)["spec"]["template"]}}}
    assert any(f.startswith("H3D305") for f in judge.judge(lws).failing)


MALFORMED = [
    (b"{", 400), (b"\xff\xfe", 400), (b"[]", 400), (b'{"kind": "AdmissionReview"}', 400),
    (json.dumps({**review({}), "apiVersion": "admission.k8s.io/v1beta1"}).encode(), 400),
    (json.dumps({"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview", "request": {"uid": 5}}).encode(), 400),
    (json.dumps(review("not an object")).encode(), 400),
    (b'{"a":' * 5000 + b"1" + b"}" * 5000, 400),
    (b'{"apiVersion": NaN}', 400),
]


@pytest.mark.parametrize("body,code", MALFORMED)
def test_a_malformed_review_is_400_never_allowed_and_the_server_lives_on(deny_hook, body, code):
    status, answer = deny_hook.post(body)
    assert status == code and "error" in answer and "response" not in answer
    conn = deny_hook.client()
    conn.request("GET", "/healthz")
    assert conn.getresponse().status == 200


def test_not_json_no_length_and_too_large_are_refused(deny_hook, monkeypatch):
    assert deny_hook.post(b"{}", content_type="text/plain")[0] == 415
    monkeypatch.setattr(server_module, "MAX_BODY", 100)
    assert deny_hook.post(json.dumps(review(deployment(BAD))).encode())[0] == 413
    conn = deny_hook.client()
    conn.putrequest("POST", "/validate")
    conn.putheader("Content-Type", "application/json")
    conn.putheader("Transfer-Encoding", "chunked")
    conn.endheaders()
    conn.send(b"2\r\n{}\r\n0\r\n\r\n")
    assert conn.getresponse().status == 411


def test_unknown_paths_and_a_plain_http_client_get_no_review(webhook):
    conn = webhook.client()
    conn.request("GET", "/validate")
    assert conn.getresponse().status == 404
    with socket.create_connection(("127.0.0.1", webhook.port), timeout=10) as plain:
        plain.sendall(b"POST /validate HTTP/1.1\r\nHost: x\r\nContent-Length: 2\r\n\r\n{}")
        assert b"allowed" not in plain.recv(4096)
    conn = webhook.client()
    conn.request("GET", "/healthz")
    assert conn.getresponse().status == 200


def test_one_connection_answers_many_reviews(webhook):
    conn = webhook.client()
    answers = [webhook.review(deployment(BAD, H100), conn=conn)[1]["response"]["allowed"] for _ in range(5)]
    assert answers == [True] * 5


def test_the_command_refuses_unreadable_tls_files_with_exit_2(tmp_path):
    run = subprocess.run([sys.executable, "-m", "h3doctor", "admission", "--cert", str(tmp_path / "none.crt"),
                          "--key", str(tmp_path / "none.key")], capture_output=True, text=True, timeout=60)
    assert run.returncode == 2 and "--cert/--key" in run.stderr and "Traceback" not in run.stderr
