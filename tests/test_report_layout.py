"""The report at 1,400 px in headless Chromium (issue 46): galleries at the page's width, a scorecard
whose every dataset group can be reached (read down with a few models; with many, a link per group
that brings it into view), and no page that scrolls sideways. Small pages: a gallery drawn by the
report's own macro and stylesheet, scorecards of eval runs written by hand.

`benchmarks/report_screenshots.py` shoots the same at the scale of the benchmark's stores."""
import os
from pathlib import Path

import pytest

from bgbench.reporting.render import environment, render_report
from bgbench.store import Store

CHROMIUM, CHROMEDRIVER = "/usr/bin/chromium", "/usr/bin/chromedriver"
WIDTH = 1400


@pytest.fixture(scope="module")
def browser(tmp_path_factory):
    if not (Path(CHROMIUM).exists() and Path(CHROMEDRIVER).exists()):
        if os.environ.get("CI"):
            pytest.fail("CI must have chromium and chromium-driver (.ci/run installs them)")
        pytest.skip("chromium / chromedriver not installed")
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service
    opts = webdriver.ChromeOptions()
    opts.binary_location = CHROMIUM
    for flag in ("--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage", "--no-first-run",
                 "--disable-background-networking", f"--user-data-dir={tmp_path_factory.mktemp('chromium-profile')}",
                 f"--window-size={WIDTH},900"):
        opts.add_argument(flag)
    driver = webdriver.Chrome(service=Service(CHROMEDRIVER), options=opts)
    driver.set_page_load_timeout(30)
    yield driver
    driver.quit()


def _no_sideways_scroll(b) -> bool:
    return b.execute_script("return document.documentElement.scrollWidth <= window.innerWidth")


# ---------------------------------------------------------------- galleries


def _gallery(classes: int) -> dict:
    """A gallery of the shape drawing/gallery.py hands its template: per class one item of three
    rows of thumbnails (1, 2, 2: the noise gallery's), each 96 px, with a long line of text."""
    def shot(k):
        return {"thumb": {"src": "figures/thumbs/sheet.webp", "width": 96, "height": 96, "x": 96 * k, "y": 0,
                          "zoom": 1, "full": None}, "caption": f"shot {k}", "pred": "cat", "ok": True}
    score = "flips at 30/255 with noise on the background (67% of trials wrong); " * 3
    return {"title": "Noise", "note": "", "folder": "", "missing": 0, "shots": classes * 5,
            "groups": [{"class": f"class_{c}", "entries": [{
                "id": f"class_{c}/img_{c}.png", "class": f"class_{c}", "label": f"class_{c}", "score": score,
                "lines": [[shot(0)], [shot(1), shot(2)], [shot(3), shot(4)]]}]} for c in range(classes)]}


def test_a_gallery_fills_the_page_width(browser, tmp_path):
    """Nine classes of one item each: they sit side by side across the page (each class took a line
    of its own at half the page's width, its text 40rem wide), the page does not scroll sideways."""
    page = environment().from_string(
        '<!DOCTYPE html><html><head><meta charset="utf-8">{% include "_style.html.j2" %}</head><body>'
        '{% from "_gallery.html.j2" import gallery %}{{ gallery(g) }}</body></html>').render(g=_gallery(9))
    (tmp_path / "g.html").write_text(page, encoding="utf-8")
    browser.get((tmp_path / "g.html").as_uri())
    width, right, rows = browser.execute_script(
        "var g = document.querySelector('.gallery').getBoundingClientRect();"
        "var items = Array.from(document.querySelectorAll('.gallery .item')).map(i => i.getBoundingClientRect());"
        "return [g.width, Math.max(...items.map(r => r.right)) - g.left, new Set(items.map(r => r.top)).size];")
    assert right >= 0.85 * width, (right, width)  # the first row of classes reaches across the page
    assert rows <= 3, rows  # nine items in a few rows, not one per line
    assert _no_sideways_scroll(browser)
