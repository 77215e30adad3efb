"""The docs site builds strictly, the README points into it, and the settings reference is whole.

`mkdocs build --strict` fails on a broken link or anchor, a page missing from the nav, or a hook
error, so a page that moved or a reference that lost its marker fails here, not on the site.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from tbrl_lib.cli.train import TrainConfig  # the class `tbrl train settings` prints
from tbrl_lib.overrides import settings_reference

REPO = Path(__file__).resolve().parents[1]
README = REPO / "README.md"
DOCS = REPO / "docs"


@pytest.fixture(scope="module")
def site(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("site")
    result = subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "--site-dir", str(out)],
        cwd=REPO,
        env={**os.environ, "NO_MKDOCS_2_WARNING": "1"},  # the theme's end-of-life banner
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert result.returncode == 0, f"mkdocs build --strict failed:\n{result.stderr[-4000:]}"
    return out


def readme_sections() -> dict[str, str]:
    """README `##` heading -> the section's text (up to the next `##`)."""
    sections: dict[str, str] = {}
    heading = None
    for line in README.read_text().splitlines():
        if line.startswith("## "):
            heading = line[3:].strip()
            sections[heading] = ""
        elif heading is not None:
            sections[heading] += line + "\n"
    return sections


def test_the_site_builds_strictly(site):
    assert (site / "index.html").is_file()


def test_every_readme_section_links_to_a_docs_page(site):
    sections = readme_sections()
    assert sections, "README has no ## sections"
    for heading, text in sections.items():
        pages = re.findall(r"\]\((docs/[^)#\s]+\.md)(?:#[^)]*)?\)", text)
        assert pages, f"README section {heading!r} links to no docs page (docs/PAGE.md)"
        for page in pages:
            assert (REPO / page).is_file(), f"README section {heading!r} links to missing {page}"
            built = site / Path(page).relative_to("docs").with_suffix("") / "index.html"
            if page == "docs/index.md":
                built = site / "index.html"
            assert built.is_file(), f"{page} (linked from README {heading!r}) was not built"


def test_the_readme_stays_short():
    lines = len(README.read_text().splitlines())
    assert lines <= 150, f"README is {lines} lines; move detail into docs/ (at most 150)"


def test_the_reference_page_has_every_training_setting(site):
    html = (site / "reference" / "settings" / "index.html").read_text()
    keys = [key for key, _, _ in settings_reference(TrainConfig)]
    missing = [key for key in keys if f"<code>{key}</code>" not in html]
    assert not missing, f"the settings reference lacks {missing}"


def test_the_notebooks_page_shows_a_small_screenshot_of_each_notebook():
    """Copies of tests/browser's screenshots (outputs/browser-tests/<notebook>.png)."""
    shown = re.findall(r"\]\((img/notebook-[^)]+\.png)\)", (DOCS / "notebooks.md").read_text())
    notebooks = sorted(p.stem for p in (REPO / "notebooks").glob("*.ipynb"))
    assert shown == [f"img/notebook-{name}.png" for name in notebooks]
    sizes = {path: (DOCS / path).stat().st_size for path in shown}
    assert all(size <= 150_000 for size in sizes.values()), sizes
