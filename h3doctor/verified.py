"""The newest sglang release whose rules, flag table and per-release data are verified.

The one place a release number is written in code: everything else reads the release a check
targets from the `Release` object (sglang/releases.py) or from data keyed by release.
"""

NEWEST_VERIFIED = "0.5.23"
