"""The files `lint PATH...` reads: files as named, directories walked, globs expanded.

A glob's `**` goes through real folders only. Walking skips hidden directories and what `.gitignore` files (in the walked tree and its parents
up to the repository root) and the configuration's `exclude` patterns ignore, with gitignore's own
pattern rules (gitignore.py: linear, where pathspec's regexes backtracked). A file named on the command line is always read, unless
`--force-exclude` (how pre-commit calls lint, naming every staged file): then the configuration's
`exclude` applies to it too, as ruff's `--force-exclude` does.
"""

from __future__ import annotations

import os
from pathlib import Path

from h3doctor.errors import UsageError
from h3doctor.lint.gitignore import GitIgnore
from h3doctor.lint.globwalk import expand_glob
from h3doctor.safeload import read_bounded_bytes

MAX_GITIGNORE_BYTES = 1 << 20


def _spec(lines):
    return GitIgnore(lines)


class _Ignored:
    def __init__(self, exclude: tuple[str, ...], exclude_root: Path) -> None:
        self.specs: dict[Path, object] = {}
        self.exclude = (_spec(exclude), exclude_root.resolve()) if exclude else None

    def spec_for(self, directory: Path):
        if directory not in self.specs:
            path = directory / ".gitignore"
            try:  # non-blocking, regular files only: a FIFO named .gitignore is not waited on
                lines = read_bounded_bytes(path, max_bytes=MAX_GITIGNORE_BYTES, what=".gitignore").decode(
                    "utf-8", "replace").splitlines() if os.path.lexists(path) else []
            except UsageError:
                lines = []
            self.specs[directory] = _spec(lines) if lines else None
        return self.specs[directory]

    def excluded(self, path: Path, is_dir: bool = False) -> bool:
        """The configuration's `exclude` matches `path` (its folder resolved) or a folder it is in."""
        if self.exclude is None:
            return False
        rel = _rel(path, self.exclude[1])
        return rel is not None and self.exclude[0].match_file(rel + ("/" if is_dir else ""))

    def ignored(self, path: Path, is_dir: bool, stop: Path) -> bool:
        return self.ignored_in(path.parent.resolve(), path.name, is_dir, stop)

    def ignored_in(self, folder: Path, name: str, is_dir: bool, stop: Path) -> bool:
        """Whether `name` in the already resolved `folder` is ignored: the walk resolves each
        folder once, not each file (a link is matched by its own name, as git does)."""
        path = folder / name
        if self.excluded(path, is_dir):
            return True
        directory = path.parent
        while True:
            spec = self.spec_for(directory)
            if spec is not None and spec.match_file(path.relative_to(directory).as_posix() + ("/" if is_dir else "")):
                return True
            if directory == stop or directory.parent == directory:
                return False
            directory = directory.parent


def _rel(path: Path, root: Path) -> str | None:
    try:
        return path.relative_to(root).as_posix()
    except ValueError:
        return None


def _repo_root(start: Path) -> Path:
    for directory in (start, *start.parents):
        if (directory / ".git").exists():
            return directory
    return start


def lint_roots(given: list[str]) -> tuple[str, ...]:
    """The trees `lint` was given, resolved: a folder itself, a file's (or a glob's) folder. They are
    "the repository": lint reads nothing outside them (safeload.confined) and writes nothing there."""
    roots = []
    for p in given:
        cut = min((i for i, c in enumerate(p) if c in "*?["), default=None)
        if cut is not None:
            p = os.path.dirname(p[:cut]) or "."
        roots.append(os.path.realpath(p if os.path.isdir(p) else (os.path.dirname(p) or ".")))
    return tuple(roots)


def expand(paths: list[str], *, is_candidate, exclude: tuple[str, ...] = (), exclude_root: Path | None = None,
           force_exclude: bool = False) -> list[str]:
    ignore = _Ignored(exclude, exclude_root or Path.cwd())
    out: list[str] = []
    seen: set[str] = set()

    def add(p: str) -> None:
        key = os.path.abspath(p)
        if key not in seen:
            seen.add(key)
            out.append(p)

    for given in paths:
        if any(c in given for c in "*?["):
            matches = expand_glob(given)  # `**` never enters a folder link (glob.glob's does)
            if not matches:
                raise UsageError(f"no file matches {given!r}")
            for m in matches:
                if os.path.isdir(m):
                    _walk(m, ignore, is_candidate, add)
                elif is_candidate(m) and not ignore.ignored(Path(m), False, _repo_root(Path(m).resolve().parent)):
                    add(m)
        elif os.path.isdir(given):
            _walk(given, ignore, is_candidate, add)
        elif os.path.exists(given):
            if not (force_exclude and _named_excluded(ignore, given)):
                add(given)
        else:
            raise UsageError("no such file or directory", location=given)
    return out


def force_excluded(name: str, exclude: tuple[str, ...], exclude_root: Path) -> bool:
    """`--force-exclude` for a file named on the command line (or by `--stdin-filename`): the
    configuration's `exclude` matches it. The name need not exist (stdin's names a file to be)."""
    return _named_excluded(_Ignored(exclude, exclude_root), name)


def _named_excluded(ignore: _Ignored, name: str) -> bool:
    return ignore.excluded(Path(name).parent.resolve() / Path(name).name)


def _walk(top: str, ignore: _Ignored, is_candidate, add) -> None:
    stop = _repo_root(Path(top).resolve())
    for directory, dirs, files in os.walk(top):  # folder links are listed, never entered
        base = Path(directory).resolve()
        dirs[:] = sorted(d for d in dirs if not d.startswith(".") and not ignore.ignored_in(base, d, True, stop))
        for name in sorted(files):
            if name.startswith("."):  # .h3doctor.yaml, editor and tool files
                continue
            path = os.path.normpath(os.path.join(directory, name))  # `configs/x.yaml`, not `./configs/x.yaml`
            if is_candidate(path) and not ignore.ignored_in(base, name, False, stop):
                add(path)
