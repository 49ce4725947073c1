"""Launches in containers: `docker|podman|nerdctl run … IMAGE COMMAND`, what the container sees
(GPUs, environment), the cookbook's `bash -lc '… "$@"' -- FLAGS` form, and the image's tag as the
sglang release — in check, lint's shell reader, Kubernetes and compose, and the JSON/SARIF reports."""

from __future__ import annotations

import json
import os
import shlex
import subprocess
import sys
import textwrap
from importlib import resources
from pathlib import Path

import jsonschema
import pytest

from h3doctor.errors import UsageError
from h3doctor.lint.config import LintConfig
from h3doctor.lint.session import LintSession
from h3doctor.request import CheckRequest, run
from h3doctor.sglang import container_run
from h3doctor.sglang.container_run import read_container_run, read_env_file
from h3doctor.sglang.images import image_release
from h3doctor.sglang.launch_forms import read_launch_form
from repo_paths import REPO


# sglang's install guide ("Method 3: Using Docker"), the shape as published
DOCS = ("docker run --gpus all --shm-size 32g -p 30000:30000 -v hf-cache:/cache/huggingface "
        '--env "HF_TOKEN=secret" --ipc=host {image} ')
# the MiniMax-H3 cookbook's Docker path: the diffusion extra installed, the flags handed to the shell
COOKBOOK = ("docker run --gpus all --shm-size 64g -p 30010:30010 -v /models:/mnt/models/MiniMax-H3 "
            '--env "HF_TOKEN=secret" --ipc=host {image} bash -lc \'python -m pip install -e '
            '"/sgl-workspace/sglang/python[diffusion]" && exec sglang serve "$@"\' -- ')
H3 = "--model-path MiniMaxAI/MiniMax-H3 --num-gpus 4"


def check(command: str, profile: str = "4xH200", **kw):
    outcome = run(CheckRequest(tokens=shlex.split(command), profile=profile, **kw))
    return outcome.result


def ids(result) -> list[str]:
    """The findings, less H3D403's "cannot verify" that every launch in sglang's image has (its
    Dockerfile's ffmpeg is not known: tests/sglang/test_container_facts.py holds that)."""
    return [f.rule.id for f in result.evaluation.findings
            if not (f.rule.id == "H3D403" and f.cannot_verify and "hw.ffmpeg" in f.unknown_facts)]


# --- the runtimes' grammar --------------------------------------------------------------------

def test_the_docs_launch_finds_the_image_and_the_command():
    tokens = shlex.split(DOCS.format(image="lmsysorg/sglang:v0.5.23") + "sglang serve " + H3)
    runc = read_container_run(tokens)
    assert tokens[runc.image_index] == "lmsysorg/sglang:v0.5.23" and tokens[runc.command_start] == "sglang"
    assert runc.environment({"HF_TOKEN": "caller's", "PATH": "/bin"}) == {"HF_TOKEN": "secret"}
    form = read_launch_form(tokens)
    assert form.container == runc and tokens[form.prefix_len:] == shlex.split(H3)


@pytest.mark.parametrize("runtime", ["docker", "podman", "nerdctl", "/usr/bin/docker"])
def test_short_clusters_attached_values_and_boolean_values(runtime):
    tokens = [runtime, "run", "-it", "--rm=false", "-eA=1", "-p8080:80", "-dv", "/x:/y", "--name=h3",
              "lmsysorg/sglang:v0.5.23", "sglang", "serve", "M"]
    runc = read_container_run(tokens)
    assert runc.image_index == 9 and runc.environment({}) == {"A": "1"}


@pytest.mark.parametrize("tokens,word", [
    (["docker", "run", "--frobnicate", "img", "sglang", "serve", "M"], "--frobnicate"),
    (["docker", "run", "-Z", "img", "sglang", "serve", "M"], "-Z"),
    (["docker", "run", "--env-host", "img", "sglang", "serve", "M"], "--env-host"),  # podman's, not docker's
    (["nerdctl", "run", "--pod", "p", "img", "sglang", "serve", "M"], "--pod"),
])
def test_an_unknown_option_is_a_usage_error_naming_it(tokens, word):
    with pytest.raises(UsageError) as exc:
        read_launch_form(tokens)
    assert f"`{os.path.basename(tokens[0])} run {word}`" in exc.value.message


@pytest.mark.parametrize("tokens,says", [
    (["docker", "run", "--gpus"], "needs a value"),
    (["docker", "run", "--rm"], "names no image"),
    (["docker", "run", "img"], "image's own command"),
    (["docker", "run", "--entrypoint", "sglang serve", "img", "M"], "one program"),  # docker execs it as one name
    (["podman", "run", "--entrypoint", '["sglang", "serve"]', "img", "M"], "one program"),
    (["docker", "run", "--entrypoint", "/entrypoint.sh", "img", "sglang", "serve", "M"], "/entrypoint.sh"),
    (["docker", "run", "img", "bash", "-lc", "sglang serve --num-gpus 4"], "must end in"),
    (["docker", "run", "img", "bash", "-lc", 'echo "$@"', "--", "--num-gpus", "4"], "runs no sglang"),
    (["docker", "run", "img", "redis-server"], "redis-server"),
    (["docker", "run", "img", "FOO=1", "sglang", "serve", "M"], "-e NAME=value"),
    (["docker", "run", "img", "exec", "sglang", "serve", "M"], "as a program"),
])
def test_what_is_not_read_says_why(tokens, says):
    with pytest.raises(UsageError) as exc:
        read_launch_form(tokens)
    assert says in exc.value.message


def test_podman_env_host_passes_the_callers_environment():
    runc = read_container_run(["podman", "run", "--env-host", "-e", "B=2", "img", "sglang", "serve", "M"])
    assert runc.environment({"A": "1"}) == {"A": "1", "B": "2"}


# --- what the container sees ------------------------------------------------------------------

@pytest.mark.parametrize("options,count", [
    (["--gpus", "all"], None),
    (["--gpus", "2"], 2),
    (["--gpus", '"device=0,1"'], 2),  # the shell's '"device=0,1"': docker's CSV quoting
    (["--gpus", '"device=GPU-3a23c669-1f69-c64e-cf85-44e9b07e7a2a"'], 1),
    (["--gpus", "count=3,capabilities=compute"], 3),
    (["--device", "nvidia.com/gpu=all"], None),
    (["--device", "nvidia.com/gpu=0", "--device", "nvidia.com/gpu=1"], 2),
    (["-e", "NVIDIA_VISIBLE_DEVICES=0,1,2"], 3),
    (["-e", "NVIDIA_VISIBLE_DEVICES=none"], 0),
    ([], None),
])
def test_the_gpu_grant(options, count):
    runc = read_container_run(["docker", "run", *options, "img", "sglang", "serve", "M"])
    assert runc.gpu_count({}) == count


@pytest.mark.parametrize("value", ["some", "device=0,1"])  # docker reads device=0,1 as two CSV fields: `1` is no key
def test_a_gpu_request_docker_refuses_is_a_usage_error(value):
    with pytest.raises(UsageError, match="--gpus"):
        read_container_run(["docker", "run", "--gpus", value, "img", "sglang", "serve", "M"])


def test_the_grant_caps_the_gpus_and_the_fix_keeps_every_docker_word():
    command = "docker run --gpus '\"device=0,1\"' --ipc=host lmsysorg/sglang:v0.5.23 sglang serve " + H3
    result = check(command, "8xH200")
    assert result.evaluation.hardware.gpu_count == 2 and "H3D109" in ids(result)
    assert result.corrected_argv == shlex.split(command.replace("--num-gpus 4", "--num-gpus 2"))


def test_the_environment_is_the_containers_not_the_callers(tmp_path, monkeypatch):
    env_file = tmp_path / "h3.env"
    env_file.write_text("# comment\n\nA=from-file\nB=from-file\nFROM_CALLER\n")
    monkeypatch.setenv("FROM_CALLER", "caller")
    monkeypatch.setenv("NOT_PASSED", "caller")
    runc = read_container_run(["docker", "run", "--env-file", str(env_file), "-e", "B=option", "-e", "MISSING",
                               "img", "sglang", "serve", "M"])
    assert runc.environment(dict(os.environ)) == {"A": "from-file", "B": "option", "FROM_CALLER": "caller"}


PLANS = "SGLANG_DIFFUSION_MINIMAX_H3_ADALN_GPU_PLANS"
ADALN = "lmsysorg/sglang:v0.5.23 sglang serve " + H3 + " --minimax-h3-adaln-online"


def test_the_container_environment_reaches_the_rules_and_the_fix_edits_it(monkeypatch, tmp_path):
    monkeypatch.setenv(PLANS, "0")  # the caller's: the container does not see it
    assert ids(check("docker run --gpus all --ipc=host " + ADALN)) == []
    given = check(f"docker run --gpus all --ipc=host -e {PLANS}=0 " + ADALN)
    assert "H3D512" in ids(given)
    assert given.corrected_argv == shlex.split(f"docker run --gpus all --ipc=host -e {PLANS}=64 " + ADALN)
    passed = check(f"docker run --gpus all --ipc=host -e {PLANS} " + ADALN)  # -e NAME: the caller's value
    assert passed.corrected_argv == shlex.split(f"docker run --gpus all --ipc=host -e {PLANS}=64 " + ADALN)
    env_file = tmp_path / "h3.env"
    env_file.write_text(f"{PLANS}=0\n")
    from_file = check(f"docker run --gpus all --ipc=host --env-file {env_file} " + ADALN)
    assert from_file.corrected_argv == shlex.split(f"docker run --gpus all --ipc=host --env-file {env_file} -e {PLANS}=64 " + ADALN)


def test_an_env_file_is_read_within_limits(tmp_path, monkeypatch):
    with pytest.raises(UsageError):
        read_env_file(str(tmp_path))  # a directory
    big = tmp_path / "big.env"
    big.write_text("A=" + "x" * 100 + "\n")
    monkeypatch.setattr(container_run, "ENV_FILE_MAX_BYTES", 50)
    with pytest.raises(UsageError):
        read_env_file(str(big))
    bad = tmp_path / "bad.env"
    bad.write_text("SECRET CONTENT\n")
    monkeypatch.setattr(container_run, "ENV_FILE_MAX_BYTES", 1 << 20)
    with pytest.raises(UsageError, match="line 1") as exc:
        read_env_file(str(bad))
    assert "SECRET" not in exc.value.message  # a pasted line may name any file: its content is never quoted
    fifo = tmp_path / "fifo.env"
    os.mkfifo(fifo)
    with pytest.raises(UsageError, match="not a regular file"):
        read_env_file(str(fifo))  # would wait for a writer forever


def test_the_docs_llm_launcher_in_a_container_is_corrected_inside_it():
    command = DOCS.format(image="lmsysorg/sglang:v0.5.23") + "python3 -m sglang.launch_server " + H3
    result = check(command)
    assert "H3D040" in ids(result)
    assert result.corrected_argv == shlex.split(command.replace("python3 -m sglang.launch_server", "sglang serve"))


# --- the cookbook's bash -lc form ------------------------------------------------------------

def test_the_cookbook_form_reads_the_scripts_arguments_as_sglangs_flags():
    tokens = shlex.split(COOKBOOK.format(image="lmsysorg/sglang:v0.5.23") + H3)
    form = read_launch_form(tokens)
    assert tokens[form.prefix_len:] == shlex.split(H3) and form.entry == "serve"


def test_the_cookbook_form_on_an_older_image_fails_and_the_fix_keeps_the_script():
    command = COOKBOOK.format(image="lmsysorg/sglang:v0.5.19-cu129") + H3 + " --enable-metrics"
    result = check(command)
    assert "H3D012" in ids(result) and result.evaluation.context["release.source"] == "image"
    assert result.corrected_argv == shlex.split(command)[:-1]  # only --enable-metrics goes


def test_the_cookbook_launch_on_the_dev_image_is_judged_as_newest_with_a_warning():
    result = check(COOKBOOK.format(image="lmsysorg/sglang:dev")
                   + "--model-path /mnt/models/MiniMax-H3 --num-gpus 2 --model-variant fl2va", "2xH200")
    assert result.evaluation.context["release.table"] == "0.5.23" and "H3D920" in ids(result)


# --- the image tag is the release -------------------------------------------------------------

@pytest.mark.parametrize("image,kind,version", [
    ("lmsysorg/sglang:v0.5.19", "release", "0.5.19"),
    ("lmsysorg/sglang:v0.5.19-cu129", "release", "0.5.19"),
    ("lmsysorg/sglang:0.5.22-rocm700-mi30x", "release", "0.5.22"),
    ("docker.io/lmsysorg/sglang:v0.5.21", "release", "0.5.21"),
    ("registry.example.com:5000/lmsysorg/sglang:v0.5.20-cu129@sha256:" + "a" * 64, "release", "0.5.20"),
    ("lmsysorg/sglang:latest", "latest", None),
    ("lmsysorg/sglang", "latest", None),
    ("lmsysorg/sglang:dev", "dev", None),
    ("lmsysorg/sglang:nightly", "dev", None),
    ("lmsysorg/sglang:dev-cu13-minimax", "dev", None),
    ("lmsysorg/sglang:blackwell", "unmapped", None),
    ("example.org/team/h3-server:0.5.19", "foreign", None),
    ("sglang:v0.5.19", "foreign", None),
])
def test_image_tags(image, kind, version):
    found = image_release(image)
    assert (found.kind, found.version) == (kind, version)


def test_a_digest_is_noted():
    assert image_release("lmsysorg/sglang:v0.5.23@sha256:" + "b" * 64).digest == "sha256:" + "b" * 64


@pytest.mark.parametrize("form", [DOCS, COOKBOOK])
def test_the_release_from_the_tag_changes_the_verdict(form):
    old = check(form.format(image="lmsysorg/sglang:v0.5.19-cu129")
                + ("sglang serve " if form is DOCS else "") + H3 + " --enable-metrics")
    new = check(form.format(image="lmsysorg/sglang:v0.5.23")
                + ("sglang serve " if form is DOCS else "") + H3 + " --enable-metrics")
    assert "H3D012" in ids(old) and old.evaluation.context["release.version"] == "0.5.19"
    # the cookbook's script installs a package before sglang: named (H3D960), as any other command is
    assert ids(new) == ([] if form is DOCS else ["H3D960"]) and new.evaluation.context["release.source"] == "image"


def test_sglang_version_wins_over_the_image():
    result = check(DOCS.format(image="lmsysorg/sglang:v0.5.19") + "sglang serve " + H3 + " --enable-metrics",
                   sglang_version="0.5.23")
    assert ids(result) == [] and result.evaluation.context["release.source"] == "option"


@pytest.mark.parametrize("image,rule,says", [
    ("lmsysorg/sglang:latest", "H3D922", "moves"),
    ("lmsysorg/sglang:dev", "H3D920", "lmsysorg/sglang:dev"),
    ("example.org/team/h3-server:1.0", "H3D922", "cannot verify"),
    ("lmsysorg/sglang:blackwell", "H3D922", "cannot verify"),
])
def test_tags_that_do_not_pin_a_release(image, rule, says):
    result = check(DOCS.format(image=image) + "sglang serve " + H3)
    found = [f for f in result.evaluation.findings if f.rule.id == rule]
    assert found and says in found[0].message and image in found[0].message
    assert result.evaluation.context["release.version"] == "0.5.23"


def test_a_foreign_image_with_sglang_version_is_judged_quietly():
    result = check(DOCS.format(image="example.org/team/h3-server:1.0") + "sglang serve " + H3, sglang_version="0.5.23")
    # what an image that is not sglang's installs is not known: its ffmpeg and kernels cannot be verified
    assert all(f.cannot_verify for f in result.evaluation.findings) and "H3D613" in ids(result)


def test_the_hooks_fast_path_answers_a_clean_container_launch():
    from h3doctor.entry import hook_fast_path

    words = shlex.split(DOCS.format(image="lmsysorg/sglang:v0.5.23") + "sglang serve " + H3)
    # sglang's docs' line: sglang's image has ffmpeg on PATH, the container /dev/shm room (--ipc=host)
    assert hook_fast_path(["check", "--hook", "--profile", "4xH200", "--", *words]) == 0
    # the same launch in docker's 64 MiB /dev/shm fails (H3D415): the fast path leaves it to the CLI
    bare = ["docker", "run", "--gpus", "all", "lmsysorg/sglang:v0.5.23", "sglang", "serve", *H3.split()]
    assert hook_fast_path(["check", "--hook", "--profile", "4xH200", "--", *bare]) is None
    assert hook_fast_path(["check", "--hook", "--profile", "4xH200", "--", "sglang", "serve", *H3.split()]) == 0
    failing = shlex.split(DOCS.format(image="lmsysorg/sglang:v0.5.19") + "sglang serve " + H3 + " --enable-metrics")
    assert hook_fast_path(["check", "--hook", "--profile", "4xH200", "--", *failing]) is None  # the CLI reports it


# --- reports ----------------------------------------------------------------------------------

def _cli(*args: str, cwd=None) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if not k.startswith("SGLANG_")}
    return subprocess.run([sys.executable, "-m", "h3doctor", *args], capture_output=True, text=True, env=env,
                          cwd=cwd or REPO, timeout=120)


def test_the_json_report_says_the_release_came_from_the_image():
    proc = _cli("check", "--profile", "4xH200", "--format", "json", "--",
                *shlex.split(DOCS.format(image="lmsysorg/sglang:v0.5.19-cu129") + "sglang serve " + H3
                             + " --enable-metrics"))
    assert proc.returncode == 1, proc.stderr
    data = json.loads(proc.stdout)
    schema = json.loads(resources.files("h3doctor.schema").joinpath("report.schema.json").read_text())
    jsonschema.validate(data, schema)
    assert (data["sglang_version"], data["sglang_version_source"]) == ("0.5.19", "image")


def test_check_sarif_carries_the_release():
    proc = _cli("check", "--profile", "4xH200", "--format", "sarif", "--",
                *shlex.split(DOCS.format(image="lmsysorg/sglang:v0.5.19-cu129") + "sglang serve " + H3
                             + " --enable-metrics"))
    assert proc.returncode == 1, proc.stderr
    found = next(r for r in json.loads(proc.stdout)["runs"][0]["results"] if r["ruleId"] == "H3D012")
    assert (found["properties"]["sglangVersion"], found["properties"]["sglangVersionSource"]) == ("0.5.19", "image")


# --- lint: shell scripts, Kubernetes, compose -----------------------------------------------

def _lint(path: Path, target: str = "4xH200") -> tuple[LintSession, object]:
    session = LintSession(LintConfig(), cli_targets=(target,))
    return session, session.run([str(path)])


def _write(tmp_path: Path, name: str, text: str) -> Path:
    path = tmp_path / name
    path.write_text(textwrap.dedent(text), encoding="utf-8")
    return path


def test_a_shell_script_reads_docker_launches_and_passes_other_containers(tmp_path):
    script = _write(tmp_path, "serve.sh", f"""\
        #!/bin/bash
        export HF_TOKEN=abc
        docker ps
        docker run redis
        docker run --gpus 2 -e HF_TOKEN --ipc=host lmsysorg/sglang:v0.5.19-cu129 \\
          sglang serve {H3} --enable-metrics
        {COOKBOOK.format(image="lmsysorg/sglang:v0.5.23")}{H3} --enable-metrics
        """)
    _session, result = _lint(script, "8xH200")
    launches = result.files[0].launches
    assert [(la.pos.line, la.image, la.gpu_count) for la in launches] == [
        (5, "lmsysorg/sglang:v0.5.19-cu129", 2), (7, "lmsysorg/sglang:v0.5.23", None)]
    assert launches[0].env == {"HF_TOKEN": "abc"}
    first = [r.rule for r in result.records if r.launch == "line 5"]
    assert "H3D012" in first and "H3D910" in first  # 0.5.19 lacks the flag; 2 GPUs granted, 4 asked for
    assert not [r for r in result.records if r.launch == "line 7" and r.severity == "error"]
    rec = next(r for r in result.records if r.rule == "H3D012")
    assert (rec.sglang_version, rec.sglang_version_source) == ("0.5.19", "image")


K8S = """\
    apiVersion: apps/v1
    kind: Deployment
    metadata: {{name: h3}}
    spec:
      template:
        spec:
          containers:
            - name: server
              image: {image}
              command: ["sglang", "serve"]
              args: ["--model-path", "MiniMaxAI/MiniMax-H3", "--num-gpus", "4", "--enable-metrics"]
              resources: {{limits: {{nvidia.com/gpu: 4}}}}
              readinessProbe: {{httpGet: {{path: /health, port: 30000}}}}  # probes: tests/lint/test_lint_probes.py
              volumeMounts: [{{name: dshm, mountPath: /dev/shm}}]  # the ranks' /dev/shm (H3D415)
          volumes: [{{name: dshm, emptyDir: {{medium: Memory, sizeLimit: 16Gi}}}}]
    """
COMPOSE = """\
    services:
      h3:
        image: {image}
        command: ["sglang", "serve", "--model-path", "MiniMaxAI/MiniMax-H3", "--num-gpus", "4", "--enable-metrics"]
        deploy:
          resources:
            reservations:
              devices:
                - {{driver: nvidia, count: 4, capabilities: [gpu]}}
        shm_size: 16gb  # the ranks' /dev/shm (H3D415)
    """


@pytest.mark.parametrize("name,text", [("deploy.yaml", K8S), ("compose.yaml", COMPOSE)])
def test_kubernetes_and_compose_judge_the_images_release(tmp_path, name, text):
    old = _write(tmp_path, name, text.format(image="lmsysorg/sglang:v0.5.19-cu129"))
    _session, result = _lint(old, "H200")
    rec = next(r for r in result.records if r.rule == "H3D012")
    assert (rec.sglang_version, rec.sglang_version_source) == ("0.5.19", "image")
    new = _write(tmp_path, name, text.format(image="lmsysorg/sglang:v0.5.23"))
    _session, result = _lint(new, "H200")
    assert [r.rule for r in result.records] == []
    latest = _write(tmp_path, name, text.format(image="lmsysorg/sglang:latest"))
    _session, result = _lint(latest, "H200")
    assert [r.rule for r in result.records] == ["H3D922"]


def test_lint_sarif_carries_the_release(tmp_path):
    manifest = _write(tmp_path, "deploy.yaml", K8S.format(image="lmsysorg/sglang:v0.5.19-cu129"))
    proc = _cli("lint", "--target", "H200", "--format", "sarif", str(manifest), cwd=tmp_path)
    assert proc.returncode == 1, proc.stderr
    results = json.loads(proc.stdout)["runs"][0]["results"]
    found = next(r for r in results if r["ruleId"] == "H3D012")
    assert (found["properties"]["sglangVersion"], found["properties"]["sglangVersionSource"]) == ("0.5.19", "image")


# --- "Must show": the image's release changes the verdict in every place the image is read -----
# (--enable-metrics was added in 0.5.21: a 0.5.19 image exits with `unrecognized arguments`)

# where each input puts `--enable-metrics` (line, the text it starts), so every finding is located
EVERYWHERE = {
    # the install guide's docker run line in a shell script
    "serve.sh": ("""\
        #!/bin/bash
        docker run --gpus all --shm-size 32g -p 30000:30000 -v hf-cache:/cache/huggingface \\
          --env "HF_TOKEN=secret" --ipc=host {image} \\
          sglang serve --model-path MiniMaxAI/MiniMax-H3 --num-gpus 4 --enable-metrics
        """, 4),
    "deploy.yaml": (K8S, 11),
    "compose.yaml": ("""\
        services:
          sglang:
            image: {image}
            entrypoint: sglang serve
            command: --model-path MiniMaxAI/MiniMax-H3 --num-gpus 4 --enable-metrics
            environment:
              HF_TOKEN: secret
            deploy: {{resources: {{reservations: {{devices: [{{driver: nvidia, count: 4, capabilities: [gpu]}}]}}}}}}
            ipc: host
        """, 5),
    # multi-stage: the CMD runs in the final stage, whose image is the one given; the builder's is not it
    "Dockerfile": ("""\
        FROM lmsysorg/sglang:v0.5.23 AS weights
        RUN echo fetch
        FROM {image}
        COPY --from=weights /models /models
        CMD ["sglang", "serve", "--model-path", "MiniMaxAI/MiniMax-H3", "--num-gpus", "4", "--enable-metrics"]
        """, 5),
    # multi-stage the other way: the final stage is built FROM a named stage and runs in its image
    "gpu.Dockerfile": ("""\
        FROM {image} AS runtime
        ENV HF_HOME=/models
        FROM lmsysorg/sglang:v0.5.23 AS unrelated
        FROM runtime
        CMD sglang serve --model-path MiniMaxAI/MiniMax-H3 --num-gpus 4 --enable-metrics
        """, 5),
}


def _everywhere(tmp_path: Path, image: str) -> Path:
    for name, (text, _line) in EVERYWHERE.items():
        _write(tmp_path, name, text.format(image=image))
    return tmp_path


def test_every_place_an_image_is_read_judges_its_release_in_json(tmp_path):
    from tests.lint.test_lint import lint_json

    _everywhere(tmp_path, "lmsysorg/sglang:v0.5.19-cu129")
    code, report = lint_json("--no-config", "--target", "4xH200", ".", cwd=tmp_path)
    assert code == 1
    kinds = {f["path"].rsplit("/", 1)[-1]: f["kind"] for f in report["files"]}
    assert kinds == {"serve.sh": "shell", "deploy.yaml": "kubernetes", "compose.yaml": "compose",
                     "Dockerfile": "dockerfile", "gpu.Dockerfile": "dockerfile"}
    errors = [f for f in report["findings"] if f["severity"] == "error"]
    found = {(f["file"].rsplit("/", 1)[-1], f["rule"], f["line"], f["sglang_version"], f["sglang_version_source"])
             for f in errors}
    assert found == {(name, "H3D012", line, "0.5.19", "image") for name, (_t, line) in EVERYWHERE.items()}
    assert len(errors) == 5 and all(f["message"] == "error: unrecognized arguments: --enable-metrics" for f in errors)
    # the rest says what 0.5.19 lets h3doctor not verify (H3D921; the memory fit: H3D544, or H3D640 when
    # a warmup bound is over capacity): warnings only
    assert {f["rule"] for f in report["findings"] if f["severity"] != "error"} <= {"H3D921", "H3D544", "H3D640"}
    for f in errors:  # at the flag's own column
        text = (tmp_path / f["file"]).read_text().splitlines()[f["line"] - 1]
        assert text[f["col"] - 1:].lstrip('"').startswith("--enable-metrics"), (f["file"], text)
    _everywhere(tmp_path, "lmsysorg/sglang:v0.5.23")
    code, report = lint_json("--no-config", "--target", "4xH200", ".", cwd=tmp_path)
    # each is judged by its container's facts: sglang's image has ffmpeg on PATH, each container shm room
    assert code == 0 and report["findings"] == []
    launches = [la for f in report["files"] for la in f["launches"]]
    assert len(launches) == 5 and all(r["sglang_version"] == "0.5.23" and r["sglang_version_source"] == "image"
                                      for la in launches for r in la["results"])


def test_every_place_an_image_is_read_carries_it_into_sarif(tmp_path):
    _everywhere(tmp_path, "lmsysorg/sglang:v0.5.19-cu129")
    proc = _cli("lint", "--no-config", "--target", "4xH200", "--format", "sarif", ".", cwd=tmp_path)
    assert proc.returncode == 1, proc.stderr
    results = [r for r in json.loads(proc.stdout)["runs"][0]["results"] if r["level"] == "error"]
    assert sorted((r["locations"][0]["physicalLocation"]["artifactLocation"]["uri"].rsplit("/", 1)[-1],
                   r["locations"][0]["physicalLocation"]["region"]["startLine"], r["ruleId"],
                   r["properties"]["sglangVersion"], r["properties"]["sglangVersionSource"]) for r in results) == sorted(
        (name, line, "H3D012", "0.5.19", "image") for name, (_t, line) in EVERYWHERE.items())


# --- --entrypoint, and the script's positional parameters ------------------------------------------

@pytest.mark.parametrize("option", ["--entrypoint sglang", "--entrypoint=sglang"])
def test_an_entrypoint_is_the_commands_first_word(option):
    command = f"docker run --gpus all --ipc=host {option} lmsysorg/sglang:v0.5.19-cu129 serve {H3} --enable-metrics"
    result = check(command)
    assert "H3D012" in ids(result) and result.evaluation.context["release.source"] == "image"
    assert result.corrected_argv == shlex.split(command)[:-1]  # only --enable-metrics goes
    assert ids(check(command.replace("v0.5.19-cu129", "v0.5.23"))) == []
    granted = check(f"docker run --gpus 2 --ipc=host {option} lmsysorg/sglang:v0.5.23 serve {H3}")
    assert "H3D109" in ids(granted) and granted.corrected_argv == shlex.split(
        f"docker run --gpus 2 --ipc=host {option} lmsysorg/sglang:v0.5.23 serve {H3}".replace("--num-gpus 4", "--num-gpus 2"))


@pytest.mark.parametrize("option,fixed", [("--entrypoint python3", "--entrypoint sglang"),
                                          ("--entrypoint=python3", "--entrypoint=sglang")])
def test_the_llm_launcher_as_an_entrypoint_is_corrected_in_the_entrypoint(option, fixed):
    command = f"docker run --gpus all --ipc=host {option} lmsysorg/sglang:v0.5.23 -m sglang.launch_server {H3}"
    result = check(command)
    assert ids(result) == ["H3D040"]
    assert result.corrected_argv == shlex.split(
        f"docker run --gpus all --ipc=host {fixed} lmsysorg/sglang:v0.5.23 serve {H3}")


def test_a_bash_entrypoint_with_the_cookbook_script_and_a_cleared_entrypoint():
    cookbook = ("docker run --gpus all --ipc=host --entrypoint bash {image} -lc 'python -m pip install -e "
                '"/sgl-workspace/sglang/python[diffusion]" && exec sglang serve "$@"\' -- ' + H3 + " --enable-metrics")
    old = check(cookbook.format(image="lmsysorg/sglang:v0.5.19-cu129"))
    assert "H3D012" in ids(old)
    assert old.corrected_argv == shlex.split(cookbook.format(image="lmsysorg/sglang:v0.5.19-cu129"))[:-1]
    assert ids(check(cookbook.format(image="lmsysorg/sglang:v0.5.23"))) == ["H3D960"]  # pip install runs too
    cleared = check(f'docker run --gpus all --entrypoint "" lmsysorg/sglang:v0.5.19-cu129 sglang serve {H3} --enable-metrics')
    assert "H3D012" in ids(cleared)


def test_positional_parameters_are_bound_to_the_lines_words():
    from h3doctor.sglang.container_run import bind_positional

    args = [f"a{n}" for n in range(1, 11)]
    assert bind_positional("$1-${10}-$#-$0", args, "h3") == "a1-a10-10-h3"
    with pytest.raises(UsageError, match=r"\$\{11\}"):
        bind_positional("${11}", args, "h3")


def test_an_export_from_a_positional_parameter_reaches_the_rules_and_the_fix_edits_the_argument():
    script = f"bash -lc 'export {PLANS}=$1; shift; exec sglang serve \"$@\"'"
    command = f"docker run --gpus all --ipc=host lmsysorg/sglang:v0.5.23 {script} -- 0 {H3} --minimax-h3-adaln-online"
    result = check(command)
    assert ids(result) == ["H3D512"]
    assert result.corrected_argv == shlex.split(command.replace(" -- 0 ", " -- 64 "))  # the argument, not a new -e
    assert ids(check(command.replace(" -- 0 ", " -- 64 "))) == []


@pytest.mark.parametrize("script,args,says", [
    (f"export {PLANS}=$3; exec sglang serve \"$@\"", "--num-gpus 4", "reads $3, but the line gives it 2"),
    ("shift 3; exec sglang serve \"$@\"", "--num-gpus 4", "shifts past"),
    ("exec sglang serve --model-path \"$1\" \"$@\"", "M --num-gpus 4", "'$1' in front of"),
    ("exec sglang serve \"$*\"", "--num-gpus 4", '"$*", every flag as one word'),
    ("exec sglang serve $@", "--model-path '/my models/h3'", "splits the argument '/my models/h3'"),
    (f"export {PLANS}=$HOME; exec sglang serve \"$@\"", "--num-gpus 4", f"sets {PLANS} from '$HOME'"),
])
def test_what_a_script_leaves_unknown_is_a_usage_error_naming_it(script, args, says):
    with pytest.raises(UsageError) as exc:
        read_launch_form(shlex.split(f"docker run img bash -lc {shlex.quote(script)} -- {args}"))
    assert says in exc.value.message


def test_lint_reads_an_entrypoint_line_in_a_script(tmp_path):
    script = _write(tmp_path, "serve.sh", f"""\
        #!/bin/bash
        docker run --gpus all --ipc=host --entrypoint python3 lmsysorg/sglang:v0.5.19-cu129 \\
          -m sglang.launch_server {H3} --enable-metrics
        """)
    _session, result = _lint(script)
    text = script.read_text().splitlines()
    assert sorted((r.rule, r.location.line, r.location.column) for r in result.records if r.severity == "error") == [
        ("H3D012", 3, text[2].index("--enable-metrics") + 1),
        ("H3D040", 2, text[1].index("--entrypoint") + 1)]  # the option whose value the fix changes


# --- the published launches as lint fixtures, every finding at its line ---------------------------

# sglang's install guide ("Method 3: Using Docker") and the MiniMax-H3 cookbook's Docker path, as
# a script would keep them (the cookbook's form on a CUDA 12 image, with a flag 0.5.19 lacks; the
# Hugging Face cache mounted at a short container path instead of the docs' one under root's home)
PUBLISHED_SCRIPT = """\
    #!/bin/bash
    # sglang's install guide, "Method 3: Using Docker"
    docker run --gpus all --shm-size 32g -p 30000:30000 -v ~/.cache/huggingface:/hf-cache \\
      --env "HF_TOKEN=<secret>" --ipc=host lmsysorg/sglang:latest \\
      python3 -m sglang.launch_server --model-path MiniMaxAI/MiniMax-H3 --host 0.0.0.0 --port 30000
    # the MiniMax-H3 cookbook's Docker path
    docker run --gpus all --shm-size 64g -p 30010:30010 -v /models:/mnt/models/MiniMax-H3 \\
      --env "HF_TOKEN=<secret>" --ipc=host lmsysorg/sglang:v0.5.19-cu129 \\
      bash -lc 'python -m pip install -e "/sgl-workspace/sglang/python[diffusion]" && exec sglang serve "$@"' -- \\
      --model-path /mnt/models/MiniMax-H3 --num-gpus 2 --model-variant fl2va --enable-metrics
    """
# sglang's repository docker/compose.yaml (its model swapped for MiniMax-H3): entrypoint and command joined
PUBLISHED_COMPOSE = """\
    services:
      sglang:
        image: lmsysorg/sglang:latest
        container_name: sglang
        volumes:
          - ${HOME}/.cache/huggingface:/hf-cache
        restart: always
        network_mode: host
        privileged: true
        environment:
          HF_TOKEN: <secret>
        entrypoint: python3 -m sglang.launch_server
        command: --model-path MiniMaxAI/MiniMax-H3
          --host 0.0.0.0
          --port 30000
        ulimits:
          memlock: -1
          stack: 67108864
        ipc: host
        deploy:
          resources:
            reservations:
              devices:
                - driver: nvidia
                  device_ids: ["0"]
                  capabilities: [gpu]
    """


def test_the_published_docker_and_compose_launches_in_lint(tmp_path):
    from tests.lint.test_lint import lint_json, run as run_cli

    script = _write(tmp_path, "serve.sh", PUBLISHED_SCRIPT)
    compose = _write(tmp_path, "compose.yaml", PUBLISHED_COMPOSE)
    code, report = lint_json("--no-config", "--target", "2xH200", ".", cwd=tmp_path)
    assert code == 1
    launches = {(f["path"].rsplit("/", 1)[-1], la["line"], la["image"], la["gpu_count"])
                for f in report["files"] for la in f["launches"]}
    assert launches == {("serve.sh", 3, "lmsysorg/sglang:latest", None),
                        ("serve.sh", 7, "lmsysorg/sglang:v0.5.19-cu129", None),
                        ("compose.yaml", 12, "lmsysorg/sglang:latest", 1)}  # device_ids ["0"]: one GPU
    found = sorted((f["file"].rsplit("/", 1)[-1], f["line"], f["col"], f["rule"])
                   for f in report["findings"] if f["rule"] not in ("H3D921", "H3D540", "H3D640", "H3D544"))
    assert found == [
        ("compose.yaml", 3, 12, "H3D922"),  # `latest` moves: at the service's image: value
        ("compose.yaml", 12, 17, "H3D040"),  # the LLM launcher in the entrypoint
        ("serve.sh", 4, 40, "H3D922"),  # at docker run's IMAGE
        ("serve.sh", 5, 3, "H3D040"),  # at `python3`
        ("serve.sh", 7, 1, "H3D960"),  # the cookbook's script runs `pip install` before sglang
        ("serve.sh", 10, 74, "H3D012"),  # the cookbook's flags on the 0.5.19 image: --enable-metrics
    ]
    assert (script.read_text().splitlines()[9][73:], compose.read_text().splitlines()[11][16:]) == (
        "--enable-metrics", "python3 -m sglang.launch_server")
    # the fix: the entrypoint becomes sglang serve, the cookbook's script and every docker word stay
    run_cli("lint", "--no-config", "--target", "2xH200", "--fix", ".", cwd=tmp_path)
    assert compose.read_text().splitlines()[11] == "    entrypoint: sglang serve"
    lines = script.read_text().splitlines()
    assert lines[4] == "  sglang serve --model-path MiniMaxAI/MiniMax-H3 --host 0.0.0.0 --port 30000"
    assert lines[8] == textwrap.dedent(PUBLISHED_SCRIPT).splitlines()[8]
    assert lines[9] == "  --model-path /mnt/models/MiniMax-H3 --num-gpus 2 --model-variant fl2va"
