"""Launches in Slurm batch scripts: a shell script whose header has `#SBATCH` lines, read by the
shell reader (inputs/shell.py), with the GPUs each launch's node is granted.

sbatch reads `#SBATCH` options only up to the script's first command; `srun` in front of the
launch runs it as a job step, and its own options (the same names) decide what the step gets.
The grant, per node: `--gres=gpu[:type]:N` (a bare `gpu` is one), `--gpus-per-node=[type:]N`,
`--gpus-per-task=[type:]N` (each task is bound to its own), or `--gpus`/`-G [type:]N` when the job
has one node (across several nodes the split is Slurm's to choose: not said). `srun
--export=…,VAR=value` adds to the step's environment.

A GPU type with a count per node is the hardware the launch is judged on (`gpu:h100:4` -> target
`4xH100`, as SkyPilot's accelerators are; a command-line `--target` still wins). Types are the
site's own names (gres.conf), so they are read as names of h3doctor's GPU catalog — NVML's
autodetected `nvidia_h100_80gb_hbm3` without its vendor prefix — and one the catalog does not know
is named by the session (H3DL005), not guessed at. `a100` names two parts (40 and 80 GB): the
launch is judged on both. A count alone (`gpu:4`) is only the grant: the hardware comes from
`--target` or the configuration.
"""

from __future__ import annotations

import re

from h3doctor.digits import is_digits
from h3doctor.inputs.launch import Launch, Note
from h3doctor.inputs.shell import read_script
from h3doctor.shellsplit import Unsupported, shell_commands, shell_words

_SBATCH = re.compile(r"#SBATCH[ \t]+(.*)")
_COUNT = re.compile(r"(?:([A-Za-z0-9_.-]+):)?([0-9]+)$")  # ASCII, as Slurm reads counts
_AMBIGUOUS = {"a100": ("A100-40GB", "A100")}  # a site's `a100` may be either part: judged on both
_GRANT_OPTIONS = ("--gres", "--gpus-per-node", "--gpus-per-task", "--gpus", "-G", "--nodes", "-N", "--export")


def is_batch_script(text: str) -> bool:
    return bool(_header(text))


def _header(text: str) -> list[str]:
    """The words of the `#SBATCH` lines before the first command (where sbatch stops reading them)."""
    words: list[str] = []
    for n, line in enumerate(text.split("\n")):
        stripped = line.strip()
        if n == 0 and stripped.startswith("#!"):
            continue
        m = _SBATCH.match(stripped)
        if m:
            words.extend(_split(m.group(1).split(" #", 1)[0]))
        elif stripped and not stripped.startswith("#"):
            break
    return words


def _split(text: str) -> list[str]:
    try:
        return [w for w, _s, _e in shell_words(text)]
    except Unsupported:
        return text.split()


def read_batch_script(path: str, text: str) -> tuple[list[Launch], list[Note]]:
    launches, notes = read_script(path, text)
    job = _options(_header(text))
    for launch in launches:
        step = _options(_srun_words(text, launch))
        launch.kind = "slurm"
        said = step if _says_gpus(step) else job  # the step's own request replaces the job's
        launch.gpu_count, gpu_type = _grant(said, step.get("--nodes") or job.get("--nodes") or "1")
        if gpu_type and launch.gpu_count:
            launch.targets = _targets(gpu_type, launch.gpu_count)
        for pair in step.get("--export", "").split(","):
            name, eq, value = pair.partition("=")
            if eq and name not in ("ALL", "NONE"):
                launch.env.setdefault(name, value)
    return launches, notes


def _says_gpus(options: dict[str, str]) -> bool:
    return any(k in options for k in ("--gres", "--gpus-per-node", "--gpus-per-task", "--gpus"))


def _options(words: list[str]) -> dict[str, str]:
    """The grant-related options of sbatch/srun words (`--opt=value`, `--opt value`, `-G N`, `-GN`)."""
    out: dict[str, str] = {}
    i = 0
    while i < len(words):
        word = words[i]
        name, eq, value = word.partition("=")
        if not eq and word[:2] in ("-G", "-N") and len(word) > 2:
            name, value, eq = word[:2], word[2:], "="
        if name in _GRANT_OPTIONS:
            if not eq and i + 1 < len(words):
                i += 1
                value = words[i]
            out[{"-G": "--gpus", "-N": "--nodes"}.get(name, name)] = value
        i += 1
    return out


def _grant(options: dict[str, str], nodes: str) -> tuple[int | None, str | None]:
    """The GPUs one node of the step is granted, and their type when the request names one."""
    for gres in options.get("--gres", "").split(","):
        parts = gres.removeprefix("gres/").split(":")
        if parts[0] != "gpu":
            continue
        if len(parts) == 1:  # a bare `gpu` is one, of any type
            return 1, None
        if len(parts) == 2:  # gpu:N or gpu:TYPE (one of that type)
            return (int(parts[1]), None) if is_digits(parts[1]) else (1, parts[1])
        return (int(parts[-1]) if is_digits(parts[-1]) else None), parts[1]
    for name in ("--gpus-per-node", "--gpus-per-task"):
        m = _COUNT.match(options.get(name, ""))
        if m:
            return int(m.group(2)), m.group(1)
    m = _COUNT.match(options.get("--gpus", ""))
    if m and nodes.split("-")[0] == "1":
        return int(m.group(2)), m.group(1)
    return None, None


def _targets(gpu_type: str, count: int) -> tuple[str, ...]:
    """`<N>x<GPU>` targets for a Slurm GPU type (the session names one the catalog lacks)."""
    name = re.sub(r"^(nvidia|tesla)[_-]", "", gpu_type, flags=re.IGNORECASE)
    names = _AMBIGUOUS.get(name.lower(), (name,))
    return tuple(f"{count}x{n}" for n in names)


def _srun_words(text: str, launch: Launch) -> list[str]:
    """The words of `srun` in front of the launch on its (logical) line, after `srun`."""
    start = launch.segments[0].spans[0][0] if launch.segments else None
    if start is None:
        return []
    line_start = text.rfind("\n", 0, start) + 1
    while line_start > 1 and text[line_start - 2] == "\\":  # the previous line continues into this one
        line_start = text.rfind("\n", 0, line_start - 2) + 1
    try:
        commands = shell_commands(text[line_start:start])
    except Unsupported:
        return []
    words = [w for w, _s, _e in commands[-1]] if commands else []
    for i, word in enumerate(words):
        if word.rsplit("/", 1)[-1] == "srun":
            return words[i + 1:]
    return []
