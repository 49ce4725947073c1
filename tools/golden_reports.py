#!/usr/bin/env python3
"""check's text report and the doctor's as a user sees them: the golden files the tests compare and
the screenshots docs/screenshots/ shows, written by one script so the two never drift.

    python tools/golden_reports.py           # (re)write tests/golden/ and docs/screenshots/
    python tools/golden_reports.py --check   # exit 1 naming each file that differs

Each case is a fixed launch on a fixed profile (the release pinned to the newest verified, the
environment emptied), rendered at 80 and 120 columns as a pipe or NO_COLOR log shows it (markup
dropped). The colour variant is Rich's terminal output: with its escape codes removed it must be
the same text (tests/output/test_golden_reports.py), so one colour file is kept, the hook's, to read
with `cat` on a terminal. The hook's case runs the real `h3doctor check --hook` (its report and
its last line are on stderr); the others render in this process, which is faster. The doctor's
case is `h3doctor doctor` on a made-up machine (tests/golden/doctor-machine.json: the probe's
observations of a GB10 workstation run without a cgroup memory limit); `h3doctor probe` shows the
same machine in the doctor's words.
"""

from __future__ import annotations

import contextlib
import os
import re
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
GOLDEN = REPO / "tests" / "golden"
SCREENSHOTS = REPO / "docs" / "screenshots"
WIDTHS = (80, 120)
MODEL = ["sglang", "serve", "MiniMaxAI/MiniMax-H3"]
ANSI = re.compile(r"\x1b\[[0-9;]*m")

# name -> (check's options, the launch, run through the hook)
CASES: dict[str, tuple[list[str], list[str], bool]] = {
    "readme-ring": (["--profile", "4xH200"],
                    [*MODEL, "--num-gpus", "4", "--ulysses-degree", "2", "--ring-degree", "2",
                     "--attention-backend", "sage_attn"], False),
    "memory-failure": (["--profile", "1xRTX5090"], [*MODEL, "--performance-mode", "speed"], False),
    "warnings-only": (["--profile", "4xH200"], [*MODEL, "--num-gpu", "4"], False),
    "cannot-verify": (["--profile", "tests/golden/profile-lacking-facts.yaml"], [*MODEL, "--num-gpus", "2"], False),
    "idle-gpus": (["--profile", "2xRTX4090"], list(MODEL), False),
    "two-errors": (["--profile", "2xRTX4090"],
                   ["sglang", "serve", "--model-path", "MiniMaxAI/MiniMax-H3", "--num-gpus", "2", "--ring-degree", "2",
                    "--attention-backend", "torch_sdpa"], False),
    # the README's other check examples: "Using it" (Apple MPS), "Memory fit" at a request, alternatives
    "readme-mps": (["--profile", "m3-max"], [*MODEL, "--enable-torch-compile"], False),
    "readme-request": (["--profile", "1xH200", "--request-resolution", "1344x768", "--request-seconds", "12"],
                       list(MODEL), False),
    "readme-alternatives": (["--profile", "4xH200"], [*MODEL, "--num-gpus", "4", "--model-variant", "hybrid"], False),
    # a warning that predicts an OOM and no launch that fits: "! likely to fail", exit 0, no corrected command
    "no-fit": (["--profile", "1xRTX4070"], list(MODEL), False),
    # the README's launch as typed in a shell with the hook (h3doctor init): one error, one screen
    "hook-blocked": (["--profile", "4xH200"],
                     [*MODEL, "--num-gpus", "4", "--ulysses-degree", "2", "--ring-degree", "2",
                      "--attention-backend", "sage_attn"], True),
}
COLOUR_KEPT = "hook-blocked"  # the one colour file: a blocked launch in the terminal, as the hook shows it
# `h3doctor doctor` (bare `h3doctor`) on a made-up machine, the probe's observations in a file, so
# its report is the same wherever it is rendered
DOCTOR_MACHINE = GOLDEN / "doctor-machine.json"


def _environment() -> dict[str, str]:
    """What a report may depend on, and nothing else of this machine's."""
    return {"PATH": os.environ.get("PATH", ""), "HOME": os.environ.get("HOME", "/"), "LANG": "C.UTF-8"}


@contextlib.contextmanager
def _only(environ: dict[str, str]):
    """This process with `environ` as its whole environment, in the repository (the profile file
    is named relative to it)."""
    saved, cwd = dict(os.environ), os.getcwd()
    os.environ.clear()
    os.environ.update(environ)
    os.chdir(REPO)
    try:
        yield
    finally:
        os.chdir(cwd)
        os.environ.clear()
        os.environ.update(saved)


def render(name: str, width: int, colour: bool, verbose: bool = False) -> tuple[str, dict]:
    """(the report's text, its JSON object) for one case at one width (`verbose`: --verbose's,
    not kept in a file, for the width test)."""
    from h3doctor.verified import NEWEST_VERIFIED

    options, launch, hook = CASES[name]
    options = [*options, "--sglang-version", NEWEST_VERIFIED]
    if hook:
        return _hook(options, launch, width, colour), _data(options, launch, hook=True)
    from h3doctor.output.formats import Report, render as render_report

    with _only(_environment()):
        report = _report(options, launch, hook=False, verbose=verbose)
        from h3doctor.record import replace

        return render_report("check", "text", replace(report, styled=colour, width=width)), report.data


def render_doctor(width: int, colour: bool) -> tuple[str, dict]:
    """(the doctor's text, its JSON object) for the made-up machine at one width."""
    import json

    from h3doctor.host.doctor import report
    from h3doctor.host.probe_facts import build
    from h3doctor.output.doctor_text import doctor_report
    from h3doctor.output.formats import Report, render as render_report

    machine = json.loads(DOCTOR_MACHINE.read_text(encoding="utf-8"))
    with _only(_environment()):
        data = report(build(machine["obs"], machine["run"], machine["host"], machine["env"]))
        text = render_report("doctor", "text", Report(data, text=lambda console, _buf: doctor_report(data, console),
                                                      styled=colour, width=width))
    return text, data


def render_probe(width: int, colour: bool) -> tuple[str, dict]:
    """(`h3doctor probe`'s text, its JSON object) for the doctor's made-up machine, in a shell
    without the hook."""
    import json

    from h3doctor.host.probe_facts import build
    from h3doctor.output.formats import Report, render as render_report
    from h3doctor.output.probe_text import probe_report

    machine = json.loads(DOCTOR_MACHINE.read_text(encoding="utf-8"))
    hook = {"active": False, "loaded": False, "reason": "not loaded in this shell; add eval \"$(h3doctor init bash)\" "
            "to ~/.bashrc"}
    with _only(_environment()):
        data = {**build(machine["obs"], machine["run"], machine["host"], machine["env"]).as_dict(), "hook": hook}
        text = render_report("probe", "text", Report(data, text=lambda console, _buf: probe_report(data, console),
                                                     styled=colour, width=width))
    return text, data


def _report(options: list[str], launch: list[str], hook: bool, verbose: bool = False) -> Report:
    from h3doctor.check_args import check_request
    from h3doctor.cli_output import check_report
    from h3doctor.options import parse
    from h3doctor.request import run

    values = parse([*options, *(["--hook"] if hook else [])], environ={})
    result = run(check_request(values, launch)).result
    return check_report(result, values["fail_on"], False, None, values["profile"], None, verbose)


def _data(options: list[str], launch: list[str], hook: bool) -> dict:
    with _only(_environment()):
        return _report(options, launch, hook).data


def _hook(options: list[str], launch: list[str], width: int, colour: bool) -> str:
    env = {**_environment(), "COLUMNS": str(width), **({"FORCE_COLOR": "1"} if colour else {"NO_COLOR": "1"})}
    proc = subprocess.run([sys.executable, "-m", "h3doctor", "check", "--hook", *options, "--", *launch],
                          capture_output=True, text=True, env=env, cwd=REPO, timeout=120)
    return proc.stderr


def goldens() -> dict[Path, str]:
    """Every file this script writes, by path, with its text."""
    import shlex

    files: dict[Path, str] = {}
    for name in CASES:
        for width in WIDTHS:
            text, _ = render(name, width, colour=False)
            files[GOLDEN / f"{name}-{width}.txt"] = text
            if width == 80:
                options, launch, hook = CASES[name]
                typed = shlex.join(launch) if hook else shlex.join(["h3doctor", "check", *options, "--", *launch])
                files[SCREENSHOTS / f"{name}.txt"] = f"$ {typed}\n{text}"
        if name == COLOUR_KEPT:
            files[GOLDEN / f"{name}-80.ansi.txt"] = render(name, 80, colour=True)[0]
    for width in WIDTHS:
        text, _ = render_doctor(width, colour=False)
        files[GOLDEN / f"doctor-{width}.txt"] = text
        if width == 80:
            files[SCREENSHOTS / "doctor.txt"] = f"$ h3doctor\n{text}"
        text, _ = render_probe(width, colour=False)
        files[GOLDEN / f"probe-{width}.txt"] = text
        if width == 80:
            files[SCREENSHOTS / "probe.txt"] = f"$ h3doctor probe\n{text}"
    return files


def main(argv: list[str]) -> int:
    sys.path.insert(0, str(REPO))
    files = goldens()
    if "--check" in argv:
        stale = [path for path, text in files.items() if not path.exists() or path.read_text(encoding="utf-8") != text]
        for path in stale:
            print(f"differs: {path.relative_to(REPO)}")
        return 1 if stale else 0
    for path, text in files.items():
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    print(f"wrote {len(files)} files")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
