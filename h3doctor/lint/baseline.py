"""A baseline: the findings a repository accepted on the day it adopted lint, so that only new
ones fail (`lint --baseline FILE`); written with `lint --write-baseline FILE`.

The file is JSON: each accepted finding's fingerprint — its file, rule, target and message, not
where it is — with its rule, file and line for a reviewer to read. Not SARIF's fingerprint: that
one holds the launch's label, which for a script, a doc or a notebook is "line N", so a line added
above a launch would make every finding of it new. A finding matched by an entry is reported as
suppressed (external, "baseline"); each entry accepts one finding, so a second identical one is
new. Entries that match nothing (fixed since) are said on stderr, never an error: the baseline
only shrinks when someone rewrites it.

The file is read bounded and strictly: it decides what fails, so a malformed one is a located
error (exit 2), never an empty baseline.
"""

from __future__ import annotations

import hashlib
import json
from collections import Counter

from h3doctor.errors import UsageError
from h3doctor.lint.session import LintRun
from h3doctor.output.diagnostic import Diagnostic, Suppressed
from h3doctor.record import replace
from h3doctor.located import MAX_INPUT_BYTES
from h3doctor.safeload import load_json, read_bounded

FORMAT = "h3doctor-baseline/1"
MAX_BASELINE_BYTES = 16 * MAX_INPUT_BYTES  # a large repository's first day: ~100,000 entries


def fingerprint(r: Diagnostic) -> str:
    h = hashlib.sha256("\0".join([r.location.path, r.rule, r.target or "", r.message]).encode("utf-8", "surrogatepass"))
    return h.hexdigest()[:32]


def baseline_text(run: LintRun) -> str:
    """The baseline of `run`: every finding no suppression accepted, in file order."""
    entries = [{"fingerprint": fingerprint(r), "rule": r.rule, "file": r.location.path, "line": r.location.line}
               for r in run.records if r.suppressed is None]
    return json.dumps({"format": FORMAT, "findings": entries}, indent=1, ensure_ascii=False) + "\n"


def write_baseline(path: str, text: str) -> None:
    """A new file renamed over `path`; a link planted there is refused, never written through."""
    from pathlib import Path

    from h3doctor.paths import write_atomic

    try:
        write_atomic(Path(path), text, follow=False)
    except (OSError, ValueError) as exc:
        reason = exc.strerror if isinstance(exc, OSError) and exc.strerror else str(exc) or type(exc).__name__
        raise UsageError(f"cannot write the baseline: {reason}", location=path) from None


def read_baseline(path: str) -> Counter:
    """Fingerprint -> how many findings it accepts."""
    data = load_json(read_bounded(path, max_bytes=MAX_BASELINE_BYTES, what="baseline"), origin=path, columns=True)
    if not isinstance(data, dict) or data.get("format") != FORMAT or not isinstance(data.get("findings"), list):
        raise UsageError(f"not an h3doctor baseline (a JSON object with \"format\": {FORMAT!r} and \"findings\")",
                         location=path, hint="write one with `h3doctor lint --write-baseline FILE`")
    counts: Counter = Counter()
    for n, entry in enumerate(data["findings"]):
        fingerprint = entry.get("fingerprint") if isinstance(entry, dict) else None
        if not isinstance(fingerprint, str):
            raise UsageError(f"findings[{n}]: no \"fingerprint\" string", location=path)
        counts[fingerprint] += 1
    return counts


def apply_baseline(run: LintRun, path: str) -> list[str]:
    """Mark the findings the baseline accepts as suppressed; the notes say what it holds that
    no finding matched (stale entries)."""
    left = read_baseline(path)
    for i, r in enumerate(run.records):
        if r.suppressed is None and left[fingerprint(r)] > 0:
            left[fingerprint(r)] -= 1
            run.records[i] = replace(r, suppression=Suppressed("baseline", "baseline"))  # a Diagnostic is frozen
    stale = sum(left.values())
    if not stale:
        return []
    return [f"h3doctor lint: baseline {path}: {stale} entr{'y' if stale == 1 else 'ies'} matched no finding "
            "(fixed since?); rewrite it with --write-baseline to drop them"]
