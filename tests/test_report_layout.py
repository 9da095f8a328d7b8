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


# ---------------------------------------------------------------- the scorecard


def _store(path: Path, models: int, datasets: int) -> Path:
    """Eval and challenge runs written by hand (each with its headline and interval): four columns per
    dataset; models `zoo:net_<m>` on datasets `/data/set<d>`."""
    with Store(path) as store:
        for m in range(models):
            for d in range(datasets):
                where = dict(model=f"zoo:net_{m}", spec={"checkpoint_sha256": f"{m + 1:064x}"},
                             data_root=f"/data/set{d}", data_fingerprint=f"fp-{d}")
                rid = store.start_run("eval", {"variants": ["original"], "classes": ["a", "b"]}, **where)
                store.insert("metrics", rid, [("accuracy", "original", 0.812, 0.762, 0.853, 200),
                                              ("bg_gap", "", 0.143, 0.051, 0.236, 200),
                                              ("worst_group_accuracy", "mixed_rand", 0.5, 0.31, 0.69, 24)])
                store.finish_run(rid)
                rid = store.start_run("challenge", {"classes": ["a", "b"]}, **where)
                store.insert("metrics", rid, [("challenge_accuracy", "", 0.244, 0.167, 0.342, 90)])
                store.finish_run(rid)
    return path


IN_VIEW = """
var el = arguments[0], r = el.getBoundingClientRect(), right = window.innerWidth, left = 0;
var box = el.closest('.scorecard-scroll');
if (box) { var b = box.getBoundingClientRect(); right = Math.min(right, b.right);
           left = document.querySelector('#scorecard-table th.model-col').getBoundingClientRect().right; }
return [r.left, r.right, left, right];"""


def _groups(b, datasets):
    """Each dataset's group: its header over the columns of a row per model, or its block."""
    return [b.find_element("css selector", f'#scorecard th.dataset[data-group="{g}"], '
                                           f'#scorecard table[data-group="{g}"]') for g in range(datasets)]


def test_one_models_scorecard_shows_every_dataset_without_scrolling_sideways(browser, tmp_path):
    """One model on three datasets: every dataset's numbers are in view at 1,400 px (the table showed
    the first group and scrolled sideways for the others); the page does not scroll sideways."""
    with Store(_store(tmp_path / "r.db", models=1, datasets=3)) as store:
        result = render_report(store, tmp_path / "site", progress=False)
    browser.get(result.index.resolve().as_uri())
    for group in _groups(browser, 3):
        left, right, lo, hi = browser.execute_script(IN_VIEW, group)
        assert lo - 1 <= left and right <= hi + 1, (group.text, left, right, lo, hi)
    assert _no_sideways_scroll(browser)
    text = browser.find_element("id", "scorecard").text
    for d in range(3):
        assert f"set{d}" in text
    assert "zoo:net_0" in text and "14.3%" in text and "24.4%" in text


def test_many_models_scorecard_brings_each_dataset_into_view(browser, tmp_path):
    """Six models on four datasets: a row per model, wider than the page; each dataset's link scrolls
    the table so that its columns start just right of the (sticky) model column."""
    with Store(_store(tmp_path / "r.db", models=6, datasets=4)) as store:
        result = render_report(store, tmp_path / "site", progress=False)
    browser.get(result.index.resolve().as_uri())
    assert _no_sideways_scroll(browser)
    first = browser.execute_script(IN_VIEW, _groups(browser, 4)[-1])
    assert first[1] > first[3]  # the last dataset starts out of view: the table is wider than the page
    links = browser.find_elements("css selector", ".scorecard-groups a")
    assert [a.text for a in links] == [f"{d + 1} set{d}" for d in range(4)]
    for d, link in enumerate(links):
        link.click()
        left, right, lo, hi = browser.execute_script(IN_VIEW, _groups(browser, 4)[d])
        assert lo - 2 <= left < hi, (d, left, lo, hi)
        column = browser.find_element("css selector", f'#scorecard-table thead th[data-group="{d}"][data-col]')
        c_left, c_right, lo, hi = browser.execute_script(IN_VIEW, column)
        assert lo - 2 <= c_left and c_right <= hi + 1, (d, c_left, c_right, lo, hi)  # its first column, whole


def test_the_ablation_heatmap_of_fifty_models_scrolls_in_its_box_not_the_page(browser, tmp_path):
    """The ablation heatmap has a column per model: with fifty (the benchmark's store) it was about
    40,000 px wide and the whole page scrolled sideways. Drawn by its own template here."""
    cell = {"value": 0.123, "lo": 0.05, "hi": 0.2, "n": 90, "shade": "#f4c7b3"}
    data = {"maps": [{"title": "Accuracy drop", "rows": [{"region": r, "cells": [cell] * 50}
                                                           for r in ("object", "background")]}],
            "models": [{"key": f"m{i}", "label": f"timm:bench_net_{i:02d} [sha256 {i:08x}]", "run_id": i}
                       for i in range(50)]}
    page = environment().from_string(
        '<!DOCTYPE html><html><head><meta charset="utf-8">{% include "_style.html.j2" %}</head><body>'
        '<section id="ablation">{% include "sections/ablation.html.j2" %}</section></body></html>').render(data=data)
    (tmp_path / "a.html").write_text(page, encoding="utf-8")
    browser.get((tmp_path / "a.html").as_uri())
    assert browser.execute_script("return document.querySelectorAll('#ablation table.heatmap th').length") == 51
    assert _no_sideways_scroll(browser)
