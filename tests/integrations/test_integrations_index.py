"""docs/integrations/README.md, the page per integration's index: every page it links exists."""

from __future__ import annotations

import re

from repo_paths import REPO


def test_the_integrations_index_links_pages_that_exist():
    index = REPO / "docs/integrations/README.md"
    links = re.findall(r"\]\(([^)#]+)\)", index.read_text(encoding="utf-8"))
    assert len(links) >= 7
    for link in links:
        assert (index.parent / link).resolve().is_file(), link
