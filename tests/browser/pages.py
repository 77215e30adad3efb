"""What the browser suite reads from a page: a shared report's faults, and JupyterLab's
notebook as a person sees it (kept apart from the tests so each test reads as its steps)."""

from __future__ import annotations

import re
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # Playwright is optional: the suite skips without it
    from playwright.sync_api import Page

WIDTH = 1280
"""The page width a report must fit (a laptop screen)."""

# Every element whose box runs past the right edge of the window and that no scrolling or
# clipping box holds (a wide table inside a box that scrolls is fine: it does not push the
# page), with every <details> opened first, as a reader would.
_OVERFLOW = """() => {
  document.querySelectorAll('details').forEach(d => d.open = true);
  const width = document.documentElement.clientWidth;
  const past = [];
  for (const el of document.body.querySelectorAll('*')) {
    const box = el.getBoundingClientRect();
    if (!box.width || box.right <= width + 1) continue;
    let held = false;
    for (let up = el.parentElement; up && up !== document.body; up = up.parentElement) {
      if (getComputedStyle(up).overflowX !== 'visible') { held = true; break; }
    }
    if (!held) past.push(`<${el.tagName.toLowerCase()}> ${Math.round(box.right)} px: ` +
                         (el.textContent || '').trim().slice(0, 100));
  }
  return {page: document.documentElement.scrollWidth, width, past: past.slice(0, 5)};
}"""

_BROKEN_IMAGES = """() => [...document.images]
  .filter(img => !img.complete || img.naturalWidth === 0)
  .map(img => (img.getAttribute('src') || '').slice(0, 80))"""


def report_faults(page: Page, report: Path, workspace: Path) -> list[str]:
    """What keeps `report` from being shared, read at `WIDTH` px in `page`: horizontal
    overflow, an image that does not load, the workspace's absolute path."""
    page.set_viewport_size({"width": WIDTH, "height": 900})
    page.goto(report.as_uri())
    page.wait_for_load_state("load")
    faults = []
    overflow = page.evaluate(_OVERFLOW)
    if overflow["page"] > overflow["width"] or overflow["past"]:
        faults.append(f"{report.name} is {overflow['page']} px wide at {WIDTH}: {overflow['past']}")
    broken = page.evaluate(_BROKEN_IMAGES)
    if broken:
        faults.append(f"{report.name}: images that do not load: {broken}")
    for where in (str(workspace), str(workspace.resolve())):
        if where in report.read_text() or where in page.inner_text("body"):
            faults.append(f"{report.name} names the workspace's absolute path {where}")
    return faults


NOTEBOOK = ".jp-NotebookPanel:visible"
"""The notebook on show (the page holds no other after a `?reset` opening)."""


def prompts(page: Page) -> list[str]:
    """Each code cell's prompt: `[3]:` once run, `[*]:` while queued or running."""
    return page.locator(f"{NOTEBOOK} .jp-CodeCell .jp-InputPrompt").all_inner_texts()


def run_folder_in(text: str, name: str) -> str | None:
    """The run folder a notebook's settings table shows (`outputs/<name>-<time>`)."""
    found = re.search(rf"outputs/{re.escape(name)}-\d{{8}}-\d{{6}}", text)
    return found.group(0) if found else None
