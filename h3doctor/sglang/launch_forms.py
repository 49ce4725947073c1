"""What stands in front of sglang's flags: the launch forms people type, read word by word.

A launch is `[wrapper] program [flags]`. The wrapper is what people put in front of sglang and
what h3doctor keeps verbatim in a corrected command: `VAR=value` words, `env [-i] [VAR=value…]`,
`exec`, `nohup`, `setsid`, `time`, `uv run [--with …]`, `pipx run`. The program is how sglang is
started: `sglang serve|generate` (a bare name or a path such as `.venv/bin/sglang`) or
`python -m <sglang module> …`. Anything else in front of the program is a usage error naming
the word: a guess would make the corrected command something nobody can run.

The wrapper programs' own options are modelled only as far as is needed to find where the
program starts (which options take a value); they are facts about env, uv, pipx, setsid, time
and python, not about sglang releases, so they live here as tables.
"""

from __future__ import annotations

import functools
import os
import re

from h3doctor.digits import is_digits
from h3doctor.errors import UsageError
from h3doctor.record import field, record
from h3doctor.safeload import MAX_NODES, excerpt
from h3doctor.sglang.container_run import (
    ARGS_JOINED,
    ARGS_SPLIT,
    ARGS_WORD,
    SHELLS,
    ContainerRun,
    bind_positional,
    is_container_run,
    read_container_run,
    read_shell_c,
)
from h3doctor.shellsplit import Unsupported, shell_commands
from h3doctor.shellwords import PYTHON_PROGRAM, SGLANG_PROGRAM, WRAPPER_PROGRAMS, is_assignment

_PYTHON = PYTHON_PROGRAM
_REPO_ID = re.compile(r"^[A-Za-z0-9][\w.-]*/[\w.-]+$")
_PIPX_APP = re.compile(r"^sglang(\[[^\]]*\])?([=<>~!].*)?$")

# launcher: how sglang is started (entry: which sglang parser reads the flags)
SGLANG = SGLANG_PROGRAM  # sglang serve|generate (the console script, sglang.cli.main:main)
CLI_MAIN_MODULE = "python -m sglang.cli.main"  # the same main(), but as a module: see H3D041
LLM_LAUNCH_SERVER = "python -m sglang.launch_server"  # sglang's LLM server launcher: see H3D040
DIFFUSION_LAUNCH_SERVER = "python -m sglang.multimodal_gen.runtime.launch_server"
DIFFUSION_CLI = "python -m sglang.multimodal_gen.runtime.entrypoints.cli.main"
BARE = "bare"  # sglang serve's flags alone (h3doctor check --num-gpus 4 ...)

_SUBCOMMANDS = ("serve", "generate")
_MODULES = {
    "sglang.cli.main": (CLI_MAIN_MODULE, True),
    "sglang.launch_server": (LLM_LAUNCH_SERVER, False),
    "sglang.multimodal_gen.runtime.launch_server": (DIFFUSION_LAUNCH_SERVER, False),
    "sglang.multimodal_gen.runtime.entrypoints.cli.main": (DIFFUSION_CLI, True),
}

# Options of the wrapper programs: those that take a value (the next word, or `--opt=value`) and
# those that do not. An option in neither set is a usage error: h3doctor cannot tell where the
# program starts.
_ENV_VALUE = {"-u", "--unset", "-C", "--chdir"}
_ENV_FLAG = {"-i", "--ignore-environment", "-", "-v", "--debug"}
_SETSID_FLAG = {"-c", "--ctty", "-f", "--fork", "-w", "--wait"}
_TIME_VALUE = {"-f", "--format", "-o", "--output"}
_TIME_FLAG = {"-p", "--portability", "-v", "--verbose", "-a", "--append", "-q", "--quiet"}
_UV_RUN_VALUE = {
    "--with", "--with-editable", "--with-requirements", "--python", "-p", "--project", "--directory", "--extra",
    "--group", "--only-group", "--no-group", "--package", "--index", "--default-index", "--index-url",
    "--extra-index-url", "--find-links", "-f", "--cache-dir", "--config-file", "--prerelease", "--resolution",
    "--exclude-newer", "--link-mode", "--color", "--refresh-package", "--reinstall-package", "--upgrade-package", "-P",
}
_UV_RUN_FLAG = {
    "--isolated", "--no-project", "--frozen", "--locked", "--no-sync", "--active", "--no-active", "--all-extras",
    "--no-dev", "--dev", "--all-packages", "--all-groups", "--no-default-groups", "--exact", "--inexact",
    "--no-editable", "--offline", "--no-cache", "-n", "--refresh", "--upgrade", "-U", "--reinstall", "--quiet", "-q",
    "--verbose", "-v", "--native-tls", "--no-config", "--no-env-file", "--no-build-isolation", "--compile-bytecode",
    "--managed-python", "--no-managed-python", "--no-python-downloads",
}
_PIPX_RUN_VALUE = {"--spec", "--python", "--pip-args", "--index-url", "-i", "--preinstall"}
_PIPX_RUN_FLAG = {"--no-cache", "--system-site-packages", "--path", "--pypackages", "--verbose", "-v", "--quiet", "-q",
                  "--fetch-missing-python"}
_PYTHON_VALUE_LETTERS = "XW"  # -X opt, -W arg (also -Xopt, -Warg)
_PYTHON_FLAG_LETTERS = "bBdEIOPqsSuv"

_HINT = ("give the sglang command after `--`, e.g. h3doctor check -- sglang serve MODEL [flags]; "
         "the launch forms h3doctor reads are listed in the README (Launch forms)")


@record(frozen=True)
class LaunchForm:
    """Where the parts of a launch command are: tokens[:wrapper_len] is the wrapper (kept as
    typed), tokens[wrapper_len:prefix_len] the program words, tokens[prefix_len:] sglang's flags."""

    wrapper_len: int
    prefix_len: int
    entry: str  # serve | generate | launch_server: the sglang parser that reads the flags
    launcher: str  # one of the constants above
    env: dict[str, str] = field(default_factory=dict)  # VAR=value words, as the program will see them
    env_cleared: bool = False  # env -i: the program sees only the words given
    env_unset: tuple[str, ...] = ()  # env -u NAME
    env_word_indices: tuple[int, ...] = ()  # where the VAR=value words are
    env_insert_at: int = 0  # where a new VAR=value word goes (after `env`'s options, else first)
    container: ContainerRun | None = None  # `docker run … IMAGE` in front: what the container sees
    env_as_option: bool = False  # a new VAR=value word is given as `-e VAR=value` (a container's)
    # `--entrypoint sglang IMAGE serve …`: the program's first word is tokens[entrypoint_at], the
    # option's value (or `--entrypoint=V`), and the rest of it is tokens[wrapper_len:prefix_len]
    entrypoint_at: int | None = None
    # a `bash -lc` script's `export NAME="$1"`: NAME's value is the word tokens[index] (a fix edits it there)
    env_value_at: dict[str, int] = field(default_factory=dict)
    # a container's `bash -lc SCRIPT`: the script's simple commands, and which one is the launch
    # (the others run too: what they do is judged in engine/derivations/exec_safety.py)
    script: tuple[tuple[str, ...], ...] = ()
    script_launch: int | None = None
    # ... the script is tokens[script_at], and its launch's program words (`python3 -m
    # sglang.launch_server`) are its text [start, end): a fix of the program edits them there
    # (None: not found as written, so the program is not edited)
    script_at: int | None = None
    script_program: tuple[int, int] | None = None

    def program_head(self, tokens: list[str]) -> str:
        """The program's first word (`python3`, `sglang`), wherever it is written."""
        if self.entrypoint_at is not None:
            return tokens[self.entrypoint_at].removeprefix("--entrypoint=")
        return tokens[self.wrapper_len]

    @property
    def program_given(self) -> bool:
        return self.launcher != BARE

    def environment(self, base: dict[str, str]) -> dict[str, str]:
        """The environment the program starts with, from the environment h3doctor was given."""
        if self.container is not None:  # the container sees its own environment, not the caller's
            base = self.container.environment(base)
        if self.env_cleared:
            env = {}
        elif self.env_unset:
            env = {k: v for k, v in base.items() if k not in self.env_unset}
        else:
            env = dict(base)  # the common case, a copy in C (evaluated on every pass of the fix loop)
        env.update(self.env)
        return env


class _Reader:
    def __init__(self, tokens: list[str]) -> None:
        self.tokens = tokens
        self.i = 0
        self.env: dict[str, str] = {}
        self.env_indices: list[int] = []
        self.env_insert_at = 0
        self.env_cleared = False
        self.env_unset: list[str] = []
        self.wrapped = False  # a wrapper word has been read
        self.pipx_app = False  # `pipx run` has been read: the next word is the app (sglang, maybe with a spec)

    def peek(self, k: int = 0) -> str | None:
        j = self.i + k
        return self.tokens[j] if j < len(self.tokens) else None

    def fail(self, word: str, what: str | None = None) -> UsageError:
        return UsageError(what or f"`{word}` in front of the sglang command is not a launch form h3doctor knows",
                          hint=_HINT)

    def assignments(self) -> None:
        while (tok := self.peek()) is not None and is_assignment(tok):
            key, _, value = tok.partition("=")
            self.env[key] = value
            self.env_indices.append(self.i)
            self.i += 1

    def options(self, program: str, takes_value: set[str], flags: set[str], *, end_marker: bool = False) -> None:
        """Skip a wrapper program's options, up to the program it runs."""
        while (tok := self.peek()) is not None and tok.startswith("-") and (tok != "-" or "-" in flags):
            if tok == "--" and end_marker:
                self.i += 1
                return
            name, eq, _ = tok.partition("=")
            if tok in flags:
                self.i += 1
            elif name in takes_value:
                self.i += 1 if eq else 2
                if not eq and self.i > len(self.tokens):
                    raise self.fail(tok, f"`{program} {tok}` needs a value")
            else:
                raise self.fail(tok, f"`{program} {tok}`: h3doctor does not know this option of {program}, "
                                     "so it cannot tell where the sglang command starts")

    def env_options(self) -> None:
        while (tok := self.peek()) is not None and tok.startswith("-"):
            if tok == "--":
                self.i += 1
                break
            name, eq, value = tok.partition("=")
            if tok in ("-i", "--ignore-environment", "-"):
                self.env_cleared = True
                self.env.clear()  # the words before `env -i` do not reach the program
                self.env_indices.clear()
                self.i += 1
            elif name in ("-u", "--unset"):
                self.env_unset.append(value if eq else (self.peek(1) or ""))
                self.i += 1 if eq else 2
            elif tok in _ENV_FLAG or name in _ENV_VALUE:
                self.i += 1 if (tok in _ENV_FLAG or eq) else 2
            else:
                raise self.fail(tok, f"`env {tok}`: h3doctor does not know this option of env, "
                                     "so it cannot tell where the sglang command starts")
        self.env_insert_at = self.i

    def wrapper(self) -> bool:
        """Read one wrapper word (and its options); False when the next word is not one."""
        tok = self.peek()
        if tok is None:
            return False
        name = os.path.basename(tok)
        if name not in WRAPPER_PROGRAMS and tok != "exec":  # the one list the shell hook intercepts too
            return False
        if tok == "exec" and not self.wrapped:  # the shell builtin: only the shell runs it (not `nohup exec`)
            self.i += 1
        elif name == "nohup":
            self.i += 1
        elif name == "setsid":
            self.i += 1
            self.options("setsid", set(), _SETSID_FLAG)
        elif name == "time":
            self.i += 1
            self.options("time", _TIME_VALUE, _TIME_FLAG)
        elif name == "env":
            self.i += 1
            self.env_options()
            self.assignments()
        elif name == "uv" and self.peek(1) == "run":
            self.i += 2
            self.options("uv run", _UV_RUN_VALUE, _UV_RUN_FLAG, end_marker=True)
        elif name == "pipx" and self.peek(1) == "run":
            self.i += 2
            self.options("pipx run", _PIPX_RUN_VALUE, _PIPX_RUN_FLAG)
            app = self.peek()
            if app is None or not _PIPX_APP.match(app):
                raise self.fail(app or "pipx run", f"`pipx run {app}` does not run sglang" if app else
                                "`pipx run` names no app")
            self.wrapped = self.pipx_app = True
            return False  # the app word is the program: `sglang` run by pipx
        else:
            return False
        self.wrapped = True
        return True

    def python_module(self, program_start: int) -> tuple[str, str, int]:
        """`python [options] -m MODULE [subcommand]`: (launcher, entry, prefix length)."""
        self.i += 1
        module = None
        while (tok := self.peek()) is not None and tok.startswith("-") and len(tok) > 1:
            if tok == "--":
                break
            letters = tok[1:]
            if tok.startswith("--"):
                raise self.fail(tok, f"`python {tok}` is not a launch form h3doctor knows")
            j = 0
            while j < len(letters) and letters[j] in _PYTHON_FLAG_LETTERS:
                j += 1
            if j == len(letters):
                self.i += 1
                continue
            letter, rest = letters[j], letters[j + 1 :]
            if letter == "m":
                module = rest or self.peek(1)
                self.i += 1 if rest else 2
                break
            if letter in _PYTHON_VALUE_LETTERS:
                self.i += 1 if rest else 2
                continue
            raise self.fail(tok, f"`python {tok}`: h3doctor reads only `python -m <sglang module>` launches")
        if module is None:
            word = self.tokens[program_start]
            after = self.peek()
            raise self.fail(word, f"`{word} {after}` does not start sglang: h3doctor reads `{word} -m <sglang module>`"
                            if after else f"`{word}` alone does not start sglang")
        if module not in _MODULES:
            raise self.fail(module, f"`python -m {module}` is not an sglang launcher h3doctor knows (it reads "
                                    + ", ".join(f"`-m {m}`" for m in _MODULES) + ")")
        launcher, needs_subcommand = _MODULES[module]
        if not needs_subcommand:
            return launcher, "launch_server" if launcher == DIFFUSION_LAUNCH_SERVER else "serve", self.i
        sub = self.peek()
        if sub not in _SUBCOMMANDS:
            raise _not_a_launch(f"python -m {module}", sub)
        return launcher, sub, self.i + 1


def program_lookup(tokens: list[str], base: dict[str, str]) -> tuple[str, str | None] | None:
    """(the word that names sglang's program, the PATH it is looked up on) for a launch started
    from an environment `base`: the PATH the `VAR=value` words, `env PATH=…` and `env -i` leave
    the program (what `check --exec` prints before it runs). None when no word on this machine
    names it: a container's program is looked up in the image, flags alone name none."""
    try:
        form = read_launch_form(tokens)
    except UsageError:
        return None
    if form.container is not None or not form.program_given:
        return None
    if form.script:  # `bash -lc SCRIPT …`: the line runs the shell, which finds sglang itself
        return tokens[0], base.get("PATH")
    return form.program_head(tokens), form.environment(base).get("PATH")


def _not_a_launch(program: str, sub: str | None) -> UsageError:
    said = f"`{program} {sub}`" if sub else f"`{program}` without a subcommand"
    return UsageError(f"{said} is not a launch: h3doctor checks `serve` and `generate`",
                      hint="give the launch, e.g. h3doctor check -- sglang serve MODEL [flags]")


def _names_sglang(tokens: list[str]) -> bool:
    """Some word is an sglang program or module: then the words in front of it are a wrapper."""
    return any(os.path.basename(t) == "sglang" or t.startswith("-msglang")
               or (t == "-m" and k + 1 < len(tokens) and tokens[k + 1].startswith("sglang"))
               for k, t in enumerate(tokens))


# A launch people type holds a few dozen words. Past the budget every YAML input has
# (safeload.MAX_NODES), judging one would cost a CI runner seconds per file for a launch nobody
# types (a hostile recipe or script of 70,000 flags): it is refused, as an oversized file is.
MAX_LAUNCH_WORDS = MAX_NODES


def read_launch_form(tokens: list[str]) -> LaunchForm:
    """Find the wrapper, the program and the flags of a launch. Raises UsageError naming the
    first word that is neither a wrapper h3doctor knows nor sglang, or a launch past the word budget."""
    if len(tokens) > MAX_LAUNCH_WORDS:
        raise UsageError(f"the launch has {len(tokens):,} words, more than the {MAX_LAUNCH_WORDS:,} h3doctor "
                         "judges (a launch of sglang holds a few dozen): not checked")
    if is_container_run(tokens):
        return _container_form(tokens)
    sh = read_shell_c(tokens) if tokens and os.path.basename(tokens[0]) in SHELLS else None
    if sh is not None:  # `bash -lc SCRIPT -- ARGS…` typed as it is: the cookbook's form without a container
        return _script_form(tokens, None, sh, f"`{excerpt(tokens[0])} -c …`", sh.args_start,
                            sh.args_start - 1 if sh.zero else None)
    r = _Reader(tokens)
    r.assignments()
    while r.wrapper():
        pass
    wrapper_len = r.i
    tok = r.peek()
    form = dict(wrapper_len=wrapper_len, env=dict(r.env), env_cleared=r.env_cleared, env_unset=tuple(r.env_unset),
                env_word_indices=tuple(r.env_indices), env_insert_at=r.env_insert_at)
    if tok is None:
        if r.wrapped:
            raise r.fail(tokens[-1], f"`{' '.join(tokens)}` names no sglang command")
        return LaunchForm(prefix_len=r.i, entry="serve", launcher=BARE, **form)
    name = os.path.basename(tok)
    if name == "sglang" or r.pipx_app:
        sub = r.peek(1)
        if sub not in _SUBCOMMANDS:
            raise _not_a_launch(tok, sub)
        return LaunchForm(prefix_len=r.i + 2, entry=sub, launcher=SGLANG, **form)
    if _PYTHON.match(name):
        launcher, entry, prefix_len = r.python_module(r.i)
        return LaunchForm(prefix_len=prefix_len, entry=entry, launcher=launcher, **form)
    bare = not r.wrapped and (tok.startswith("-") or (_REPO_ID.match(tok) and not _names_sglang(tokens[r.i + 1 :])))
    if bare:  # sglang serve's flags (and model) alone
        return LaunchForm(prefix_len=r.i, entry="serve", launcher=BARE, **form)
    raise r.fail(tok)


@record(frozen=True)
class LaunchWords:
    """A launch's words with their launch form, read once (`read`): the engine, the request and
    the hardware each read the form from here rather than reading the words again. A launch
    h3doctor cannot read keeps the error, raised where the form is first needed (`form_or_raise`),
    so it is reported where it always was."""

    tokens: tuple[str, ...]
    form: LaunchForm | None
    error: UsageError | None = None
    # (flag table, ParsedCommand): the flags parsed already by whoever read the words (argv.parsed_once)
    parsed: tuple | None = None

    @classmethod
    def read(cls, tokens: list[str] | tuple[str, ...] | LaunchWords) -> LaunchWords:
        if isinstance(tokens, LaunchWords):
            return tokens
        try:
            return cls(tuple(tokens), read_launch_form(list(tokens)))
        except UsageError as exc:
            return cls(tuple(tokens), None, exc)

    def form_or_raise(self) -> LaunchForm:
        if self.form is None:
            raise self.error
        return self.form


def _container_form(tokens: list[str]) -> LaunchForm:
    """`docker|podman|nerdctl run [options] IMAGE COMMAND…`: everything up to the image is wrapper
    (kept as typed); the command is read as a launch of its own, or, for `bash -lc SCRIPT -- ARGS…`,
    the script's sglang command is the program and ARGS (its `"$@"`) are sglang's flags. An
    `--entrypoint PROGRAM` is the command's first word (docker execs it with the words after the
    image as its arguments); `--entrypoint ""` clears the image's, and the words after the image
    are the whole command."""
    run = read_container_run(tokens)
    where = f"`{run.runtime} run … {run.image}`"
    entry = _entrypoint_words(run, where)
    inner = entry + tokens[run.command_start:]
    if not inner:
        raise UsageError(f"{where} runs the image's own command, which h3doctor cannot see: give the sglang "
                         "command after the image", hint=_HINT)
    if is_container_run(inner):
        raise UsageError(f"{where} runs `{inner[0]} run` inside the container: not a launch form h3doctor knows",
                         hint=_HINT)
    if is_assignment(inner[0]) or inner[0] == "exec":  # no shell reads the container's command: it is exec'd
        raise UsageError(f"{where} {inner[0]}: the runtime runs `{inner[0]}` as a program (there is no shell to read "
                         "it); give the environment with -e NAME=value", hint=_HINT)

    def at(k: int) -> int:  # inner[k] (k past the entrypoint) is tokens[at(k)]
        return run.command_start + k - len(entry)

    sh = read_shell_c(inner)
    if sh is not None:
        return _script_form(tokens, run, sh, where, at(sh.args_start), at(sh.args_start - 1) if sh.zero else None)
    form = read_launch_form(inner)
    if not form.program_given:
        raise UsageError(f"{where} {inner[0]}: not an sglang command", hint=_HINT)
    if form.prefix_len < len(entry):
        raise UsageError(f"{where} --entrypoint {excerpt(run.entrypoint or '')}: not an sglang command", hint=_HINT)
    in_entry = bool(entry) and form.wrapper_len < len(entry)  # the program starts in the entrypoint
    uses_env = form.env_insert_at > 0
    return LaunchForm(wrapper_len=run.command_start if in_entry else at(form.wrapper_len),
                      prefix_len=at(form.prefix_len), entry=form.entry,
                      launcher=form.launcher, env=dict(form.env), env_cleared=form.env_cleared,
                      env_unset=form.env_unset,
                      env_word_indices=tuple(sorted(run.env_word_indices + tuple(at(k) for k in form.env_word_indices))),
                      env_insert_at=at(form.env_insert_at) if uses_env else run.image_index,
                      container=run, env_as_option=not uses_env,
                      entrypoint_at=run.entrypoint_at if in_entry else None)


def _entrypoint_words(run: ContainerRun, where: str) -> list[str]:
    """The words --entrypoint puts in front of the command: docker and nerdctl exec the value as
    one program name (a value with a blank names no program h3doctor can read); podman also takes
    a JSON array, which h3doctor does not read."""
    value = run.entrypoint
    if value is None or value == "":
        return []
    if value.lstrip().startswith("[") or any(c.isspace() for c in value):
        raise UsageError(f"{where} --entrypoint {excerpt(value)!r}: h3doctor reads an entrypoint that is one program "
                         f"(--entrypoint sglang IMAGE serve …); {run.runtime} does not split this value into words",
                         hint=_HINT)
    return [value]


def _script_form(tokens: list[str], run: ContainerRun | None, sh, where: str, args_at: int,
                 zero_at: int | None) -> LaunchForm:
    """`bash -lc SCRIPT [$0 [ARGS…]]`: the script's last sglang command, which must end in `"$@"`
    (its flags are ARGS, read as sglang's). `run`: the container it runs in (None: a shell the
    line starts itself, which sees the caller's environment; a new `NAME=value` goes in front of it). Positional parameters are bound to the line's words:
    `shift [N]` before the launch drops ARGS' first N (they stay in the wrapper, as typed), and
    `$1`…, `$#`, `$0` in the `export NAME=…` and `NAME=value` words the launch sees take their
    values; one past the last argument is a usage error naming it (container_run.bind_positional)."""
    launches = [c for c in sh.commands if _names_sglang(list(c))]
    if not launches:
        raise UsageError(f"{where}: the `-c` script runs no sglang command", hint=_HINT)
    index = max(k for k, c in enumerate(sh.commands) if c in launches)
    command = list(sh.commands[index])
    zero = tokens[zero_at] if zero_at is not None else None
    shifted = 0
    exported: dict[str, str] = {}
    value_at: dict[str, int] = {}
    for c in sh.commands[:index]:
        args = tokens[args_at + shifted:]
        if c and c[0] == "shift":
            n = int(c[1]) if len(c) > 1 and is_digits(c[1]) else 1
            if len(c) > 2 or (len(c) == 2 and not is_digits(c[1])) or n > len(args):
                raise UsageError(f"{where}: the `-c` script's `{' '.join(c)}` shifts past the arguments the line "
                                 f"gives ({len(args)})", hint=_HINT)
            shifted += n
        elif c and (c[0] == "export" or all(is_assignment(w) for w in c)):
            for word in c[1:] if c[0] == "export" else c:
                name, eq, value = word.partition("=")
                if eq:
                    exported[name] = _script_value(name, bind_positional(value, args, zero), where)
                    whole = re.fullmatch(r"\$(?:([1-9])|\{([1-9][0-9]*)\})", value)
                    if whole:
                        value_at[name] = args_at + shifted + int(whole.group(1) or whole.group(2)) - 1
                    else:
                        value_at.pop(name, None)
    args = tokens[args_at + shifted:]
    if ARGS_JOINED in command or ARGS_SPLIT in command:
        if ARGS_JOINED in command:
            raise UsageError(f"{where}: the script's sglang command passes \"$*\", every flag as one word; use \"$@\"",
                             hint=_HINT)
        split = [a for a in args if not a or any(c.isspace() or c in "*?[" for c in a)]
        if split:
            raise UsageError(f"{where}: the script's unquoted $@ splits the argument {excerpt(split[0])!r} again; "
                             "quote it: \"$@\"", hint=_HINT)
        command = [ARGS_WORD if w == ARGS_SPLIT else w for w in command]
    if command.count(ARGS_WORD) != 1 or command[-1] != ARGS_WORD:
        raise UsageError(f"{where}: the script's sglang command must end in \"$@\" with its flags given as the "
                         "script's arguments (bash -lc '… exec sglang serve \"$@\"' -- FLAGS…); flags written "
                         "inside the script are not read", hint=_HINT)
    words = command[:-1]
    expanded = next((w for w in words if "$" in w or "`" in w), None)
    if expanded is not None and not is_assignment(expanded):
        raise UsageError(f"{where}: the script's sglang command has {excerpt(expanded)!r} in front of \"$@\": flags "
                         "written inside the script are not read; give them after the script as its arguments",
                         hint=_HINT)
    words = [bind_positional(w, args, zero) if is_assignment(w) else w for w in words]
    form = read_launch_form(words)
    if form.prefix_len != len(words) or not form.program_given:
        raise UsageError(f"{where}: the script's sglang command must end in \"$@\" with its flags given as the "
                         "script's arguments; flags written inside the script are not read", hint=_HINT)
    start = args_at + shifted
    script_at = (zero_at if zero_at is not None else args_at) - 1
    env = {**exported, **{k: _script_value(k, v, where) for k, v in form.env.items()}}
    return LaunchForm(wrapper_len=start, prefix_len=start, entry=form.entry, launcher=form.launcher, env=env,
                      env_cleared=form.env_cleared, env_unset=form.env_unset,
                      env_word_indices=run.env_word_indices if run else (),
                      env_insert_at=run.image_index if run else 0, container=run, env_as_option=run is not None,
                      env_value_at={k: v for k, v in value_at.items() if k not in form.env},
                      script=sh.commands, script_launch=index, script_at=script_at,
                      script_program=program_span(tokens[script_at], tuple(words[form.wrapper_len:form.prefix_len])))


@functools.lru_cache(maxsize=32)  # the fix loop reads the same script again on every pass
def program_span(script: str, program: tuple[str, ...]) -> tuple[int, int] | None:
    """[start, end) of the script's last command's run of `program` words, as the script writes
    them; None when the script's words cannot be split with offsets or the run is not there."""
    try:
        commands = shell_commands(script, script_args=True, keep_expansions=True)
    except Unsupported:
        return None
    n = len(program)
    for command in reversed(commands):
        texts = tuple(w for w, _s, _e in command)
        for k in range(len(texts) - n, -1, -1):
            if n and texts[k:k + n] == program:
                return command[k][1], command[k + n - 1][2]
    return None


def _script_value(name: str, value: str, where: str) -> str:
    """A value the script gives NAME, once its positional parameters are bound: another expansion
    (`$HOME`, `$(…)`) is known only when the script runs, which matters for the variables sglang
    reads (a usage error naming it) and not for the others (PATH and the like are not judged)."""
    if ("$" in value or "`" in value) and (name.startswith("SGLANG") or name.endswith("_VISIBLE_DEVICES")):
        raise UsageError(f"{where}: the `-c` script sets {name} from {excerpt(value)!r}, known only when it runs",
                         hint=_HINT)
    return value


def without_words_naming(tokens: list[str], path: str) -> list[str]:
    """The launch without the words that name the file `path` (a file h3doctor could not read):
    `--flag PATH` (any flag, so an abbreviation and a container runtime's --env-file too) and
    `--flag=PATH`; a bare PATH word alone. What the shell hook judges in its place (cli.py), never
    a launch h3doctor runs. Only a word whose value is the file itself: a model folder holding an
    unreadable model_index.json names the model, and a launch without its model is not the rest
    of this one (it fails for want of a model)."""
    kept: list[str] = []
    for word in tokens:
        if word == path:
            if kept and kept[-1].startswith("-") and "=" not in kept[-1] and kept[-1] not in ("-", "--"):
                kept.pop()  # the flag whose value it is
        elif not (word.startswith("-") and word.partition("=")[2] == path):
            kept.append(word)
    return kept
