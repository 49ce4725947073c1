"""A launch found in a file: its tokens, environment and GPU grant, and where each token sits.

Every input reader (recipes, sglang `--config` files, Kubernetes, compose, shell scripts) returns
`Launch` records and `Note`s (what it saw but did not understand). A `Segment` says where a run
of the launch's tokens comes from — a YAML list, a YAML string, or a span of a text file — so
findings can be located to line and column and `lint --fix` can edit the tokens in place.
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping

from dataclasses import dataclass, field
from typing import Any

from h3doctor.digits import is_digits
from h3doctor.located import Document, Pos
from h3doctor.sglang.container_run import SHELLS
from h3doctor.shellsplit import Word, shell_commands
from h3doctor.shellwords import is_assignment
from h3doctor.unresolved import as_written


def rule_matches(pattern: str, rule_id: str) -> bool:
    """A rule ID against one written pattern: the ID itself (H3D305) or a prefix ending in `*`
    (H3D3*, H3DL*), the one reading of `ignore`/`rules` lists, recipe ignores and inline
    `# h3doctor: ignore[...]` comments."""
    return rule_id.startswith(pattern[:-1]) if pattern.endswith("*") else rule_id == pattern


@dataclass(frozen=True)
class Ignore:
    rule: str  # a rule ID (H3D305) or a prefix pattern (H3D3*)
    reason: str
    pos: Pos

    def matches(self, rule_id: str) -> bool:
        return rule_matches(self.rule, rule_id)


@dataclass
class Segment:
    kind: str  # "list" (a YAML sequence of words), "string" (a YAML string of shell words), "text" (file text)
    path: tuple | None  # YAML path of the list or string; None for "text"
    first: int  # index in Launch.tokens of the segment's first token
    spans: list[tuple[int, int]]  # per token: [start, end) offsets in the string or file text ("list": item index)

    @property
    def count(self) -> int:
        return len(self.spans)


@dataclass
class Launch:
    path: str
    kind: str  # recipe | sglang-config | kubernetes | compose | shell | dockerfile | slurm | skypilot
    label: str  # e.g. "Deployment/h3 container server"
    tokens: list[str]
    pos: Pos  # where the launch is, as a whole
    token_pos: list[Pos] = field(default_factory=list)
    env: dict[str, str] = field(default_factory=dict)
    segments: list[Segment] = field(default_factory=list)
    doc: Document | None = None
    targets: tuple[str, ...] = ()  # the file's own targets (recipes)
    gpu_count: int | None = None  # GPUs the deployment grants the container (None: not said)
    ignores: list[Ignore] = field(default_factory=list)
    sglang_version: str | None = None
    image: str | None = None  # the container image the launch runs in (its tag is the release)
    image_pos: Pos | None = None  # where the image is named (a manifest's `image:` value): the image-tag finding's word
    intent: dict[str, Any] = field(default_factory=dict)
    key_pos: dict[str, Pos] = field(default_factory=dict)  # sglang config files: key -> where
    # files its deployment mounts from the repository: container path -> (text, where it is held)
    mounts: dict[str, tuple[str, str]] = field(default_factory=dict)
    # the GPU types its pod's node labels allow (inputs/gpu_labels.py GpuChoice): its target's GPU
    gpu_choices: list[Any] = field(default_factory=list)
    # its container's Kubernetes probes (inputs/probes.py Probe by role); None: no manifest read for them
    probes: dict[str, Any] | None = None
    # what its compose service or pod template says of the container's host facts (sglang/container_facts.py
    # ContainerSpec; None: no container definition read), and where each fact is said (inputs/container_specs.py)
    container: Any = None
    container_pos: dict[str, Pos] = field(default_factory=dict)
    # a line whose `-c` script holds sglang's flags (inputs/script_line.py ScriptLine): `tokens` are the
    # words it judges, `segments` the line's own words, and `--fix` writes a correction back through it
    script_line: Any = None
    word_offsets: list[int] = field(default_factory=list)  # with script_line: each judged word's offset in the text


@dataclass(frozen=True)
class Note:
    """Something in an input that h3doctor saw and did not (or could not) judge."""

    path: str
    pos: Pos
    message: str
    notice: str = "H3DL002"  # lint's notice ID (h3doctor/engine/notices.py): not understood, by default


# The word splitter moved to the ground floor (h3doctor/shellsplit.py); its names stay importable
# from here, where every reader has imported them from.
def script_commands(text: str, env: Mapping[str, str]) -> list[list[Word]]:
    """The script's commands as its shell reads them: `$NAME` of the container's environment or of
    an assignment in the script (its last, in file order) is its value; any other expansion is
    kept marked (h3doctor/unresolved.py), judged where it reaches sglang."""
    assigned: dict[str, str] = {}
    for words in shell_commands(text, variables=env, keep_expansions=True):
        texts = [w for w, _s, _e in words]
        if texts and (texts[0] == "export" or all(is_assignment(t) for t in texts)):
            for word in texts[1:] if texts[0] == "export" else texts:
                name, eq, value = word.partition("=")
                if eq:
                    assigned[name] = value
    if not assigned:
        return shell_commands(text, variables=env, keep_expansions=True)
    return shell_commands(text, variables={**env, **assigned}, keep_expansions=True)


_WRAPPERS = {"exec", "nohup", "time", "command", "stdbuf", "taskset", "numactl"}
_LAUNCH_MODULES = ("sglang.multimodal_gen.runtime.launch_server", "sglang.multimodal_gen.runtime.entrypoints.cli.main",
                   "sglang.launch_server")  # the LLM launcher: sglang's docs launch with it (a MiniMax-H3 model there is H3D040)


def _is_assignment(word: str) -> bool:
    name, eq, _ = word.partition("=")
    return bool(eq) and name.isascii() and name.replace("_", "a").isalnum() and not is_digits(name[0])


def is_shell_c(words: list[str]) -> bool:
    """`sh -c SCRIPT …` (`bash -lc`, `/bin/sh -ec`): words[2] is the script the shell runs."""
    return (len(words) >= 3 and words[0].rsplit("/", 1)[-1] in SHELLS and words[1].startswith("-")
            and "c" in words[1])


def launch_start(words: list[str]) -> tuple[int, dict[str, str]] | None:
    """Index of the program word of an sglang diffusion launch (`sglang serve|generate` or
    `python -m sglang.multimodal_gen...`) and the `VAR=value` words in front of it (wrappers such
    as `exec`, `env`, `nohup` skipped), or None."""
    for i, word in enumerate(words):
        base = word.rsplit("/", 1)[-1]
        is_sglang = base == "sglang" and i + 1 < len(words) and words[i + 1] in ("serve", "generate")
        is_module = base.startswith("python") and _module_of(words, i + 1) in _LAUNCH_MODULES
        if is_sglang or is_module:
            env: dict[str, str] = {}
            j = i
            while j > 0 and (_is_assignment(words[j - 1]) or words[j - 1] in _WRAPPERS or words[j - 1] == "env"):
                j -= 1
                if _is_assignment(words[j]):
                    name, _, value = words[j].partition("=")
                    env.setdefault(name, value)
            return i, env
    return None


def _module_of(words: list[str], i: int) -> str | None:
    """The MODULE of `python [options] -m MODULE` from words[i] on (`python3 -u -m …`, `-um MODULE`,
    `-mMODULE`); None when the words do not run a module."""
    while i < len(words) and words[i].startswith("-") and not words[i].startswith("--"):
        letters = words[i][1:]
        if letters[:1] in ("X", "W"):  # -X opt, -W arg, or their value attached
            i += 1 if letters[1:] else 2
            continue
        if "m" in letters:
            before, _m, after = letters.partition("m")
            if not before.isalpha() and before:
                return None
            return after or (words[i + 1] if i + 1 < len(words) else None)
        i += 1
    return None


def mentions_sglang(text: str) -> bool:
    return "sglang" in text and ("serve" in text or "generate" in text or "launch_server" in text)


_SAYS_ONLY = {"echo", "printf", "pip", "pip3", "which", "type", "hash", "test", "[", "grep", "cat", ":", "true",
              "false", "export", "unset", "alias", "source", ".", "pkill", "pgrep", "killall"}  # name a command without running it
_UNREAD = re.compile(r"^\$\{?\w+\}?$|^\$\(|^`")  # a program word the shell computes: $S, ${S}, $(…), `…`


def unread_launch(words: list[str]) -> str | None:
    """Why a command the launch reader found no launch in may still start sglang, or None: a word
    names sglang's launch (`eval "sglang serve …"`, `torchrun -m sglang.launch_server`, `sudo -E
    sglang serve`), or its program is computed (`$S serve …`). lint notes it, never passes it."""
    words = [as_written(w) for w in words]  # an expansion the reader kept (h3doctor/unresolved.py) as written
    if not words or os.path.basename(words[0]) in _SAYS_ONLY:
        return None
    if _UNREAD.match(words[0]) and len(words) > 1 and words[1] in ("serve", "generate"):
        return f"the program {words[0][:40]!r} is computed when the script runs"
    if any("sglang" in w for w in words) and mentions_sglang(" ".join(words)):
        return f"`{os.path.basename(words[0])[:40]} …` starts sglang in a way h3doctor does not read"
    return None
