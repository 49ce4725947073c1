"""`lint --fix`/`--diff` on what the user asked for: suppressed, ignored and unselected findings are
never fixed; fixes that take GPUs, parallelism, quality or residency away, or differ between
targets, are unsafe (shown by --diff, written only with --unsafe-fixes); a second --fix changes
nothing. Also `lint -`, --quiet, --statistics, the concise format, --force-exclude, the pre-commit
hook and the GitHub Action. Through the real CLI and the report's data, not Rich."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
import yaml

from h3doctor.lint.applicability import unsafe_reasons
from repo_paths import REPO

LAUNCH = "sglang serve MiniMaxAI/MiniMax-H3 --num-gpus 4 --ulysses-degree 2 --ring-degree 2"
SAGE = f"{LAUNCH} --attention-backend sage_attn"  # H3D305 on every target: ring needs fa
FIXED = f"{LAUNCH} --attention-backend fa"


def run(*args: str, cwd: Path, stdin: str | None = None) -> tuple[int, str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("SGLANG_")}
    env.update({"NO_COLOR": "1", "COLUMNS": "200"})
    proc = subprocess.run([sys.executable, "-m", "h3doctor", *args], capture_output=True, text=True, cwd=cwd,
                          env=env, timeout=180, input=stdin if stdin is not None else "")
    return proc.returncode, proc.stdout, proc.stderr


def write(path: Path, text: str, newline: str = "\n") -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(textwrap.dedent(text).replace("\n", newline).encode("utf-8"))
    return path


def findings(out: str) -> list[dict]:
    return json.loads(out)["findings"]


# --- item 5: suppressions, ignore and select hold the fixer back -------------------------------

def test_an_inline_suppression_keeps_the_launch_as_written_and_stays_used(tmp_path):
    recipe = write(tmp_path / "r.yaml", f"""\
        targets: [4xH200]
        command: {SAGE}  # h3doctor: ignore[H3D305] measured fine on our build
        """)
    before = recipe.read_bytes()
    code, out, err = run("lint", "--no-config", "--diff", str(recipe), cwd=tmp_path)
    assert (code, out) == (0, ""), err
    code, out, _ = run("lint", "--no-config", "--fix", "--format", "json", str(recipe), cwd=tmp_path)
    assert code == 0 and recipe.read_bytes() == before
    rules = {(f["rule"], bool(f["suppressed"])) for f in findings(out)}
    assert ("H3D305", True) in rules and not any(r == "H3DL001" for r, _ in rules)  # not "unused"


def test_a_configuration_ignore_keeps_the_launch_as_written(tmp_path):
    recipe = write(tmp_path / "r.yaml", f"targets: [4xH200]\ncommand: {SAGE}\n")
    write(tmp_path / ".h3doctor.yaml", "ignore: [H3D305]\n")
    before = recipe.read_bytes()
    code, out, _ = run("lint", "--diff", str(recipe), cwd=tmp_path)
    assert (code, out) == (0, "")
    run("lint", "--fix", str(recipe), cwd=tmp_path)
    assert recipe.read_bytes() == before


def test_select_limits_which_fixes_apply(tmp_path):
    recipe = write(tmp_path / "r.yaml", f"targets: [4xH200]\ncommand: {SAGE} --bogus-flag\n")
    write(tmp_path / ".h3doctor.yaml", "select: [H3D020]\n")  # the unknown flag only, not H3D305
    code, _, err = run("lint", "--fix", str(recipe), cwd=tmp_path)
    assert recipe.read_text() == f"targets: [4xH200]\ncommand: {SAGE}\n", err
    # without the selection both are fixed
    write(tmp_path / ".h3doctor.yaml", "targets: [4xH200]\n")
    write(recipe, f"targets: [4xH200]\ncommand: {SAGE} --bogus-flag\n")
    run("lint", "--fix", str(recipe), cwd=tmp_path)
    assert recipe.read_text() == f"targets: [4xH200]\ncommand: {FIXED}\n"


# --- item 6: unsafe fixes ----------------------------------------------------------------------

def test_targets_needing_different_corrections_are_not_cut_to_one_gpu(tmp_path):
    text = f"targets: [4xH200, 1xH100]\ncommand: {SAGE}\n"
    recipe = write(tmp_path / "r.yaml", text)
    code, out, err = run("lint", "--no-config", "--fix", str(recipe), cwd=tmp_path)
    assert recipe.read_text() == text  # the 4xH200 deployment is not quietly cut to one GPU
    assert code == 1 and "unsafe fix not applied (apply with --unsafe-fixes)" in out
    assert "lowers --num-gpus from 4 to 1" in out and "the targets need different corrections" in out
    # each target's own correction, listed per target
    assert f"corrected for 4xH200: {FIXED}" in out
    assert "corrected for 1xH100: sglang serve MiniMaxAI/MiniMax-H3 --num-gpus 1" in out
    # --diff shows it, names it unsafe on stderr, writes nothing
    code, out, err = run("lint", "--no-config", "--diff", str(recipe), cwd=tmp_path)
    assert "+command: sglang serve MiniMaxAI/MiniMax-H3 --num-gpus 1" in out and "unsafe fix" in err
    assert recipe.read_text() == text
    # asked for, it is applied
    code, out, _ = run("lint", "--no-config", "--fix", "--unsafe-fixes", str(recipe), cwd=tmp_path)
    assert code == 0 and "--num-gpus 1" in recipe.read_text() and "unsafe fix applied" in out


def test_lowering_num_gpus_on_one_target_is_unsafe(tmp_path):
    text = f"targets: [1xH100]\ncommand: {LAUNCH}\n"
    recipe = write(tmp_path / "r.yaml", text)
    code, out, _ = run("lint", "--no-config", "--fix", str(recipe), cwd=tmp_path)
    assert code == 1 and recipe.read_text() == text and "lowers --num-gpus from 4 to 1 (on 1xH100)" in " ".join(out.split())


def test_a_safe_fix_is_applied_and_a_second_fix_changes_nothing(tmp_path):
    recipe = write(tmp_path / "r.yaml", f"# ours\ntargets: [4xH200]\ncommand: {SAGE}   # tuned\n")
    code, out, _ = run("lint", "--no-config", "--fix", str(recipe), cwd=tmp_path)
    lines = recipe.read_text().splitlines()
    assert code == 0 and lines[:2] == ["# ours", "targets: [4xH200]"]
    assert lines[2].startswith(f"command: {FIXED} ") and lines[2].endswith("# tuned")  # the comment stays
    once = recipe.read_bytes()
    code, out, _ = run("lint", "--no-config", "--fix", str(recipe), cwd=tmp_path)
    assert code == 0 and recipe.read_bytes() == once and "fixed" not in out
    code, out, _ = run("lint", "--no-config", "--diff", str(recipe), cwd=tmp_path)
    assert out == ""


def test_a_fix_keeps_crlf_line_endings(tmp_path):
    recipe = write(tmp_path / "r.yaml", f"# ours\ntargets: [4xH200]\ncommand: {SAGE}\n", newline="\r\n")
    code, _, err = run("lint", "--no-config", "--fix", str(recipe), cwd=tmp_path)
    assert code == 0, err
    assert recipe.read_bytes() == f"# ours\r\ntargets: [4xH200]\r\ncommand: {FIXED}\r\n".encode()


def test_a_fix_keeps_the_words_quoting_and_the_continuation_layout(tmp_path):
    script = write(tmp_path / "serve.sh", f"""\
        #!/bin/sh
        exec {LAUNCH} \\
            --attention-backend "sage_attn"   # tuned
        """)
    code, _, err = run("lint", "--no-config", "--target", "4xH200", "--fix", str(script), cwd=tmp_path)
    assert code == 0, err
    assert script.read_text() == f'#!/bin/sh\nexec {LAUNCH} \\\n    --attention-backend "fa"   # tuned\n'


@pytest.mark.parametrize("before, after, expected", [
    ({"num_gpus": 4, "ulysses_degree": 4}, {"num_gpus": 4, "ulysses_degree": 2}, ["lowers --ulysses-degree from 4 to 2"]),
    ({"num_gpus": 4}, {"num_gpus": 8}, []),  # more is not less
    ({"dit_cpu_offload": False}, {"dit_cpu_offload": True}, ["offloads with --dit-cpu-offload: less resident on the GPU"]),
    ({"layerwise_offload_components": ["vae"]}, {"layerwise_offload_components": ["vae", "dit"]},
     ["offloads with --layerwise-offload-components (dit): less resident on the GPU"]),
    ({"quantization": None}, {"quantization": "fp8"}, ["changes --quantization from None to fp8"]),
    ({"enable_cfg_parallel": True}, {"enable_cfg_parallel": False}, ["turns CFG parallelism off"]),
    ({"attention_backend": "sage_attn"}, {"attention_backend": "fa"}, []),  # a backend swap keeps what was asked
])
def test_what_makes_a_fix_unsafe(before, after, expected):
    assert unsafe_reasons(before, after) == expected


# --- `lint -`, --quiet, --statistics, concise ----------------------------------------------------

def test_stdin_is_linted_under_the_name_given(tmp_path):
    text = f"targets: [4xH200]\ncommand: {SAGE}\n"
    code, out, err = run("lint", "--no-config", "--format", "json", "--stdin-filename", "deploy/r.yaml", "-",
                         cwd=tmp_path, stdin=text)
    assert code == 1, err
    [f] = [f for f in findings(out) if f["rule"] == "H3D305"]
    assert (f["file"], f["line"]) == ("deploy/r.yaml", 2) and "h3doctor-stdin" not in out
    code, out, err = run("lint", "--no-config", "--fix", "-", cwd=tmp_path, stdin=text)  # the fixed text to stdout
    assert (code, out) == (0, f"targets: [4xH200]\ncommand: {FIXED}\n"), err
    code, out, _ = run("lint", "--no-config", "--diff", "--stdin-filename", "r.yaml", "-", cwd=tmp_path, stdin=text)
    assert out.startswith("--- a/r.yaml\n+++ b/r.yaml\n")


def test_stdin_takes_its_targets_and_excludes_from_the_configuration_by_its_name(tmp_path):
    # `git show :deploy/r.yaml | h3doctor lint --stdin-filename deploy/r.yaml -` (README): the recipe
    # names no target, .h3doctor.yaml gives one to deploy/ and vendor/, and excludes vendor/
    write(tmp_path / ".h3doctor.yaml", """\
        exclude: [vendor/]
        overrides:
          - paths: [deploy/, vendor/]
            targets: [4xH200]
        """)
    text = f"command: {SAGE}\n"
    code, out, err = run("lint", "--format", "json", "--stdin-filename", "deploy/r.yaml", "-", cwd=tmp_path, stdin=text)
    assert code == 1, err
    assert {(f["rule"], f["file"], f["target"]) for f in findings(out)} == {("H3D305", "deploy/r.yaml", "4xH200")}
    code, out, err = run("lint", "--format", "json", "--stdin-filename", "vendor/r.yaml", "-", cwd=tmp_path, stdin=text)
    assert code == 1 and [f["rule"] for f in findings(out)] == ["H3D305"], err  # named without it: read
    code, out, err = run("lint", "--format", "json", "--force-exclude", "--stdin-filename", "vendor/r.yaml", "-",
                         cwd=tmp_path, stdin=text)
    assert code == 0 and json.loads(out)["summary"]["files"] == 0 and findings(out) == [], err
    code, out, _ = run("lint", "--fix", "--force-exclude", "--stdin-filename", "vendor/r.yaml", "-",
                       cwd=tmp_path, stdin=text)
    assert (code, out) == (0, text)  # an excluded text is written back as it came, as ruff does


def test_stdin_filename_without_stdin_is_a_usage_error(tmp_path):
    write(tmp_path / "r.yaml", f"targets: [4xH200]\ncommand: {SAGE}\n")
    code, _, err = run("lint", "--no-config", "--stdin-filename", "x.yaml", "r.yaml", cwd=tmp_path)
    assert code == 2 and "--stdin-filename" in err


def test_quiet_statistics_and_concise(tmp_path):
    write(tmp_path / "a.yaml", f"targets: [4xH200, 1xH100]\ncommand: {SAGE}\n")
    code, out, _ = run("lint", "--no-config", "--quiet", "a.yaml", cwd=tmp_path)
    lines = out.splitlines()
    assert code == 1 and lines and all(line.startswith("a.yaml:2:") for line in lines)  # findings, nothing else
    code, concise, _ = run("lint", "--no-config", "--format", "concise", "a.yaml", cwd=tmp_path)
    assert code == 1 and concise == out
    code, out, _ = run("lint", "--no-config", "--statistics", "a.yaml", cwd=tmp_path)
    counts = {line.split()[1]: int(line.split()[0]) for line in out.splitlines()}
    assert code == 1 and counts["H3D305"] == 2 and sum(counts.values()) == len(lines)


# --- pre-commit and --force-exclude ------------------------------------------------------------

def test_force_exclude_applies_the_configuration_to_named_files(tmp_path):
    write(tmp_path / ".h3doctor.yaml", "targets: [4xH200]\nexclude: [vendor/]\n")
    write(tmp_path / "vendor" / "r.yaml", f"command: {SAGE}\n")
    code, out, _ = run("lint", "--format", "json", "vendor/r.yaml", cwd=tmp_path)
    assert code == 1  # named without it: read, as always
    code, out, _ = run("lint", "--format", "json", "--force-exclude", "vendor/r.yaml", cwd=tmp_path)
    assert code == 0 and json.loads(out)["summary"]["files"] == 0


def _pre_commit_sends(hook: dict, root: Path, name: str) -> bool:
    """pre-commit's choice of files for a hook (its Classifier): `files` and `exclude` searched in
    the name, then the identify tags of the file: all of `types`, one of `types_or` (every filter
    ANDed with the others)."""
    import re

    from identify.identify import tags_from_path

    tags = tags_from_path(str(root / name))
    return (bool(re.search(hook.get("files", ""), name)) and not re.search(hook.get("exclude", "^$"), name)
            and set(hook.get("types", ["file"])) <= tags
            and (not hook.get("types_or") or bool(tags & set(hook["types_or"])))
            and not tags & set(hook.get("exclude_types", [])))


def test_the_pre_commit_hook_sends_launch_kinds_and_honours_exclude(tmp_path):
    [hook] = yaml.safe_load((REPO / ".pre-commit-hooks.yaml").read_text(encoding="utf-8"))
    entry = hook["entry"].split()
    assert entry[:2] == ["h3doctor", "lint"] and "--force-exclude" in entry
    script = f"#!/bin/bash\nexec {SAGE}\n"
    batch = f"#!/bin/bash\n#SBATCH --nodes=1\nsrun {SAGE}\n"
    launches = {  # every launch kind, as a commit stages it: mode 0644 unless said
        "deploy/r.yaml": f"command: {SAGE}\n",
        "deploy/job.sbatch": batch, "deploy/job.slurm": batch,  # no identify tag for these suffixes
        "docker/entrypoint": script,  # extensionless, not executable: identify does not read its #!
        "docker/start": script,  # extensionless and executable (chmod below)
        "docker/run.local": script,  # an unusual suffix, executable: identify's `shell` by its #!
        "docker/serve.sh": script,
        "Dockerfile": f"FROM lmsysorg/sglang:v0.5.23\nCMD {SAGE}\n",
        "vendor/job.sbatch": batch,  # sent, and skipped by the configuration's exclude
    }
    others = {"README.md": "# deploy\n", "LICENSE": "Apache License\n", "Makefile": "all:\n\ttrue\n",
              "tools/x.py": "print(1)\n", ".github/workflows/ci.yml": "on: [push]\njobs: {}\n"}
    for name, text in {**launches, **others}.items():
        write(tmp_path / name, text)
    for name in ("docker/start", "docker/run.local"):
        (tmp_path / name).chmod(0o755)
    write(tmp_path / ".h3doctor.yaml", "targets: [4xH200]\nexclude: [vendor/]\n")
    (tmp_path / "weights.bin").write_bytes(b"\x00\x01" * 64)
    staged = [*launches, *others, ".h3doctor.yaml", "weights.bin"]
    sent = [n for n in staged if _pre_commit_sends(hook, tmp_path, n)]
    assert sent == [*launches, *others]  # every launch, whatever its mode; not the configuration or a binary
    code, out, err = run(*entry[1:], "--format", "json", *sent, cwd=tmp_path)  # pre-commit runs the entry so
    assert code == 1, err
    failed = {f["file"] for f in findings(out) if f["rule"] == "H3D305"}
    assert failed == set(launches) - {"vendor/job.sbatch"}, out
    assert {f["file"] for f in findings(out)} == failed  # the other files are skipped quietly
    kinds = {f["path"]: f["kind"] for f in json.loads(out)["files"]}
    assert kinds["deploy/job.sbatch"] == kinds["deploy/job.slurm"] == "slurm"
    assert kinds["docker/entrypoint"] == kinds["docker/run.local"] == "shell"
    assert all(kinds[n] is None for n in others) and "vendor/job.sbatch" not in kinds


# --- the GitHub Action ---------------------------------------------------------------------------

def _action() -> dict:
    return yaml.safe_load((REPO / "action.yml").read_text(encoding="utf-8"))


def _lint_step(tmp_path: Path, inputs: dict[str, str], bindir: str = "") -> tuple[subprocess.CompletedProcess, dict]:
    lint = next(s for s in _action()["runs"]["steps"] if s.get("id") == "lint")
    runner_temp = tmp_path.parent / f"{tmp_path.name}-runner-temp"
    runner_temp.mkdir(exist_ok=True)
    github_output = runner_temp / "github-output"  # the runner's file, outside the checkout
    env = {**os.environ, "GITHUB_OUTPUT": str(github_output), "H3D_BIN": bindir, "NO_COLOR": "1",
           "RUNNER_TEMP": str(runner_temp),
           "H3D_INPUT_PATHS": inputs.get("paths", "."), "H3D_INPUT_TARGETS": inputs.get("targets", ""),
           "H3D_INPUT_FAIL_ON": inputs.get("fail-on", "")}
    proc = subprocess.run(["bash", "--noprofile", "--norc", "-eo", "pipefail", "-c", lint["run"]], cwd=tmp_path,
                          env=env, capture_output=True, text=True, timeout=300)
    outputs = dict(line.split("=", 1) for line in github_output.read_text(encoding="utf-8").splitlines())
    return proc, outputs


def test_the_action_leaves_the_callers_python_alone_and_declares_outputs():
    action = _action()
    steps = action["runs"]["steps"]
    assert not any("setup-python" in str(s.get("uses", "")) for s in steps)
    install = next(s for s in steps if s.get("id") == "install")
    assert "-m venv" in install["run"] and "RUNNER_TEMP" in install["run"]
    assert {"exit-code", "errors", "warnings", "notes", "sarif-file"} <= set(action["outputs"])
    upload = next(s for s in steps if "upload-sarif" in str(s.get("uses", "")))
    assert "head.repo.fork" in upload["if"] and upload["continue-on-error"] is True


def test_the_action_lints_paths_one_a_line_and_counts_the_findings(tmp_path):
    write(tmp_path / "my recipes" / "r.yaml", f"targets: [4xH200]\ncommand: {SAGE}\n")
    proc, outputs = _lint_step(tmp_path, {"paths": "my recipes/r.yaml\n\n"}, str(Path(sys.executable).parent))
    assert proc.returncode == 0, proc.stderr
    assert outputs["exit-code"] == "1" and int(outputs["errors"]) == 1
    sarif = json.loads(Path(outputs["sarif-file"]).read_text(encoding="utf-8"))
    assert [r["ruleId"] for r in sarif["runs"][0]["results"]] == ["H3D305"]


def test_the_action_writes_sarif_when_lint_fails_with_an_error(tmp_path):
    proc, outputs = _lint_step(tmp_path, {"paths": "no-such-file.yaml"}, str(Path(sys.executable).parent))
    assert proc.returncode == 0, proc.stderr
    assert outputs["exit-code"] == "2" and outputs["errors"] == "0"
    run = json.loads(Path(outputs["sarif-file"]).read_text(encoding="utf-8"))["runs"][0]
    [invocation] = run["invocations"]
    assert run["results"] == [] and invocation["executionSuccessful"] is False and invocation["exitCode"] == 2
    assert "no such file or directory" in invocation["toolExecutionNotifications"][0]["message"]["text"]


# the names the Action wrote into the checkout before it wrote only under RUNNER_TEMP
_FORMER_ACTION_NAMES = ("h3doctor.sarif", "h3doctor-lint.err", "h3doctor-venv")


@pytest.mark.parametrize("paths, code", [("my recipes/r.yaml", "1"), ("no-such-file.yaml", "2")])
def test_the_action_writes_nothing_into_the_checkout_and_follows_no_planted_link(tmp_path, paths, code):
    """A pull request can commit any name as a link (h3doctor.sarif -> ~/.bashrc): the step's
    files are new ones in a fresh directory under RUNNER_TEMP, whether h3doctor writes the SARIF
    (findings) or the step's fallback does (an input error)."""
    write(tmp_path / "my recipes" / "r.yaml", f"targets: [4xH200]\ncommand: {SAGE}\n")
    victim = tmp_path.parent / f"{tmp_path.name}-victim"
    victim.write_text("the user's own file\n", encoding="utf-8")
    for name in _FORMER_ACTION_NAMES:
        (tmp_path / name).symlink_to(victim)
    before = sorted(p.name for p in tmp_path.iterdir())
    proc, outputs = _lint_step(tmp_path, {"paths": paths}, str(Path(sys.executable).parent))
    assert proc.returncode == 0, proc.stderr
    assert outputs["exit-code"] == code
    assert victim.read_text(encoding="utf-8") == "the user's own file\n"
    assert all((tmp_path / name).is_symlink() for name in _FORMER_ACTION_NAMES)
    assert sorted(p.name for p in tmp_path.iterdir()) == before  # nothing new in the checkout
    sarif = Path(outputs["sarif-file"])
    runner_temp = tmp_path.parent / f"{tmp_path.name}-runner-temp"
    assert sarif.parent.parent == runner_temp and not sarif.is_symlink()
    assert (sarif.parent.stat().st_mode & 0o077) == 0  # mktemp -d: the step's own directory
    assert json.loads(sarif.read_text(encoding="utf-8"))["version"] == "2.1.0"


def test_lint_never_writes_its_report_through_a_link_or_into_a_fifo(tmp_path):
    """lint's --output-file is created fresh: a link there (to a file that exists or not) or a
    FIFO is a usage error, and neither the link's target nor the FIFO is touched."""
    write(tmp_path / "r.yaml", f"targets: [4xH200]\ncommand: {SAGE}\n")
    victim = tmp_path / "victim"
    victim.write_text("mine\n", encoding="utf-8")
    (tmp_path / "to-file.sarif").symlink_to(victim)
    (tmp_path / "dangling.sarif").symlink_to(tmp_path / "new-file")
    os.mkfifo(tmp_path / "pipe.sarif")
    for name in ("to-file.sarif", "dangling.sarif", "pipe.sarif"):
        code, out, err = run("lint", "--format", "sarif", "--output-file", name, "r.yaml", cwd=tmp_path)
        assert code == 2 and "cannot write the report" in err, (name, err)
    assert victim.read_text(encoding="utf-8") == "mine\n" and not (tmp_path / "new-file").exists()
    assert (tmp_path / "to-file.sarif").is_symlink() and (tmp_path / "dangling.sarif").is_symlink()
    code, _, err = run("lint", "--format", "sarif", "--output-file", "fresh.sarif", "r.yaml", cwd=tmp_path)
    assert code == 1 and json.loads((tmp_path / "fresh.sarif").read_text(encoding="utf-8"))["version"] == "2.1.0"
