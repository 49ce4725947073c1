"""The shell hook (`h3doctor init bash|zsh|fish`), driven in real bash, zsh and fish against a
stand-in `sglang` on PATH that records its argv and exits with a chosen status.

`.ci/run` installs zsh and fish and sets H3DOCTOR_REQUIRE_SHELLS=1: there a missing shell fails
the suite; elsewhere its tests are skipped, with the reason.
"""

from __future__ import annotations

import json
import os
import re
import pty
import select
import shutil
import shlex
import signal
import stat
import subprocess
import sys
import time
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from launch_helpers import StubSglang

SHELLS = ("bash", "zsh", "fish")
# How each shell loads the hook and hands its own arguments to `sglang` unchanged.
SCRIPTS = {
    "bash": ["bash", "--norc", "--noprofile", "-c", 'eval "$(h3doctor init bash)" || exit 99; sglang "$@"', "bash"],
    "zsh": ["zsh", "-f", "-c", 'eval "$(h3doctor init zsh)" || exit 99; sglang "$@"', "zsh"],
    "fish": ["fish", "--no-config", "-c", "h3doctor init fish | source; or exit 99; sglang $argv", "--"],
}
PROFILE = "--profile 4xH200"  # every hook test names the hardware: no live probe
CLEAN = ["serve", "MiniMaxAI/MiniMax-H3", "--num-gpus", "4"]
FAILING = ["serve", "MiniMaxAI/MiniMax-H3", "--num-gpus", "4", "--ring-degree", "2", "--attention-backend", "sage_attn"]
TRICKY = ["a b", "it's", 'say "hi"', "$HOME", "$(touch pwned)", "`touch pwned`", "*", "?", "[a]", "back\\slash",
          "two\nlines", "tab\there", "ünïcødé ✓", "~", "!!", ";", "|", "&", "''", "%s"]


def _shell(name: str) -> str:
    path = shutil.which(name)
    if path is None:
        if os.environ.get("H3DOCTOR_REQUIRE_SHELLS") or os.environ.get("CI"):
            pytest.fail(f"{name} is not installed, but CI must run the hook in it (.ci/run installs it)")
        pytest.skip(f"{name} is not installed on this machine (CI installs it: .ci/run)")
    return path


@pytest.fixture(params=SHELLS)
def shell(request):
    _shell(request.param)
    return request.param


@pytest.fixture
def stub(tmp_path):
    return StubSglang(tmp_path)


def run_hook(shell: str, stub: StubSglang, args: list[str], *, hook_args: str = PROFILE, env: dict | None = None,
             cwd: Path | None = None) -> subprocess.CompletedProcess:
    full_env = stub.env(H3DOCTOR_HOOK_ARGS=hook_args)
    full_env.update(env or {})
    return subprocess.run([*SCRIPTS[shell], *args], capture_output=True, text=True, env=full_env, timeout=120,
                          cwd=cwd or stub.bin.parent, stdin=subprocess.DEVNULL)


def fake_h3doctor(stub: StubSglang, body: str) -> None:
    """Put an `h3doctor` in front of the real one: `body` is its Python, with `argv` its arguments."""
    path = stub.bin / "h3doctor"
    path.write_text(f"#!{sys.executable}\nimport os, sys\nargv = sys.argv[1:]\n"
                    f"if argv[:1] in (['init'], ['hook-line'], ['hook-tail']):\n    os.execv({sys.executable!r}, [{sys.executable!r}, '-m', 'h3doctor', *argv])\n"
                    f"{body}\n", encoding="utf-8")
    path.chmod(path.stat().st_mode | stat.S_IXUSR)


def test_clean_launch_passes_argv_byte_for_byte(shell, stub):
    args = CLEAN + ["--served-model-name", "a b"] + [f"--revision={w}" for w in TRICKY]
    proc = run_hook(shell, stub, args, env={"STUB_EXIT": "0"})
    assert proc.returncode == 0, proc.stderr
    assert [c["argv"] for c in stub.calls()] == [args]
    assert not (stub.bin.parent / "pwned").exists()
    assert proc.stderr == ""  # the hook is quiet on a clean launch


@settings(max_examples=4, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(words=st.lists(st.text(st.characters(blacklist_characters="\x00", blacklist_categories=("Cs",)),
                              min_size=1, max_size=10), min_size=1, max_size=4))
def test_any_flag_value_passes_through(shell, stub, words):
    stub.reset()
    args = CLEAN + [f"--revision={w}" for w in words]
    proc = run_hook(shell, stub, args)
    assert proc.returncode == 0, proc.stderr
    assert [c["argv"] for c in stub.calls()] == [args]


@pytest.mark.parametrize("status", [0, 3, 42, 255])
def test_exit_status_propagates(shell, stub, status):
    proc = run_hook(shell, stub, CLEAN, env={"STUB_EXIT": str(status)})
    assert proc.returncode == status
    assert len(stub.calls()) == 1


def test_findings_stop_the_launch(shell, stub):
    proc = run_hook(shell, stub, FAILING)
    assert proc.returncode == 1
    assert stub.calls() == []
    assert "H3D305" in proc.stderr and "sglang was not started" in proc.stderr
    assert "--attention-backend fa" in proc.stderr  # with the corrected command


def test_hook_args_reach_h3doctor(shell, stub):
    # four GPUs on a one-GPU profile is an error; --fail-on warning also stops a warning (H3D021)
    assert run_hook(shell, stub, CLEAN, hook_args="--profile 1xH100").returncode == 1
    warned = CLEAN + ["--performance", "speed"]
    assert run_hook(shell, stub, warned).returncode == 0
    assert run_hook(shell, stub, warned, hook_args=f"{PROFILE}  --fail-on warning").returncode == 1
    assert [c["argv"] for c in stub.calls()] == [warned]


@pytest.mark.parametrize("value", ["1", "true", "YES"])
def test_disable_variable_switches_the_hook_off(shell, stub, value):
    proc = run_hook(shell, stub, FAILING, env={"H3DOCTOR_DISABLE": value, "STUB_EXIT": "9"})
    assert proc.returncode == 9
    assert [c["argv"] for c in stub.calls()] == [FAILING]


@pytest.mark.parametrize("args", [["version"], [], ["serve", "--help"], ["generate", "-h"], ["killall", "--x"],
                                  ["--version"], ["serve", "MiniMaxAI/MiniMax-H3", "--ring-degree", "2", "--help"]])
def test_non_launch_subcommands_pass_straight_through(shell, stub, args):
    fake_h3doctor(stub, "open(os.environ['STUB_RECORD'] + '.h3doctor', 'w').write('called')\nsys.exit(1)")
    proc = run_hook(shell, stub, args, env={"STUB_EXIT": "4"})
    assert proc.returncode == 4
    assert [c["argv"] for c in stub.calls()] == [args]
    assert not Path(str(stub.record) + ".h3doctor").exists(), "h3doctor ran for a non-launch command"


@pytest.mark.parametrize("status", [2, 3, 127, 64])
def test_broken_h3doctor_still_launches(shell, stub, status):
    fake_h3doctor(stub, f"sys.stderr.write('boom\\n'); sys.exit({status})")
    proc = run_hook(shell, stub, FAILING, env={"STUB_EXIT": "6"})
    assert proc.returncode == 6
    assert [c["argv"] for c in stub.calls()] == [FAILING]
    assert f"h3doctor failed (exit {status}); launching sglang anyway" in proc.stderr


def test_h3doctor_killed_still_launches(shell, stub):
    fake_h3doctor(stub, "os.kill(os.getpid(), 9)")
    proc = run_hook(shell, stub, CLEAN)
    assert proc.returncode == 0 and len(stub.calls()) == 1
    assert "h3doctor failed (exit" in proc.stderr


def test_h3doctor_not_installed_still_launches(shell, stub):
    env = stub.env(H3DOCTOR_HOOK_ARGS=PROFILE)
    script = subprocess.run([sys.executable, "-m", "h3doctor", "init", shell], capture_output=True, text=True,
                            env=env, check=True).stdout
    hook_file = stub.bin.parent / f"hook.{shell}"
    hook_file.write_text(script, encoding="utf-8")
    if shell == "fish":
        argv = ["fish", "--no-config", "-c", f"source '{hook_file}'; sglang $argv", "--"]
    else:
        flags = ["--norc", "--noprofile"] if shell == "bash" else ["-f"]
        argv = [shell, *flags, "-c", f'source "{hook_file}"; sglang "$@"', shell]
    env["PATH"] = os.pathsep.join([str(stub.bin), "/usr/bin", "/bin"])  # the stub sglang, no h3doctor
    assert shutil.which("h3doctor", path=env["PATH"]) is None
    proc = subprocess.run([*argv, *FAILING], capture_output=True, text=True, env={**env, "STUB_EXIT": "8"}, timeout=60)
    assert proc.returncode == 8, proc.stderr
    assert [c["argv"] for c in stub.calls()] == [FAILING]
    assert "h3doctor failed (not installed" in proc.stderr


@pytest.mark.parametrize("words,env_expected", [
    (["sglang", "serve", "M", "--revision", "two\nlines", "a b", "$x", "*"], {}),
    (["SGLANG_CACHE_DIT_ENABLED=false", "sglang", "serve", "M"], {"SGLANG_CACHE_DIT_ENABLED": "false"}),
])
def test_accepted_corrected_command_runs_without_eval(shell, stub, words, env_expected):
    """Exit 4: the words h3doctor wrote (NUL-terminated) are run as they are, leading
    NAME=value words through `env`."""
    body = ("i = argv.index('--argv-out')\n"
            f"open(argv[i + 1], 'wb').write(b''.join(w.encode() + b'\\0' for w in {words!r}))\n"
            "sys.exit(4)")
    fake_h3doctor(stub, body)
    proc = run_hook(shell, stub, FAILING, env={"STUB_EXIT": "0"})
    assert proc.returncode == 0, proc.stderr
    [call] = stub.calls()
    assert call["argv"] == words[words.index("sglang") + 1 :]
    assert call["env"] == env_expected
    assert not list(Path(stub.bin.parent).glob("h3doctor.*"))  # the temp file is removed


def test_hook_passes_the_argv_file_in_tmpdir_and_removes_it(shell, stub, tmp_path):
    tmpdir = tmp_path / "tmp"
    tmpdir.mkdir()
    assert run_hook(shell, stub, FAILING, env={"TMPDIR": str(tmpdir)}).returncode == 1
    assert run_hook(shell, stub, CLEAN, env={"TMPDIR": str(tmpdir)}).returncode == 0
    assert list(tmpdir.iterdir()) == []


def run_in_terminal(argv: list[str], env: dict[str, str], answer: bytes | None, timeout: float = 90) -> tuple[int, str]:
    """Run argv with a pseudo-terminal as its controlling terminal; answer the [y/N] prompt."""
    pid, fd = pty.fork()
    if pid == 0:  # pragma: no cover - the child
        os.execvpe(argv[0], argv, env)
    out = b""
    answered = False
    deadline = time.monotonic() + timeout
    try:
        while time.monotonic() < deadline:
            ready, _, _ = select.select([fd], [], [], 0.5)
            if not ready:
                continue
            try:
                data = os.read(fd, 4096)
            except OSError:  # EIO: the child closed the terminal
                break
            if not data:
                break
            out += data
            if answer is not None and not answered and b"[y/N]" in out:
                os.write(fd, answer)
                answered = True
        else:
            os.kill(pid, signal.SIGKILL)
            pytest.fail(f"the hook did not finish in {timeout} s:\n{out.decode(errors='replace')}")
    finally:
        _, status = os.waitpid(pid, 0)
        os.close(fd)
    return os.waitstatus_to_exitcode(status), out.decode(errors="replace")


@pytest.mark.parametrize("answer,launched", [(b"y\n", True), (b"\n", False), (b"no\n", False)])
def test_interactive_offer_to_run_the_corrected_command(shell, stub, answer, launched):
    env = stub.env(H3DOCTOR_HOOK_ARGS=PROFILE, STUB_EXIT="0")
    code, out = run_in_terminal([*SCRIPTS[shell], *FAILING], env, answer)
    assert "Run the corrected command instead? [y/N]" in out
    if launched:
        assert code == 0, out
        assert [c["argv"] for c in stub.calls()] == [CLEAN + ["--ring-degree", "2", "--attention-backend", "fa",
                                                              "--ulysses-degree", "2"]]
    else:
        assert code == 1 and stub.calls() == [], out


def test_no_prompt_without_a_terminal(shell, stub):
    proc = run_hook(shell, stub, FAILING)  # stdin is /dev/null
    assert proc.returncode == 1 and "[y/N]" not in proc.stderr


@pytest.fixture(scope="module")
def probe_cache(tmp_path_factory):
    """One probe cache for every shell: the first probe pays for the torch import, the rest read it."""
    return tmp_path_factory.mktemp("probe-cache")


def test_probe_says_whether_the_hook_is_active_here(shell, stub, probe_cache):
    env = stub.env(H3DOCTOR_CACHE_DIR=str(probe_cache))
    probe = {"bash": ["bash", "--norc", "--noprofile", "-c"], "zsh": ["zsh", "-f", "-c"], "fish": ["fish", "--no-config", "-c"]}
    load = {"bash": 'eval "$(h3doctor init bash)"; ', "zsh": 'eval "$(h3doctor init zsh)"; ', "fish": "h3doctor init fish | source; "}
    here = subprocess.run([*probe[shell], load[shell] + "h3doctor probe --format json"], capture_output=True, text=True,
                          env=env, timeout=120)
    hook = json.loads(here.stdout)["hook"]
    assert hook["active"] and hook["shell"] == shell, hook["reason"]
    # a shell started inside the hooked one (`; true`: no shell execs its last command in its own place here)
    child = subprocess.run([*probe[shell], load[shell] + "bash --norc -c 'h3doctor probe --format json; true'; true"],
                           capture_output=True, text=True, env=env, timeout=120)
    hook = json.loads(child.stdout)["hook"]
    assert not hook["active"] and "parent" in hook["reason"], hook
    off = subprocess.run([*probe[shell], load[shell] + "h3doctor probe --format json"], capture_output=True, text=True,
                         env={**env, "H3DOCTOR_DISABLE": "1"}, timeout=120)
    hook = json.loads(off.stdout)["hook"]
    assert not hook["active"] and hook["disabled"], hook
    none = subprocess.run([sys.executable, "-m", "h3doctor", "probe", "--format", "json"], capture_output=True,
                          text=True, env=env, timeout=120)
    assert json.loads(none.stdout)["hook"]["shell"] is None


# -- a terminal's stop and interrupt keys during the check start nothing ---------------------------

INTERACTIVE = {"bash": ["bash", "--norc", "--noprofile", "-i"], "zsh": ["zsh", "-f", "-i"],
               "fish": ["fish", "--no-config", "-i"]}
LOAD = {"bash": 'eval "$(h3doctor init bash)"', "zsh": 'eval "$(h3doctor init zsh)"', "fish": "h3doctor init fish | source"}
STATUS = {"bash": "$?", "zsh": "$?", "fish": "$status"}
# The check, stood in for: says on the terminal that it is running, then waits to be signalled (as
# the real one does in a slow probe). Ctrl-C ends it as h3doctor's own handler does (exit 130).
SLOW_CHECK = """import resource, signal
resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
signal.signal(signal.SIGINT, lambda *_: os._exit(130))  # before the word below: no window without it
open(os.environ['STUB_RECORD'] + '.pid', 'w').write(str(os.getpid()))
sys.stderr.write('H3DOCTOR-CHECKING\\n'); sys.stderr.flush()
while True:
    signal.pause()
"""


class Terminal:
    """An interactive shell on a pseudo-terminal, driven line by line. Every wait is for text the
    shell prints (a marker no typed line contains), never for time."""

    def __init__(self, argv: list[str], env: dict[str, str]) -> None:
        self.pid, self.fd = pty.fork()
        if self.pid == 0:  # pragma: no cover - the child
            os.execvpe(argv[0], argv, env)
        self.out = b""
        self.marks = 0

    def type(self, data: bytes) -> None:
        os.write(self.fd, data)

    def wait_for(self, text: bytes, timeout: float = 90) -> None:
        deadline = time.monotonic() + timeout
        while text not in self.out:
            if time.monotonic() > deadline:
                pytest.fail(f"the shell never printed {text!r}:\n{self.out.decode(errors='replace')}")
            ready, _, _ = select.select([self.fd], [], [], 0.5)
            if ready:
                try:
                    data = os.read(self.fd, 4096)
                except OSError:
                    data = b""
                if not data:
                    pytest.fail(f"the shell exited before printing {text!r}:\n{self.out.decode(errors='replace')}")
                self.out += data

    def run(self, line: str, status: str) -> str:
        """Type a command line and wait until the shell has run it and the next one; returns the
        status the shell had after `line`."""
        self.marks += 1
        self.type(f"{line}\nprintf 'MA%sRK-{self.marks}-%s-\\n' X {status}\n".encode())
        self.wait_for(f"MAXRK-{self.marks}-".encode())
        after = self.out.split(f"MAXRK-{self.marks}-".encode())[-1]
        return after.split(b"-")[0].decode()

    def close(self) -> None:
        try:
            os.kill(self.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        os.waitpid(self.pid, 0)
        os.close(self.fd)


@pytest.mark.parametrize("key,name", [(b"\x1a", "Ctrl-Z"), (b"\x1c", "Ctrl-\\"), (b"\x03", "Ctrl-C")])
def test_stop_or_interrupt_during_the_check_starts_nothing(shell, stub, tmp_path, key, name):
    fake_h3doctor(stub, SLOW_CHECK)
    env = stub.env(H3DOCTOR_HOOK_ARGS=PROFILE, TERM="dumb", HOME=str(tmp_path), PS1="$ ")
    term = Terminal(INTERACTIVE[shell], env)
    try:
        assert term.run(LOAD[shell], STATUS[shell]) == "0"
        term.type(("sglang " + " ".join(CLEAN) + "\n").encode())
        term.wait_for(b"H3DOCTOR-CHECKING")
        term.type(key)
        status = term.run("true", STATUS[shell])  # the shell is back at its prompt
        assert stub.calls() == [], f"{name} during the check started sglang in {shell}:\n{term.out.decode(errors='replace')}"
        assert status == "0"
        if shell == "bash" or (shell, name) == ("fish", "Ctrl-Z"):
            # these shells go on with the function (the others suspend or cancel it): the hook says why
            assert b"sglang was not started" in term.out, term.out.decode(errors="replace")
    finally:
        pid_file = Path(str(stub.record) + ".pid")
        if pid_file.exists():  # the stopped check: a process of this test's own making
            try:
                os.kill(int(pid_file.read_text()), signal.SIGKILL)
            except ProcessLookupError:
                pass
        term.close()


def test_a_corrected_command_is_never_read_as_envs_options(shell, stub):
    """A corrected command that does not start with `sglang` runs as `env -- WORDS`: a first word
    such as `-S` is the program's name, not an option of env's (GNU env -S would split the next word
    and run it)."""
    body = ("i = argv.index('--argv-out')\n"
            "open(argv[i + 1], 'wb').write(b''.join(w.encode() + b'\\0' for w in ['-S', 'sglang serve M']))\n"
            "sys.exit(4)")
    fake_h3doctor(stub, body)
    proc = run_hook(shell, stub, FAILING)
    assert stub.calls() == [], proc.stderr
    assert proc.returncode == 127, proc.stderr


# --- the other launch programs: python -m sglang…, uv run sglang …, and docker run (opt-in) ------

ANY = {  # load the hook (with --wrap docker), then run the words given as one command
    "bash": ["bash", "--norc", "--noprofile", "-c", 'eval "$(h3doctor init bash --wrap docker)" || exit 99; "$@"', "bash"],
    "zsh": ["zsh", "-f", "-c", 'eval "$(h3doctor init zsh --wrap docker)" || exit 99; "$@"', "zsh"],
    "fish": ["fish", "--no-config", "-c", "h3doctor init fish --wrap docker | source; or exit 99; $argv", "--"],
}
IMAGE_OLD = ["lmsysorg/sglang:v0.5.19-cu129"]
IMAGE_NEW = ["lmsysorg/sglang:v0.5.23"]
H3_FLAGS = ["--model-path", "MiniMaxAI/MiniMax-H3", "--num-gpus", "4"]


def run_any(shell: str, stub: StubSglang, args: list[str]) -> subprocess.CompletedProcess:
    for program in ("docker", "python3", "uv"):  # stand-ins that record their argv, as the sglang one does
        target = stub.bin / program
        if not target.exists():
            target.write_bytes((stub.bin / "sglang").read_bytes())
            target.chmod(0o755)
    return subprocess.run([*ANY[shell], *args], capture_output=True, text=True, env=stub.env(H3DOCTOR_HOOK_ARGS=PROFILE),
                          timeout=120, cwd=stub.bin.parent, stdin=subprocess.DEVNULL)


@pytest.mark.parametrize("args", [
    ["docker", "ps", "-a"],
    ["docker", "run", "--rm", "redis"],
    ["docker", "run", "--rm", "-it", "ubuntu", "bash", "-c", "echo sglang"],
    ["docker", "images"],
    ["python3", "-c", "print('sglang serve')"],
    ["uv", "pip", "install", "sglang"],
    ["uv", "run", "pytest"],
])
def test_other_commands_pass_straight_through_untouched(shell, stub, args):
    proc = run_any(shell, stub, args)
    assert proc.returncode == 0, proc.stderr
    assert [c["argv"] for c in stub.calls()] == [args[1:]]
    assert "h3doctor" not in proc.stderr


@pytest.mark.parametrize("args", [
    ["docker", "run", "--gpus", "all", *IMAGE_OLD, "sglang", "serve", *H3_FLAGS, "--enable-metrics"],
    ["docker", "run", "--gpus", "all", *IMAGE_OLD, "bash", "-lc", 'exec sglang serve "$@"', "--", *H3_FLAGS,
     "--enable-metrics"],
    ["docker", "run", "--gpus", "all", "--entrypoint", "sglang", *IMAGE_OLD, "serve", *H3_FLAGS, "--enable-metrics"],
    ["docker", "run", "--entrypoint=/usr/local/bin/sglang", *IMAGE_OLD, "serve", *H3_FLAGS, "--enable-metrics"],
    ["python3", "-m", "sglang.cli.main", "serve", *H3_FLAGS, "--ring-degree", "2", "--attention-backend", "sage_attn"],
    ["uv", "run", "sglang", "serve", *H3_FLAGS, "--ring-degree", "2", "--attention-backend", "sage_attn"],
])
def test_the_other_launch_programs_are_checked_and_a_failing_one_does_not_start(shell, stub, args):
    proc = run_any(shell, stub, args)
    assert proc.returncode == 1 and stub.calls() == [], proc.stderr
    assert "sglang was not started" in proc.stderr


@pytest.mark.parametrize("args", [
    # a clean 4-GPU container has room for its ranks' /dev/shm (--ipc=host, as sglang's docs write it; H3D415)
    ["docker", "run", "--gpus", "all", "--ipc=host", *IMAGE_NEW, "sglang", "serve", *H3_FLAGS, "--enable-metrics"],
    ["docker", "run", "--gpus", "all", "--ipc=host", *IMAGE_NEW, "bash", "-lc", 'exec sglang serve "$@"', "--", *H3_FLAGS],
    ["docker", "run", "--gpus", "all", "--ipc=host", "--entrypoint", "sglang", *IMAGE_NEW, "serve", *H3_FLAGS],
    ["uv", "run", "sglang", "serve", *H3_FLAGS],
])
def test_a_clean_launch_of_another_program_starts_as_typed(shell, stub, args):
    proc = run_any(shell, stub, args)
    assert proc.returncode == 0, proc.stderr
    assert [c["argv"] for c in stub.calls()] == [args[1:]]


def test_docker_is_wrapped_only_when_asked(shell, stub):
    script = {"bash": 'eval "$(h3doctor init bash)"; type docker >/dev/null 2>&1 && type docker | head -1',
              "zsh": 'eval "$(h3doctor init zsh)"; whence -w docker',
              "fish": "h3doctor init fish | source; functions -q docker; and echo function; or echo none"}[shell]
    argv = {"bash": ["bash", "--norc", "--noprofile", "-c"], "zsh": ["zsh", "-f", "-c"],
            "fish": ["fish", "--no-config", "-c"]}[shell]
    proc = subprocess.run([*argv, script], capture_output=True, text=True, env=stub.env(), timeout=60,
                          stdin=subprocess.DEVNULL)
    assert "function" not in proc.stdout


def test_wrap_names_a_runtime():
    proc = subprocess.run([sys.executable, "-m", "h3doctor", "init", "bash", "--wrap", "kubectl"],
                          capture_output=True, text=True, timeout=60)
    assert proc.returncode == 2 and "kubectl" in proc.stderr


# -- what is typed in front of a launch is the launch's, never h3doctor's (docs/security.md) -------

PLANTED = """import os, sys
with open(os.path.join(os.path.dirname(os.path.abspath(__file__)), 'ran.txt'), 'a') as fh:
    fh.write(sys.argv[0] + '\\n')
"""


def test_pythonpath_typed_before_sglang_runs_no_code_in_h3doctor(shell, stub, tmp_path):
    """A hostile checkout's sitecustomize.py with `PYTHONPATH=.` typed in front: sglang (the launch)
    gets it, h3doctor never imports it, on a real terminal (zsh's own environment is taken at preexec)."""
    checkout = tmp_path / "checkout"
    checkout.mkdir()
    (checkout / "sitecustomize.py").write_text(PLANTED, encoding="utf-8")
    env = stub.env(H3DOCTOR_HOOK_ARGS=PROFILE, TERM="dumb", HOME=str(tmp_path), PS1="$ ")
    term = Terminal(INTERACTIVE[shell], env)
    try:
        assert term.run(LOAD[shell], STATUS[shell]) == "0"
        assert term.run(f"cd {checkout}", STATUS[shell]) == "0"
        assert term.run("PYTHONPATH=. STUB_VAR_TYPED=1 sglang " + " ".join(CLEAN), STATUS[shell]) == "0"
    finally:
        term.close()
    ran = (checkout / "ran.txt").read_text(encoding="utf-8").split()
    assert ran and all(Path(argv0).name == "sglang" for argv0 in ran), ran  # the stub sglang only: never h3doctor
    [call] = stub.calls()
    assert call["argv"] == CLEAN and call["env"] == {"STUB_VAR_TYPED": "1"}
    assert call["startup_env"]["PYTHONPATH"] == "."


@pytest.mark.parametrize("typed", ["H3DOCTOR_RULES_DIR={empty}", "H3DOCTOR_HOOK_ARGS='--rules-dir {empty}'",
                                   "H3DOCTOR_PROBE_TIMEOUT=x H3DOCTOR_RULES_DIR={empty}"])
def test_h3doctor_settings_typed_before_sglang_do_not_change_its_verdict(shell, stub, tmp_path, typed):
    """With no rules (an empty rules folder) the failing launch would start; typed in front of it,
    the folder is the launch's environment, not h3doctor's: the launch is still blocked."""
    empty = tmp_path / "norules"
    empty.mkdir()
    line = typed.format(empty=empty) + " sglang " + " ".join(FAILING)
    script = {"bash": ["bash", "--norc", "--noprofile", "-c", f'eval "$(h3doctor init bash)" || exit 99; {line}'],
              "zsh": ["zsh", "-f", "-c", f'eval "$(h3doctor init zsh)" || exit 99; {line}'],
              "fish": ["fish", "--no-config", "-c", f"h3doctor init fish | source; or exit 99; {line}"]}[shell]
    proc = subprocess.run(script, capture_output=True, text=True, env=stub.env(H3DOCTOR_HOOK_ARGS=PROFILE),
                          timeout=120, cwd=tmp_path, stdin=subprocess.DEVNULL)
    assert proc.returncode == 1 and stub.calls() == [], proc.stderr
    assert "H3D" in proc.stderr


@pytest.mark.parametrize("wrapper", [["env", "STUB_VAR=1"], ["env", "-u", "HOME", "STUB_VAR=1"],
                                     ["env", "-i", f"PATH={os.defpath}"], ["nohup"]])
def test_a_failing_launch_behind_env_or_nohup_is_blocked(shell, stub, wrapper):
    proc = run_any(shell, stub, [*wrapper, "sglang", *FAILING])
    assert proc.returncode == 1 and stub.calls() == [], proc.stderr
    assert "sglang was not started" in proc.stderr


# -- the hook fails closed on h3doctor's own limits --------------------------------------------------

@pytest.mark.parametrize("config", ["deep", "fifo"])
def test_an_unreadable_config_beside_a_failing_flag_is_blocked(shell, stub, tmp_path, config):
    """h3doctor cannot read the --config (nested past its limit, a FIFO it refuses):
    the launch's other words are judged without it, and they fail, so nothing starts; with words
    that pass, the hook says it could not verify and launches (README "Shell hook")."""
    path = tmp_path / "cfg.yaml"
    if config == "deep":
        path.write_text("a: " + "[" * 200 + "]" * 200 + "\n", encoding="utf-8")
    elif config == "fifo":
        os.mkfifo(path)
    proc = run_hook(shell, stub, [*FAILING, "--config", str(path)])
    assert proc.returncode == 1 and stub.calls() == [], proc.stderr
    assert "cannot read a file the launch names (" in proc.stderr and "sglang was not started" in proc.stderr
    proc = run_hook(shell, stub, [*CLEAN, f"--config={path}"])
    assert proc.returncode == 0 and [c["argv"] for c in stub.calls()] == [[*CLEAN, f"--config={path}"]], proc.stderr
    assert "could not verify" in proc.stderr


UNREADABLE = {  # a file of every kind a launch names that h3doctor refuses (exit 2), and how it is named
    "env-file FIFO": ("fifo.env", "fifo", lambda p, launch: ["docker", "run", "--ipc=host", "--env-file", p, "img", "sglang",
                                                            "serve", *launch]),
    "env-file too large": ("big.env", "big", lambda p, launch: ["docker", "run", "--ipc=host", f"--env-file={p}", "img",
                                                               "sglang", "serve", *launch]),
    "attention-backend-config deep": ("abc.json", "deep", lambda p, launch: ["sglang", "serve", *launch, "--attention-backend-config", p]),
    "attention-backend-config too large": ("abc.json", "big", lambda p, launch: ["sglang", "serve", *launch, f"--attention-backend-conf={p}"]),
}


@pytest.mark.parametrize("kind", UNREADABLE)
def test_every_unreadable_file_a_launch_names_beside_a_failing_flag_is_blocked(shell, stub, tmp_path, kind):
    """Not only --config: a container's --env-file and an --attention-backend-config file h3doctor
    refuses are dropped with the words naming them (any spelling) and the rest judged: failing, the
    launch does not start and the file is named; passing, the hook says it could not verify."""
    name, how, line = UNREADABLE[kind]
    path = tmp_path / name
    if how == "fifo":
        os.mkfifo(path)
    elif how == "deep":
        path.write_text('{"a": ' + "[" * 200 + "]" * 200 + "}", encoding="utf-8")
    else:  # one byte past the reader's limit (sparse: refused on its size before any read)
        from h3doctor.sglang.configfile import MAX_CONFIG_BYTES
        from h3doctor.sglang.container_run import ENV_FILE_MAX_BYTES

        path.write_text("A=1\n" if name.endswith(".env") else '{"a": 1}', encoding="utf-8")
        os.truncate(path, (ENV_FILE_MAX_BYTES if name.endswith(".env") else MAX_CONFIG_BYTES) + 1)
    proc = run_any(shell, stub, line(str(path), FAILING[1:]))
    assert proc.returncode == 1 and stub.calls() == [], proc.stderr
    assert f"cannot read a file the launch names ({path}" in proc.stderr and "sglang was not started" in proc.stderr
    # a command corrected without the file's words would drop them: none is offered
    assert "Corrected command" not in proc.stderr and "no corrected command: it would leave out" in proc.stderr
    proc = run_any(shell, stub, line(str(path), CLEAN[1:]))
    assert proc.returncode == 0 and "could not verify" in proc.stderr, proc.stderr


@pytest.mark.parametrize("typed, kept", [
    (["serve", "M", "--config", "c.yaml", "--tp", "2"], ["serve", "M", "--tp", "2"]),  # --flag VALUE
    (["serve", "M", "--config=c.yaml", "--tp", "2"], ["serve", "M", "--tp", "2"]),  # --flag=VALUE
    (["serve", "M", "--conf", "c.yaml"], ["serve", "M"]),  # an argparse abbreviation
    (["serve", "M", "--attention-backend-conf=c.yaml"], ["serve", "M"]),
    (["run", "--env-file", "c.yaml", "-e", "A=c.yaml", "img", "sglang"], ["run", "-e", "A=c.yaml", "img", "sglang"]),
    (["serve", "c.yaml"], ["serve"]),  # a bare word that is the file
    (["serve", "M", "--config", "c.yaml", "--config=c.yaml"], ["serve", "M"]),  # every place it is named
    (["serve", "M", "--config", "other.yaml", "--x=c.yaml.bak", "c.yaml/"], ["serve", "M", "--config", "other.yaml",
                                                                           "--x=c.yaml.bak", "c.yaml/"]),  # not it
    (["serve", "c.yaml_dir/model_index.json"], ["serve", "c.yaml_dir/model_index.json"]),
    (["--", "c.yaml", "serve"], ["--", "serve"]),  # `--` is no flag taking the file
])
def test_the_words_naming_an_unreadable_file_are_dropped_in_every_spelling(typed, kept):
    from h3doctor.sglang.launch_forms import without_words_naming

    assert without_words_naming(typed, "c.yaml") == kept


def test_a_model_folder_with_an_unreadable_model_index_is_not_verified_not_blocked(shell, stub, tmp_path):
    """A model folder whose model_index.json h3doctor refuses: the folder is the launch's model, and
    the launch without its model is no part of this one (it fails for want of a model): nothing is
    dropped, the usage error stands, the hook says it could not verify and launches."""
    folder = tmp_path / "weights"
    folder.mkdir()
    os.mkfifo(folder / "model_index.json")
    proc = run_hook(shell, stub, ["serve", str(folder), *FAILING[2:]])
    assert proc.returncode == 0 and "could not verify" in proc.stderr, proc.stderr
    assert [c["argv"] for c in stub.calls()] == [["serve", str(folder), *FAILING[2:]]]


# -- every launch form `check` reads is checked by the hook --------------------------------------------

M = ["MiniMaxAI/MiniMax-H3", "--num-gpus", "4"]
FORMS = [  # a launch of every form the launch-form reader reads (README "Launch forms"), as typed
    ["sglang", "serve", *M], ["sglang", "generate", *M],
    ["python", "-m", "sglang.launch_server", "--model-path", *M],
    ["python3", "-u", "-m", "sglang.launch_server", "--model-path", *M],
    ["python3", "-X", "dev", "-msglang.multimodal_gen.runtime.launch_server", "--model-path", *M],
    ["python3.11", "-m", "sglang.multimodal_gen.runtime.entrypoints.cli.main", "serve", "--model-path", *M],
    ["python3", "-m", "sglang.cli.main", "generate", "--model-path", *M],
    ["STUB_VAR=1", "sglang", "serve", *M],
    ["env", "STUB_VAR=1", "sglang", "serve", *M], ["env", "-i", "PATH=/bin", "sglang", "serve", *M],
    ["env", "-u", "HOME", "python3", "-m", "sglang.launch_server", "--model-path", *M],
    ["nohup", "sglang", "serve", *M], ["setsid", "-f", "sglang", "serve", *M],
    ["time", "sglang", "serve", *M],
    ["uv", "run", "--with", "kernels", "sglang", "serve", *M],
    ["uv", "run", "python", "-m", "sglang.launch_server", "--model-path", *M],
    ["pipx", "run", "sglang", "serve", *M],
    ["STUB_VAR=1", "nohup", "env", "STUB_VAR2=2", "uv", "run", "--", "sglang", "serve", *M],
]
NOT_HOOKED = {"exec": "the shell execs the program itself; a function named exec would change what `exec >file` does"}


def test_every_launch_form_check_reads_is_checked_by_the_hook(shell, stub):
    from h3doctor.launch.hook import hooked_programs
    from h3doctor.sglang.launch_forms import _MODULES, read_launch_form
    from h3doctor.shellwords import SHELL_KEYWORDS, WRAPPER_PROGRAMS

    for form in FORMS:
        read_launch_form(form)  # check reads it
    typed = {w for form in FORMS for w in form}
    assert set(WRAPPER_PROGRAMS) <= typed and set(_MODULES) <= {w.removeprefix("-m") for w in typed}
    assert set(WRAPPER_PROGRAMS) - set(SHELL_KEYWORDS) <= set(hooked_programs())  # the hook's list is check's
    assert "exec" in NOT_HOOKED and "exec" not in hooked_programs()
    fake_h3doctor(stub, "import json\nwith open(os.environ['STUB_RECORD'] + '.h3doctor', 'a') as fh:\n"
                        "    fh.write(json.dumps(argv[argv.index('--') + 1:]) + '\\n')\nsys.exit(1)")
    lines = "\n".join(shlex.join(form) for form in FORMS)
    script = {"bash": ["bash", "--norc", "--noprofile", "-c", f'eval "$(h3doctor init bash)" || exit 99\n{lines}'],
              "zsh": ["zsh", "-f", "-c", f'eval "$(h3doctor init zsh)" || exit 99\n{lines}'],
              "fish": ["fish", "--no-config", "-c", f"h3doctor init fish | source; or exit 99\n{lines}"]}[shell]
    proc = subprocess.run(script, capture_output=True, text=True, env=stub.env(H3DOCTOR_HOOK_ARGS=PROFILE),
                          timeout=120, cwd=stub.bin.parent, stdin=subprocess.DEVNULL)
    checked = [json.loads(line) for line in Path(str(stub.record) + ".h3doctor").read_text().splitlines()]
    # `time` is the shell's own word: the sglang function it times is what is checked
    assert checked == [[w for w in form if w != "time"] for form in FORMS], proc.stderr
    assert stub.calls() == [], proc.stderr


# -- Ctrl-C and Ctrl-\ at any point of the check: the shell's status, never a traceback ------------

# `h3doctor check --hook` as its console script runs it, the terminal's signal delivered to it at the
# Nth function call (a profile hook counts them) from the moment `main` is entered: right after its
# first statement puts the handler in place, the imports of the fast path and of the full CLI, the
# check, the report, the exit. (No Python code can close the window before that statement, nor
# Python's own start-up: README "Shell hook".)
SIGNAL_AT_CALL = """import os, sys, _signal
at, signum, count, installed = int(sys.argv[1]), int(sys.argv[2]), [0], [0]
def profile(frame, event, arg):
    count[0] += 1
    if event == "return" and frame.f_code.co_name == "_quiet_interrupts":
        installed[0] = count[0]
    if count[0] == at:
        sys.setprofile(None)
        os.kill(os.getpid(), signum)
import atexit
atexit.register(lambda: sys.stderr.write(f"INSTALLED={installed[0]} CALLS={count[0]}\\n"))
sys.argv = ["h3doctor", *sys.argv[3:]]
from h3doctor.entry import main
sys.setprofile(profile)
main()
"""


def _signal_at_call(at: int, signum: int) -> subprocess.CompletedProcess:
    argv = ["check", "--hook", *PROFILE.split(), "--", "sglang", *FAILING]
    return subprocess.run([sys.executable, "-c", SIGNAL_AT_CALL, str(at), str(signum), *argv], capture_output=True,
                          text=True, stdin=subprocess.DEVNULL, timeout=120,
                          env={k: v for k, v in os.environ.items() if not k.startswith(("SGLANG_", "H3DOCTOR_"))})


def test_an_interrupt_anywhere_in_the_check_exits_130_or_131_without_a_traceback():
    whole = _signal_at_call(0, signal.SIGINT)  # never signalled: how many calls a blocked launch makes
    assert whole.returncode == 1, whole.stderr
    installed, calls = (int(n) for n in re.findall(r"INSTALLED=(\d+) CALLS=(\d+)", whole.stderr)[-1])
    assert 0 < installed <= 20, installed  # the handler is main's first statement, before any import
    points = sorted({installed + 1, installed + 2, installed + 5, 30, 100,
                     *(calls * k // 12 for k in range(1, 12)), calls - 1})
    for signum, status in ((signal.SIGINT, 130), (signal.SIGQUIT, 131)):
        for at in points if signum == signal.SIGINT else points[::4]:
            proc = _signal_at_call(at, signum)
            assert "Traceback" not in proc.stderr and "KeyboardInterrupt" not in proc.stderr, (at, proc.stderr)
            assert proc.returncode == status, (signum, at, calls, proc.returncode, proc.stderr[-2000:])


def test_sglang_not_installed_is_said_in_one_line_with_the_checks_verdict(shell, stub):
    (stub.bin / "sglang").unlink()
    # "let it start", not "passed": a launch that starts with a warning predicting a failure ("! likely to
    # fail") was not said to pass a line above
    for args, verdict in ((CLEAN, "the check let it start, but "), (FAILING, None)):
        proc = run_hook(shell, stub, args)
        if verdict is None:  # blocked: nothing to start, sglang or not
            assert proc.returncode == 1 and "not installed" not in proc.stderr, proc.stderr
            continue
        assert proc.returncode == 127, proc.stderr  # a shell's status for a command not found
        assert proc.stderr.splitlines() == [
            f"h3doctor: {verdict}sglang is not installed here (no sglang on PATH); nothing was started"], proc.stderr


def test_on_a_terminal_sglang_not_installed_is_that_one_line_in_each_shell(shell, stub, tmp_path):
    """The same in an interactive shell on a pty, where it was seen: the one line and the shell's
    127, no shell's own words about the hook's internals (zsh's `__h3doctor_check:44: command not
    found`, fish's stack through the hook's function). Issue 31's "sglang missing" on a pty."""
    (stub.bin / "sglang").unlink()
    env = stub.env(H3DOCTOR_HOOK_ARGS=PROFILE, TERM="dumb", HOME=str(tmp_path), PS1="$ ")
    term = Terminal(INTERACTIVE[shell], env)
    try:
        assert term.run(LOAD[shell], STATUS[shell]) == "0"
        start = len(term.out)
        assert term.run("sglang " + " ".join(CLEAN), STATUS[shell]) == "127"
        said = term.out[start:].decode(errors="replace").replace("\r", "")
        assert ("h3doctor: the check let it start, but sglang is not installed here (no sglang on PATH); nothing was "
                "started") in said, said
        assert not any(words in said for words in ("command not found", "Unknown command", "__h3doctor", "in function",
                                                   "Traceback")), said
    finally:
        term.close()


def test_an_accepted_fix_is_shown_and_up_brings_it_back(shell, stub, tmp_path):
    """In an interactive shell: the corrected command the user accepted is echoed and, in bash and
    zsh, is the history's newest line, so Up (Ctrl-P) and Enter run it again, not the line that
    failed. fish 3.x has no `history append` (writing its history file raced fish's own saving):
    there the fix is echoed only."""
    env = stub.env(H3DOCTOR_HOOK_ARGS=PROFILE, TERM="dumb", HOME=str(tmp_path), PS1="$ ", STUB_EXIT="0")
    env.pop("EDITOR", None), env.pop("VISUAL", None)  # the emacs keys: Ctrl-P is the previous line
    corrected = ["serve", *CLEAN[1:], "--ring-degree", "2", "--attention-backend", "fa", "--ulysses-degree", "2"]
    # fish keeps a history only with its configuration read (--no-config is its private mode): an empty one here
    env.update(XDG_CONFIG_HOME=str(tmp_path / "config"), XDG_DATA_HOME=str(tmp_path / "data"))
    term = Terminal(["fish", "-i"] if shell == "fish" else INTERACTIVE[shell], env)
    try:
        assert term.run(LOAD[shell], STATUS[shell]) == "0"
        term.type(("sglang " + " ".join(FAILING) + "\n").encode())
        term.wait_for(b"[y/N]")
        term.type(b"y\n")
        said = b"running the corrected command: " if shell == "fish" else b"running the corrected command (Up recalls it): "
        term.wait_for(said + b"sglang serve MiniMaxAI/MiniMax-H3 --num-gpus 4")
        deadline = time.monotonic() + 90
        while len(stub.calls()) < 1 and time.monotonic() < deadline:  # the corrected command has run
            time.sleep(0.05)
        if shell == "fish":
            assert term.run("true", STATUS[shell]) == "0", term.out.decode(errors="replace")
            assert [c["argv"] for c in stub.calls()] == [corrected], term.out.decode(errors="replace")
            return
        term.type(b"\x10\n")  # Up, Enter
        assert term.run("true", STATUS[shell]) == "0", term.out.decode(errors="replace")
        assert [c["argv"] for c in stub.calls()] == [corrected, corrected], term.out.decode(errors="replace")
    finally:
        term.close()


@pytest.mark.parametrize("hook_args,said", [
    ("--profle 4xH200", "no such option: --profle; did you mean --profile?"),
    (f"{PROFILE} --fail-on warnin", "Invalid value for '--fail-on'"),
])
def test_a_mistake_in_hook_args_is_blamed_on_the_variable(shell, stub, hook_args, said):
    proc = run_hook(shell, stub, CLEAN, hook_args=hook_args)
    [error] = [line for line in proc.stderr.splitlines() if line.startswith("error:")]
    assert error.startswith(f"error: in H3DOCTOR_HOOK_ARGS ({hook_args}): ") and said in error, proc.stderr
    assert "before `--`" not in proc.stderr and "Usage:" not in proc.stderr  # not the typed command line's fault
    assert proc.returncode == 0 and len(stub.calls()) == 1  # h3doctor could not check: sglang starts, as always
