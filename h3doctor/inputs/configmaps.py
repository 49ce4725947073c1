"""The ConfigMaps a Kubernetes manifest's containers read (`envFrom: configMapRef`, `valueFrom:
configMapKeyRef`, a `configMap` volume), as the repository holds them.

A ConfigMap is looked for in the manifest's own file and in the YAML files beside it (a kustomize
directory: `configmap.yaml` next to `deployment.yaml`), read with lint's bounded reader, never
through a link leading out of the repository. One found nowhere there lives only in the cluster:
what it gives is unknown (a value "known only when the launch runs"), never guessed.
"""

from __future__ import annotations

import os
from typing import Any

from h3doctor.errors import UsageError
from h3doctor.located import MAX_INPUT_BYTES, Document, load_yaml
from h3doctor.safeload import LoadError, decode_text, read_bounded_bytes

MAX_SIBLINGS = 64  # YAML files beside a manifest looked into; a directory of thousands is not read whole
_SUFFIXES = (".yaml", ".yml")


class ConfigMaps(dict):
    """ConfigMap name -> its data (`data`, string values); `origin[name]`: the file holding it."""

    def __init__(self) -> None:
        super().__init__()
        self.origin: dict[str, str] = {}


def repository_configmaps(docs: list[Document]) -> ConfigMaps:
    """The ConfigMaps the repository holds for the manifest, its own file's winning."""
    found = ConfigMaps()
    origin = docs[0].origin if docs else ""
    for doc in docs:
        _add(doc.data, found, origin)
    for path in _siblings(origin):
        for data in _documents(path):
            _add(data, found, path)
    return found


def _siblings(origin: str) -> list[str]:
    directory = os.path.dirname(origin) or "."
    try:
        names = sorted(os.listdir(directory))
    except OSError:  # standard input, a directory not listable: only the file's own ConfigMaps
        return []
    mine = os.path.basename(origin)
    paths = [os.path.join(directory, n) for n in names if n.endswith(_SUFFIXES) and n != mine]
    return paths[:MAX_SIBLINGS]  # a link out of the repository: the one reader refuses it (safeload)


def _documents(path: str) -> list[Any]:
    """The documents of a file that holds a ConfigMap; nothing for one that does not or cannot be
    read (it is linted, and reported, on its own)."""
    try:
        raw = read_bounded_bytes(path, max_bytes=MAX_INPUT_BYTES, what="input")
        if b"ConfigMap" not in raw:
            return []
        return [d.data for d in load_yaml(decode_text(raw, path, what="input"), path)]
    except (LoadError, UsageError):
        return []


def _add(data: Any, found: ConfigMaps, origin: str) -> None:
    if isinstance(data, dict) and data.get("kind") == "List":
        for item in data.get("items") or []:
            _add(item, found, origin)
        return
    if not (isinstance(data, dict) and data.get("kind") == "ConfigMap"):
        return
    name = (data.get("metadata") or {}).get("name") if isinstance(data.get("metadata"), dict) else None
    values = data.get("data")
    if isinstance(name, str) and name not in found and isinstance(values, dict):
        found[name] = {str(k): v for k, v in values.items() if isinstance(v, str)}
        found.origin[name] = origin
