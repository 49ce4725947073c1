"""Files that are not launches do not fail the job (issue 30 item 4), in the fixture repository
(tests/fixtures/repo): an application's config with a `model_path` key (app/settings.yaml), a
UTF-16 YAML (deploy/alerts.yaml), and — written here, they are large — a `package-lock.json` and a
Grafana dashboard over 1 MiB. Size and encoding limits apply to a file with a launch's shape,
which stays "not judged" (H3DL003), never passed; `--verbose` says why each other file is skipped."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from h3doctor.lint.run import LintOptions, lint
from h3doctor.output.formats import render

MIB = 1 << 20


@pytest.fixture
def repo(fixture_repo) -> Path:
    return fixture_repo


def _lint(*paths: str, **kw) -> tuple[int, dict, list[str]]:
    code, report, notes = lint(list(paths), LintOptions(**kw))
    return code, json.loads(render("lint", "json", report)), notes


def _package_lock(path: Path) -> None:
    packages = {f"node_modules/pkg-{i}": {"version": "1.0.0", "resolved": f"https://registry.npmjs.org/pkg-{i}.tgz",
                                          "integrity": "sha512-" + "A" * 86} for i in range(9000)}
    path.write_text(json.dumps({"name": "console", "lockfileVersion": 3, "packages": packages}, indent=2))
    assert path.stat().st_size > MIB


def _dashboard(path: Path) -> None:
    panels = [{"id": i, "type": "timeseries", "title": f"sglang queue {i}",
               "targets": [{"expr": f'sglang:num_queue_reqs{{pod=~"h3-.*", shard="{i}"}}' + " " * 200}]}
              for i in range(4000)]
    path.write_text(json.dumps({"annotations": {"list": []}, "panels": panels, "title": "H3 serving"}, indent=2))
    assert path.stat().st_size > MIB and b"sglang" in path.read_bytes()


def test_what_is_not_a_launch_is_skipped_quietly_and_verbose_says_why(repo):
    _package_lock(repo / "package-lock.json")
    (repo / "dashboards").mkdir()
    _dashboard(repo / "dashboards" / "h3-serving.json")
    # a bundle of CRDs has a manifest's shape; it never mentions sglang
    _over("apiVersion: v1\nkind: List\nitems: []\n", repo / "deploy" / "crds.yaml")
    named = ["app/settings.yaml", "deploy/alerts.yaml", "package-lock.json", "dashboards/h3-serving.json",
             "deploy/crds.yaml"]
    code, report, notes = _lint(*named, no_config=True, verbose=True)
    assert code == 0 and report["findings"] == []
    assert {f["path"]: f["kind"] for f in report["files"]} == dict.fromkeys(named)
    said = "\n".join(notes)
    assert "skipped package-lock.json: larger than 1 MiB" in said
    assert "skipped deploy/alerts.yaml: not UTF-8 text (UTF-16)" in said
    assert "skipped deploy/crds.yaml: larger than 1 MiB, and it does not mention sglang" in said
    assert "skipped app/settings.yaml:" in said and "skipped dashboards/h3-serving.json:" in said
    code, report, _notes = _lint(".")  # walked with the whole repository: none of them is reported
    assert not [f for f in report["findings"] if f["file"] in named]


def _over(text: str, path: Path) -> None:
    path.write_text(text + "".join(f"# padding {i:06d} " + "x" * 80 + "\n" for i in range(12000)))
    assert path.stat().st_size > MIB


def test_a_launch_over_the_limit_or_not_utf8_is_not_judged_never_passed(repo):
    manifest = (repo / "deploy" / "k8s" / "deployment.yaml").read_text()
    _over(manifest, repo / "deploy" / "k8s" / "big.yaml")
    (repo / "deploy" / "k8s" / "late.yaml").write_text("")
    _over("", repo / "deploy" / "k8s" / "late.yaml")  # the launch after its first MiB: no shape to tell by
    with (repo / "deploy" / "k8s" / "late.yaml").open("a") as fh:
        fh.write(manifest)
    (repo / "deploy" / "utf16.yaml").write_bytes(manifest.encode("utf-16"))
    code, report, _notes = _lint("deploy/k8s/big.yaml", "deploy/k8s/late.yaml", "deploy/utf16.yaml")
    errors = {f["file"]: f["message"] for f in report["findings"] if f["rule"] == "H3DL003"}
    assert set(errors) == {"deploy/k8s/big.yaml", "deploy/k8s/late.yaml", "deploy/utf16.yaml"}
    assert "a kubernetes file; not judged" in errors["deploy/k8s/big.yaml"]
    assert "UTF-16" in errors["deploy/utf16.yaml"] and code == 1


def test_an_sglang_config_even_misspelt_is_still_read_as_one(repo):
    (repo / "configs" / "typo.yaml").write_text("model_path: MiniMaxAI/MiniMax-H3\nnum_gpu: 4\nulysses_degre: 4\n"
                                               "attention_backend: fa\n")
    _code, report, _notes = _lint("configs/server.yaml", "configs/typo.yaml", "app/settings.yaml")
    kinds = {f["path"]: f["kind"] for f in report["files"]}
    assert kinds == {"configs/server.yaml": "sglang-config", "configs/typo.yaml": "sglang-config",
                     "app/settings.yaml": None}
