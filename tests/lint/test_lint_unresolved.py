"""Values a launch's file leaves to the shell (issue 30 items 1, 2, 5): an expansion that does not
reach sglang's argv does not matter, one that does is "any value" for its flag, and one that
decides the flag set is a located "not judged", never a silent pass."""

from __future__ import annotations

import pytest

from h3doctor.engine.check import check
from h3doctor.engine.ruleset import load_rules
from h3doctor.engine.unresolved import NotJudged, unresolved_values
from h3doctor.host.profiles import load_profile
from h3doctor.sglang.flagtable import load_flag_table
from h3doctor.unresolved import marked
from repo_paths import TESTS

H3 = ["sglang", "serve", "--model-path", "MiniMaxAI/MiniMax-H3"]


@pytest.fixture(scope="module")
def engine():
    return load_rules(None), load_flag_table(), load_profile("8xH200")


def _findings(engine, argv):
    rules, table, hw = engine
    return check(argv, hw, rules, table, {}).evaluation.findings


def test_a_rule_reading_an_unresolved_value_cannot_verify_it(engine):
    findings = {f.rule.id: f for f in _findings(engine, H3 + ["--tp-size", marked("$TP")])}
    assert findings["H3D515"].cannot_verify and findings["H3D515"].severity == "warning"
    assert "--tp-size '$TP'" in findings["H3D515"].unknown_why
    assert not any(f.severity == "error" for f in findings.values())


def test_rules_not_reading_the_unresolved_value_run_as_usual(engine):
    literal = [(f.rule.id, f.severity, f.message) for f in _findings(engine, H3 + ["--tp-size", "3"])]
    port = [(f.rule.id, f.severity, f.message) for f in _findings(engine, H3 + ["--tp-size", "3", "--port", marked("$PORT")])]
    assert literal and port == literal
    assert _findings(engine, H3 + ["--port=" + marked("$PORT")]) == []


@pytest.mark.parametrize("word", [["--attention-backend", marked("$BACKEND")], ["--attention-backend=" + marked("$BACKEND")]])
def test_a_free_form_value_is_any_value_not_its_stand_in(engine, word):
    """A flag with no choices (a backend name) is tried left out and with a name no release knows:
    what the rules read from it is then unknown, never the stand-in judged as the launch's value
    (it was `KeyError: 'H3DOCTOR-UNRESOLVED'`, an error; fails with one try of the stand-in)."""
    findings = {f.rule.id: f for f in _findings(engine, H3 + ["--num-gpus", "4", *word])}
    assert not any(f.severity == "error" for f in findings.values()), findings
    assert not any("UNRESOLVED" in f.message.upper() for f in findings.values())
    assert findings["H3D304"].cannot_verify and "--attention-backend '$BACKEND'" in findings["H3D304"].unknown_why
    # the launch's other words still decide: ring attention needs sp = ring x ulysses whatever the backend
    ring = {f.rule.id: f for f in _findings(engine, H3 + ["--num-gpus", "4", "--ring-degree", "2", *word])}
    assert ring["H3D228"].severity == "error" and not ring["H3D228"].cannot_verify


def test_a_strategy_fix_never_weighs_a_value_known_only_when_the_launch_runs(engine):
    """A layout or memory strategy weighs the launch's values together: with one left to the shell
    it gives up and says why, rather than crash on the unknown value (a TypeError in layout.py) or
    weigh a stand-in. The definite finding stays an error."""
    rules, table, hw = engine
    result = check(H3 + ["--num-gpus", "4", "--tp-size", "3", "--ulysses-degree", marked("$U")], hw, rules, table, {})
    assert any(f.rule.id == "H3D515" and f.severity == "error" for f in result.evaluation.findings)
    assert result.corrected_argv is None
    assert any("parallel_layout fix: it depends on --ulysses-degree '$U'" in g for g in result.gives_up), result.gives_up


@pytest.mark.parametrize("argv, word", [
    (H3 + [marked("$EXTRA_FLAG"), "4"], 4),
    (["sglang", "serve", "--model-path", marked("$MODEL")], 3),
    ([marked("$SGLANG"), "serve", "--model-path", "MiniMaxAI/MiniMax-H3"], 0),
])
def test_a_word_deciding_the_flag_set_is_not_judged_at_that_word(engine, argv, word):
    with pytest.raises(NotJudged) as caught:
        unresolved_values(argv, engine[1])
    assert caught.value.word == word


def _lint_fixture(monkeypatch, name: str) -> dict:
    import json
    from pathlib import Path

    from h3doctor.lint.run import LintOptions, lint
    from h3doctor.output.formats import render

    monkeypatch.chdir(TESTS / "fixtures" / "repo")
    code, report, _notes = lint([name], LintOptions())
    data = json.loads(render("lint", "json", report))
    data["exit_code"] = code
    return data


def test_the_fixture_scripts_expansions_are_judged_where_they_reach_sglang(monkeypatch):
    data = _lint_fixture(monkeypatch, "scripts/serve-node.sh")
    by_line: dict[int, list[dict]] = {}
    for f in data["findings"]:
        by_line.setdefault(f["line"], []).append(f)
    # the docker words' $HOME/$HF_TOKEN/$USER, `echo … $(hostname)` and MODEL= resolved: judged, failing
    assert {f["rule"] for f in by_line[12] if f["severity"] == "error"} >= {"H3D228"}
    assert not {ln for ln in by_line if ln < 12}
    # --tp-size "${H3_TP}": the rules reading it cannot verify, none calls it failing
    assert by_line[14] and all(f["cannot_verify"] and f["severity"] == "warning" for f in by_line[14])
    # $EXTRA_FLAGS: the flag set is not known, a located note, never a silent pass
    assert [(f["rule"], f["col"]) for f in by_line[16]] == [("H3DL002", 36)]
    assert data["exit_code"] == 1
    launch = data["files"][0]["launches"][0]
    assert launch["argv"][7] == "$HOME/.cache/huggingface:/data/hf-cache"
    assert '--port "$PORT"' in launch["results"][0]["corrected_command"]


def test_the_flags_own_value_is_unresolved_even_where_nothing_derived_differs(engine):
    from h3doctor.unresolved import UNRESOLVED

    rules, table, hw = engine
    ev = check(H3 + ["--port", marked("$PORT")], hw, rules, table, {}).evaluation
    assert ev.context["args.port"] is UNRESOLVED and ev.context["args.tp_size"] is not UNRESOLVED


@pytest.mark.parametrize("text,variables,words", [
    ('sglang serve --port "$PORT" --revision `git rev-parse HEAD`', None,
     ["sglang", "serve", "--port", marked("$PORT"), "--revision", marked("`git rev-parse HEAD`")]),
    ('sglang serve --model-path "$MODEL" --tp "${TP}" --x "a$(hostname)b"', {"MODEL": "M"},
     ["sglang", "serve", "--model-path", "M", "--tp", marked("${TP}"), "--x", "a" + marked("$(hostname)") + "b"]),
])
def test_the_one_shell_reader_marks_what_it_cannot_give_a_value_one_way(text, variables, words):
    """lint's scripts and the command-line hook's typed line are read by one reader that marks an
    expansion it cannot give a value with unresolved.marked (one spelling: the engine, lint and the
    hook read the same mark); an expansion it can give a value is that value."""
    from h3doctor.shellsplit import shell_commands

    [command] = shell_commands(text, variables=variables, keep_expansions=True)
    assert [w for w, _start, _end in command] == words


def test_the_fixture_kubernetes_script_and_env_are_judged_where_they_reach_sglang(monkeypatch):
    """deploy/k8s/h3-scripted.yaml: a `bash -c` script whose `echo … $(hostname)`, `${USER:-root}`
    and `--token "$HF_TOKEN"` (a Secret) do not reach sglang; `$H3_MODEL` from the repository's
    ConfigMap (envFrom) and `$(H3_TP)` (configMapKeyRef) resolved from h3-env.yaml beside it;
    `$PORT` from a Secret is any value. The sidecar's `$(SIDECAR_TP)` may come from a Secret's
    envFrom: any value, its rules cannot verify."""
    data = _lint_fixture(monkeypatch, "deploy/k8s/h3-scripted.yaml")
    server, sidecar = data["files"][0]["launches"]
    assert server["argv"] == ["sglang", "serve", "--model-path", "MiniMaxAI/MiniMax-H3", "--tp-size", "3",
                              "--port", "$PORT", "--num-gpus", "4"]
    assert '--port "$PORT"' in server["results"][0]["corrected_command"]
    errors = {(f["rule"], f["line"]) for f in data["findings"] if f["severity"] == "error"}
    assert ("H3D515", 18) in errors  # TP 3 from the ConfigMap: judged, failing
    assert sidecar["argv"][5] == "$(SIDECAR_TP)"
    # the launch's findings (its probes are the manifest's, judged in test_lint_probes.py)
    sidecar_findings = [f for f in data["findings"] if f["line"] >= 37 and f["rule"] != "H3D422"]
    assert sidecar_findings and all(f["cannot_verify"] and f["severity"] == "warning" for f in sidecar_findings)
    assert data["exit_code"] == 1


def _manifest(env: str, args: str, configmap: str = "") -> str:
    return (configmap + "apiVersion: v1\nkind: Pod\nmetadata: {name: p}\nspec:\n  containers:\n    - name: s\n"
            "      image: lmsysorg/sglang:v0.5.23\n      command: [sglang, serve]\n"
            f"      args: [--model-path, MiniMaxAI/MiniMax-H3, --num-gpus, '4', {args}]\n"
            f"      env: {env}\n      resources: {{limits: {{nvidia.com/gpu: 4}}}}\n")


def _tp_word(tmp_path, text: str, sibling: str | None = None) -> str:
    from h3doctor.inputs.kubernetes import read_manifests
    from h3doctor.located import load_file
    from h3doctor.safeload import confined

    (tmp_path / "pod.yaml").write_text(text)
    if sibling is not None:
        (tmp_path / "cm.yaml").write_text(sibling)
    with confined((str(tmp_path),), (str(tmp_path / "pod.yaml"),)):
        [launch], _notes = read_manifests(load_file(str(tmp_path / "pod.yaml"), multi=True), text)
    return launch.tokens[launch.tokens.index("--tp-size") + 1]


CM = "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: knobs}\ndata: {TP: '8'}\n"


@pytest.mark.parametrize("env,sibling,word", [
    ("[{name: TP, value: '2'}]", None, "2"),
    ("[{name: TP, valueFrom: {configMapKeyRef: {name: knobs, key: TP}}}]", CM, "8"),  # the repository's ConfigMap
    ("[{name: TP, valueFrom: {configMapKeyRef: {name: knobs, key: TP}}}]", None, marked("$(TP)")),  # the cluster's
    ("[{name: TP, valueFrom: {secretKeyRef: {name: s, key: tp}}}]", CM, marked("$(TP)")),
    ("[{name: TP, valueFrom: {fieldRef: {fieldPath: metadata.name}}}]", None, marked("$(TP)")),
    ("[]", CM, "$(TP)"),  # defined nowhere: the kubelet leaves it as written, and sglang is given that
])
def test_a_kubernetes_variable_is_resolved_where_the_repository_holds_it_else_unknown(tmp_path, env, sibling, word):
    assert _tp_word(tmp_path, _manifest(env, "--tp-size, $(TP)"), sibling) == word


def test_envfrom_resolves_from_the_repositorys_configmap_and_a_source_it_lacks_makes_others_unknown(tmp_path):
    from_cm = "[]\n      envFrom: [{configMapRef: {name: knobs}, prefix: H3_}]"
    assert _tp_word(tmp_path, _manifest(from_cm, "--tp-size, $(H3_TP)"), CM) == "8"
    from_secret = "[]\n      envFrom: [{secretRef: {name: s}}]"
    assert _tp_word(tmp_path, _manifest(from_secret, "--tp-size, $(H3_TP)"), CM) == marked("$(H3_TP)")


def test_a_configmap_beside_the_manifest_is_not_read_through_a_link_out_of_the_repository(tmp_path):
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "cm.yaml").write_text(CM)
    repo = tmp_path / "repo"
    repo.mkdir()
    (repo / "cm.yaml").symlink_to(outside / "cm.yaml")
    env = "[{name: TP, valueFrom: {configMapKeyRef: {name: knobs, key: TP}}}]"
    assert _tp_word(repo, _manifest(env, "--tp-size, $(TP)")) == marked("$(TP)")


def test_the_fixture_compose_services_expansions_are_judged_where_they_reach_sglang(monkeypatch):
    """deploy/compose.yaml: h3-tuned's `sh -c` script reads `$$H3_TP` (the container's `$H3_TP`)
    from `environment:` (3: judged, failing); `${H3_PORT:-30000}` is compose's, from the host:
    any value; `${HOME}` in a volume and `${HF_TOKEN}` do not reach sglang. h3-flags' list word
    `${H3_ULYSSES}` is any value: its rules cannot verify, none is an error."""
    data = _lint_fixture(monkeypatch, "deploy/compose.yaml")
    _plain, tuned, flags = data["files"][0]["launches"]
    assert tuned["argv"][-4:] == ["--tp-size", "3", "--port", "${H3_PORT:-30000}"]
    assert {(f["rule"], f["line"]) for f in data["findings"] if f["severity"] == "error"} >= {("H3D515", 20)}
    assert flags["argv"][-1] == "${H3_ULYSSES}"
    on_flags = [f for f in data["findings"] if f["line"] == 29]
    assert on_flags and all(f["cannot_verify"] and f["severity"] == "warning" for f in on_flags)


def test_the_fixture_dockerfiles_shell_form_cmd_reads_the_stages_env(monkeypatch):
    """docker/Dockerfile: a shell-form CMD's `$H3_MODEL`/`$H3_TP` are the stage's ENV (TP 3: judged,
    failing), `$PORT` (given at run time) is any value, the `echo … $BUILD_SHA $(hostname)` does
    not reach sglang."""
    data = _lint_fixture(monkeypatch, "docker/Dockerfile")
    [launch] = data["files"][0]["launches"]
    assert launch["argv"] == ["sglang", "serve", "--model-path", "MiniMaxAI/MiniMax-H3", "--tp-size", "3",
                              "--num-gpus", "4", "--port", "$PORT"]
    assert {(f["rule"], f["line"]) for f in data["findings"] if f["severity"] == "error"} >= {("H3D515", 8)}
    assert data["exit_code"] == 1


def test_a_compose_interpolation_in_a_script_is_the_hosts_not_the_containers(tmp_path):
    """`${TP}` in a compose `sh -c` script is compose's (the host's TP), not `environment: TP`:
    unknown, never the container's value; `$$TP` is the container's."""
    from h3doctor.inputs.compose import read_compose
    from h3doctor.located import load_file

    def tp(script: str) -> str:
        (tmp_path / "compose.yaml").write_text(
            "services:\n  s:\n    image: lmsysorg/sglang:v0.5.23\n    environment: {TP: '3'}\n"
            f"    command: [sh, -c, 'exec sglang serve MiniMaxAI/MiniMax-H3 --tp-size {script}']\n")
        [launch], _notes = read_compose(load_file(str(tmp_path / "compose.yaml"))[0])
        return launch.tokens[-1]

    assert tp("$$TP") == "3"
    assert tp("${TP}") == marked("${TP}")


def test_a_compose_environment_value_is_interpolated_from_the_host(tmp_path):
    """`environment: {SGLANG_X: ${X}}` gives the container the host's X: unknown (a variable sglang
    reads: the launch is not judged), never the text `${X}`."""
    from h3doctor.inputs.compose import read_compose
    from h3doctor.located import load_file

    (tmp_path / "compose.yaml").write_text(
        "services:\n  s:\n    image: lmsysorg/sglang:v0.5.23\n    environment: {SGLANG_X: '${X}', KEPT: 'a$$b'}\n"
        "    command: [sglang, serve, MiniMaxAI/MiniMax-H3]\n")
    [launch], _notes = read_compose(load_file(str(tmp_path / "compose.yaml"))[0])
    assert (launch.env["SGLANG_X"], launch.env["KEPT"]) == (marked("${X}"), "a$b")


def test_the_fixture_config_mounted_from_a_configmap_is_read_from_the_configmap(monkeypatch):
    """deploy/k8s/h3-mounted.yaml: `--config /etc/h3/server.yaml`, a ConfigMap key the pod mounts
    at /etc/h3, is read from the ConfigMap in the repository (its tp_size 3 judged, failing), not
    looked up on the machine lint runs on (issue 30 item 5)."""
    data = _lint_fixture(monkeypatch, "deploy/k8s/h3-mounted.yaml")
    rules = {f["rule"] for f in data["findings"]}
    assert "H3D515" in rules and not rules & {"H3D031", "H3DL006"}
    assert data["exit_code"] == 1


@pytest.mark.parametrize("volume,mount,files", [
    ("{configMap: {name: knobs}}", "{mountPath: /etc/h3/}", {"/etc/h3/s.yaml": "tp_size: 3\n", "/etc/h3/TP": "8"}),
    ("{configMap: {name: knobs, items: [{key: s.yaml, path: conf/server.yaml}]}}", "{mountPath: /etc/h3}",
     {"/etc/h3/conf/server.yaml": "tp_size: 3\n"}),
    ("{configMap: {name: knobs}}", "{mountPath: /srv/server.yaml, subPath: s.yaml}", {"/srv/server.yaml": "tp_size: 3\n"}),
    ("{configMap: {name: elsewhere}}", "{mountPath: /etc/h3}", {}),  # only the cluster holds it
    ("{secret: {secretName: knobs}}", "{mountPath: /etc/h3}", {}),
])
def test_a_configmap_volume_is_laid_out_as_the_kubelet_lays_it_out(volume, mount, files):
    from h3doctor.inputs.configmaps import ConfigMaps
    from h3doctor.inputs.kubernetes import _mounts
    from h3doctor.safeload import load_yaml

    maps = ConfigMaps()
    maps["knobs"], maps.origin["knobs"] = {"s.yaml": "tp_size: 3\n", "TP": "8"}, "cm.yaml"
    container = load_yaml(f"volumeMounts: [{{name: v, {mount[1:-1]}}}]", origin="t")
    volumes = load_yaml(f"[{{name: v, {volume[1:-1]}}}]", origin="t")
    assert {path: text for path, (text, _where) in _mounts(container, volumes, maps).items()} == files


def test_an_image_left_to_make_names_no_release_and_is_shown_as_written(tmp_path, monkeypatch):
    """`docker run … $(IMAGE) …` in a Makefile recipe: the image is known only when make runs, so
    its release is "cannot verify" (H3D922), said with the image as the file writes it — never the
    reader's internal mark (a NUL) in the message, nor "not sglang's"."""
    import json

    from h3doctor.lint.run import LintOptions, lint
    from h3doctor.output.formats import render
    (tmp_path / "serve.mk").write_text(
        "IMAGE := lmsysorg/sglang:v0.5.23\n\nserve:\n"
        "\tdocker run --rm --gpus all --ipc=host $(IMAGE) sglang serve --model-path MiniMaxAI/MiniMax-H3 --num-gpus 4\n")
    monkeypatch.chdir(tmp_path)
    _code, report, _notes = lint(["serve.mk"], LintOptions(targets=("4xH200",), no_config=True))
    [release] = [f["message"] for f in json.loads(render("lint", "json", report))["findings"] if f["rule"] == "H3D922"]
    assert "\x00" not in release
    assert "the image $(IMAGE) is known only when the launch runs" in release
    assert "not sglang's" not in release
