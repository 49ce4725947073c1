"""Launcher policies (h3doctor/integrations/): the decision about a SkyPilot task or a dstack run,
the two hooks (with stand-ins of SkyPilot's and dstack's documented classes, which CI does not
install; the real SkyPilot classes where the package is installed) and the REST service over
real HTTP on localhost. Everything is read through data: the decision, HTTP status and body."""

from __future__ import annotations

import json
import shlex
import socket
import subprocess
import sys
import threading
import types
import urllib.error
import urllib.request

import pytest
import yaml

from h3doctor import api
from h3doctor.inputs.dstack import gpu_targets
from h3doctor.inputs.skypilot import read_task
from h3doctor.integrations import dstack as dstack_hook, rest, skypilot as sky_hook
from h3doctor.integrations.dstack import decide_run
from h3doctor.integrations.judge import decide
from h3doctor.integrations.message import MAX_MESSAGE
from h3doctor.integrations.skypilot import decide_task
from h3doctor.located import load_json

RING = "sglang serve MiniMaxAI/MiniMax-H3 --num-gpus 4 --ulysses-degree 2 --ring-degree 2 --attention-backend sage_attn"
CLEAN = "sglang serve MiniMaxAI/MiniMax-H3 --num-gpus 4"
SCRIPT = ("set -e\n# start the server\nexport HF_HOME=/cache\n" + RING.replace(" --ring", " \\\n  --ring")
          + "  # keep\necho done\n")


def task(run: str = RING, accelerators: object = "H200:4", **extra: object) -> dict:
    return {"resources": {"accelerators": accelerators, **extra}, "run": run}


def run_config(commands: list[str], gpu: object = "H200:4", **extra: object) -> dict:
    return {"type": "task", "commands": commands, "resources": {"gpu": gpu}, **extra}


# --- the decision ---------------------------------------------------------------------------

def test_a_failing_launch_is_rejected_with_sglangs_words_and_the_corrected_command():
    d = decide_task(task())
    ref = api.check(shlex.split(RING), profile="4xH200")
    assert d.action == "reject"
    headline, *rest_lines = d.message.splitlines()
    assert headline == ("h3doctor rejects run line 1 on 4xH200: sglang's launcher rejects it within seconds, "
                        "before any download")
    assert [f"  {f.rule}: {f.message}" for f in ref.findings] == rest_lines[:-1]
    assert rest_lines[-1] == f"  corrected command: {shlex.join(ref.corrected_argv)}"


def test_a_clean_launch_passes_and_says_where():
    d = decide_task(task(CLEAN, {"H200": 4}))
    assert (d.action, d.message, d.config) == ("allow", "h3doctor: passed: run line 1 on 4xH200", None)


@pytest.mark.parametrize("t, says", [
    ({"resources": {"accelerators": "H200:4"}, "run": "python train.py"}, "no sglang launch in the task"),
    ({"run": CLEAN}, "run line 1: no accelerators to judge it on"),
    (task("sglang serve Qwen/Qwen-Image --num-gpus 4"), "not a MiniMax-H3 family model"),
    (task(CLEAN + " --ulysses-degree $DEG"), "$DEG"),
    (task(CLEAN, "NoSuchGPU:4"), "NoSuchGPU"),
    ({"resources": "H200:4", "run": RING, "envs": {"A": {"deep": [1]}}}, "no accelerators"),
])
def test_what_cannot_be_judged_passes_said_not_judged_never_passed(t, says):
    d = decide_task(t)
    assert d.action == "allow" and "not judged" in d.message and says in d.message and "passed" not in d.message


def test_a_file_the_launch_names_is_never_read_by_the_policy(tmp_path):
    # a clean --config file: read, it would pass; the policy reads no file on a task's behalf
    config = tmp_path / "c.yaml"
    config.write_text("num_gpus: 4\n")
    d = decide_task(task(f"{CLEAN} --config {config}"))
    assert d.action == "allow" and "not judged" in d.message and "passed" not in d.message


def test_a_task_that_is_no_mapping_of_data_is_not_judged():
    d = decide_task({"run": object(), "resources": {"accelerators": "H200:4"}})
    assert d.action == "allow" and "not judged" in d.message


def test_the_rejection_is_bounded():
    run = "\n".join([RING] * 200)
    d = decide_task(task(run))
    assert d.action == "reject" and len(d.message) <= MAX_MESSAGE and d.message.endswith("more characters)")


def test_mutation_replaces_exactly_the_launchs_words_in_run():
    d = decide_task(task(SCRIPT), mutate=True)
    assert d.action == "mutate" and "run line 4" in d.message
    assert d.config["run"] == SCRIPT.replace("sage_attn", "fa")
    assert d.config["resources"] == task()["resources"]
    assert decide_task(d.config).action == "allow"


def test_mutation_refuses_an_unsafe_fix_and_rejects():
    d = decide_task(task("sglang serve MiniMaxAI/MiniMax-H3 --num-gpus 8"), mutate=True)
    assert d.action == "reject" and d.config is None
    assert "not corrected" in d.message and "lowers --num-gpus from 8 to 4" in d.message


def test_mutation_that_still_fails_is_rejected(monkeypatch):
    from h3doctor.integrations import judge

    monkeypatch.setattr(judge, "edit_words", lambda text, spans, edits, style=None: text)  # a correction that changes nothing
    d = decide_task(task(), mutate=True)
    assert d.action == "reject" and "the corrected task still fails" in d.message


def test_the_policy_judges_on_the_release_image_id_names():
    """issue 32 item 2: the admin policy's decision is made on resources.image_id's release, as lint's."""
    metrics = "sglang serve MiniMaxAI/MiniMax-H3 --num-gpus 4 --enable-metrics"  # a flag 0.5.17 does not have
    assert decide_task(task(metrics)).action == "allow"  # no image: the newest verified release
    for image_id in ("docker:lmsysorg/sglang:v0.5.17", {None: "docker:lmsysorg/sglang:v0.5.17"}):
        d = decide_task(task(metrics, image_id=image_id))
        assert d.action == "reject" and "H3D012: error: unrecognized arguments: --enable-metrics" in d.message


def test_image_id_is_the_release_skypilot_writes_it_per_region():
    for image_id in ("docker:lmsysorg/sglang:v0.5.17", {None: "docker:lmsysorg/sglang:v0.5.17"}):
        launches, _notes = read_task(load_json(json.dumps(task(CLEAN, image_id=image_id)), "t"))
        assert launches[0].image == "lmsysorg/sglang:v0.5.17"
    launches, _ = read_task(load_json(json.dumps(task(CLEAN, image_id={"us": "docker:a:1", "eu": "docker:b:2"})), "t"))
    assert launches[0].image is None


# --- dstack ---------------------------------------------------------------------------------

@pytest.mark.parametrize("gpu, targets, count", [
    ("H100:8", ("8xH100",), 8), ("nvidia:H100:8", ("8xH100",), 8), ("A100:40GB:2", ("2xA100-40GB",), 2),
    ("A100,H100:8", ("8xA100", "8xH100"), 8), ({"name": ["H200"], "count": {"min": 4, "max": 4}}, ("4xH200",), 4),
    ({"name": "H100", "count": "8"}, ("8xH100",), 8), ("H100", ("1xH100",), 1),
    ("H100:1..8", (), None), ({"name": ["H100"], "count": {"min": 1, "max": 8}}, (), None), (8, (), 8), (None, (), None),
])
def test_dstack_gpu_specs(gpu, targets, count):
    got, n, why = gpu_targets(gpu)
    assert (got, n) == (targets, count) and (why is None) == bool(targets)


def test_dstack_run_is_rejected_and_corrected_in_its_commands_item():
    cfg = run_config(["pip install -U x", RING, "echo ok"], image="lmsysorg/sglang:v0.5.23")
    d = decide_run(cfg)
    assert d.action == "reject" and d.message.startswith("h3doctor rejects commands[1] on 4xH200:")
    m = decide_run(cfg, mutate=True)
    assert m.action == "mutate" and m.config["commands"] == ["pip install -U x", RING.replace("sage_attn", "fa"), "echo ok"]


@pytest.mark.parametrize("cfg, says", [
    (run_config([RING], gpu="H200:1..4"), "range"),
    (run_config([RING.replace("--num-gpus 4", "--num-gpus $N")], env=["N"]), "$N"),
    ({"type": "dev-environment", "ide": "vscode"}, "dev-environment"),
])
def test_dstack_what_cannot_be_judged_passes_said(cfg, says):
    d = decide_run(cfg)
    assert d.action == "allow" and "not judged" in d.message and says in d.message


def test_dstack_variables_are_bound_from_env_and_its_own():
    d = decide_run(run_config([RING.replace("--num-gpus 4", "--num-gpus $DSTACK_GPUS_NUM")], env={"X": "1"}))
    assert d.action == "reject" and "--num-gpus 4" in d.message


# --- the hooks, with stand-ins of the documented classes ------------------------------------

class _Rejected(Exception):
    pass


@pytest.fixture
def fake_sky(monkeypatch):
    """SkyPilot's documented shapes: sky.AdminPolicy (validate_and_mutate), sky.MutatedUserRequest(task,
    skypilot_config), sky.exceptions.UserRequestRejectedByPolicy; a Task with to_yaml_config() and run."""
    sky = types.ModuleType("sky")
    sky.AdminPolicy = type("AdminPolicy", (), {})
    sky.MutatedUserRequest = lambda task, skypilot_config: types.SimpleNamespace(task=task, skypilot_config=skypilot_config)
    sky.exceptions = types.ModuleType("sky.exceptions")
    sky.exceptions.UserRequestRejectedByPolicy = _Rejected
    monkeypatch.setitem(sys.modules, "sky", sky)
    monkeypatch.setitem(sys.modules, "sky.exceptions", sky.exceptions)
    monkeypatch.setattr(sky_hook.lazy, "made", {})
    monkeypatch.delenv(sky_hook.MUTATE_ENV, raising=False)
    return sky


class _Task:
    def __init__(self, run: str) -> None:
        self.run = run

    def to_yaml_config(self) -> dict:
        return task(self.run, {"H200": 4})


def test_skypilot_policy_rejects_and_mutating_policy_corrects(fake_sky, monkeypatch):
    request = types.SimpleNamespace(task=_Task(SCRIPT), skypilot_config={"k": 1})
    assert issubclass(sky_hook.Policy, fake_sky.AdminPolicy)
    with pytest.raises(_Rejected, match="H3D305"):
        sky_hook.Policy.validate_and_mutate(request)
    assert request.task.run == SCRIPT
    out = sky_hook.MutatingPolicy.validate_and_mutate(request)
    assert out.task.run == SCRIPT.replace("sage_attn", "fa") and out.skypilot_config == {"k": 1}
    monkeypatch.setenv(sky_hook.MUTATE_ENV, "1")
    request.task.run = SCRIPT
    assert sky_hook.Policy.validate_and_mutate(request).task.run == SCRIPT.replace("sage_attn", "fa")


def test_skypilot_policy_passes_a_clean_or_unjudged_task_untouched(fake_sky):
    for run in (CLEAN, "python train.py"):
        request = types.SimpleNamespace(task=_Task(run), skypilot_config={})
        assert sky_hook.MutatingPolicy.validate_and_mutate(request).task.run == run


@pytest.fixture
def fake_dstack(monkeypatch):
    """dstack's documented shapes: dstack.plugins.ApplyPolicy (on_run_apply(user, project, spec):
    raise ValueError to reject), Plugin (get_apply_policies), get_plugin_logger; a RunSpec's
    configuration with model_dump(mode="json") and commands."""
    import logging

    plugins = types.ModuleType("dstack.plugins")
    plugins.ApplyPolicy = type("ApplyPolicy", (), {})
    plugins.Plugin = type("Plugin", (), {})
    plugins.get_plugin_logger = logging.getLogger
    package = types.ModuleType("dstack")
    package.plugins = plugins
    monkeypatch.setitem(sys.modules, "dstack", package)
    monkeypatch.setitem(sys.modules, "dstack.plugins", plugins)
    monkeypatch.setattr(dstack_hook.lazy, "made", {})
    monkeypatch.delenv(sky_hook.MUTATE_ENV, raising=False)
    return plugins


class _Configuration:
    def __init__(self, commands: list[str]) -> None:
        self.commands = commands

    def model_dump(self, mode: str = "python") -> dict:
        return run_config(list(self.commands))


def test_dstack_policy_rejects_with_value_error_and_corrects_when_asked(fake_dstack, monkeypatch):
    policy = dstack_hook.Plugin().get_apply_policies()[0]
    assert isinstance(policy, fake_dstack.ApplyPolicy)
    spec = types.SimpleNamespace(configuration=_Configuration(["cd /app", RING]))
    with pytest.raises(ValueError, match="H3D305"):
        policy.on_run_apply("user", "project", spec)
    monkeypatch.setenv(sky_hook.MUTATE_ENV, "1")
    assert policy.on_run_apply("user", "project", spec).configuration.commands == ["cd /app", RING.replace("sage_attn", "fa")]


def test_the_hooks_import_without_skypilot_or_dstack_and_say_what_is_missing():
    code = """
import sys
class Block:
    def find_spec(self, name, path=None, target=None):
        if name.split('.')[0] in ('sky', 'dstack'):
            raise ImportError('blocked: ' + name)
sys.meta_path.insert(0, Block())
from h3doctor.integrations import skypilot, dstack, rest
for module, name in ((skypilot, 'Policy'), (dstack, 'Plugin')):
    try:
        getattr(module, name)
    except ImportError as exc:
        print(exc)
"""
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert "install SkyPilot (pip install skypilot)" in out and "pip install 'dstack[server]'" in out


def test_real_skypilot_classes_when_installed():
    sky = pytest.importorskip("sky", reason="SkyPilot is not in the test extra (~80 packages); CI uses the stand-ins")
    from sky import admin_policy, exceptions

    t = sky.Task(run=SCRIPT)
    t.set_resources(sky.Resources(accelerators="H200:4", image_id="docker:lmsysorg/sglang:v0.5.23"))
    request = admin_policy.UserRequest(task=t, skypilot_config=sky.Config(),
                                       request_name=admin_policy.request_names.AdminPolicyRequestName.CLUSTER_LAUNCH)
    with pytest.raises(exceptions.UserRequestRejectedByPolicy, match="H3D305"):
        sky_hook.Policy.validate_and_mutate(request)
    assert sky_hook.MutatingPolicy.validate_and_mutate(request).task.run == SCRIPT.replace("sage_attn", "fa")
    # and over the wire, SkyPilot's own RestfulAdminPolicy against the service
    with _serving(mutate=False) as url:
        t.run = SCRIPT
        with pytest.raises(exceptions.UserRequestRejectedByPolicy, match="H3D305"):
            admin_policy.RestfulAdminPolicy(url + "/skypilot").validate_and_mutate(request)
    with _serving(mutate=True) as url:
        out = admin_policy.RestfulAdminPolicy(url + "/skypilot").validate_and_mutate(request)
        assert out.task.run == SCRIPT.replace("sage_attn", "fa")


# --- the REST service over HTTP -------------------------------------------------------------

class _serving:
    def __init__(self, mutate: bool = False) -> None:
        self.server = rest.make_server("127.0.0.1", 0, mutate=mutate)

    def __enter__(self) -> str:
        threading.Thread(target=self.server.serve_forever, daemon=True).start()
        return f"http://127.0.0.1:{self.server.server_address[1]}"

    def __exit__(self, *exc: object) -> None:
        self.server.shutdown()
        self.server.server_close()


@pytest.fixture(scope="module")
def service():
    with _serving() as url:
        yield url


def _post(url: str, data: bytes, headers: dict | None = None) -> tuple[int, str]:
    request = urllib.request.Request(url, data=data, headers={"Content-Type": "application/json", **(headers or {})})
    try:
        with urllib.request.urlopen(request, timeout=60) as response:
            return response.status, response.read().decode()
    except urllib.error.HTTPError as exc:
        return exc.code, exc.read().decode()


def _sky_body(t: dict) -> bytes:
    """As RestfulAdminPolicy posts it: UserRequest.encode() (a JSON text) sent as JSON again."""
    inner = json.dumps({"task": yaml.safe_dump(t), "skypilot_config": "{}\n", "request_name": "launch",
                        "request_options": None, "at_client_side": False, "user": ""})
    return json.dumps(inner).encode()


def test_rest_skypilot_rejects_with_400_and_the_message(service):
    status, body = _post(service + "/skypilot", _sky_body(task(image_id={None: "docker:lmsysorg/sglang:v0.5.23"})))
    assert status == 400 and body == decide_task(task()).message


def test_rest_skypilot_allows_with_the_request_unchanged(service):
    t = task(CLEAN)
    status, body = _post(service + "/skypilot", _sky_body(t))
    assert status == 200
    answer = json.loads(json.loads(body))  # MutatedUserRequest.decode(response.json())
    assert answer == {"task": yaml.safe_dump(t), "skypilot_config": "{}\n"}


def test_rest_skypilot_mutates_when_the_service_is_asked_to():
    with _serving(mutate=True) as url:
        status, body = _post(url + "/skypilot", _sky_body(task(SCRIPT)))
    assert status == 200
    assert yaml.safe_load(json.loads(json.loads(body))["task"])["run"] == SCRIPT.replace("sage_attn", "fa")


def test_rest_dstack_endpoints(service):
    spec = {"run_name": "r", "configuration": run_config([RING])}
    status, body = _post(service + rest.DSTACK_RUN, json.dumps({"user": "u", "project": "p", "spec": spec}).encode())
    answer = json.loads(body)
    assert status == 200 and answer["spec"] == spec and answer["error"] == decide_run(run_config([RING])).message
    spec["configuration"]["commands"] = [CLEAN]
    _status, body = _post(service + rest.DSTACK_RUN, json.dumps({"user": "u", "project": "p", "spec": spec}).encode())
    assert json.loads(body) == {"spec": spec, "error": None}
    for path in rest.DSTACK_OTHERS:  # the REST plugin posts every spec kind: fleets pass as sent
        status, body = _post(service + path, json.dumps({"user": "u", "project": "p", "spec": {"x": [1]}}).encode())
        assert (status, json.loads(body)) == (200, {"spec": {"x": [1]}, "error": None})


BOMB = "a: &a [x, x, x, x, x, x, x, x, x, x]\n" + "".join(
    f"{c}: &{c} [*{p}, *{p}, *{p}, *{p}, *{p}, *{p}, *{p}, *{p}, *{p}, *{p}]\n" for p, c in zip("abcdefgh", "bcdefghi"))


@pytest.mark.parametrize("path, data, status, says", [
    ("/skypilot", b"not json", 400, "malformed request, refused"),
    ("/skypilot", json.dumps({"task": 1}).encode(), 400, "'task' and 'skypilot_config'"),
    ("/skypilot", json.dumps(json.dumps({"task": "- a\n- b\n", "skypilot_config": ""})).encode(), 400, "not a YAML mapping"),
    ("/skypilot", json.dumps(json.dumps({"task": "a: [\n", "skypilot_config": ""})).encode(), 400, "not YAML"),
    ("/skypilot", json.dumps(json.dumps({"task": BOMB, "skypilot_config": ""})).encode(), 400, "aliases are expanded"),
    ("/skypilot", json.dumps(json.dumps({"task": "a: &a [*a]\n", "skypilot_config": ""})).encode(), 400, "contains itself"),
    ("/skypilot", b"[" * 100_000 + b"]" * 100_000, 400, "malformed request"),
    (rest.DSTACK_RUN, json.dumps({"spec": []}).encode(), 400, "dstack plugin request"),
    (rest.DSTACK_RUN, json.dumps({"spec": {"configuration": "x"}}).encode(), 400, "configuration"),
    ("/elsewhere", b"{}", 404, "no such endpoint"),
])
def test_rest_refuses_what_is_not_the_launchers_request(service, path, data, status, says):
    got, body = _post(service + path, data)
    assert got == status and says in body


def _raw(url: str, request: bytes) -> bytes:
    with socket.create_connection(("127.0.0.1", int(url.rsplit(":", 1)[1])), timeout=60) as s:
        s.sendall(request)
        return s.recv(200)


@pytest.mark.parametrize("text, says", [(BOMB, "aliases are expanded"), ("a: &a [*a]\n", "contains itself")])
def test_task_mapping_refuses_what_would_blow_up_when_judged(text, says):
    # PyYAML shares an alias's object; judging the task (json.dumps) would expand every one
    with pytest.raises(rest.Malformed, match=says):
        rest.task_mapping(text)


@pytest.mark.parametrize("headers, status", [
    (f"Content-Length: {rest.MAX_BODY + 1}", b"413"),  # refused before a byte of it is read
    ("Transfer-Encoding: chunked", b"411"),
    ("", b"411"),
    ("Content-Length: -1", b"411"),
])
def test_rest_body_limits(service, headers, status):
    assert _raw(service, f"POST /skypilot HTTP/1.1\r\nHost: x\r\n{headers}\r\n\r\n".encode()).startswith(
        b"HTTP/1.0 " + status)


def test_rest_a_client_that_stops_sending_is_dropped(monkeypatch):
    monkeypatch.setattr(rest.Handler, "timeout", 0.2)
    with _serving() as url, socket.create_connection(("127.0.0.1", int(url.rsplit(":", 1)[1])), timeout=60) as s:
        s.sendall(b"POST /skypilot HTTP/1.1\r\nHost: x\r\nContent-Length: 100\r\n\r\n{")
        assert s.recv(100).startswith(b"HTTP/1.0 408")  # dropped with a refusal: never an allow


def test_rest_internal_error_refuses_with_500(service, monkeypatch):
    def boom(*_a, **_k):
        raise RuntimeError("bug")

    monkeypatch.setattr(rest, "decide_task", boom)
    monkeypatch.setattr(rest, "decide_run", boom)
    assert _post(service + "/skypilot", _sky_body(task()))[0] == 500
    assert _post(service + rest.DSTACK_RUN, json.dumps({"spec": {"configuration": run_config([RING])}}).encode())[0] == 500


def test_decide_reads_only_through_the_reader():
    calls = []
    d = decide({"run": CLEAN}, lambda doc: calls.append(doc.data) or ([], []), origin="x")
    assert calls == [{"run": CLEAN}] and d.action == "allow" and "no sglang launch" in d.message


def test_real_dstack_classes_when_installed(monkeypatch):
    pytest.importorskip("dstack.plugins", reason="dstack is not in the test extra; CI uses the stand-ins")
    from dstack.plugins import ApplyPolicy, RunSpec
    from dstack.plugins.builtin.rest_plugin._plugin import CustomApplyPolicy

    monkeypatch.setattr(dstack_hook.lazy, "made", {})
    monkeypatch.delenv(sky_hook.MUTATE_ENV, raising=False)

    def spec() -> RunSpec:
        return RunSpec.model_validate({
            "run_name": "r", "repo_data": {"repo_type": "virtual"}, "ssh_key_pub": "k",
            "configuration": {"type": "service", "port": 30000, "commands": ["cd /app", RING], "env": ["HF_TOKEN"],
                              "resources": {"gpu": "H200:4"}, "image": "lmsysorg/sglang:v0.5.23"}})

    policy = dstack_hook.Plugin().get_apply_policies()[0]
    assert isinstance(policy, ApplyPolicy)
    with pytest.raises(ValueError, match="H3D305"):
        policy.on_apply("user", "project", spec())
    with _serving(mutate=False) as url:  # dstack's own REST plugin against the service
        monkeypatch.setenv("DSTACK_PLUGIN_SERVICE_URI", url)
        with pytest.raises(Exception, match="Apply request rejected: h3doctor rejects commands\\[1\\] on 4xH200"):
            CustomApplyPolicy().on_apply("user", "project", spec())
    with _serving(mutate=True) as url:
        monkeypatch.setenv("DSTACK_PLUGIN_SERVICE_URI", url)
        fixed = CustomApplyPolicy().on_apply("user", "project", spec())
        assert fixed.configuration.commands == ["cd /app", RING.replace("sage_attn", "fa")]
