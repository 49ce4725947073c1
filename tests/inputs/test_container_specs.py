"""A compose service's and a pod template's container judged by what the file gives it (issue 29
item 3): its /dev/shm, its memory cap — through lint's findings (JSON), where they point, what the
fixer still fixes, and the admission webhook's verdict on the same pod templates."""

from __future__ import annotations

import copy
import json

import pytest
import yaml

from h3doctor.inputs.container_specs import quantity_bytes
from h3doctor.integrations.kubernetes_admission.judge import Judge
from h3doctor.lint.run import LintOptions, lint
from h3doctor.output.formats import render
from repo_paths import REPO

FIXTURES = REPO / "tests" / "fixtures" / "repo" / "deploy"
NO_SHM = yaml.safe_load((FIXTURES / "k8s" / "h3-four-gpus.yaml").read_text())
WITH_SHM = yaml.safe_load((FIXTURES / "k8s" / "h3-four-gpus-shm.yaml").read_text())
COMPOSE_SHM = yaml.safe_load((FIXTURES / "compose.shm.yaml").read_text())


def lint_data(tmp_path, name: str, obj, target: str = "4xH200") -> dict:
    path = tmp_path / name
    path.write_text(yaml.safe_dump(obj, sort_keys=False), encoding="utf-8")
    _code, report, _notes = lint([str(path)], LintOptions(targets=(target,)))
    return json.loads(render("lint", "json", report))


def found(data: dict) -> dict[str, dict]:
    return {f["rule"]: f for f in data["findings"]}


def hardware(data: dict) -> dict:
    [launch] = [la for f in data["files"] for la in f["launches"]]
    return launch


def pod(obj: dict) -> dict:
    return obj["spec"]["template"]["spec"]


# --- Kubernetes --------------------------------------------------------------------------------------

def test_a_four_gpu_pod_without_a_memory_backed_dev_shm_has_the_runtimes_64_mib(tmp_path):
    data = lint_data(tmp_path, "d.yaml", NO_SHM)
    f = found(data)["H3D415"]
    assert f["severity"] == "error" and not f["cannot_verify"] and f["message"].startswith("/dev/shm holds 0.0625 GiB")
    line = yaml.safe_dump(NO_SHM, sort_keys=False).splitlines()[f["line"] - 1]
    assert line[f["col"] - 1:] == "name: sglang"  # the container whose pod gives it no /dev/shm


def test_the_emptydir_at_dev_shm_gives_its_size_limit(tmp_path):
    assert "H3D415" not in found(lint_data(tmp_path, "d.yaml", WITH_SHM))
    small = copy.deepcopy(WITH_SHM)
    pod(small)["volumes"][0]["emptyDir"]["sizeLimit"] = "512Mi"
    f = found(lint_data(tmp_path, "d.yaml", small))["H3D415"]
    assert f["message"].startswith("/dev/shm holds 0.5 GiB")
    line = yaml.safe_dump(small, sort_keys=False).splitlines()[f["line"] - 1]
    assert line[f["col"] - 1:] == "name: dshm"  # the pod's volume that gives it


@pytest.mark.parametrize("limits, shm_ok", [({"memory": "64Gi"}, True), ({"memory": "512Mi"}, False)])
def test_an_emptydir_with_no_size_limit_is_the_pods_memory_limit(tmp_path, limits, shm_ok):
    obj = copy.deepcopy(WITH_SHM)
    del pod(obj)["volumes"][0]["emptyDir"]["sizeLimit"]
    pod(obj)["containers"][0]["resources"]["limits"].update(limits)
    assert ("H3D415" not in found(lint_data(tmp_path, "d.yaml", obj))) is shm_ok


def test_an_emptydir_with_no_size_and_no_memory_limit_is_the_nodes_memory(tmp_path):
    obj = copy.deepcopy(WITH_SHM)
    del pod(obj)["volumes"][0]["emptyDir"]["sizeLimit"]
    del pod(obj)["containers"][0]["resources"]["limits"]["memory"]
    assert "H3D415" not in found(lint_data(tmp_path, "d.yaml", obj))  # the 4xH200 profile's host memory


@pytest.mark.parametrize("change", ["hostIPC", "hostPath"])
def test_the_nodes_dev_shm_is_the_nodes(tmp_path, change):
    obj = copy.deepcopy(NO_SHM)
    if change == "hostIPC":
        pod(obj)["hostIPC"] = True
    else:
        pod(obj)["volumes"] = [{"name": "dshm", "hostPath": {"path": "/dev/shm"}}]
        pod(obj)["containers"][0]["volumeMounts"] = [{"name": "dshm", "mountPath": "/dev/shm"}]
    assert "H3D415" not in found(lint_data(tmp_path, "d.yaml", obj))


@pytest.mark.parametrize("volume", [{"emptyDir": {"medium": "Memory", "sizeLimit": "lots"}},  # not a quantity
                                    {"emptyDir": {}},  # on the node's disk: its size is not the file's
                                    {"persistentVolumeClaim": {"claimName": "x"}}])
def test_a_dev_shm_the_file_does_not_size_cannot_verify(tmp_path, volume):
    obj = copy.deepcopy(NO_SHM)
    pod(obj)["volumes"] = [{"name": "dshm", **volume}]
    pod(obj)["containers"][0]["volumeMounts"] = [{"name": "dshm", "mountPath": "/dev/shm/"}]
    f = found(lint_data(tmp_path, "d.yaml", obj))["H3D415"]
    assert f["cannot_verify"] and f["severity"] == "warning"  # never clean, never a guessed failure


def _one_5090(obj: dict, image: str = "lmsysorg/sglang:v0.5.19") -> dict:
    """An RTX 5090 launch on 0.5.19, which pins ~68 GiB of host memory out of the box (H3D418)."""
    obj = copy.deepcopy(obj)
    container = pod(obj)["containers"][0]
    container["image"], container["args"] = image, ["--model-path", "MiniMaxAI/MiniMax-H3"]
    container["resources"]["limits"]["nvidia.com/gpu"] = 1
    return obj


@pytest.mark.parametrize("memory, short", [("48Gi", True), ("1Ti", False)])
def test_the_containers_memory_limit_caps_the_host_memory(tmp_path, memory, short):
    obj = _one_5090(WITH_SHM)
    pod(obj)["containers"][0]["resources"]["limits"]["memory"] = memory
    assert ("H3D418" in found(lint_data(tmp_path, "d.yaml", obj, "1xRTX5090"))) is short


def test_a_pods_dev_shm_is_the_files_to_change_not_the_launchs_words(tmp_path):
    """H3D415's fix edits a docker run line; in a manifest the launch's other fixes are still made."""
    obj = copy.deepcopy(NO_SHM)
    pod(obj)["containers"][0]["args"][2] = "--num_gpus"
    path = tmp_path / "d.yaml"
    path.write_text(yaml.safe_dump(obj, sort_keys=False), encoding="utf-8")
    lint([str(path)], LintOptions(targets=("4xH200",), fix=True))
    fixed = yaml.safe_load(path.read_text())
    assert pod(fixed)["containers"][0]["args"][2] == "--num-gpus" and "volumes" not in pod(fixed)


def test_the_admission_webhook_judges_the_same_dev_shm():
    judge = Judge()
    verdict = judge.judge(NO_SHM)
    assert any(line.startswith("H3D415: /dev/shm holds 0.0625 GiB") for line in verdict.failing)
    assert not [f for f in judge.judge(WITH_SHM).failing if f.startswith("H3D415")]


@pytest.mark.parametrize("text, size", [("16Gi", 16 << 30), ("512Mi", 512 << 20), ("1G", 10 ** 9), ("1e9", 10 ** 9),
                                        ("1.5Gi", 3 << 29), (12345, 12345), ("100m", 0), ("2k", 2000)])
def test_kubernetes_quantities(text, size):
    assert quantity_bytes(text) == size


@pytest.mark.parametrize("text", ["lots", "-1", -1, "16GiB", "1" * 41, True, None, "", "Gi"])
def test_what_is_not_a_quantity_is_none(text):
    assert quantity_bytes(text) is None


# --- compose -----------------------------------------------------------------------------------------

def test_compose_shm_size_gives_the_services_dev_shm(tmp_path):
    assert "H3D415" not in found(lint_data(tmp_path, "compose.yaml", COMPOSE_SHM))


@pytest.mark.parametrize("keys, verdict", [
    ({}, "error"),  # docker's 64 MiB
    ({"shm_size": "256m"}, "error"),
    ({"shm_size": 17179869184}, None),  # a number is bytes: 16 GiB
    ({"ipc": "host"}, None),
    ({"ipc": "none"}, "error"),
    ({"ipc": "service:other"}, "warning"),  # that namespace's: cannot verify
    ({"shm_size": "lots"}, "warning"),
    ({"tmpfs": ["/dev/shm:size=16g"]}, None),
    ({"volumes": ["/dev/shm:/dev/shm"]}, None),
])
def test_compose_keys_that_give_dev_shm(tmp_path, keys, verdict):
    obj = copy.deepcopy(COMPOSE_SHM)
    del obj["services"]["h3"]["shm_size"]
    obj["services"]["h3"].pop("volumes")
    obj["services"]["h3"].update(keys)
    f = found(lint_data(tmp_path, "compose.yaml", obj)).get("H3D415")
    assert (f["severity"] if f else None) == verdict
    if f is not None:  # at the key that gives it, else the service's own key
        line = yaml.safe_dump(obj, sort_keys=False).splitlines()[f["line"] - 1].strip()
        assert line.startswith(next(iter(keys), "h3:")), line


@pytest.mark.parametrize("key, short", [({"deploy_limit": "48G"}, True), ({"mem_limit": "48g"}, True),
                                        ({"deploy_limit": "1t", "mem_limit": "48g"}, False), ({}, False)])
def test_compose_memory_limit_caps_the_host_memory(tmp_path, key, short):
    obj = copy.deepcopy(COMPOSE_SHM)
    service = obj["services"]["h3"]
    service["image"], service["command"] = "lmsysorg/sglang:v0.5.19", "sglang serve --model-path MiniMaxAI/MiniMax-H3"
    service["deploy"]["resources"]["reservations"]["devices"][0]["count"] = 1
    if "deploy_limit" in key:  # the deploy limit first, as compose applies it
        service["deploy"]["resources"]["limits"] = {"memory": key["deploy_limit"]}
    if "mem_limit" in key:
        service["mem_limit"] = key["mem_limit"]
    assert ("H3D418" in found(lint_data(tmp_path, "compose.yaml", obj, "1xRTX5090"))) is short
