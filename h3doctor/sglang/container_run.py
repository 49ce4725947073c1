"""`docker run` / `podman run` / `nerdctl run`: where the image and its command start, and what
the container sees (GPUs, environment).

API (small on purpose; the launch-form reader and lint's inputs use it):

    is_container_run(tokens) -> bool           # tokens start with `docker|podman|nerdctl [container] run`
    read_container_run(tokens) -> ContainerRun # raises UsageError naming an option it does not know
    ContainerRun.environment(caller) -> dict   # what the container's command starts with
    ContainerRun.gpu_count -> int | None       # the GPUs granted (None: all of the host's, or not said)
    read_env_file(path) -> list[(name, value | None)]   # an --env-file, read within limits
    read_shell_c(words) -> ShellC | None       # `bash -lc SCRIPT [$0 [ARGS…]]` in front of sglang

The runtimes' own options are modelled only as far as is needed to find the image (which options
take a value); an option in neither table is a usage error naming it, because h3doctor could not
tell the image from a value. They are facts about docker, podman and nerdctl (their `run`
reference pages), not about sglang releases, so they live here as tables.

The container does not see the caller's environment: only `-e NAME=value`, `-e NAME` (the caller's
value, dropped when the caller has none), `--env-file` lines (read first; `-e` wins) and, for podman,
`--env-host` (the whole caller environment). GPUs: `--gpus all|N|device=0,1|"device=GPU-uuid"`,
CDI `--device nvidia.com/gpu=all|0` (podman, docker ≥ 25), else `NVIDIA_VISIBLE_DEVICES` in the
container's environment (the NVIDIA runtime reads it).
"""

from __future__ import annotations

import functools
import os
import re

from h3doctor.digits import is_digits
from h3doctor.errors import UsageError
from h3doctor.record import field, record
from h3doctor.safeload import excerpt, read_bounded, refuse_outside, resolve_named
from h3doctor.shellsplit import script_tokens

RUNTIMES = ("docker", "podman", "nerdctl")
ENV_FILE_MAX_BYTES = 1 << 20

# docker run (docker CLI 27/28 reference): options that take a value, and the boolean ones
_DOCKER_VALUE = {
    "--add-host", "--annotation", "-a", "--attach", "--blkio-weight", "--blkio-weight-device", "--cap-add",
    "--cap-drop", "--cgroup-parent", "--cgroupns", "--cidfile", "--cpu-count", "--cpu-percent", "--cpu-period",
    "--cpu-quota", "--cpu-rt-period", "--cpu-rt-runtime", "-c", "--cpu-shares", "--cpus", "--cpuset-cpus",
    "--cpuset-mems", "--detach-keys", "--device", "--device-cgroup-rule", "--device-read-bps", "--device-read-iops",
    "--device-write-bps", "--device-write-iops", "--dns", "--dns-opt", "--dns-option", "--dns-search", "--domainname",
    "--entrypoint", "-e", "--env", "--env-file", "--expose", "--gpus", "--group-add", "--health-cmd",
    "--health-interval", "--health-retries", "--health-start-interval", "--health-start-period", "--health-timeout",
    "-h", "--hostname", "--io-maxbandwidth", "--io-maxiops", "--ip", "--ip6", "--ipc", "--isolation",
    "--kernel-memory", "-l", "--label", "--label-file", "--link", "--link-local-ip", "--log-driver", "--log-opt",
    "--mac-address", "-m", "--memory", "--memory-reservation", "--memory-swap", "--memory-swappiness", "--mount",
    "--name", "--network", "--net", "--network-alias", "--net-alias", "--oom-score-adj", "--pid", "--pids-limit",
    "--platform", "-p", "--publish", "--pull", "--restart", "--runtime", "--security-opt", "--shm-size",
    "--stop-signal", "--stop-timeout", "--storage-opt", "--sysctl", "--tmpfs", "--ulimit", "-u", "--user",
    "--userns", "--uts", "-v", "--volume", "--volume-driver", "--volumes-from", "-w", "--workdir",
}
_DOCKER_FLAG = {
    "-d", "--detach", "--disable-content-trust", "--init", "-i", "--interactive", "--no-healthcheck",
    "--oom-kill-disable", "--privileged", "-P", "--publish-all", "-q", "--quiet", "--read-only", "--rm",
    "--sig-proxy", "-t", "--tty", "--use-api-socket",
}
# podman run adds these (podman-run(1), podman 4/5)
_PODMAN_VALUE = _DOCKER_VALUE | {
    "--arch", "--authfile", "--cert-dir", "--cgroup-conf", "--cgroups", "--chrootdirs", "--conmon-pidfile",
    "--cpu-rt-period", "--creds", "--decryption-key", "--env-merge", "--gidmap", "--group-entry",
    "--health-log-destination", "--health-max-log-count", "--health-max-log-size", "--health-on-failure",
    "--health-startup-cmd", "--health-startup-interval", "--health-startup-retries", "--health-startup-success",
    "--health-startup-timeout", "--hostuser", "--hosts-file", "--image-volume", "--init-path", "--os",
    "--passwd-entry", "--personality", "--pidfile", "--pod", "--pod-id-file", "--preserve-fd", "--preserve-fds",
    "--rdt-class", "--requires", "--retry", "--retry-delay", "--sdnotify", "--seccomp-policy", "--secret",
    "--shm-size-systemd", "--subgidname", "--subuidname", "--systemd", "--timeout", "--tz", "--uidmap", "--umask",
    "--unsetenv", "--variant",
}
_PODMAN_FLAG = _DOCKER_FLAG | {
    "--env-host", "--http-proxy", "--no-hosts", "--passwd", "--read-only-tmpfs", "--replace", "--rmi",
    "--tls-verify", "--unsetenv-all",
}
# nerdctl run: docker's, plus its own (nerdctl docs/command-reference.md, `nerdctl run`)
_NERDCTL_VALUE = _DOCKER_VALUE | {
    "--cgroup-conf", "--cosign-key", "--cosign-certificate-identity", "--cosign-certificate-identity-regexp",
    "--cosign-certificate-oidc-issuer", "--cosign-certificate-oidc-issuer-regexp", "--ipfs-address", "--pidfile",
    "--rdt-class", "--umask", "--unsetenv", "--verify",
}
_NERDCTL_FLAG = _DOCKER_FLAG | {"--rootfs", "--systemd"}
_OPTIONS = {"docker": (_DOCKER_VALUE, _DOCKER_FLAG), "podman": (_PODMAN_VALUE, _PODMAN_FLAG),
            "nerdctl": (_NERDCTL_VALUE, _NERDCTL_FLAG)}

SHELLS = ("bash", "sh", "dash", "zsh", "ash")  # what `NAME -c SCRIPT` is read for
_HINT = "the container forms h3doctor reads are listed in the README (Launch forms)"


@record(frozen=True)
class GpuGrant:
    """What the runtime gives the container: `all`, a count, or named devices."""

    said: str  # the option as written, for messages: `--gpus all`
    count: int | None  # None: every GPU of the host

    @staticmethod
    def parse_gpus(value: str) -> GpuGrant:
        """docker's `--gpus` value: `all`, `N`, or CSV fields `count=N|all`, `device=0,1|GPU-uuid`."""
        said = f"--gpus {value}"
        text = value.strip()
        if text == "all":
            return GpuGrant(said, None)
        if is_digits(text):
            return GpuGrant(said, int(text))
        import csv  # only for a --gpus list: not on the check's path otherwise

        try:
            fields = next(csv.reader([text]))
        except (csv.Error, StopIteration):
            fields = []
        count: int | None = None
        known = False
        for f in fields:
            key, eq, val = f.partition("=")
            key = key.strip().lower()
            if not eq:  # docker refuses it too: `--gpus device=0,1` unquoted is the fields device=0 and 1
                raise UsageError(f"`--gpus {excerpt(value)}`: docker reads {excerpt(f)!r} as a field of its own and "
                                 "refuses it; quote a list of devices: --gpus '\"device=0,1\"'", hint=_HINT)
            if key == "count":
                known = True
                count = None if val == "all" else (int(val) if is_digits(val) else -1)
            elif key in ("device", "devices"):
                known = True
                count = _listed(val)
            elif key in ("capabilities", "driver", "options"):
                known = True
        if not known or count == -1:
            raise UsageError(f"`--gpus {excerpt(value)}`: h3doctor cannot read this GPU request "
                             "(it reads all, a number, count=N, device=0,1 or device=GPU-uuid)", hint=_HINT)
        return GpuGrant(said, count)


@record(frozen=True)
class ContainerRun:
    runtime: str  # docker | podman | nerdctl
    image: str
    image_index: int  # tokens[image_index] is the image
    command_start: int  # tokens[command_start:] is the container's command
    env: tuple[tuple[str, str | None], ...] = ()  # in order: env files first, then -e (None: the caller's value)
    env_host: bool = False  # podman --env-host: the caller's environment too
    gpus: GpuGrant | None = None  # from --gpus or CDI --device; None: not said by an option
    entrypoint: str | None = None
    env_word_indices: tuple[int, ...] = field(default=())  # where -e/--env values are (for edits)
    entrypoint_at: int | None = None  # tokens[entrypoint_at] holds --entrypoint's value (or is `--entrypoint=V`)
    # every option the runtime reads, in order, as (name, value): a flag's value is "" or its `=V`
    # (what the container may do to the host — --privileged, -v /:/host — is judged from these)
    options: tuple[tuple[str, str], ...] = field(default=())

    def environment(self, caller: dict[str, str]) -> dict[str, str]:
        """What the container's command starts with (before the image's own ENV, which h3doctor
        does not see)."""
        env = dict(caller) if self.env_host else {}
        for name, value in self.env:
            if value is not None:
                env[name] = value
            elif name in caller:
                env[name] = caller[name]
            else:
                env.pop(name, None)
        return env

    def gpu_count(self, caller: dict[str, str]) -> int | None:
        """GPUs the container sees: the option's grant, else NVIDIA_VISIBLE_DEVICES; None when all
        of the host's (or nothing says)."""
        if self.gpus is not None:
            return self.gpus.count
        visible = self.environment(caller).get("NVIDIA_VISIBLE_DEVICES")
        if visible is None or visible.strip() == "all":
            return None
        if visible.strip() in ("", "none", "void"):
            return 0
        return _listed(visible)


def _listed(devices: str) -> int:
    """How many devices a comma-separated list names (`0,1`, `GPU-uuid`)."""
    return len([d for d in devices.split(",") if d.strip()])


def is_container_run(tokens: list[str]) -> bool:
    if not tokens or os.path.basename(tokens[0]) not in RUNTIMES:
        return False
    return tokens[1:2] == ["run"] or tokens[1:3] == ["container", "run"]


def read_container_run(tokens: list[str], *, env_file_dir: str | None = None) -> ContainerRun:
    """Read `RUNTIME [container] run [OPTIONS] IMAGE [COMMAND…]`. `env_file_dir`: what a relative
    --env-file is relative to (None: the current directory, as for the runtime itself)."""
    runtime = os.path.basename(tokens[0])
    value_opts, flag_opts = _OPTIONS[runtime]
    i = 2 if tokens[1] == "run" else 3
    env: list[tuple[str, str | None]] = []
    files: list[tuple[str, str | None]] = []
    env_indices: list[int] = []
    gpus: GpuGrant | None = None
    cdi: list[str] = []
    entrypoint = None
    entrypoint_at = None
    env_host = False
    options: list[tuple[str, str]] = []

    def take(opt: str, value: str, at: int) -> None:
        nonlocal gpus, entrypoint, entrypoint_at, env_host
        options.append((opt, value))
        if opt in ("-e", "--env"):
            name, eq, val = value.partition("=")
            env.append((name, val if eq else None))
            env_indices.append(at)
        elif opt == "--env-file":
            path = value if os.path.isabs(value) or env_file_dir is None else os.path.join(env_file_dir, value)
            files.extend(read_env_file(path))
        elif opt == "--gpus":
            gpus = GpuGrant.parse_gpus(value)
        elif opt == "--device":
            host = value.split(":", 1)[0]
            if "/gpu=" in host:  # CDI: vendor.com/gpu=all|0|0,1
                cdi.append(host)
        elif opt == "--entrypoint":
            entrypoint, entrypoint_at = value, at

    while i < len(tokens):
        tok = tokens[i]
        if tok == "--":
            i += 1
            break
        if not tok.startswith("-") or tok == "-":
            break
        if tok.startswith("--"):
            name, eq, value = tok.partition("=")
            if name in flag_opts:
                if name == "--env-host" and value.lower() not in ("false", "0"):
                    env_host = True
                options.append((name, value))
                i += 1
            elif name in value_opts:
                if not eq:
                    if i + 1 >= len(tokens):
                        raise UsageError(f"`{runtime} run {tok}` needs a value", hint=_HINT)
                    value = tokens[i + 1]
                take(name, value, i if eq else i + 1)
                i += 1 if eq else 2
            else:
                raise _unknown(runtime, tok)
            continue
        # short options: a cluster of boolean letters, the last may take a value (`-it`, `-eA=1`, `-p8080:80`)
        j = 1
        while j < len(tok):
            opt = "-" + tok[j]
            if opt in flag_opts:
                options.append((opt, ""))
                j += 1
                continue
            if opt in value_opts:
                rest = tok[j + 1:]
                if rest.startswith("="):
                    rest = rest[1:]
                if rest:
                    take(opt, rest, i)
                    i += 1
                else:
                    if i + 1 >= len(tokens):
                        raise UsageError(f"`{runtime} run {tok}` needs a value", hint=_HINT)
                    take(opt, tokens[i + 1], i + 1)
                    i += 2
                break
            raise _unknown(runtime, opt if len(tok) > 2 else tok)
        else:
            i += 1
    if i >= len(tokens):
        raise UsageError(f"`{runtime} run` names no image", hint=_HINT)
    if gpus is None and cdi:
        gpus = _cdi_grant(cdi)
    return ContainerRun(runtime, tokens[i], i, i + 1, tuple(files + env), env_host, gpus, entrypoint,
                        tuple(env_indices), entrypoint_at, tuple(options))


def _unknown(runtime: str, opt: str) -> UsageError:
    return UsageError(f"`{runtime} run {excerpt(opt)}`: h3doctor does not know this option of {runtime} run, "
                      "so it cannot tell where the image and its command start", hint=_HINT)


def _cdi_grant(devices: list[str]) -> GpuGrant:
    said = " ".join(f"--device {d}" for d in devices)
    count = 0
    for d in devices:
        names = d.split("=", 1)[1]
        if names == "all":
            return GpuGrant(said, None)
        count += len([n for n in names.split(",") if n])
    return GpuGrant(said, count)


def read_env_file(path: str) -> list[tuple[str, str | None]]:
    """An --env-file as docker reads it: `NAME=value` (the value verbatim, no quotes removed),
    `NAME` alone (the caller's value), `#` comments and blank lines skipped. Read through safeload:
    a regular file under ENV_FILE_MAX_BYTES (no FIFO: a launch line from elsewhere could name one
    that never ends); anything else is a usage error naming the file, never quoting its content (a
    pasted line may name any file of this machine). Read once per file version and process: the
    launch form is read many times in one check. Under `lint`, a path outside the repository is
    refused before anything looks at it (OutsideRepository)."""
    refuse_outside(path, what="--env-file", from_file=True)
    path = resolve_named(path)  # under lint: relative to the file that names it
    try:
        info = os.stat(path)
        version = (info.st_mtime_ns, info.st_size, info.st_ino)
    except (OSError, ValueError):
        version = None
    return list(_env_file(path, version, ENV_FILE_MAX_BYTES))


@functools.lru_cache(maxsize=64)
def _env_file(path: str, _version: object, max_bytes: int) -> tuple[tuple[str, str | None], ...]:
    text = read_bounded(path, max_bytes=max_bytes, what="--env-file")  # a FIFO is refused, never waited on
    out: list[tuple[str, str | None]] = []
    for number, line in enumerate(text.splitlines(), 1):
        line = line.lstrip()
        if not line or line.startswith("#"):
            continue
        name, eq, value = line.partition("=")
        if not name or any(c.isspace() for c in name):
            raise UsageError(f"--env-file: line {number} is not NAME=value", location=f"{excerpt(path, 160)}:{number}",
                             path=path)
        if "\0" in line:  # no environment can hold it (and Python refuses it)
            raise UsageError(f"--env-file: line {number} holds a NUL byte", location=f"{excerpt(path, 160)}:{number}",
                             path=path)
        out.append((name, value if eq else None))
    return tuple(out)


# --- `bash -lc SCRIPT [$0 [ARGS…]]`: the cookbook's form ------------------------------------------

@record(frozen=True)
class ShellC:
    """A shell started with a script: `sh -c SCRIPT [NAME [ARGS…]]`. The script's `"$@"` is ARGS
    (`$0` is NAME: the cookbook's `--`). `args_start` indexes the words given to read_shell_c."""

    script: str
    args_start: int  # words[args_start:] are "$@"
    zero: bool  # words[args_start - 1] is $0 (the cookbook's `--`)
    commands: tuple[tuple[str, ...], ...]  # the script's simple commands, `"$@"` kept as ARGS_WORD


# Linux refuses to exec a program with an argument longer than this (MAX_ARG_STRLEN, 32 pages):
# no shell is ever given a longer script, and reading one costs seconds
MAX_SCRIPT_BYTES = 131072
ARGS_WORD = "\x00@"  # "$@" (or "${@}") in a script: the arguments after $0, one word each
ARGS_SPLIT = "\x00@u"  # $@ / $* unquoted: the same, each argument split again at blanks
ARGS_JOINED = "\x00*"  # "$*": every argument in one word
_POSITIONAL = re.compile(r"\$(?:\{([0-9]+|#)\}|([0-9]|#))")  # bash: ASCII digits only


def bind_positional(word: str, args: list[str], zero: str | None) -> str:
    """A script word with `$1`…, `${10}`, `$#` and `$0` replaced by what bash gives them: the
    script's arguments (after any `shift`). A parameter past the last argument is a usage error
    naming it: bash would give an empty value, but on a line typed with its arguments it is a
    missing argument, and the launch it builds is not the one the user means."""
    def sub(m: re.Match) -> str:
        name = m.group(1) or m.group(2)
        if name == "#":
            return str(len(args))
        n = int(name)
        if n == 0:
            if zero is None:
                raise UsageError("the `-c` script reads $0, which the line does not give", hint=_HINT)
            return zero
        if n > len(args):
            said = f"${{{n}}}" if n > 9 else f"${n}"
            raise UsageError(f"the `-c` script reads {said}, but the line gives it {len(args)} argument(s) after "
                             "the script's name", hint=_HINT)
        return args[n - 1]

    return _POSITIONAL.sub(sub, word)


def read_shell_c(words: list[str]) -> ShellC | None:
    """`bash -lc SCRIPT …`, `sh -c`, `bash -l -c`, `bash --login -c`: the script and where its
    arguments start; None when the words are not a shell given a script."""
    if not words or os.path.basename(words[0]) not in SHELLS:
        return None
    i, has_c = 1, False
    while i < len(words) and words[i].startswith("-") and words[i] not in ("-", "--"):
        w = words[i]
        if w.startswith("--"):
            if w not in ("--login", "--norc", "--noprofile"):
                return None
        elif "c" in w[1:]:
            has_c = True
        i += 1
        if has_c:
            break
    if not has_c or i >= len(words):
        return None
    script = words[i]
    if len(script) > MAX_SCRIPT_BYTES // 4 and len(script.encode("utf-8", "surrogateescape")) > MAX_SCRIPT_BYTES:
        raise UsageError(f"the `-c` script is longer than the {MAX_SCRIPT_BYTES:,} bytes Linux passes a program as "
                         "one argument (MAX_ARG_STRLEN): no shell could be given it; not checked", hint=_HINT)
    zero = i + 1 < len(words)  # words[i + 1] is $0
    args_start = i + 2 if zero else i + 1
    return ShellC(script, min(args_start, len(words)), zero, tuple(script_commands(script)))


@functools.lru_cache(maxsize=32)  # the fix loop reads the same script again on every pass
def script_commands(script: str) -> tuple[tuple[str, ...], ...]:
    """A script's simple commands (split at `&&`, `||`, `;`, `|`, newlines), as the shell reads
    their words; `"$@"` becomes ARGS_WORD, unquoted `$@`/`$*` ARGS_SPLIT, `"$*"` ARGS_JOINED.
    Other expansions (`$1`, `$VAR`, `$(…)`, backticks) are kept as written: the reader decides."""
    text = script
    for form, word in (('"$@"', ARGS_WORD), ('"${@}"', ARGS_WORD), ('"$*"', ARGS_JOINED), ('"${*}"', ARGS_JOINED),
                       ("${@}", ARGS_SPLIT), ("$@", ARGS_SPLIT), ("${*}", ARGS_SPLIT), ("$*", ARGS_SPLIT)):
        text = text.replace(form, f" {word} ")
    lexer = script_tokens(text.replace("\n", ";"))
    commands: list[tuple[str, ...]] = []
    current: list[str] = []
    redirect = False
    try:
        for tok in lexer:
            if redirect:  # a redirection's target is no word of the command
                redirect = False
                continue
            if tok and all(c in ";&|()" for c in tok):
                if current:
                    commands.append(tuple(current))
                current = []
                continue
            if tok and all(c in "<>&" for c in tok):
                redirect = True
                if current and is_digits(current[-1]):
                    current.pop()  # the 2 of 2>&1
                continue
            current.append(tok)
    except ValueError as exc:
        raise UsageError(f"the `-c` script is not understood ({exc})", hint=_HINT) from None
    if current:
        commands.append(tuple(current))
    return tuple(commands)


# --- where a runtime option stands, for a fix that edits it (engine/fixes.py) ---------------------

def runtime_option_span(tokens: list[str], option: str) -> tuple[int, int] | None:
    """tokens[start:end] is the last `OPTION VALUE` / `OPTION=VALUE` among a `RUNTIME run` line's
    own options (before the image), the one the runtime keeps; None when the line does not give it.
    Walked with the runtime's option tables, so a value that looks like the option is skipped."""
    runtime = os.path.basename(tokens[0])
    value_opts, flag_opts = _OPTIONS[runtime]
    i = 2 if tokens[1] == "run" else 3
    found = None
    while i < len(tokens):
        tok = tokens[i]
        if tok == "--" or not tok.startswith("-") or tok == "-":
            break
        name, eq, _ = tok.partition("=")
        if tok.startswith("--"):
            takes = name in value_opts and not eq
            if name == option:
                found = (i, i + (2 if takes else 1))
            i += 2 if takes else 1
            continue
        # a short cluster: its last letter may take the next word as its value
        last = "-" + tok[-1]
        i += 2 if last in value_opts and all("-" + c in flag_opts for c in tok[1:-1]) else 1
    return found
