"""NVIDIA GPU feature discovery's memory and count labels (issue 30 item 7): `nvidia.com/gpu.memory`
(MiB per card) tells the A100 40 GB from the 80 GB where the product label does not, and names no
card where it contradicts the product; `nvidia.com/gpu.count` is the count where no
`nvidia.com/gpu` limit gives one. The admission webhook reads the same labels the same way."""

from __future__ import annotations

import json
import os

import pytest
import yaml

from h3doctor.inputs.gpu_labels import gpu_choices, labelled_count
from h3doctor.integrations.kubernetes_admission.judge import hardware_for
from h3doctor.lint.run import LintOptions, lint
from h3doctor.lint.targets import catalog_name, choice_name
from h3doctor.output.formats import render
from repo_paths import TESTS

REPO = TESTS / "fixtures" / "repo"


@pytest.mark.parametrize("product, memory, card", [
    ("NVIDIA-A100-SXM4", "40960", "A100-40GB"),
    ("NVIDIA-A100-SXM4", "81920", "A100"),
    ("NVIDIA-A100-PCIE", "40960", "A100-40GB"),
    ("NVIDIA-A100-SXM4-80GB", "81920", "A100"),
    ("NVIDIA-H200", "143771", "H200"),
    ("NVIDIA-H100-80GB-HBM3", "81559", "H100"),
    ("NVIDIA-A100-SXM4-80GB", "40960", None),  # the memory contradicts the product: no card for certain
    ("NVIDIA-A100-SXM4-40GB-MIG-1g.5gb", "4864", None),  # a MIG slice
    ("NVIDIA-A100-SXM4", "lots", None),
    ("NVIDIA-A100-SXM4", "0", None),
])
def test_the_memory_label_names_the_card_or_none(product, memory, card):
    assert catalog_name(product, card_memory_mib=memory) == card


def test_the_labels_are_read_beside_the_product_from_the_selector_or_required_affinity():
    spec = {"nodeSelector": {"nvidia.com/gpu.product": "NVIDIA-A100-SXM4", "nvidia.com/gpu.memory": "40960",
                             "nvidia.com/gpu.count": "4"}}
    (choice,) = gpu_choices(spec)
    assert (choice_name(choice), choice.count, labelled_count([choice])) == ("A100-40GB", 4, 4)
    affinity = {"affinity": {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [
        {"matchExpressions": [{"key": "nvidia.com/gpu.product", "operator": "In", "values": ["NVIDIA-A100-SXM4"]},
                              {"key": "nvidia.com/gpu.memory", "operator": "In", "values": ["81920"]},
                              {"key": "nvidia.com/gpu.count", "operator": "In", "values": ["4", "8"]}]}]}}}}
    (choice,) = gpu_choices(affinity)
    assert (choice_name(choice), choice.count) == ("A100", None)  # two counts allowed: no one count
    assert labelled_count(gpu_choices({"nodeSelector": {"nvidia.com/gpu.count": "8"}})) is None  # no product: no choice


def test_without_the_memory_label_a_bare_product_stays_unknown():
    (choice,) = gpu_choices({"nodeSelector": {"nvidia.com/gpu.product": "NVIDIA-A100-SXM4"}})
    assert choice_name(choice) is None


def test_the_fixture_is_judged_on_the_card_and_count_its_labels_name():
    here = os.getcwd()
    os.chdir(REPO)
    try:
        _code, report, _notes = lint(["deploy/k8s/nfd-a100.yaml"], LintOptions())
    finally:
        os.chdir(here)
    data = json.loads(render("lint", "json", report))
    (launch,) = [launch for f in data["files"] for launch in f["launches"]]
    assert [r["target"] for r in launch["results"]] == ["A100"]
    assert not [f for f in data["findings"] if f["severity"] == "error" or f["rule"] == "H3D910"]


def test_the_admission_webhook_reads_the_memory_label_too():
    obj = yaml.safe_load((REPO / "deploy/k8s/nfd-a100.yaml").read_text())
    (choice,) = gpu_choices(obj["spec"]["template"]["spec"])
    hw, unknown = hardware_for(choice, 8)
    assert unknown is None and hw.gpu_count == 8 and hw.gpu_memory_gib > 70
