"""Write docs/integrations/vap-coverage.md: the rules `h3doctor export vap` judges, release by
release, and why it leaves out the others (h3doctor.integrations.vap.coverage_markdown).

Usage: python tools/vap_coverage.py   (from the repository's root; run after a rule or release changes)
"""

from __future__ import annotations

from pathlib import Path

from h3doctor.integrations.vap import coverage_markdown

PAGE = Path(__file__).resolve().parent.parent / "docs" / "integrations" / "vap-coverage.md"

if __name__ == "__main__":
    PAGE.write_text(coverage_markdown(), encoding="utf-8")
    print(f"wrote {PAGE.name}")
