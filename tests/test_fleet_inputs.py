"""Launches where fleets keep them — Dockerfiles, Slurm batch scripts, SkyPilot tasks — read
through the real `lint` CLI: the kind each file is recognised as, the environment and GPU grant
its launch gets, and every finding at its line and column."""

from __future__ import annotations

from h3doctor.inputs.read import candidate, read_input
from tests.test_lint import active, at, lint_json, run, write


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


def test_dockerfile_shell_expansion_is_reported_not_judged(tmp_path):
    path = write(tmp_path, "Dockerfile", """\
        FROM lmsysorg/sglang:v0.5.23
        ENV NGPUS=4
        CMD sglang serve MiniMaxAI/MiniMax-H3 --num-gpus "$NGPUS"
        """)
    code, report = lint_json("--no-config", "--target", "4xH200", str(path), cwd=tmp_path)
    note = at(report, "H3DL002")
    assert (note["line"], note["col"]) == (3, 5) and "not judged" in note["message"]
    assert [f["rule"] for f in active(report)] == ["H3DL002"]


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


def test_a_plain_shell_script_stays_shell(tmp_path):
    path = write(tmp_path, "serve.sh", "#!/bin/bash\n# SBATCH-like words in a comment\nsglang serve MiniMaxAI/MiniMax-H3\n")
    assert read_input(str(path), known_fields=set()).kind == "shell"
    assert candidate("x/job.sbatch") and candidate("x/job.slurm")
