"""Lint's own findings about its inputs (not sglang constraints, so not rule files): IDs H3DL…,
never reused, documented in docs/lint.md and listed in SARIF beside the rules."""

from __future__ import annotations

NOTICES = {
    "H3DL001": ("unused-suppression", "warning",
                "A suppression matched no finding",
                "An inline `# h3doctor: ignore[ID]` comment or a recipe `ignore:` entry suppressed nothing on any "
                "target. Remove it, or it will hide a future finding nobody reviewed."),
    "H3DL002": ("not-understood", "warning",
                "Part of an input was not understood and was not judged",
                "h3doctor saw something it does not model (shell expansion, a Helm template, an image entrypoint, "
                "a value from a Secret) and did not guess. Make the launch literal, or check it another way."),
    "H3DL003": ("unreadable-input", "error",
                "An input file could not be read",
                "The file is malformed, too large, nested too deeply, or not a valid input of its kind; nothing "
                "in it was judged."),
    "H3DL004": ("no-target", "warning",
                "A launch has no GPU type to be judged on: the rules that depend on it cannot verify",
                "No --target, no target in the recipe or .h3doctor.yaml, and no GPU type in the launch's own file "
                "(a Kubernetes nodeSelector or required node affinity label, SkyPilot accelerators, Slurm "
                "--gres=gpu:TYPE:N), or a label the GPU catalog does not name exactly. The rules that do not depend "
                "on the hardware were judged; those that do could not be, and are listed. Name the machines it must "
                "pass on: `targets:` in .h3doctor.yaml, a node label, or `h3doctor lint --target 4xH200`."),
    "H3DL005": ("bad-target", "error",
                "A target is not a known hardware profile",
                "Use a built-in profile, <N>x<GPU> for a GPU of `h3doctor profiles`, or a profile file."),
    "H3DL006": ("outside-repository", "warning",
                "A file outside the repository was not read",
                "The input names a file by an absolute path, a `../` path or a link that leaves the trees lint was "
                "given (a launch's --config, --env-file, a Helm `# Source:` line, a linked input). lint runs on "
                "other people's pull requests and never opens such a file: what depends on it is not judged. Keep "
                "the file in the repository, or check the launch on the machine it runs on with `h3doctor check`."),
    "H3DL010": ("launches-not-judged", "warning",
                "Launches past the per-file limit were not judged",
                "lint judges the first MAX_LAUNCHES_PER_FILE launches of a file (1,000) on every target; a file "
                "holding more is generated or hostile, and judging each costs time and memory. The rest were not "
                "judged: split the file, or check them another way."),
    "H3DL020": ("other-model", "info",
                "A launch of a model that is not a MiniMax-H3 family member is not judged",
                "Its model (a hub id no MiniMax-H3 family matches, or a --model-type that starts another "
                "sglang backend) is not h3doctor's to judge: no rule runs on it and --fix leaves it alone, "
                "as `h3doctor check` says what sglang would do with it and exits 0."),
}
