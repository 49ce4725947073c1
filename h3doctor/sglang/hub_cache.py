"""What a launch would download into the Hugging Face cache, read from the cache without a network call.

sglang 0.5.23 resolves a Hub model in `maybe_download_model` (runtime/utils/hf_diffusers_utils.py:
985-1083): first `snapshot_download(local_files_only=True, allow_patterns=[f"{subfolder}/**"],
ignore_patterns=["*.onnx", "*.msgpack"])`, which returns the snapshot folder of the ref when it
exists — unless huggingface_hub's cached tree listing (`trees/<commit>.json`, the repo's file list
with sizes) shows a requested file missing —, else a download of the files the patterns select.
This module reads the same folders: `refs/<revision>`, `snapshots/<commit>/` and the tree listing.

Every file is read bounded (safeload); a cache that cannot be read is "unknown", never "complete".
"""

from __future__ import annotations

import fnmatch
import json
import os

from h3doctor.errors import H3DoctorError
from h3doctor.record import record
from h3doctor.safeload import read_bounded_bytes

IGNORE_PATTERNS = ("*.onnx", "*.msgpack")  # hf_diffusers_utils.py:993, 1107
_REF_BYTES = 256  # a ref file holds one commit hash
_TREE_BYTES = 16 << 20  # a tree listing: one small JSON object per file of the repo
_MAX_FILES = 100_000  # entries of a listing h3doctor looks at


@record(frozen=True)
class Snapshot:
    """The cache's state for one repo, revision and pattern. `state`: "complete" (every listed file
    present), "incomplete" (the listing names missing files), "present" (a snapshot folder with no
    listing to check it against: huggingface_hub returns it as it is), "absent" (no snapshot of the
    ref), "unknown" (the cache could not be read). Byte counts are None where the listing is not cached."""
    state: str
    expected_bytes: int | None = None  # the files the patterns select, by the listing
    missing_bytes: int | None = None  # of those, the ones not in the snapshot folder
    missing_files: int = 0
    where: str = ""  # the folder read, or why nothing could be


def repo_folder(cache: str, repo_id: str) -> str:
    """huggingface_hub's per-repo storage folder: models--org--name."""
    return os.path.join(cache, "models--" + repo_id.replace("/", "--"))


def _matches(path: str, allow: tuple[str, ...], ignore: tuple[str, ...]) -> bool:
    """huggingface_hub's filter_repo_objects: fnmatch; a pattern ending in "/" means everything under it."""
    def fix(p: str) -> str:
        return p + "*" if p.endswith("/") else p

    if allow and not any(fnmatch.fnmatch(path, fix(p)) for p in allow):
        return False
    return not any(fnmatch.fnmatch(path, fix(p)) for p in ignore)


def _commit(storage: str, revision: str) -> str | None:
    if len(revision) == 40 and all(c in "0123456789abcdef" for c in revision):
        return revision
    try:
        text = read_bounded_bytes(os.path.join(storage, "refs", revision), max_bytes=_REF_BYTES, what="a Hub ref")
    except (H3DoctorError, OSError, ValueError):
        return None
    return text.decode("ascii", "replace")  # read as huggingface_hub reads it: not stripped


def _listing(storage: str, commit: str) -> dict[str, int] | None:
    """The cached tree listing (format_version 1): path -> size; None when absent or not readable."""
    try:
        raw = read_bounded_bytes(os.path.join(storage, "trees", commit + ".json"), max_bytes=_TREE_BYTES,
                                 what="a Hub tree listing")
        data = json.loads(raw)
    except (H3DoctorError, OSError, ValueError, RecursionError):
        return None
    files = data.get("files") if isinstance(data, dict) and data.get("format_version") == 1 else None
    if not isinstance(files, dict) or len(files) > _MAX_FILES:
        return None
    sizes = {p: info.get("size") for p, info in files.items() if isinstance(info, dict)}
    if any(not isinstance(s, int) or isinstance(s, bool) or s < 0 for s in sizes.values()) or len(sizes) != len(files):
        return None
    return sizes


def snapshot(cache: str, repo_id: str, allow: tuple[str, ...], revision: str | None = None) -> Snapshot:
    """The cache's state for `repo_id` at `revision` (None: "main"), for the files `allow` selects."""
    if "/" not in repo_id or repo_id.count("/") > 1 or ".." in repo_id.split("/"):
        return Snapshot("unknown", where=f"{repo_id!r} is not a Hub repo id")
    storage = repo_folder(cache, repo_id)
    commit = _commit(storage, revision or "main")
    if commit is None:
        return Snapshot("absent", where=storage)
    if not commit or "/" in commit or commit in (".", ".."):
        # an empty ref resolves to the snapshots/ parent, which sglang treats as a cache miss (:999-1004)
        return Snapshot("absent", where=os.path.join(storage, "refs", revision or "main"))
    folder = os.path.join(storage, "snapshots", commit)
    listing = _listing(storage, commit)
    present = os.path.isdir(folder)
    if listing is None:
        return Snapshot("present" if present else "absent", where=folder)
    wanted = {p: s for p, s in listing.items() if _matches(p, allow, IGNORE_PATTERNS)}
    missing = {p: s for p, s in wanted.items() if not (present and os.path.exists(os.path.join(folder, p)))}
    state = "complete" if present and not missing else "incomplete" if present else "absent"
    return Snapshot(state, sum(wanted.values()), sum(missing.values()), len(missing), folder)
