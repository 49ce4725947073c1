"""Helm charts: when `helm` is on PATH and a chart's `Chart.yaml` is linted, the chart is rendered
with `helm template` and its manifests read as Kubernetes (inputs/kubernetes.py), each launch
located back in the template file its `# Source:` comment names.

`helm template` renders locally (no cluster, no hooks run, dependencies not fetched); it is run
by absolute path (found on PATH's absolute entries only: an empty or relative entry would let the
linted directory supply a `helm`), without a shell, with stdin closed, in an environment of PATH,
LC_ALL=C and a fresh empty HOME (no helm configuration, repositories, plugins or kubeconfig of the
user's reach it), killed at a timeout, its output read as it comes and cut off (the process killed)
past a cap, so a chart that renders without end costs neither memory nor time. A chart helm cannot
render is a usage error naming helm's message. A rendered line is
placed on the template line with the same text (literal lines, the usual home of a launch's
flags); a line the template computes is placed on the template's first line.
"""

from __future__ import annotations

import os
import selectors
import shutil
import subprocess
import tempfile
import time
from pathlib import Path

from h3doctor.errors import UsageError
from h3doctor.inputs.kubernetes import read_manifests
from h3doctor.inputs.launch import Launch, Note
from h3doctor.located import Pos, load_yaml
from h3doctor.safeload import excerpt, outside_roots, read_bounded

RENDER_TIMEOUT_S = 60
MAX_RENDERED_BYTES = 8 << 20
_SOURCE = "# Source: "


def helm_program() -> str | None:
    """The user's helm, from PATH's absolute directories only."""
    dirs = [d for d in os.environ.get("PATH", "").split(os.pathsep) if os.path.isabs(d)]
    return shutil.which("helm", path=os.pathsep.join(dirs)) if dirs else None


def is_chart(path: str) -> bool:
    return os.path.basename(path) == "Chart.yaml" and helm_program() is not None


def read_chart(path: str, *, max_bytes: int) -> tuple[list[Launch], list[Note]]:
    chart = Path(path).parent
    sources_root = chart.parent  # what a `# Source:` path is relative to
    rendered = _render(str(chart), path)
    docs = load_yaml(rendered, f"{path} (helm template)")
    sources = _sources(rendered)
    launches, notes = read_manifests(docs, rendered)
    rendered_lines = rendered.split("\n")
    templates: dict[str, list[str]] = {}
    outside: dict[str, int] = {}  # a `# Source:` path lint may not open -> its rendered line

    def place(line: int) -> tuple[str, list[str]] | None:
        source = _source_for(sources, line)
        if source is None:
            return None
        if os.path.isabs(source) or outside_roots(sources_root / source, named=False):  # the chart's output names it: never opened under lint
            outside.setdefault(source, line)
            return None
        if source not in templates:
            templates[source] = _template_lines(sources_root / source, max_bytes)
        return source, templates[source]

    for launch in launches:
        launch.segments = []  # rendered words: `lint --fix` does not edit templates
        found = place(launch.pos.line)
        if found is None:
            continue
        source, lines = found
        launch.path = str(sources_root / source)
        launch.pos = _mapped(launch.pos, rendered_lines, lines)
        launch.token_pos = [_mapped(p, rendered_lines, lines) for p in launch.token_pos]
        launch.label = f"{launch.label} ({source})"
    mapped: list[Note] = []
    for note in notes:
        found = place(note.pos.line)
        if found is None:
            mapped.append(Note(path, Pos(1, 1), note.message))
        else:
            mapped.append(Note(str(sources_root / found[0]), _mapped(note.pos, rendered_lines, found[1]),
                               note.message))
    for source in outside:  # the launches stay on the chart: their words are helm's output, judged as such
        mapped.append(Note(path, Pos(1, 1), f"not judged: `# Source: {excerpt(source, 120)}` names a file outside "
                                            "the repository; it is not opened and the launch is placed on the chart",
                           notice="H3DL006"))
    return launches, mapped


def _render(chart: str, path: str) -> str:
    helm = helm_program()
    if helm is None:
        raise UsageError("helm is no longer on PATH", location=path)
    with tempfile.TemporaryDirectory(prefix="h3doctor-helm-") as home:
        env = {"PATH": os.environ.get("PATH", ""), "HOME": home, "LC_ALL": "C"}
        try:
            proc = subprocess.Popen([helm, "template", "--", os.path.abspath(chart)], stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                                    stderr=subprocess.PIPE, env=env, cwd=home, start_new_session=True)
        except OSError as exc:
            raise UsageError(f"helm template could not start: {exc.strerror}", location=path) from None
        try:
            out, err, why = _read_bounded(proc)
        finally:
            if proc.poll() is None:
                proc.kill()
            proc.wait()
            proc.stdout.close()
            proc.stderr.close()
    if why:
        raise UsageError(f"helm template {why}; not judged", location=path)
    if proc.returncode != 0:
        message = err.decode("utf-8", "replace").strip() or f"exit status {proc.returncode}"
        raise UsageError(f"helm template failed: {excerpt(message, 400)}", location=path)
    return out.decode("utf-8", "replace")


def _read_bounded(proc: subprocess.Popen) -> tuple[bytes, bytes, str | None]:
    """helm's stdout and stderr as they come, until it exits; a reason when it had to be stopped
    (past the time limit, or more output than MAX_RENDERED_BYTES)."""
    deadline = time.monotonic() + RENDER_TIMEOUT_S
    chunks: dict[int, list[bytes]] = {proc.stdout.fileno(): [], proc.stderr.fileno(): []}
    sizes = dict.fromkeys(chunks, 0)
    with selectors.DefaultSelector() as sel:
        for stream in (proc.stdout, proc.stderr):
            sel.register(stream, selectors.EVENT_READ)
        while sel.get_map():
            left = deadline - time.monotonic()
            if left <= 0:
                return b"", b"", f"took longer than {RENDER_TIMEOUT_S} s"
            for key, _ in sel.select(timeout=left):
                data = os.read(key.fd, 65536)
                if not data:
                    sel.unregister(key.fileobj)
                    continue
                sizes[key.fd] += len(data)
                if sizes[key.fd] > MAX_RENDERED_BYTES:
                    return b"", b"", f"wrote more than {MAX_RENDERED_BYTES} bytes"
                chunks[key.fd].append(data)
    try:
        proc.wait(timeout=max(deadline - time.monotonic(), 0.1))
    except subprocess.TimeoutExpired:
        return b"", b"", f"took longer than {RENDER_TIMEOUT_S} s"
    return b"".join(chunks[proc.stdout.fileno()]), b"".join(chunks[proc.stderr.fileno()]), None


def _sources(rendered: str) -> list[tuple[int, str]]:
    """(line, template path relative to the chart's parent) of each `# Source:` comment."""
    return [(n, line[len(_SOURCE):].strip()) for n, line in enumerate(rendered.split("\n"), 1)
            if line.startswith(_SOURCE)]


def _source_for(sources: list[tuple[int, str]], line: int) -> str | None:
    found = None
    for start, source in sources:
        if start > line:
            break
        found = source
    return found


def _template_lines(path: Path, max_bytes: int) -> list[str]:
    try:
        return read_bounded(path, max_bytes=max_bytes, what="Helm template").split("\n")
    except UsageError:
        return []


def _mapped(pos: Pos, rendered: list[str], template: list[str]) -> Pos:
    text = rendered[pos.line - 1] if 0 < pos.line <= len(rendered) else ""
    for n, line in enumerate(template, 1):
        if line.strip() and line.strip() == text.strip():
            return Pos(n, pos.col - (len(text) - len(text.lstrip())) + (len(line) - len(line.lstrip())))
    return Pos(1, 1)
