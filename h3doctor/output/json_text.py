"""The one JSON writer: every report, schema and listing h3doctor prints or saves as JSON.

Strict RFC 8259 JSON, the same bytes on stdout and in `--output-file`. A float that is not finite
(a `--config` value of `.nan`, say: sglang takes it as it is) is written as the string Python
spells it, `"nan"`, `"inf"` or `"-inf"`, which the schemas allow wherever a user's value is echoed;
anything else the encoder cannot write fails loudly (`allow_nan=False`), never as bare `NaN`.
"""

from __future__ import annotations

import json
import math
import re

from h3doctor.shellwords import utf8_text

TYPE_CHECKING = False  # typing is not imported at run time (start-up: record.py)
if TYPE_CHECKING:
    from typing import Any


def json_text(data: Any) -> str:
    """`data` as indented, strict JSON text with a final newline. A string holding a lone
    surrogate (a file name or argument that is not UTF-8, read with surrogateescape) is written
    with those bytes as `\\xff` (shellwords.utf8_text), never as a `\\udcff` escape that a strict
    parser refuses."""
    try:  # nearly every report holds no non-finite float: no copy of it is made then
        text = json.dumps(data, indent=2, default=str, allow_nan=False)
    except ValueError:
        text = json.dumps(_clean(data), indent=2, default=str, allow_nan=False)
    if _SURROGATE.search(text):  # rare: only then is the document walked
        text = json.dumps(_clean(data), indent=2, default=str, allow_nan=False)
    return text + "\n"


# a \\udXXX escape json.dumps wrote for a surrogate (a pair's too: those are rare and walked over)
_SURROGATE = re.compile(r"(?<!\\)(?:\\\\)*\\ud[89a-f]", re.IGNORECASE)


def _clean(value: Any) -> Any:
    """Non-finite floats as strings, lone surrogates as their bytes' escapes."""
    if isinstance(value, float):
        return value if math.isfinite(value) else str(value)
    if isinstance(value, str):
        return utf8_text(value)
    if isinstance(value, dict):
        return {utf8_text(k) if isinstance(k, str) else k: _clean(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_clean(v) for v in value]
    return value
