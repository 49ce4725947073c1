"""Which sglang release a container image runs, from its name and tag.

API (small on purpose; every launch input that names an image uses it):

    image_release(image: str) -> ImageRelease

`ImageRelease.kind` is one of:
  * "release"  — an sglang image whose tag names a release (`lmsysorg/sglang:v0.5.19-cu129`,
                 `:0.5.22-rocm700-mi30x`); `version` is that release ("0.5.19");
  * "latest"   — `:latest` (or no tag, which docker reads as `latest`): the newest stable release,
                 which moves as sglang publishes;
  * "dev"      — `:dev`, `:nightly`, `:dev-*`: built from sglang's main branch, newer than any release;
  * "unmapped" — sglang's image with a tag h3doctor cannot read as a release;
  * "foreign"  — not an sglang image (a derived or private image): its sglang is not known.

A registry prefix (`docker.io/`, `registry.example.com:5000/`) is not part of the repository's
name; a digest (`@sha256:…`) is kept in `digest` (it pins the bytes, not the release name: the tag
still decides). Which repositories are sglang's and the tag grammar are data
(`flagdata/images.json`), not code.
"""

from __future__ import annotations

import functools
import json
import re

from h3doctor.paths import read_package_text
from h3doctor.record import record


@record(frozen=True)
class ImageRelease:
    image: str  # as written
    repository: str  # without the registry host and the tag: lmsysorg/sglang
    tag: str | None  # None: no tag given (docker pulls `latest`)
    digest: str | None
    kind: str  # release | latest | dev | unmapped | foreign
    version: str | None = None  # for kind == release


@functools.lru_cache(maxsize=1)
def _data() -> tuple[frozenset[str], tuple[tuple[str, re.Pattern[str]], ...]]:
    raw = json.loads(read_package_text("h3doctor.sglang.flagdata", "images.json"))
    return frozenset(raw["repositories"]), tuple((t["kind"], re.compile(t["pattern"])) for t in raw["tags"])


def sglang_repositories() -> frozenset[str]:
    return _data()[0]


def tag_pattern(kind: str) -> str:
    """The regular expression of a kind of tag (release, latest, dev), as images.json writes it."""
    return next(p.pattern for k, p in _data()[1] if k == kind)


def split_image(image: str) -> tuple[str, str | None, str | None]:
    """(repository without registry, tag, digest) of an image reference, as docker reads it."""
    name, _, digest = image.partition("@")
    slash = name.rfind("/")
    colon = name.rfind(":")
    tag = None
    if colon > slash:  # a colon after the last slash is the tag's; before it, a registry port's
        name, tag = name[:colon], name[colon + 1:]
    parts = name.split("/")
    if len(parts) > 1 and ("." in parts[0] or ":" in parts[0] or parts[0] == "localhost"):
        parts = parts[1:]  # the registry host
    if len(parts) == 1:
        parts = ["library", *parts]  # docker.io's official images
    return "/".join(parts).lower(), tag, digest or None


@functools.lru_cache(maxsize=256)
def image_release(image: str) -> ImageRelease:
    repository, tag, digest = split_image(image)
    repositories, tags = _data()
    if repository not in repositories:
        return ImageRelease(image, repository, tag, digest, "foreign")
    for kind, pattern in tags:
        m = pattern.match(tag or "latest")
        if m:
            return ImageRelease(image, repository, tag, digest, kind, m.groupdict().get("version"))
    return ImageRelease(image, repository, tag, digest, "unmapped")
