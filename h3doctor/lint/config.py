"""Lint configuration: `.h3doctor.yaml` (or `.h3doctor.yml`, or `[tool.h3doctor]` in
`pyproject.toml`), found from the working directory upward to the repository root (the nearest
directory holding `.git`; the working directory alone when there is none), as ruff stops at the
project root; validated strictly against schema/config.schema.json, an error naming the bad key
and where it is.

lint runs on other people's checkouts: a configuration it finds decides what fails, so one above
the repository root (a shared CI workspace, a parent checkout), one owned by another user or one
anyone may write is not used, and `discover` says why (the caller prints it on stderr). A
configuration the user names with `--config` is the user's choice and is used as named."""

from __future__ import annotations

import json
import os
import stat
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from h3doctor.errors import UsageError
from h3doctor.located import MAX_INPUT_BYTES, load_file
from h3doctor.safeload import load_toml, read_bounded
from h3doctor.paths import package_dir

CONFIG_NAMES = (".h3doctor.yaml", ".h3doctor.yml")


@dataclass(frozen=True)
class Override:
    paths: tuple[str, ...]
    targets: tuple[str, ...] = ()
    select: tuple[str, ...] = ()
    ignore: tuple[str, ...] = ()
    kind: str | None = None


@dataclass
class LintConfig:
    path: str | None = None  # None: no configuration file
    root: Path = field(default_factory=Path.cwd)  # paths in it are relative to this directory
    targets: tuple[str, ...] = ()
    select: tuple[str, ...] = ()
    ignore: tuple[str, ...] = ()
    fail_on: str = "error"
    sglang_version: str | None = None
    exclude: tuple[str, ...] = ()
    help_uri_base: str | None = None
    overrides: tuple[Override, ...] = ()
    severity: dict[str, str] = field(default_factory=dict)  # rule ID -> the severity its findings get
    severity_at: dict[str, str] = field(default_factory=dict)  # rule ID -> where the configuration names it

    def check_rule_ids(self, known: set[str]) -> None:
        """A severity given to no rule is a mistake that would leave the rule at its own severity:
        an error naming where, with the closest ID."""
        import difflib

        for rule_id in self.severity:
            if rule_id not in known:
                close = difflib.get_close_matches(rule_id, sorted(known), n=1, cutoff=0.75)
                raise UsageError(f"severity: no rule {rule_id!r}" + (f"; did you mean {close[0]}?" if close else ""),
                                 location=self.severity_at.get(rule_id, self.path))

    def override_for(self, path: str) -> Override:
        """Every override whose patterns match `path`, merged (later ones win for targets and kind)."""
        rel = _relative(path, self.root)
        merged = Override(())
        if rel is None:
            return merged
        from h3doctor.lint.gitignore import GitIgnore

        for o in self.overrides:
            if GitIgnore(o.paths).match_file(rel):
                merged = Override(o.paths, o.targets or merged.targets, merged.select + o.select,
                                  merged.ignore + o.ignore, o.kind or merged.kind)
        return merged


def _relative(path: str, root: Path) -> str | None:
    try:
        return Path(os.path.abspath(path)).relative_to(root.resolve()).as_posix()
    except ValueError:
        return None


def discover(start: Path | None = None, skipped: list[str] | None = None) -> Path | None:
    """The configuration for a run from `start` (the working directory), or None. What was found
    and not used is appended to `skipped`, with why."""
    here = (start or Path.cwd()).resolve()
    chain = (here, *here.parents)
    root = next((d for d in chain if (d / ".git").exists()), here)
    for directory in chain[:chain.index(root) + 1]:
        for name in CONFIG_NAMES:
            if (directory / name).is_file():
                return _usable(directory / name, root, skipped)
        pyproject = directory / "pyproject.toml"
        if pyproject.is_file() and _usable(pyproject, root, skipped) and "[tool.h3doctor" in _safe_read(pyproject):
            return pyproject
    for directory in chain[chain.index(root) + 1:]:  # only looked at, to say it is not used
        for name in CONFIG_NAMES:
            if (directory / name).is_file() and skipped is not None:
                skipped.append(f"{directory / name}: not used: above the repository root ({root})")
    return None


def _usable(path: Path, root: Path, skipped: list[str] | None) -> Path | None:
    """`path` when lint may use it: inside the repository (links resolved), owned by this user
    (or root), not writable by others."""
    why = None
    try:
        info = os.stat(path)
        real = path.resolve()
    except (OSError, RuntimeError):
        why = "cannot be read"
    else:
        if not real.is_relative_to(root):
            why = f"a link out of the repository ({real})"
        elif hasattr(os, "getuid") and info.st_uid not in (os.getuid(), 0):
            why = f"owned by another user (uid {info.st_uid})"
        elif info.st_mode & stat.S_IWOTH:
            why = "writable by other users"
    if why is None:
        return path
    if skipped is not None:
        skipped.append(f"{path}: not used: {why}")
    return None


def _safe_read(path: Path) -> str:
    try:
        return read_bounded(path, max_bytes=MAX_INPUT_BYTES, what="pyproject.toml")
    except UsageError:
        return ""


def load_config(path: str | Path | None) -> LintConfig:
    if path is None:
        return LintConfig()
    path = Path(path)
    if not path.is_file():
        raise UsageError("no such configuration file", location=str(path))
    if path.name == "pyproject.toml":
        data, where = _from_pyproject(path), None
    else:
        [doc] = load_file(str(path), what="lint configuration")
        data, where = doc.data if doc.data is not None else {}, doc
    _validate(data, str(path), where)
    overrides = tuple(Override(tuple(o["paths"]), tuple(o.get("targets", ())), tuple(o.get("select", ())),
                               tuple(o.get("ignore", ())), o.get("kind")) for o in data.get("overrides", ()))
    return LintConfig(
        path=str(path), root=path.resolve().parent, targets=tuple(data.get("targets", ())),
        select=tuple(data.get("select", ())), ignore=tuple(data.get("ignore", ())),
        fail_on=data.get("fail_on", "error"), sglang_version=data.get("sglang_version"),
        exclude=tuple(data.get("exclude", ())), help_uri_base=data.get("help_uri_base"), overrides=overrides,
        severity=dict(data.get("severity", {})),
        severity_at={rule_id: f"{path}:{where.key_pos(('severity', rule_id))}" if where is not None else str(path)
                     for rule_id in data.get("severity", {})},
    )


def _from_pyproject(path: Path) -> dict[str, Any]:
    if sys.version_info < (3, 11):  # no tomllib
        raise UsageError("[tool.h3doctor] in pyproject.toml needs Python 3.11 (tomllib); use .h3doctor.yaml",
                         location=str(path)) from None
    data = load_toml(read_bounded(path, max_bytes=MAX_INPUT_BYTES, what="pyproject.toml"), origin=str(path))
    section = data.get("tool", {}).get("h3doctor", {})
    # TOML keys are often dashed (fail-on); the schema's are underscored
    return {k.replace("-", "_"): v for k, v in section.items()} if isinstance(section, dict) else section


def _validate(data: Any, origin: str, doc: Any) -> None:
    from jsonschema import Draft202012Validator

    schema = json.loads(package_dir("h3doctor.schema").joinpath("config.schema.json").read_text(encoding="utf-8"))
    errors = sorted(Draft202012Validator(schema).iter_errors(data), key=lambda e: list(e.absolute_path))
    if not errors:
        return
    err = errors[0]
    path = tuple(err.absolute_path)
    if err.validator == "additionalProperties":
        extra = sorted(set(err.instance) - set(err.schema.get("properties", {})))
        where = path + (extra[0],) if extra else path
        known = ", ".join(sorted(err.schema.get("properties", {})))
        from h3doctor.spelling import nearest

        close = nearest(extra[0], sorted(err.schema.get("properties", {}))) if extra else None
        mean = f" (did you mean {close!r}?)" if close else ""
        message = f"unknown key {'/'.join(str(p) for p in where)!r}{mean}; known here: {known}"
        path = where
    else:
        key = "/".join(str(p) for p in path) or "(top level)"
        text = err.message if len(err.message) <= 160 else err.message[:160] + "…"
        from h3doctor.yamlpos import enum_meant

        message = f"at {key}: {text}{enum_meant(err)}"
    location = f"{origin}:{doc.key_pos(path) if doc is not None else ''}".rstrip(":")
    raise UsageError(message, location=location)
