"""What `sglang generate` does with its sampling flags, per release (data in `releasedata/X.Y.Z/sampling.json`).

`sglang generate` hands its sampling flags to the H3 family's sampling class only after the model
is downloaded and loaded (`DiffGenerator.generate` -> `SamplingParams.from_user_sampling_params_args`):
`get_cli_args` keeps every flag whose dest is a dataclass field of that class, `init=False` ones
included, and `type(sampling_params)(**kwargs)` then raises a `TypeError` for those; the class's
`_validate` checks the values. The facts per release (class, `init=False` fields, default and
distilled step counts, quality levels) are generated from each release's source by
`tools/flagtable/sampling.py`.
"""

from __future__ import annotations

import functools

from h3doctor.sglang import release_files

TYPE_CHECKING = False  # typing is not imported at run time (start-up: record.py)
if TYPE_CHECKING:
    from typing import Any


@functools.lru_cache(maxsize=None)
def release(version: str | None) -> dict[str, Any] | None:
    """The release's sampling facts, or None for a release without them."""
    return release_files.data(version, "sampling")


def family(version: str | None, family_key: str | None) -> dict[str, Any] | None:
    """One family's sampling class in that release: `class`, `init_false` (declaration order),
    `default_steps`, `exact_steps` (None: any positive count), with file:line."""
    facts = release(version)
    if facts is None or family_key is None:
        return None
    return facts["families"].get(family_key)


def init_false_in_order(fam: dict[str, Any]) -> list[str]:
    """The class's init=False fields in declaration order (by their source line)."""
    where = fam.get("init_false_where") or {}
    return sorted(fam["init_false"], key=lambda name: int(str(where.get(name, ":0")).rsplit(":", 1)[-1]))


def request_intent(provided: dict[str, Any], version: str | None) -> dict[str, Any]:
    """What a `sglang generate` command asks of its one request, as h3doctor's `intent.*`:
    `quality` (the release's alias resolved, as `normalize_quality` does from 0.5.22) and
    `steps`, from the flags typed (an absent flag is argparse.SUPPRESS: sglang's default)."""
    out: dict[str, Any] = {}
    facts = release(version) or {}
    quality = provided.get("quality")
    if isinstance(quality, str):
        out["quality"] = (facts.get("quality_aliases") or {}).get(quality, quality)
    steps = provided.get("num_inference_steps")
    if isinstance(steps, int) and not isinstance(steps, bool):
        out["steps"] = steps
    return out
