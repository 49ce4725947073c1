"""What `--exec` would run besides sglang, and with what reach over the host: the values rules
H3D960-H3D963 read (docs/security.md, "What `--exec` shows and refuses").

A launch from someone else's recipe or script is exec'd by `check --exec` as written. These values
name what in it is more than "start sglang": the other commands a container's `-c` script runs,
the container options that lift its confinement, the host folders it mounts that hold the host's
secrets or control, and a PATH the input sets (which then chooses the program that runs). They
read the launch's words only, so they are worked out for every launch (`launch_only`), also one
whose model h3doctor does not know.
"""

from __future__ import annotations

import os
import posixpath

from h3doctor.engine.derivations.registry import derives
from h3doctor.sglang.container_run import ARGS_JOINED, ARGS_SPLIT, ARGS_WORD
from h3doctor.shellwords import is_assignment, join, safe_text

# Shell words that run no program (a builtin that only sets the shell's own state). Anything else
# in a container's script — curl, sh, rm, pip, source, eval, exec of another program — is named.
HARMLESS_BUILTINS = frozenset({"export", "cd", "set", "shift", "unset", "umask", "ulimit", "true", ":"})

# Container options that lift the container's confinement, as (option, value) — value None: any.
# `--ipc host` and `--network host` are left out on purpose: sglang's published docker commands
# use them (shared memory for NCCL, the server's port), and they give no way into the host's files.
_PRIVILEGED_FLAGS = ("--privileged",)
_HOST_NAMESPACES = ("--pid", "--userns", "--uts", "--cgroupns")  # `=host`: the host's own
_CAPABILITIES = frozenset({"ALL", "SYS_ADMIN", "SYS_MODULE", "SYS_PTRACE", "SYS_RAWIO", "SYS_BOOT", "DAC_READ_SEARCH",
                           "DAC_OVERRIDE", "NET_ADMIN", "BPF"})
_UNCONFINED = frozenset({"seccomp=unconfined", "seccomp:unconfined", "apparmor=unconfined", "apparmor:unconfined",
                         "label=disable", "label:disable", "systempaths=unconfined", "systempaths:unconfined"})

# Host paths a container must not get (docs/security.md): mounting one of them, or a folder that
# holds one (`/` holds them all, `/var` the docker socket), hands the container the host.
SENSITIVE_PATHS = ("/etc", "/root", "/boot", "/proc", "/sys", "/dev", "/usr", "/bin", "/sbin", "/lib", "/lib64",
                   "/var/run/docker.sock", "/run/docker.sock", "/run/containerd", "/run/podman", "/var/lib/docker",
                   "/var/lib/containerd", "/var/lib/kubelet", "/home")
# ... of which these are sensitive all the way down (a file or folder inside them too); inside
# /root and /home only the home folder itself and its credential folders are (a model cache under
# ~/.cache is what sglang's docker commands mount).
_SENSITIVE_BELOW = ("/etc", "/boot", "/proc", "/sys", "/dev", "/usr", "/bin", "/sbin", "/lib", "/lib64",
                    "/var/run/docker.sock", "/run/docker.sock", "/run/containerd", "/run/podman", "/var/lib/docker",
                    "/var/lib/containerd", "/var/lib/kubelet")
CREDENTIAL_NAMES = frozenset({".ssh", ".aws", ".gnupg", ".docker", ".kube", ".netrc", ".git-credentials", ".azure",
                              ".config"})
_HOME = "~"


def _shown(words: tuple[str, ...]) -> str:
    """A script command as bash reads it, its `"$@"` written back."""
    marks = {ARGS_WORD: '"$@"', ARGS_SPLIT: "$@", ARGS_JOINED: '"$*"'}
    return " ".join(marks.get(w) or join([w]) for w in words)


def _runs_a_program(words: tuple[str, ...]) -> bool:
    if any("`" in w or w.endswith("$") for w in words):  # `…` or $(…) (split off by the reader) runs one
        return True
    if all(is_assignment(w) for w in words):
        return False
    return words[0] not in HARMLESS_BUILTINS


@derives("exec_script_commands", reads=("launch_form",), launch_only=True)
def script_commands(r, hw, ctx):
    """The commands of a container's `-c` script other than its sglang launch that run a program,
    as bash reads them, `; `-separated ("" when none)."""
    form = ctx.get("launch_form")
    others = []
    for k, words in enumerate(getattr(form, "script", ()) or ()):
        if not words:
            continue
        if k == form.script_launch:  # the launch itself runs sglang; a `…` in its words runs more
            if any("`" in w for w in words):
                others.append(_shown(words))
        elif _runs_a_program(words):
            others.append(_shown(words))
    return {"derived.exec_script_commands": "; ".join(others)}


def _runtime_options(ctx) -> tuple[tuple[str, str], ...]:
    """The `docker|podman|nerdctl run` options of the launch, as (name, value); none when it is no container's."""
    run = getattr(ctx.get("launch_form"), "container", None)
    return getattr(run, "options", ()) or ()


@derives("exec_container_privileges", reads=("launch_form",), launch_only=True)
def container_privileges(r, hw, ctx):
    """The options of `docker|podman|nerdctl run` that lift the container's confinement, as written
    ("" when none)."""
    found = []
    for name, value in _runtime_options(ctx):
        if name in _PRIVILEGED_FLAGS and value.lower() not in ("false", "0"):
            found.append(name if not value else f"{name}={value}")
        elif name in _HOST_NAMESPACES and value == "host":
            found.append(f"{name}=host")
        elif name == "--cap-add" and value.upper().removeprefix("CAP_") in _CAPABILITIES:
            found.append(f"--cap-add={value}")
        elif name == "--security-opt" and value.replace(" ", "").lower() in _UNCONFINED:
            found.append(f"--security-opt={value}")
    return {"derived.exec_container_privileges": safe_text(" ".join(found), 400)}


def mount_source(name: str, value: str) -> str | None:
    """The host path a `-v/--volume SRC:DST` or `--mount type=bind,source=SRC` gives the container
    (None: a named volume, a tmpfs, or no host path)."""
    if name in ("-v", "--volume"):
        parts = value.split(":")
        return parts[0] if len(parts) > 1 and parts[0] else None
    if name != "--mount":
        return None
    fields = dict(f.split("=", 1) if "=" in f else (f, "") for f in value.split(","))
    if fields.get("type", "volume") != "bind":
        return None
    return fields.get("source") or fields.get("src")


def sensitive(source: str) -> bool:
    """Whether a host path, mounted into a container, hands it the host (docs/security.md)."""
    path = source
    for home in ("${HOME}", "$HOME", "~"):
        if path == home or path.startswith(home + "/"):
            path = _HOME + path[len(home):]
            break
    if path.startswith("$"):  # another variable: known only when the shell runs it
        return True
    parts = [p for p in path.split("/") if p]
    if CREDENTIAL_NAMES.intersection(parts):
        return True
    if path.startswith(_HOME):  # ~/… is the user's, ~NAME/… another user's: the home folder itself is named
        return len(parts) == 1 or all(p in (".", "..") for p in parts[1:])
    if not path.startswith("/"):  # a named volume or the input's own tree; `..` leaves the tree
        return ".." in parts
    path = posixpath.normpath("/" + path.lstrip("/"))
    if path == "/" or posixpath.dirname(path) in ("/home",) or path == "/root":
        return True
    if any(s == path or s.startswith(path.rstrip("/") + "/") for s in SENSITIVE_PATHS):
        return True  # it is, or holds, a sensitive path
    return any(path.startswith(s + "/") for s in _SENSITIVE_BELOW)


@derives("exec_host_mounts", reads=("launch_form",), launch_only=True)
def host_mounts(r, hw, ctx):
    """The host paths the container mounts that hold the host's secrets or control, as written
    ("" when none)."""
    found = [f"{name} {value}" for name, value in _runtime_options(ctx)
             if (source := mount_source(name, value)) is not None and sensitive(source)]
    return {"derived.exec_host_mounts": safe_text(", ".join(found), 400)}


@derives("exec_input_path", reads=("launch_path",), launch_only=True)
def input_path(r, hw, ctx):
    """The PATH the launch's program is looked up on when the input set it (a recipe's `env:`, a
    `PATH=…` word, `env PATH=…`, a container's `-e PATH=…` or its script's `export PATH=…`): a PATH
    other than h3doctor's own chooses which program runs. None when the program gets h3doctor's own."""
    path = ctx.get("launch_path")
    own = os.environ.get("PATH")  # what h3doctor itself would run: the PATH it was started with
    return {"derived.exec_input_path": None if path is None or path == own else safe_text(path, 200)}
