"""Every relative link of README.md and docs/*.md resolves: the file exists and a ``#anchor`` names one of its headings."""

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
LINK = re.compile(r"\]\(([^)\s]+)\)")


def anchors(page: Path) -> set[str]:
    """GitHub's heading anchors of a markdown page (lower case, punctuation dropped, spaces as dashes)."""
    text = re.sub(r"```.*?```", "", page.read_text(encoding="utf-8"), flags=re.S)
    heads = re.findall(r"^#{1,6} +(.+?) *$", text, flags=re.M)
    return {re.sub(r"[^\w\- ]", "", h.strip().lower()).replace(" ", "-") for h in heads}


def test_the_docs_pages_exist_and_the_readme_is_short():
    assert {"results.md", "tables.md", "data.md", "scaling.md", "layout.md", "tracking.md", "stopper.md", "reproducibility.md",
            "task-format.md"} <= {p.name for p in PAGES}
    assert len((ROOT / "README.md").read_text(encoding="utf-8").splitlines()) <= 150


@pytest.mark.parametrize("page", PAGES, ids=lambda p: p.name)
def test_every_relative_link_resolves(page):
    text = re.sub(r"```.*?```", "", page.read_text(encoding="utf-8"), flags=re.S)
    for target in LINK.findall(text):
        if re.match(r"[a-z]+:", target):  # http(s), mailto: not checked here
            continue
        path, _, anchor = target.partition("#")
        dest = (page.parent / path).resolve() if path else page
        assert dest.exists(), f"{page.name}: link {target} -> {dest} does not exist"
        if anchor:
            assert anchor in anchors(dest), f"{page.name}: link {target}: no heading #{anchor} in {dest.name}"
