"""The command-line hook (cli_hook_line.py and hook_line.bash/.zsh/.fish): the launch forms no
shell function can stand in for — `exec sglang …`, `command sglang …`, a program named by a path —
checked in real interactive bash, zsh and fish on a pty, and the line reader behind it."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import time

import pytest

from h3doctor.cli_hook_line import checked_launches
from h3doctor.unresolved import marked
from tests.launch.test_hook import CLEAN, FAILING, INTERACTIVE, LOAD, PROFILE, STATUS, Terminal, shell, stub  # noqa: F401

DIFFUSION = "-m sglang.multimodal_gen.runtime.launch_server --model-path MiniMaxAI/MiniMax-H3 --num-gpus 4"
FAILING_LINE = " ".join(FAILING)
CLEAN_LINE = " ".join(CLEAN)
# form: (the line with a failing launch, the same with a passing one, the argv the stub gets);
# {py} is a stand-in python named by its absolute path
FORMS = {
    "exec": (f"exec sglang {FAILING_LINE}", f"exec sglang {CLEAN_LINE}", CLEAN),
    "command": (f"command sglang {FAILING_LINE}", f"command sglang {CLEAN_LINE}", CLEAN),
    "command env": (f"command env STUB_VAR=1 sglang {FAILING_LINE}", f"command env sglang {CLEAN_LINE}", CLEAN),
    "relative path": (f"./bin/sglang {FAILING_LINE}", f"./bin/sglang {CLEAN_LINE}", CLEAN),
    # a value the shell gives only when it runs is any value: the launch's other words still block it
    "expansion": (f'command sglang {FAILING_LINE} --port "$PORT"', f'command sglang {CLEAN_LINE} --port "$PORT"',
                  [*CLEAN, "--port", "30001"]),
    "absolute python": ("{py} -u -m sglang.launch_server --model-path MiniMaxAI/MiniMax-H3 --num-gpus 4",
                        "{py} " + DIFFUSION, DIFFUSION.split()),
}


def _terminal(shell: str, stub, tmp_path, load: bool = True) -> tuple[Terminal, str]:
    """An interactive shell with the hook loaded, in the stub's folder; and the stand-in python's path."""
    py = tmp_path / "venv" / "bin" / "python3"
    py.parent.mkdir(parents=True)
    shutil.copy(stub.bin / "sglang", py)
    full = stub.env(H3DOCTOR_HOOK_ARGS=PROFILE, TERM="dumb", HOME=str(tmp_path), PS1="$ ", STUB_EXIT="0",
                    PORT="30001")
    term = Terminal(INTERACTIVE[shell], full)
    assert term.run(f"cd '{tmp_path}'", STATUS[shell]) == "0"
    if load:
        assert term.run(LOAD[shell], STATUS[shell]) == "0"
    return term, str(py)


def _wait_for_exit(term: Terminal) -> None:
    """`exec` replaced the shell: wait until the terminal closes."""
    deadline = time.monotonic() + 90
    while time.monotonic() < deadline:
        try:
            data = os.read(term.fd, 4096)
        except OSError:
            return
        if not data:
            return
        term.out += data
    pytest.fail(f"the shell did not exec:\n{term.out.decode(errors='replace')}")


@pytest.mark.parametrize("form", list(FORMS))
def test_a_launch_no_function_sees_is_checked_on_the_command_line(shell, stub, tmp_path, form):
    """A failing launch in the form is not started (the stand-in never runs; the check's verdict is
    said); the same form with a passing launch starts it, with its words as typed."""
    failing, passing, argv = FORMS[form]
    term, py = _terminal(shell, stub, tmp_path)
    try:
        term.run(failing.format(py=py), STATUS[shell])
        shown = term.out.decode(errors="replace")
        assert stub.calls() == [], f"{form} started a failing launch in {shell}:\n{shown}"
        assert "sglang was not started" in shown, shown
        if form == "exec":
            term.type(f"{passing}\n".encode())
            _wait_for_exit(term)
        else:
            assert term.run(passing.format(py=py), STATUS[shell]) == "0", term.out.decode(errors="replace")
        assert [c["argv"] for c in stub.calls()] == [argv], term.out.decode(errors="replace")
    finally:
        term.close()


def test_a_blocked_launch_abandons_the_rest_of_its_line(shell, stub, tmp_path):
    """`exec sglang <failing> && next` runs neither: bash's trap skipping the command alone would give
    it status 0 and run `next`; zsh and fish run none of the line."""
    term, _ = _terminal(shell, stub, tmp_path)
    try:
        status = term.run(f"command sglang {FAILING_LINE} && echo NEXT-\"\"RAN", STATUS[shell])
        shown = term.out.decode(errors="replace")
        assert stub.calls() == [] and "NEXT-RAN" not in shown, shown
        assert status != "0" or shell != "bash", shown
    finally:
        term.close()


USER_HOOK = {  # the user's own DEBUG trap / accept-line widget / Enter binding, set before the hook loads
    "bash": "trap 'echo x >> {mark}' DEBUG",
    "zsh": "function my-accept { echo x >> {mark}; zle .accept-line }; zle -N accept-line my-accept",
    "fish": "function my_enter; echo x >> {mark}; commandline -f execute; end; bind \\r my_enter; bind \\n my_enter",
}


def test_the_users_own_hook_and_the_shells_behaviour_are_kept(shell, stub, tmp_path):
    """The user's own line hook still runs on every line, a hidden failing launch is still blocked,
    and `exec >file`, `$?` and ordinary commands behave as without the hook."""
    mark = tmp_path / "user-hook-ran"
    term, _ = _terminal(shell, stub, tmp_path, load=False)
    try:
        term.run(USER_HOOK[shell].replace("{mark}", str(mark)), STATUS[shell])
        assert term.run(LOAD[shell], STATUS[shell]) == "0"
        mark.unlink(missing_ok=True)
        term.run(f"command sglang {FAILING_LINE}", STATUS[shell])
        assert stub.calls() == [] and mark.exists(), term.out.decode(errors="replace")
        mark.unlink()
        assert term.run("false", STATUS[shell]) == "1"
        assert mark.exists(), term.out.decode(errors="replace")
        # fish's exec takes a command: its redirection of a block stands in for exec >file
        term.run(f"begin; echo inner; end >'{tmp_path}/out'" if shell == "fish"
                 else f"(exec >'{tmp_path}/out'; echo inner)", STATUS[shell])
        assert term.run("echo a b", STATUS[shell]) == "0"
        assert b"a b" in term.out
    finally:
        term.close()
    assert (tmp_path / "out").read_text().strip() == "inner"


LATER_HOOK = {  # another tool's line hook, set after h3doctor's, that does not run h3doctor's
    "bash": "trap 'echo x >> {mark}' DEBUG",
    "zsh": "function later-accept { echo x >> {mark}; zle .accept-line }; zle -N accept-line later-accept",
    "fish": "function later_enter; echo x >> {mark}; commandline -f execute; end; bind \\r later_enter; bind \\n later_enter",
}


def test_a_line_hook_set_after_ours_does_not_switch_it_off(shell, stub, tmp_path):
    """A DEBUG trap / accept-line widget / Enter binding set after the hook loads would replace it
    and let `exec sglang`, `command sglang` and path launches through unchecked: before the next
    prompt the hook is armed again around it, so the hidden failing launch is blocked and the later
    hook still runs. Fails when the re-arming (PROMPT_COMMAND, precmd, fish_prompt) is removed."""
    mark = tmp_path / "later-hook-ran"
    term, _ = _terminal(shell, stub, tmp_path)
    try:
        term.run(LATER_HOOK[shell].replace("{mark}", str(mark)), STATUS[shell])
        term.run("true", STATUS[shell])  # a line through the later hook alone; then a prompt
        mark.unlink(missing_ok=True)
        term.run(f"command sglang {FAILING_LINE}", STATUS[shell])
        shown = term.out.decode(errors="replace")
        assert stub.calls() == [], f"a later hook switched the check off in {shell}:\n{shown}"
        assert "sglang was not started" in shown and mark.exists(), shown
    finally:
        term.close()


def test_bash_a_later_trap_that_runs_ours_checks_once(stub, tmp_path):
    """A trap set later that runs the hook's own (it chained it, as bash-preexec does) and the hook
    armed again around it: the launch is checked once, not twice (the trap's guard)."""
    if shutil.which("bash") is None:
        pytest.skip("bash is not installed")
    term, _ = _terminal("bash", stub, tmp_path)
    try:
        term.run('__old="$(trap -p DEBUG)"; __old="${__old#trap -- }"; eval "__old=${__old% DEBUG}"; '
                 "trap 'eval \"$__old\"' DEBUG", STATUS["bash"])
        term.run("true", STATUS["bash"])
        start = len(term.out)
        term.run(f"command sglang {FAILING_LINE}", STATUS["bash"])
        shown = term.out[start:].decode(errors="replace")
        assert stub.calls() == [] and shown.count("sglang was not started") == 1, shown
    finally:
        term.close()


def test_bash_keeps_the_last_argument():
    """`$_` is the last word of the command before, not the trap's: also in a command that mentions
    sglang, before which the trap's function runs."""
    bash = shutil.which("bash")
    if bash is None:
        pytest.skip("bash is not installed")
    script = 'eval "$(h3doctor init bash)"; echo one two >/dev/null; echo "last=$_ (sglang)"'
    proc = subprocess.run([bash, "--norc", "--noprofile", "-i", "-c", script], capture_output=True, text=True,
                          env={**os.environ, "PATH": f"{os.path.dirname(sys.executable)}:{os.environ['PATH']}"},
                          stdin=subprocess.DEVNULL, timeout=60)
    assert "last=two (sglang)" in proc.stdout, proc.stdout + proc.stderr


@pytest.mark.parametrize("line,launches", [
    ("ls -la; git status", []),
    ("sglang serve M", []),  # the sglang function checks it
    ("python3 -m sglang.launch_server --model-path M", []),  # the python3 function checks it
    ("exec >file", []),
    ("command -v sglang", []),
    ("./configure --with sglang", []),
    ("exec sglang serve --help", []),
    ("exec sglang serve M --tp 2 2>&1 | tee log", [["exec", "sglang", "serve", "M", "--tp", "2"]]),
    ("A=1 exec sglang serve M", [["A=1", "exec", "sglang", "serve", "M"]]),
    ("ls && command -p env B=2 sglang serve M; echo", [["env", "B=2", "sglang", "serve", "M"]]),
    ("if x; then ./sglang serve 'a b' \"c d\" >>log; fi", [["./sglang", "serve", "a b", "c d"]]),
    ("(/o/bin/python -u -m sglang.launch_server --model-path M &)",
     [["/o/bin/python", "-u", "-m", "sglang.launch_server", "--model-path", "M"]]),
    ("echo '; exec sglang serve M'", []),
    ("H3DOCTOR_DISABLE=1 exec sglang serve M; H3DOCTOR_DISABLE=0 ./sglang serve M", [["H3DOCTOR_DISABLE=0", "./sglang", "serve", "M"]]),
    ("cd x\n.venv/bin/sglang generate M # exec sglang serve", [[".venv/bin/sglang", "generate", "M"]]),
    # bash's and zsh's ANSI-C quoting, as shellwords.quote writes a word: read, not "could not read"
    ("exec sglang serve M --attention-backend $'sage_attn' $'--x\\ty'", [["exec", "sglang", "serve", "M",
                                                                         "--attention-backend", "sage_attn", "--x\ty"]]),
])
def test_the_simple_commands_the_line_hook_checks(line, launches):
    assert checked_launches(line) == launches


def test_a_hostile_line_runs_nothing_and_a_word_the_shell_expands_is_not_verified(tmp_path):
    """The line is data: its substitutions are never run by h3doctor, and a launch holding one
    where it decides which flags sglang gets is said to be unverified (the shell gives it its value
    only when it runs), not judged clean."""
    line = f"exec sglang {CLEAN_LINE} --revision $(touch pwned) `touch pwned2` \"$(touch pwned3)\""
    assert checked_launches(line)[0][-4:] == ["--revision", marked("$(touch pwned)"), marked("`touch pwned2`"),
                                                 marked("$(touch pwned3)")]
    proc = subprocess.run([sys.executable, "-m", "h3doctor", "hook-line", "--", line], capture_output=True, text=True,
                          cwd=tmp_path, env={**os.environ, "H3DOCTOR_HOOK_ARGS": PROFILE}, timeout=60)
    assert proc.returncode == 0
    assert "is known only when the launch runs and decides which flags" in proc.stderr
    assert "h3doctor could not verify this launch (said above)" in proc.stderr
    assert list(tmp_path.iterdir()) == []


def _line_judge(line: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "h3doctor", "hook-line", "--", line], capture_output=True, text=True,
                          env={**os.environ, "H3DOCTOR_HOOK_ARGS": PROFILE, "COLUMNS": "80"}, timeout=60)


def test_a_word_the_shell_expands_is_any_value_and_the_other_words_still_block():
    """A value the shell gives only when the launch runs (`--tp-size "$TP"`) is judged as any
    value (engine/unresolved.py), so the launch's other words still block it (ring attention on
    torch_sdpa: H3D116), and a value no rule reads (`--port "$PORT"`) neither blocks nor is said
    to be unverifiable. Fails when the line judge lets every launch with an expansion through."""
    expanded = f"exec sglang {CLEAN_LINE} --tp-size \"$TP\""
    blocked = _line_judge(expanded + " --ring-degree 2 --attention-backend torch_sdpa")
    assert blocked.returncode == 1, blocked.stderr
    assert "H3D116" in blocked.stderr and "sglang was not started" in blocked.stderr
    assert "launching sglang anyway" not in blocked.stderr
    # the corrected command keeps the expansion as written, and is not said to pass what it could not check
    assert '--tp-size "$TP"' in blocked.stderr and "(passes every rule)" not in blocked.stderr
    assert "could not be made on it" in blocked.stderr
    port = _line_judge(f"exec sglang {CLEAN_LINE} --port \"$PORT\"")
    assert (port.returncode, port.stderr) == (0, "")


@pytest.mark.parametrize("options,said", [
    (["--marked-launch", '["sglang", "serve", "M"]'], "--marked-launch is for the shell hook (--hook)"),
    (["--hook", "--marked-launch", '{"a": 1}'], "--marked-launch takes a JSON list of the launch's words"),
    (["--hook", "--marked-launch", '["sglang", "serve", "M\\u0000x"]'], "a NUL that marks no expansion"),
    (["--hook", "--marked-launch", '["sglang"]', "--", "sglang"], "not both"),
])
def test_the_marked_launch_is_the_hooks_alone_and_well_formed(options, said):
    """Only the hook hands check marked words, and only NULs in front of an expansion: a NUL
    anywhere else is still a launch no program can be given (a usage error, exit 2)."""
    proc = subprocess.run([sys.executable, "-m", "h3doctor", "check", "--profile", "4xH200", *options],
                          capture_output=True, text=True, timeout=60)
    assert proc.returncode == 2, proc.stderr
    assert said in proc.stderr


@pytest.mark.parametrize("words,hook_args,status,said", [
    (FAILING, PROFILE, 1, ["sglang was not started"]),
    (CLEAN, "--profle 4xH200", 0, ["error: in H3DOCTOR_HOOK_ARGS (--profle 4xH200)", "could not verify",
                                   "h3doctor failed (exit 2); launching sglang anyway"]),
])
def test_the_line_judge_answers_as_the_check_does(words, hook_args, status, said):
    """hook-line's status is the hook's protocol: 1 blocks; what h3doctor cannot judge runs, said."""
    proc = subprocess.run([sys.executable, "-m", "h3doctor", "hook-line", "--", "command sglang " + " ".join(words)],
                          capture_output=True, text=True, env={**os.environ, "H3DOCTOR_HOOK_ARGS": hook_args}, timeout=60)
    assert proc.returncode == status, proc.stderr
    assert all(s in proc.stderr for s in said), proc.stderr


def test_a_failure_of_the_line_judge_itself_launches(monkeypatch, capsys):
    """h3doctor's own failure is said and the line runs (exit 0): the hook is never the only reason."""
    from h3doctor import cli_hook_line as hook_line

    def broken(line):
        raise RuntimeError("boom")

    monkeypatch.setattr(hook_line.signal, "signal", lambda *_: None)  # this process keeps its Ctrl-C
    assert hook_line.main(["--", "exec sglang serve 'M"]) == 0  # a quote left open: not readable, said
    assert "h3doctor could not read this line (unterminated single quote); launching sglang anyway" in capsys.readouterr().err
    monkeypatch.setattr(hook_line, "judge", broken)
    assert hook_line.main(["--", "exec sglang serve M"]) == 0
    assert "h3doctor failed (RuntimeError: boom); launching sglang anyway" in capsys.readouterr().err
