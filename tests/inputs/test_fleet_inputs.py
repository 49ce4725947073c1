"""Launches where fleets keep them — Dockerfiles, Slurm batch scripts, SkyPilot tasks — read
through the real `lint` CLI: the kind each file is recognised as, the environment and GPU grant
its launch gets, and every finding at its line and column."""

from __future__ import annotations

import os

import pytest

from h3doctor.inputs.read import candidate, read_input
from tests.lint.test_lint import active, at, lint_json, run, write


def located(report: dict, rule: str) -> tuple[int, int]:
    f = at(report, rule)
    return f["line"], f["col"]


def col(path, line: int, word: str) -> int:
    return path.read_text().splitlines()[line - 1].index(word) + 1


# --- Dockerfile / Containerfile ------------------------------------------------------------------

# sglang's own image, the tag as a build argument, an exec-form CMD over two lines
EXEC_FORM = """\
    # syntax=docker/dockerfile:1
    ARG SGLANG_TAG=v0.5.19-cu129
    FROM lmsysorg/sglang:${SGLANG_TAG}
    ARG MODEL=MiniMaxAI/MiniMax-H3
    ENV SGLANG_CACHE_DIT_ENABLED=true \\
        HF_HOME=/models
    EXPOSE 30000
    CMD ["sglang", "serve", "MiniMaxAI/MiniMax-H3", "--num-gpus", "4", \\
         "--use-fsdp-inference"]
    """


def test_dockerfile_exec_form_gets_its_env_and_the_line_of_the_word(tmp_path):
    path = write(tmp_path, "Dockerfile", EXEC_FORM)
    code, report = lint_json("--no-config", "--target", "4xH200", str(path), cwd=tmp_path)
    assert code == 1 and report["files"][0]["kind"] == "dockerfile"
    # FSDP with cache-dit: the ENV reached the launch; the flag is on the continuation line
    assert located(report, "H3D208") == (9, col(path, 9, '"--use-fsdp-inference"'))
    assert report["files"][0]["launches"][0]["argv"][-1] == "--use-fsdp-inference"


def test_dockerfile_from_names_the_image_arg_defaults_substituted(tmp_path):
    path = write(tmp_path, "Dockerfile", EXEC_FORM)
    found = read_input(str(path), known_fields=set())
    [launch] = found.launches
    assert launch.image == "lmsysorg/sglang:v0.5.19-cu129"
    # ARG values exist while building, not in the running container
    assert "MODEL" not in launch.env and launch.env["HF_HOME"] == "/models"


def test_containerfile_shell_form_continuation_with_a_comment_line_is_fixed_in_place(tmp_path):
    path = write(tmp_path, "Containerfile", """\
        FROM docker.io/lmsysorg/sglang:0.5.22-rocm700-mi30x
        ENTRYPOINT sglang serve MiniMaxAI/MiniMax-H3 --num-gpus 4 --ulysses-degree 2 --ring-degree 2 \\
            # the backend
            --attention-backend sage_attn
        """)
    code, report = lint_json("--no-config", "--target", "4xH200", str(path), cwd=tmp_path)
    assert code == 1 and located(report, "H3D305") == (4, 5)
    code, out, _ = run("lint", "--no-config", "--target", "4xH200", "--fix", str(path), cwd=tmp_path)
    assert path.read_text().splitlines()[3] == "    --attention-backend fa", out
    assert path.read_text().splitlines()[2] == "    # the backend"


def test_dockerfile_bash_lc_entrypoint_locates_the_word_inside_the_json_string(tmp_path):
    path = write(tmp_path, "serve.Dockerfile", """\
        FROM lmsysorg/sglang:v0.5.23
        ENTRYPOINT ["/bin/bash", "-lc", "exec sglang serve MiniMaxAI/MiniMax-H3 --num-gpus 4 --ulysses-degree 2 --ring-degree 2 --attention-backend sage_attn"]
        """)
    code, report = lint_json("--no-config", "--target", "4xH200", str(path), cwd=tmp_path)
    assert code == 1 and located(report, "H3D305") == (2, col(path, 2, "--attention-backend"))
    # exec-form words are JSON strings: --fix says so rather than writing shell quoting into JSON
    code, out, _ = run("lint", "--no-config", "--target", "4xH200", "--fix", str(path), cwd=tmp_path)
    assert "not fixed" in out and "sage_attn" in path.read_text()


def test_dockerfile_stage_inherits_cmd_and_env_entrypoint_resets_an_inherited_cmd(tmp_path):
    path = write(tmp_path, "Dockerfile.h3", """\
        FROM lmsysorg/sglang:v0.5.23 AS server
        CMD ["sglang", "serve", "MiniMaxAI/MiniMax-H3", "--num-gpus", "4", "--use-fsdp-inference"]

        FROM server
        ENV SGLANG_CACHE_DIT_ENABLED=1
        """)
    code, report = lint_json("--no-config", "--target", "4xH200", str(path), cwd=tmp_path)
    assert code == 1 and located(report, "H3D208") == (2, col(path, 2, '"--use-fsdp-inference"'))
    path.write_text(path.read_text() + 'ENTRYPOINT ["sglang", "serve", "MiniMaxAI/MiniMax-H3"]\n')
    found = read_input(str(path), known_fields=set())
    assert found.launches[0].tokens == ["sglang", "serve", "MiniMaxAI/MiniMax-H3"]
    assert found.launches[0].image == "lmsysorg/sglang:v0.5.23"


def test_dockerfiles_are_walked_by_name_and_others_left_alone(tmp_path):
    assert all(candidate(n) for n in ("Dockerfile", "a/Containerfile", "x.Dockerfile", "Dockerfile.gpu"))
    assert not candidate("Dockerfile-notes.txt")
    write(tmp_path, "web/Dockerfile", "FROM node:20\nCMD [\"node\", \"server.js\"]\n")
    write(tmp_path, "h3/Dockerfile", EXEC_FORM)
    code, report = lint_json("--no-config", "--target", "4xH200", str(tmp_path), cwd=tmp_path)
    kinds = {f["path"].rsplit("/", 2)[-2]: f["kind"] for f in report["files"]}
    assert kinds == {"web": None, "h3": "dockerfile"} and code == 1


def test_dockerfile_shell_form_reads_the_stages_env(tmp_path):
    """A shell-form CMD runs under /bin/sh in the container, whose environment holds the stage's ENV
    (issue 30 item 1): `"$NGPUS"` is 4, judged (and clean); a name the stage does not set is any
    value (tests/lint/test_lint_unresolved.py)."""
    path = write(tmp_path, "Dockerfile", """\
        FROM lmsysorg/sglang:v0.5.23
        ENV NGPUS=4
        CMD sglang serve MiniMaxAI/MiniMax-H3 --num-gpus "$NGPUS"
        """)
    code, report = lint_json("--no-config", "--target", "4xH200", str(path), cwd=tmp_path)
    assert report["files"][0]["launches"][0]["argv"][-2:] == ["--num-gpus", "4"]
    assert (code, active(report)) == (0, [])


# --- Slurm batch scripts ----------------------------------------------------------------------------

# the shape of public sglang batch scripts: a login shell, #SBATCH lines with blank and ##-disabled
# lines between them, modules and an environment activated, then the server under srun
BATCH = """\
    #!/bin/bash -l
    #SBATCH -J sglang-h3
    #SBATCH --time=23:59:00

    #SBATCH --nodes=1
    #SBATCH --partition="gpu1"
    #SBATCH --gres=gpu:h200:4
    ##SBATCH --gres=gpu:h200:8
    #SBATCH --cpus-per-task=48
    #SBATCH --ntasks-per-node=1

    module purge
    module load cuda/12.8
    eval "$(micromamba shell hook --shell bash)"
    micromamba activate sglang
    export SGLANG_CACHE_DIT_ENABLED=true

    srun --ntasks=1 --cpu-bind=none \\
        sglang serve MiniMaxAI/MiniMax-H3 --num-gpus 8 --port 30000
    """


def test_slurm_gres_is_the_grant_and_the_launch_under_srun_is_located(tmp_path):
    path = write(tmp_path, "serve_h3.sbatch", BATCH)
    code, report = lint_json("--no-config", "--target", "H200", str(path), cwd=tmp_path)
    assert code == 1 and report["files"][0]["kind"] == "slurm"
    assert report["files"][0]["launches"][0]["gpu_count"] == 4  # gpu:h200:4, not the disabled ##SBATCH 8
    assert located(report, "H3D910") == (19, col(path, 19, "--num-gpus"))


def test_slurm_srun_options_decide_the_step_grant_and_environment(tmp_path):
    path = write(tmp_path, "job.sh", BATCH.replace(
        "srun --ntasks=1 --cpu-bind=none", "srun --gpus-per-node=8 --export=ALL,SGLANG_CACHE_DIT_ENABLED=false").replace(
        "    export SGLANG_CACHE_DIT_ENABLED=true\n", "").replace("--port 30000", "--use-fsdp-inference"))
    found = read_input(str(path), known_fields=set())
    [launch] = found.launches
    assert (found.kind, launch.gpu_count, launch.env["SGLANG_CACHE_DIT_ENABLED"]) == ("slurm", 8, "false")
    code, report = lint_json("--no-config", "--target", "H200", str(path), cwd=tmp_path)
    assert code == 0, active(report)


def test_slurm_job_gpus_across_nodes_leave_the_count_to_the_target(tmp_path):
    path = write(tmp_path, "multi.slurm", """\
        #!/bin/bash
        #SBATCH --nodes=2
        #SBATCH --gpus=16
        srun sglang serve MiniMaxAI/MiniMax-H3 --num-gpus 8
        #SBATCH --gres=gpu:1
        """)
    found = read_input(str(path), known_fields=set())
    assert found.kind == "slurm" and found.launches[0].gpu_count is None  # the late #SBATCH is not read
    path.write_text(path.read_text().replace("--nodes=2", "--nodes=1"))
    assert read_input(str(path), known_fields=set()).launches[0].gpu_count == 16


SLURM_TYPED = """\
    #!/bin/bash
    #SBATCH --nodes=1
    #SBATCH {request}
    srun sglang serve MiniMaxAI/MiniMax-H3 --num-gpus 8
    """


@pytest.mark.parametrize("request_,targets,gpus", [
    ("--gres=gpu:h100:4", ["4xh100"], ["H100 80 GB"]),
    ("--gpus-per-node=h200:8", ["8xh200"], ["H200"]),
    ("--gpus=nvidia_h100_80gb_hbm3:4", ["4xh100_80gb_hbm3"], ["H100 80 GB"]),  # NVML's autodetected type name
    ("--gres=gpu:a100:4", ["4xA100-40GB", "4xA100"], ["A100 40", "A100 80"]),  # a site's a100: either part
])
def test_slurm_gpu_type_is_the_target_it_is_judged_on(tmp_path, request_, targets, gpus):
    path = write(tmp_path, "typed.sbatch", SLURM_TYPED.format(request=request_))
    code, report = lint_json("--no-config", str(path), cwd=tmp_path)
    [launch] = report["files"][0]["launches"]
    assert [r["target"] for r in launch["results"]] == targets
    assert all(g in r["hardware"] for g, r in zip(gpus, launch["results"], strict=True)), launch["results"]
    on = {(f["rule"], f["target"], f["line"], f["col"]) for f in active(report)}
    grant = int(targets[0].split("x")[0])
    if grant < 8:  # --num-gpus 8 on a node granted 4
        assert {("H3D910", t, 4, col(path, 4, "--num-gpus")) for t in targets} <= on and code == 1
    else:
        assert code == 0, on
    # the command line's --target still wins over the script's type
    _, report = lint_json("--no-config", "--target", "8xB200", str(path), cwd=tmp_path)
    assert [r["target"] for r in report["files"][0]["launches"][0]["results"]] == ["8xB200"]


def test_slurm_gpu_count_alone_is_only_the_grant_and_an_unknown_type_is_named(tmp_path):
    path = write(tmp_path, "count.sbatch", SLURM_TYPED.format(request="--gres=gpu:4"))
    _, report = lint_json("--no-config", str(path), cwd=tmp_path)
    # no GPU type said (H3DL004: the hardware rules cannot verify), but the grant is: 8 GPUs asked of 4
    assert {(f["rule"], f["line"]) for f in active(report)} == {("H3DL004", 4), ("H3D109", 4), ("H3D910", 4)}
    _, report = lint_json("--no-config", "--target", "H200", str(path), cwd=tmp_path)
    assert report["files"][0]["launches"][0]["results"][0]["hardware"].startswith("four ")
    path = write(tmp_path, "odd.sbatch", SLURM_TYPED.format(request="--gres=gpu:quadro9000:8"))
    _, report = lint_json("--no-config", str(path), cwd=tmp_path)
    unknown = at(report, "H3DL005")
    assert "8xquadro9000" in unknown["message"] and unknown["line"] == 4
    path = write(tmp_path, "multi.sbatch", SLURM_TYPED.format(request="--gpus=h100:16").replace("--nodes=1", "--nodes=2"))
    assert read_input(str(path), known_fields=set()).launches[0].targets == ()  # 16 over 2 nodes: no count a node


def test_a_plain_shell_script_stays_shell(tmp_path):
    path = write(tmp_path, "serve.sh", "#!/bin/bash\n# SBATCH-like words in a comment\nsglang serve MiniMaxAI/MiniMax-H3\n")
    assert read_input(str(path), known_fields=set()).kind == "shell"
    assert candidate("x/job.sbatch") and candidate("x/job.slurm")


# --- SkyPilot task YAML -----------------------------------------------------------------------------

# the shape of SkyPilot's own serving tasks (llm/*/serve.yaml): alternatives in a flow mapping,
# envs with a secret left to `--env`, a setup and a multi-line run script
SKY_TASK = """\
    # Serving MiniMax-H3 with SGLang on SkyPilot
    name: minimax-h3

    resources:
      accelerators: {H200:4, H100:4}
      disk_size: 1024
      ports: 30000

    envs:
      MODEL_NAME: MiniMaxAI/MiniMax-H3
      SGLANG_CACHE_DIT_ENABLED: true
      HF_TOKEN:  # given at launch: sky launch --env HF_TOKEN

    setup: |
      pip install "sglang[diffusion]"

    run: |
      sglang serve MiniMaxAI/MiniMax-H3 \\
        --num-gpus 4 --ulysses-degree 2 --ring-degree 2 \\
        --attention-backend sage_attn \\
        --port 30000
    """


def test_skypilot_accelerators_are_the_targets_and_findings_point_into_run(tmp_path):
    path = write(tmp_path, "sky/serve.yaml", SKY_TASK)
    code, report = lint_json("--no-config", str(path), cwd=tmp_path)
    assert code == 1 and report["files"][0]["kind"] == "skypilot"
    [launch] = report["files"][0]["launches"]
    assert [r["target"] for r in launch["results"]] == ["4xH200", "4xH100"] and launch["gpu_count"] == 4
    assert {f["target"] for f in active(report) if f["rule"] == "H3D305"} == {"4xH200", "4xH100"}
    assert located(report, "H3D305") == (20, 5)
    assert launch["line"] == 18 and launch["col"] == 3


def test_skypilot_envs_reach_the_launch_and_fix_edits_the_run_script(tmp_path):
    # (ruamel rewrites a flow mapping's spacing, which --fix refuses: the fixed task names one accelerator)
    path = write(tmp_path, "task.yaml", SKY_TASK.replace("--port 30000", "--use-fsdp-inference").replace(
        "{H200:4, H100:4}", "H200:4"))
    found = read_input(str(path), known_fields=set())
    [launch] = found.launches
    assert launch.env == {"MODEL_NAME": "MiniMaxAI/MiniMax-H3", "SGLANG_CACHE_DIT_ENABLED": "true"}
    _, report = lint_json("--no-config", "--target", "4xH200", str(path), cwd=tmp_path)
    assert located(report, "H3D208") == (21, 5)
    run("lint", "--no-config", "--target", "4xH200", "--fix", str(path), cwd=tmp_path)
    lines = path.read_text().splitlines()
    assert lines[19] == "    --attention-backend fa \\" and lines[11].endswith("# given at launch: sky launch --env HF_TOKEN")


def test_skypilot_names_map_onto_the_catalog_and_unknown_ones_are_named(tmp_path):
    path = write(tmp_path, "a100.yaml", SKY_TASK.replace("{H200:4, H100:4}", "[A100:4, A100-80GB:4, tpu-v5p-8]"))
    found = read_input(str(path), known_fields=set())
    assert found.launches[0].targets == ("4xA100-40GB", "4xA100", "1xtpu-v5p-8")  # SkyPilot's A100 is 40 GB
    _, report = lint_json("--no-config", str(path), cwd=tmp_path)
    unknown = at(report, "H3DL005")
    assert "tpu-v5p-8" in unknown["message"] and unknown["line"] == 18


def test_skypilot_task_without_sglang_or_with_expansions(tmp_path):
    other = write(tmp_path, "train.yaml", "resources: {accelerators: H100:8}\nrun: python train.py\n")
    assert read_input(str(other), known_fields=set()).kind is None
    # HF_TOKEN is left empty in envs (given at `sky launch --env`): its value is not known here
    path = write(tmp_path, "var.yaml", SKY_TASK.replace("sglang serve MiniMaxAI/MiniMax-H3", 'sglang serve "$HF_TOKEN"'))
    _, report = lint_json("--no-config", str(path), cwd=tmp_path)
    assert [(f["rule"], f["line"]) for f in active(report)] == [("H3DL002", 18)]
    assert "$HF_TOKEN is declared without a value" in active(report)[0]["message"]


def test_skypilot_run_script_variables_are_bound_from_envs(tmp_path):
    # ${VAR} and "$VAR" from envs, SkyPilot's own SKYPILOT_NUM_GPUS_PER_NODE from the accelerators
    path = write(tmp_path, "task.yaml", SKY_TASK.replace("{H200:4, H100:4}", "H200:4").replace(
        "sglang serve MiniMaxAI/MiniMax-H3 \\", 'sglang serve "$MODEL_NAME" \\').replace(
        "--num-gpus 4 --ulysses-degree 2", "--num-gpus ${SKYPILOT_NUM_GPUS_PER_NODE} --ulysses-degree $DEGREE").replace(
        "      HF_TOKEN:", "      DEGREE: 2\n      HF_TOKEN:"))
    found = read_input(str(path), known_fields=set())
    assert found.launches[0].tokens[:7] == ["sglang", "serve", "MiniMaxAI/MiniMax-H3", "--num-gpus", "4",
                                            "--ulysses-degree", "2"] and not found.notes
    code, report = lint_json("--no-config", str(path), cwd=tmp_path)
    assert [(f["rule"], f["line"], f["col"]) for f in active(report)] == [("H3D305", 21, 5)]
    run("lint", "--no-config", "--fix", str(path), cwd=tmp_path)
    lines = path.read_text().splitlines()  # the fix edits the flag it names; every variable stays
    assert lines[18:21] == ['  sglang serve "$MODEL_NAME" \\',
                            "    --num-gpus ${SKYPILOT_NUM_GPUS_PER_NODE} --ulysses-degree $DEGREE --ring-degree 2 \\",
                            "    --attention-backend fa \\"]


@pytest.mark.parametrize("script,says", [
    ('sglang serve MiniMaxAI/MiniMax-H3 --num-gpus "$NGPUS"', "$NGPUS has no value here"),  # not in envs
    ("export DEGREE=4\nsglang serve MiniMaxAI/MiniMax-H3 --ulysses-degree $DEGREE", "$DEGREE has no value"),
    ("sglang serve $MODEL_NAME --num-gpus 4", "splits or globs"),  # unquoted, with a space in its value
    ("sglang serve MiniMaxAI/MiniMax-H3 --node-rank $SKYPILOT_NODE_RANK", "$SKYPILOT_NODE_RANK has no value"),
])
def test_skypilot_what_cannot_be_bound_is_named_not_guessed(tmp_path, script, says):
    run_block = "".join(f"  {line}\n" for line in script.split("\n"))
    path = write(tmp_path, "task.yaml", "num_nodes: 2\nresources: {accelerators: H200:4}\nenvs:\n"
                 "  MODEL_NAME: MiniMaxAI/MiniMax-H3 extra\n  DEGREE: 2\nrun: |\n" + run_block)
    _, report = lint_json("--no-config", str(path), cwd=tmp_path)
    notes = active(report)
    assert [f["rule"] for f in notes] == ["H3DL002"] and says in notes[0]["message"], notes
    assert notes[0]["line"] == 7 + script.count("\n")


# --- Kubernetes LeaderWorkerSet, KServe -------------------------------------------------------------

# after sglang's own LeaderWorkerSet example (deploy on Kubernetes, multi-node): the leader's index
# from a fieldRef, the group size and index through $(VAR), eight GPUs per pod
LWS = """\
    apiVersion: leaderworkerset.x-k8s.io/v1
    kind: LeaderWorkerSet
    metadata:
      name: h3
    spec:
      replicas: 1
      leaderWorkerTemplate:
        size: 2
        restartPolicy: RecreateGroupOnPodRestart
        leaderTemplate:
          metadata:
            labels: {role: leader}
          spec:
            containers:
              - name: sglang-leader
                image: lmsysorg/sglang:v0.5.23
                env:
                  - name: LWS_WORKER_INDEX
                    valueFrom:
                      fieldRef:
                        fieldPath: metadata.labels['leaderworkerset.sigs.k8s.io/worker-index']
                command:
                  - sglang
                  - serve
                  - MiniMaxAI/MiniMax-H3
                  - --num-gpus
                  - "32"
                  - --nnodes
                  - $(LWS_GROUP_SIZE)
                  - --node-rank
                  - $(LWS_WORKER_INDEX)
                  - --dist-init-addr
                  - $(LWS_LEADER_ADDRESS):20000
                resources:
                  limits:
                    nvidia.com/gpu: "8"
        workerTemplate:
          spec:
            containers:
              - name: sglang-worker
                image: lmsysorg/sglang:v0.5.23
                command: ["sglang", "serve", "MiniMaxAI/MiniMax-H3", "--num-gpus", "32", "--nnodes", "$(LWS_GROUP_SIZE)",
                          "--node-rank", "$(LWS_WORKER_INDEX)", "--dist-init-addr", "$(LWS_LEADER_ADDRESS):20000"]
                resources:
                  limits:
                    nvidia.com/gpu: "8"
    """


def test_leaderworkerset_leader_and_worker_with_the_group_size_as_nnodes(tmp_path):
    path = write(tmp_path, "lws.yaml", LWS)
    found = read_input(str(path), known_fields=set())
    leader, worker = found.launches
    assert leader.label == "LeaderWorkerSet/h3 leader container sglang-leader"
    assert leader.tokens[5:10] == ["--nnodes", "2", "--node-rank", "0", "--dist-init-addr"]
    assert worker.tokens[5:8] == ["--nnodes", "2", "--node-rank"] and worker.tokens[8] == "1"
    assert (leader.gpu_count, worker.gpu_count) == (8, 8) and not found.notes
    # 32 GPUs over 2 nodes is 16 a pod; each pod is granted 8
    code, report = lint_json("--no-config", "--target", "H200", str(path), cwd=tmp_path)
    assert code == 1
    lines = {(f["launch"], f["line"]) for f in active(report) if f["rule"] == "H3D910"}
    assert lines == {("LeaderWorkerSet/h3 leader container sglang-leader", 26),
                     ("LeaderWorkerSet/h3 worker container sglang-worker", 42)}
    path.write_text(path.read_text().replace('"32"', '"16"').replace('"--num-gpus", "32"', '"--num-gpus", "16"'))
    _, report = lint_json("--no-config", "--target", "H200", str(path), cwd=tmp_path)
    assert "H3D910" not in {f["rule"] for f in active(report)}  # 8 a pod: the grant holds


def test_leaderworkerset_size_that_is_not_nnodes_is_named_at_size(tmp_path):
    path = write(tmp_path, "lws.yaml", LWS.replace("size: 2", "size: 3"))
    found = read_input(str(path), known_fields=set())
    assert found.launches[0].tokens[6] == "3"  # $(LWS_GROUP_SIZE) is the group's size
    one = write(tmp_path, "one.yaml", LWS.replace("$(LWS_GROUP_SIZE)", "1"))
    _, report = lint_json("--no-config", "--target", "8xH200", str(one), cwd=tmp_path)
    notes = [f for f in active(report) if f["rule"] == "H3DL002"]
    assert [(n["line"], n["col"]) for n in notes] == [(8, 11), (8, 11)]  # leader and worker, at the size
    assert all("--nnodes 1" in n["message"] for n in notes)


# after KServe's ServingRuntime for a custom server: the runtime's container, then an
# InferenceService whose predictor runs its own container
KSERVE = """\
    apiVersion: serving.kserve.io/v1alpha1
    kind: ServingRuntime
    metadata:
      name: kserve-sglang
    spec:
      supportedModelFormats:
        - name: huggingface
          autoSelect: true
      containers:
        - name: kserve-container
          image: lmsysorg/sglang:v0.5.23
          command: ["sglang", "serve"]
          args:
            - MiniMaxAI/MiniMax-H3
            - --num-gpus=4
            - --ulysses-degree=2
            - --ring-degree=2
            - --attention-backend=sage_attn
            - --served-model-name={{.Name}}
          resources:
            limits: {nvidia.com/gpu: "4"}
    ---
    apiVersion: serving.kserve.io/v1beta1
    kind: InferenceService
    metadata:
      name: h3
    spec:
      predictor:
        containers:
          - name: kserve-container
            image: lmsysorg/sglang:v0.5.23
            command: [sglang, serve, MiniMaxAI/MiniMax-H3, --num-gpus, "8"]
            resources:
              limits: {nvidia.com/gpu: "4"}
    """


def test_kserve_serving_runtime_and_inference_service_containers(tmp_path):
    path = write(tmp_path, "kserve.yaml", KSERVE)
    code, report = lint_json("--no-config", "--target", "H200", str(path), cwd=tmp_path)
    assert code == 1 and report["files"][0]["kind"] == "kubernetes"
    labels = [launch["label"] for launch in report["files"][0]["launches"]]
    assert labels == ["ServingRuntime/kserve-sglang container kserve-container",
                      "InferenceService/h3 container kserve-container"]
    h305 = at(report, "H3D305")
    assert (h305["line"], h305["col"], h305["launch"]) == (18, 11, labels[0])
    h910 = at(report, "H3D910")
    assert (h910["line"], h910["launch"]) == (32, labels[1])


# --- Helm charts, rendered by `helm template` when helm is on PATH ------------------------------

TEMPLATE = """\
    apiVersion: apps/v1
    kind: Deployment
    metadata:
      name: {{ .Release.Name }}-h3
    spec:
      template:
        spec:
          containers:
            - name: server
              image: "lmsysorg/sglang:{{ .Values.tag }}"
              command:
                - sglang
                - serve
                - {{ .Values.model }}
                - --num-gpus
                - "4"
                - --ulysses-degree
                - "2"
                - --ring-degree
                - "2"
                - --attention-backend
                - sage_attn
              resources:
                limits: {nvidia.com/gpu: {{ .Values.gpus }}}
    """
# what helm prints for the chart: each manifest after the `# Source:` comment naming its template
RENDERED = """\
    ---
    # Source: h3/templates/service.yaml
    apiVersion: v1
    kind: Service
    metadata:
      name: release-name-h3
    ---
    # Source: h3/templates/deploy.yaml
""" + TEMPLATE.replace("{{ .Release.Name }}", "release-name").replace("{{ .Values.tag }}", "v0.5.23").replace(
    "{{ .Values.model }}", "MiniMaxAI/MiniMax-H3").replace("{{ .Values.gpus }}", "4")
# stands in for helm: `helm template -- CHART` prints CHART/.rendered, or fails as helm does
FAKE_HELM = """\
    #!/bin/sh
    [ "$1" = template ] && [ "$2" = -- ] || exit 64
    if [ -f "$3/.fail" ]; then cat "$3/.fail" >&2; exit 1; fi
    cat "$3/.rendered"
    """


def helm_chart(tmp_path):
    write(tmp_path, "h3/Chart.yaml", "apiVersion: v2\nname: h3\nversion: 0.1.0\n")
    write(tmp_path, "h3/values.yaml", "tag: v0.5.23\nmodel: MiniMaxAI/MiniMax-H3\ngpus: 4\n")
    template = write(tmp_path, "h3/templates/deploy.yaml", TEMPLATE)
    write(tmp_path, "h3/.rendered", RENDERED)
    helm = write(tmp_path, "bin/helm", FAKE_HELM)
    helm.chmod(0o755)
    return template


def lint_with_helm(tmp_path, *args):
    import json
    import os
    import subprocess
    import sys

    env = {k: v for k, v in os.environ.items() if not k.startswith("SGLANG_")}
    env.update({"NO_COLOR": "1", "PATH": f"{tmp_path / 'bin'}{os.pathsep}{env.get('PATH', '')}"})
    proc = subprocess.run([sys.executable, "-m", "h3doctor", "lint", "--no-config", "--format", "json", *args],
                          capture_output=True, text=True, cwd=tmp_path, env=env, timeout=120)
    return proc.returncode, (json.loads(proc.stdout) if proc.stdout.strip() else None), proc.stderr


def test_helm_chart_rendered_and_findings_placed_in_the_template(tmp_path):
    template = helm_chart(tmp_path)
    code, report, err = lint_with_helm(tmp_path, "--target", "H200", "h3/Chart.yaml")
    assert code == 1, err
    assert report["files"][0]["kind"] == "helm"
    f = at(report, "H3D305")
    assert f["file"] == "h3/templates/deploy.yaml" and (f["line"], f["col"]) == (21, 15)
    assert template.read_text().splitlines()[20].strip() == "- --attention-backend"


def test_helm_render_error_is_a_usage_error_and_without_helm_the_note_stays(tmp_path):
    helm_chart(tmp_path)
    write(tmp_path, "h3/.fail", "Error: parse error at (h3/templates/deploy.yaml:4): unexpected EOF\n")
    code, _report, err = lint_with_helm(tmp_path, "--target", "H200", "h3/Chart.yaml")
    assert code == 2 and "helm template failed" in err and "deploy.yaml:4" in err
    (tmp_path / "bin" / "helm").unlink()
    code, report, err = lint_with_helm(tmp_path, "--target", "H200", "h3")
    assert code == 0, err
    assert [(f["rule"], f["file"]) for f in active(report)] == [("H3DL002", "h3/templates/deploy.yaml")]


def test_dockerfile_from_an_arg_without_a_value_cannot_verify_the_release(tmp_path):
    path = write(tmp_path, "Dockerfile", """\
        ARG SGLANG_TAG
        FROM lmsysorg/sglang:${SGLANG_TAG}
        CMD ["sglang", "serve", "--model-path", "MiniMaxAI/MiniMax-H3", "--num-gpus", "4", "--enable-metrics"]
        """)
    assert read_input(str(path), known_fields=set()).launches[0].image == "lmsysorg/sglang:${SGLANG_TAG}"
    code, report = lint_json("--no-config", "--target", "4xH200", str(path), cwd=tmp_path)
    note = at(report, "H3D922")  # not `latest`: the tag is only known when the image is built
    assert "cannot verify" in note["message"] and "${SGLANG_TAG}" in note["message"] and note["line"] == 3


# a helm that reports what it was given: its arguments, environment, stdin and directory
SPY_HELM = """\
    #!/bin/sh
    chart="$3"
    { printf 'args=%s|' "$*"; env | sort | tr '\\n' '|'; printf 'stdin='; cat; printf '|cwd=%s' "$PWD"; } > "$chart/.seen"
    cat "$chart/.rendered"
    """


def test_helm_runs_without_a_shell_in_a_controlled_environment(tmp_path, monkeypatch):
    helm_chart(tmp_path)
    write(tmp_path, "bin/helm", SPY_HELM).chmod(0o755)
    monkeypatch.setenv("HELM_POST_RENDERER", "/bin/evil")  # nothing of the caller's helm settings reaches it
    monkeypatch.setenv("KUBECONFIG", str(tmp_path / "kubeconfig"))
    code, report, err = lint_with_helm(tmp_path, "--target", "H200", "h3/Chart.yaml")
    assert code == 1 and at(report, "H3D305")["file"] == "h3/templates/deploy.yaml", err
    seen = dict(part.split("=", 1) for part in (tmp_path / "h3" / ".seen").read_text().split("|") if "=" in part)
    assert seen["args"] == f"template -- {tmp_path / 'h3'}"  # the chart after `--`: never read as an option
    assert seen["stdin"] == ""  # closed
    assert seen["LC_ALL"] == "C" and seen["HOME"] == seen["cwd"] and str(tmp_path) not in seen["HOME"]
    assert not {"HELM_POST_RENDERER", "KUBECONFIG", "NO_COLOR"} & set(seen)  # none of the caller's variables


def test_helm_output_without_end_or_a_hang_is_stopped_and_a_relative_helm_is_not_run(tmp_path, monkeypatch):
    from h3doctor.errors import UsageError
    from h3doctor.inputs import helm

    helm_chart(tmp_path)
    monkeypatch.setenv("PATH", f"{tmp_path / 'bin'}{os.pathsep}{os.environ['PATH']}")
    write(tmp_path, "bin/helm", "#!/bin/sh\nexec yes h3doctor\n").chmod(0o755)
    monkeypatch.setattr(helm, "MAX_RENDERED_BYTES", 1 << 20)
    with pytest.raises(UsageError, match="wrote more than"):
        helm.read_chart(str(tmp_path / "h3" / "Chart.yaml"), max_bytes=1 << 20)
    write(tmp_path, "bin/helm", "#!/bin/sh\nexec sleep 30\n").chmod(0o755)
    monkeypatch.setattr(helm, "RENDER_TIMEOUT_S", 1)
    with pytest.raises(UsageError, match="took longer than 1 s"):
        helm.read_chart(str(tmp_path / "h3" / "Chart.yaml"), max_bytes=1 << 20)
    # an empty or relative PATH entry is the current directory: a linted repository could put a helm there
    monkeypatch.chdir(tmp_path / "bin")
    monkeypatch.setenv("PATH", f"{os.pathsep}bin{os.pathsep}/nonexistent")
    assert helm.helm_program() is None and not helm.is_chart(str(tmp_path / "h3" / "Chart.yaml"))
