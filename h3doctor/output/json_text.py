"""The one JSON writer: every report, schema and listing h3doctor prints or saves as JSON.

Strict RFC 8259 JSON, the same bytes on stdout and in `--output-file`. A float that is not finite
(a `--config` value of `.nan`, say: sglang takes it as it is) is written as the string Python
spells it, `"nan"`, `"inf"` or `"-inf"`, which the schemas allow wherever a user's value is echoed;
anything else the encoder cannot write fails loudly (`allow_nan=False`), never as bare `NaN`.
"""

from __future__ import annotations

import json
import math

TYPE_CHECKING = False  # typing is not imported at run time (start-up: record.py)
if TYPE_CHECKING:
    from typing import Any


def json_text(data: Any) -> str:
    """`data` as indented, strict JSON text with a final newline."""
    try:  # nearly every report holds no non-finite float: no copy of it is made then
        return json.dumps(data, indent=2, default=str, allow_nan=False) + "\n"
    except ValueError:
        return json.dumps(_finite(data), indent=2, default=str, allow_nan=False) + "\n"


def _finite(value: Any) -> Any:
    if isinstance(value, float):
        return value if math.isfinite(value) else str(value)
    if isinstance(value, dict):
        return {k: _finite(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_finite(v) for v in value]
    return value
