"""`h3doctor suggest`: the best MiniMax-H3 launch for this hardware by a stated preference.

`run(SuggestRequest)` loads the hardware (a profile or the live probe), the rules and the flag
table once, searches (search.py) and returns the report as data (report.py); the CLI renders
it (output/suggest_text.py) or prints it as JSON. The score is documented in docs/suggest.md.
"""

from __future__ import annotations

from h3doctor.suggest.request import SuggestRequest, run

__all__ = ["SuggestRequest", "run"]
