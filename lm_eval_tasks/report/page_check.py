"""The report page checked in a real browser: headless Chromium driven by Playwright.

Why a browser and not the HTML text: whether a table hides columns, a list of contents
overlaps or the page scrolls sideways on a phone is decided by layout, which only a
browser computes. At each window width (1,280 px, a laptop; 390 px, a phone) the page
must hold:

* nothing is wider than the page, and no element's content spills out of its box
  (``scrollWidth`` > ``clientWidth``), except the table boxes (``div.scroll``), which a
  phone scrolls sideways; scrolled to its end, each of those shows its last column;
* from a laptop's width (:data:`FIT_FROM`) up, no table box scrolls sideways either: every
  table fits the page whole (a table that scrolls there hides its last columns, the
  metrics and domains a reader came for);
* the entries of the table of contents do not overlap one another or leave the list,
  and each links to an element id on the page (ids unique);
* every image has alt text and decodes, every figure has an image and a caption.

Chromium comes from the system (Debian: ``apt-get install -y chromium``), Playwright from
PyPI (the dev extra); ``playwright install`` is never needed. From a shell::

    python -m lm_eval_tasks.report.page_check out/report/report.html [--screenshots DIR]

prints each problem on a line and exits 1 when there is one, 0 when there is none.
"""

from __future__ import annotations

import argparse
import shutil
import sys
import tempfile
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from custom_metrics.errors import SuiteError
from lm_eval_tasks.report.formats import counted

#: window widths checked: a laptop and a phone (CSS pixels)
WIDTHS = (1280, 390)
#: the boxes the page makes to scroll sideways (wide tables)
SCROLL_BOXES = "div.scroll"
#: from this window width up (CSS pixels) every table fits its box: none scrolls sideways
FIT_FROM = 1280
#: names Chromium's executable goes by on Linux distributions and macOS installs
CHROMIUM_NAMES = ("chromium", "chromium-browser", "google-chrome", "google-chrome-stable")
#: headless, offline, nothing kept between runs
CHROMIUM_ARGS = ("--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                 "--disable-background-networking", "--disable-component-update", "--disable-sync")
INSTALL_HINT = ("install Chromium with `apt-get install -y chromium` (Debian/Ubuntu) and Playwright with "
                "`pip install -e \".[dev]\"`")


class PageCheckError(SuiteError, RuntimeError):
    """No browser to check the page with (Chromium or Playwright missing); the message says what to install."""


def find_chromium() -> str:
    """The path of the system's Chromium; :class:`PageCheckError` naming what to install when absent."""
    for name in CHROMIUM_NAMES:
        if found := shutil.which(name):
            return found
    raise PageCheckError(f"no Chromium found (looked for {', '.join(CHROMIUM_NAMES)}): {INSTALL_HINT}")


@contextmanager
def browser() -> Iterator[Any]:
    """A headless Chromium (a Playwright ``BrowserContext``) with an empty profile, closed on exit."""
    executable = find_chromium()
    try:
        from playwright.sync_api import sync_playwright
    except ImportError:
        raise PageCheckError(f"the Python package playwright is not installed: {INSTALL_HINT}") from None
    with sync_playwright() as pw, tempfile.TemporaryDirectory(prefix="page-check-") as profile:
        context = pw.chromium.launch_persistent_context(profile, executable_path=executable,
                                                        args=list(CHROMIUM_ARGS), headless=True)
        try:
            yield context
        finally:
            context.close()


#: measures the laid-out page; returns problems as text (the browser knows the element best)
_MEASURE = """([scrollBoxes, fit]) => {
  const problems = [];
  const name = el => {
    const where = el.closest('[id]');
    const text = (el.textContent || '').trim().replace(/\\s+/g, ' ').slice(0, 40);
    return `<${el.tagName.toLowerCase()}${el.className ? '.' + el.className : ''}>`
      + (where && where !== el ? ` in #${where.id}` : '') + (text ? ` "${text}"` : '');
  };
  const root = document.documentElement;
  if (root.scrollWidth > root.clientWidth + 1)
    problems.push(`the page is ${root.scrollWidth} px wide in a ${root.clientWidth} px window`);
  const boxes = new Set(document.querySelectorAll(scrollBoxes));
  for (const el of document.body.querySelectorAll('*')) {
    if (boxes.has(el) || el.clientWidth === 0) continue;
    if (el.scrollWidth > el.clientWidth + 1)
      problems.push(`${name(el)} overflows its box (${el.scrollWidth} px of content in ${el.clientWidth} px)`);
  }
  for (const box of boxes) {
    const style = getComputedStyle(box).overflowX;
    if (style !== 'auto' && style !== 'scroll')
      problems.push(`${name(box)} does not scroll sideways (overflow-x: ${style})`);
    if (fit && box.scrollWidth > box.clientWidth + 1)
      problems.push(`${name(box.querySelector('table') || box)} does not fit the page: ${box.scrollWidth} px `
                    + `wide in a ${box.clientWidth} px box, so its last columns are hidden`);
    box.scrollLeft = box.scrollWidth;
    const edge = box.getBoundingClientRect().right - box.clientLeft;
    for (const cell of box.querySelectorAll('tr > :last-child')) {
      const right = cell.getBoundingClientRect().right;
      if (right > edge + 1) {
        problems.push(`${name(cell)}: last column out of reach (its edge at ${Math.round(right)} px, `
                      + `the box ends at ${Math.round(edge)} px scrolled to the end)`);
        break;
      }
    }
    box.scrollLeft = 0;
  }
  const nav = document.querySelector('nav');
  if (!nav) problems.push('no table of contents (<nav>)');
  const entries = nav ? [...nav.querySelectorAll('li')] : [];
  if (nav && !entries.length) problems.push('the table of contents is empty');
  const navBox = nav && nav.getBoundingClientRect();
  const rects = entries.map(li => li.getBoundingClientRect());
  rects.forEach((r, i) => {
    if (r.left < navBox.left - 1 || r.right > navBox.right + 1)
      problems.push(`contents entry ${name(entries[i])} leaves the list `
                    + `(${Math.round(r.left)}-${Math.round(r.right)} px, `
                    + `list ${Math.round(navBox.left)}-${Math.round(navBox.right)} px)`);
    for (let j = i + 1; j < rects.length; j++) {
      const s = rects[j];
      const dx = Math.min(r.right, s.right) - Math.max(r.left, s.left);
      const dy = Math.min(r.bottom, s.bottom) - Math.max(r.top, s.top);
      if (dx > 1 && dy > 1) problems.push(`contents entries ${name(entries[i])} and ${name(entries[j])} overlap`);
    }
    const parts = [...entries[i].children].map(c => c.getBoundingClientRect());
    for (let a = 0; a < parts.length; a++) for (let b = a + 1; b < parts.length; b++) {
      const dx = Math.min(parts[a].right, parts[b].right) - Math.max(parts[a].left, parts[b].left);
      const dy = Math.min(parts[a].bottom, parts[b].bottom) - Math.max(parts[a].top, parts[b].top);
      if (dx > 1 && dy > 1) problems.push(`the number and title of contents entry ${name(entries[i])} overlap`);
    }
  });
  const ids = [...document.querySelectorAll('[id]')].map(e => e.id);
  const dupes = ids.filter((id, i) => ids.indexOf(id) !== i);
  if (dupes.length) problems.push(`ids used twice: ${[...new Set(dupes)].join(', ')}`);
  for (const a of nav ? nav.querySelectorAll('a') : []) {
    const href = a.getAttribute('href') || '';
    if (!href.startsWith('#') || !document.getElementById(decodeURIComponent(href.slice(1))))
      problems.push(`contents link ${href || '(no href)'} ("${a.textContent.trim()}") `
                    + 'leads to no element on the page');
  }
  for (const img of document.images) {
    const what = name(img.closest('figure') || img);
    if (!(img.getAttribute('alt') || '').trim()) problems.push(`${what}: image without alt text`);
    if (!img.complete || img.naturalWidth === 0) problems.push(`${what}: image does not load`);
  }
  for (const fig of document.querySelectorAll('figure')) {
    if (!fig.querySelector('img')) problems.push(`${name(fig)}: figure without an image`);
    if (!(fig.querySelector('figcaption')?.textContent || '').trim())
      problems.push(`${name(fig)}: figure without a caption`);
  }
  return problems;
}"""


def check_page(path: str | Path, widths: Sequence[int] = WIDTHS, *, context: Any = None,
               screenshots: Path | None = None) -> list[str]:
    """Every layout problem of the page at ``path`` at each of ``widths``, as
    ``"<width> px: <problem>"`` lines (empty: none).

    ``context``: a browser from :func:`browser` to reuse (else one is started and closed).
    ``screenshots``: a folder for a full-page PNG per width (``page_<width>.png``), to look
    at what no measurement catches (legibility, crowding).
    """
    if context is None:
        with browser() as own:
            return check_page(path, widths, context=own, screenshots=screenshots)
    url = Path(path).resolve().as_uri()
    problems: list[str] = []
    for width in widths:
        page = context.new_page()
        try:
            page.set_viewport_size({"width": int(width), "height": 900})
            page.goto(url, wait_until="load")
            problems += [f"{width} px: {p}" for p in page.evaluate(_MEASURE, [SCROLL_BOXES, width >= FIT_FROM])]
            if screenshots is not None:
                screenshots.mkdir(parents=True, exist_ok=True)
                page.screenshot(path=str(screenshots / f"page_{width}.png"), full_page=True)
        finally:
            page.close()
    return problems


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m lm_eval_tasks.report.page_check",
                                     description="Check a report.html in headless Chromium at laptop and "
                                                 "phone widths: overflow, tables that fit, contents, alt text.")
    parser.add_argument("page", type=Path, help="the report.html that domsum report wrote")
    parser.add_argument("--width", type=int, action="append", help=f"window width in px (default: {WIDTHS})")
    parser.add_argument("--screenshots", type=Path, help="folder for a full-page screenshot per width")
    args = parser.parse_args(argv)
    if not args.page.is_file():
        print(f"page_check: {args.page}: no such file", file=sys.stderr)
        return 2
    try:
        problems = check_page(args.page, args.width or WIDTHS, screenshots=args.screenshots)
    except PageCheckError as exc:
        print(f"page_check: {exc}", file=sys.stderr)
        return 2
    for p in problems:
        print(p)
    widths = ", ".join(map(str, args.width or WIDTHS))
    print(f"{args.page}: {counted(len(problems), 'problem') if problems else 'no problem'} at {widths} px",
          file=sys.stderr)
    return 1 if problems else 0


__all__ = ["CHROMIUM_ARGS", "FIT_FROM", "PageCheckError", "WIDTHS", "browser", "check_page", "find_chromium", "main"]

if __name__ == "__main__":
    sys.exit(main())
