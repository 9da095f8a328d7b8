"""The report of many models (issue 36): its size and file count per (model, dataset) on a small
store filled as `benchmarks/report_scale.py` fills one (every measure, galleries included), and the
scorecard of fifty models driven in headless Chromium (it uses the window's width, its header and
model column stay in place, every column sorts, the filter narrows the rows, a dataset folds).

The time, the peak memory and the 50-model figures are the benchmark's (benchmarks/README.md), not
a timed test's."""
import importlib.util
import sqlite3
from pathlib import Path

import numpy as np
import pytest

from bgbench.reporting.render import render_report
from bgbench.store import Store

REPO = Path(__file__).resolve().parents[1]
CHROMIUM, CHROMEDRIVER = "/usr/bin/chromium", "/usr/bin/chromedriver"


def scale_benchmark():
    """benchmarks/report_scale.py as a module: its store filler is what the budgets are measured on."""
    spec = importlib.util.spec_from_file_location("report_scale", REPO / "benchmarks" / "report_scale.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_a_reports_size_and_files_per_model_and_dataset_meet_the_budget(tmp_path, one_thread):
    """Three models, each with every measure on one dataset and its edits (template runs by a real
    model, copied with each model's own predictions and pictures): at most 1 MB and about 100 files
    per (model, dataset), measured on the written folder."""
    bench = scale_benchmark()
    t = bench.template(tmp_path / "work", 0, per_class=4, size=64)
    scratch = tmp_path / "pictures"
    scratch.mkdir()
    models = 3
    with Store(tmp_path / "r.db") as store:
        for m in range(models):
            bench.add_model(store, bench.Model(m), t, scratch)
        result = render_report(store, tmp_path / "site", progress=False)
    # every measure with a section reached the page, galleries included
    for section in ("accuracy", "categories_gallery", "challenge", "challenge_gallery", "hijack", "noise_gallery",
                    "saliency_gallery", "features", "edits_gallery", "ablation", "attribution", "leakage"):
        assert section in result.sections, section
    disk = bench.on_disk(result.index.parent)
    pairs = models * 1
    assert disk["bytes"] / pairs <= bench.BUDGET_BYTES, disk
    assert disk["files"] / pairs <= bench.BUDGET_FILES, disk
    # a gallery is one sheet: far fewer files than the shots it shows
    assert result.gallery_images > 4 * len(result.thumbnails)


# ---------------------------------------------------------------- fifty models in Chromium


@pytest.fixture(scope="module")
def fifty(tmp_path_factory):
    """A report of 50 models on two datasets (eval runs written by hand: accuracy and BG-Gap with
    intervals; some models lack a BG-Gap on the second dataset)."""
    tmp = tmp_path_factory.mktemp("fifty")
    rng = np.random.default_rng(0)
    with Store(tmp / "r.db") as store:
        for m in range(50):
            for d in ("in9", "waterbirds"):
                rid = store.start_run("eval", {"variants": ["original"], "classes": ["a", "b"]},
                                      model=f"timm:net_{m:02d}", spec={"checkpoint_sha256": f"{m + 1:064x}"},
                                      data_root=f"/data/{d}", data_fingerprint=f"fp-{d}")
                acc, gap = float(rng.uniform(0.5, 1.0)), float(rng.uniform(-0.1, 0.8))
                metrics = [("accuracy", "original", acc, acc - 0.05, acc + 0.05, 200)]
                if not (d == "waterbirds" and m % 7 == 3):
                    metrics.append(("bg_gap", "", gap, gap - 0.1, gap + 0.1, 200))
                store.insert("metrics", rid, metrics)
                store.finish_run(rid)
        result = render_report(store, tmp / "site", progress=False)
    return tmp / "r.db", result


@pytest.fixture(scope="module")
def wide_browser(tmp_path_factory):
    if not (Path(CHROMIUM).exists() and Path(CHROMEDRIVER).exists()):
        pytest.skip("chromium / chromedriver not installed")
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service
    opts = webdriver.ChromeOptions()
    opts.binary_location = CHROMIUM
    for flag in ("--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage", "--no-first-run",
                 f"--user-data-dir={tmp_path_factory.mktemp('chromium-profile')}", "--window-size=1400,1000"):
        opts.add_argument(flag)
    driver = webdriver.Chrome(service=Service(CHROMEDRIVER), options=opts)
    driver.set_page_load_timeout(60)
    yield driver
    driver.quit()


def _labels(driver):
    return driver.execute_script("return Array.from(document.querySelectorAll('#scorecard-table tbody tr'))"
                                 ".filter(r => !r.hidden).map(r => r.cells[0].firstChild.textContent.trim());")


def _stored(db, fingerprint: str, metric: str) -> dict:
    """model -> its metric on a dataset, read with sqlite3."""
    with sqlite3.connect(db) as conn:
        rows = conn.execute("SELECT r.model, m.value FROM runs r JOIN metrics m ON m.run_id = r.id WHERE "
                            "r.data_fingerprint=? AND m.name=?", (fingerprint, metric)).fetchall()
    return dict(rows)


def test_the_scorecard_of_fifty_models_in_chromium(fifty, wide_browser, tmp_path):
    from selenium.webdriver.support.ui import WebDriverWait
    db, result = fifty
    b = wide_browser
    b.get(result.index.resolve().as_uri())
    b.save_screenshot(str(tmp_path / "scorecard-top.png"))
    assert [e for e in b.get_log("browser") if e["level"] == "SEVERE"] == []
    labels = _labels(b)
    assert len(labels) == 50
    # it uses the window's width (the page is not a narrow column in a wide window)
    width, inner = b.execute_script("return [document.querySelector('.scorecard-scroll').getBoundingClientRect()"
                                    ".width, window.innerWidth]")
    assert width >= 0.9 * inner - 80
    # the header and the model column stay in place while the table scrolls under them
    b.execute_script("var s = document.querySelector('.scorecard-scroll'); s.scrollTop = 600; s.scrollLeft = 400;")
    top, head, left, cell = b.execute_script(
        "var s = document.querySelector('.scorecard-scroll').getBoundingClientRect();"
        "var h = document.querySelector('#scorecard-table thead tr.columns th[data-col=\"1\"]').getBoundingClientRect();"
        "var r = Array.from(document.querySelectorAll('#scorecard-table tbody th.row')).find(t => {"
        "  var b = t.getBoundingClientRect(); return b.top > h.bottom; }).getBoundingClientRect();"
        "return [s.top, h.top, s.left, r.left];")
    assert top <= head <= top + 60 and abs(cell - left) <= 2
    b.execute_script("var s = document.querySelector('.scorecard-scroll'); s.scrollTop = 0; s.scrollLeft = 0;")
    # every column sorts: BG-Gap on the second dataset, lower is better, so best (lowest) first,
    # the models without one last; a second click reverses the measured ones
    gaps = _stored(db, "fp-waterbirds", "bg_gap")
    header = b.execute_script("return Array.from(document.querySelectorAll('#scorecard-table thead th[data-col]'))"
                              ".filter(t => t.getAttribute('data-group') === '1' && t.textContent.includes('BG-Gap'))"
                              "[0].getAttribute('data-col')")
    b.find_element("css selector", f'#scorecard-table thead th[data-col="{header}"]').click()
    order = [label.split(" [")[0] for label in _labels(b)]
    measured = sorted(gaps, key=gaps.get)
    assert order == measured + sorted(set(order) - set(measured), key=order.index)
    assert len(order) - len(measured) == len([m for m in range(50) if m % 7 == 3])
    b.find_element("css selector", f'#scorecard-table thead th[data-col="{header}"]').click()
    assert [label.split(" [")[0] for label in _labels(b)][:len(measured)] == measured[::-1]
    # the model column sorts by name
    b.find_element("css selector", '#scorecard-table thead th[data-col="0"]').click()
    assert [label.split(" [")[0] for label in _labels(b)] == sorted(gaps | {f"timm:net_{m:02d}": 0 for m in range(50)})
    # the filter keeps the models whose name holds the text
    box = b.find_element("id", "scorecard-filter")
    box.send_keys("net_1")
    kept = [label.split(" [")[0] for label in _labels(b)]
    assert kept == [f"timm:net_{m:02d}" for m in range(10, 20)]
    assert b.find_element("id", "scorecard-count").text == "10 of 50 models shown"
    box.clear()
    box.send_keys("x")  # clear() fires no input event; a new text does
    box.send_keys("\b")
    assert len(_labels(b)) == 50
    # a dataset's columns fold to one stub column and unfold again
    visible = "return Array.from(document.querySelectorAll('#scorecard-table thead tr.columns th')).filter(t => " \
              "t.offsetParent !== null).length"
    before = b.execute_script(visible)
    b.find_element("css selector", 'button.fold[data-group="0"]').click()
    assert b.execute_script(visible) == before - 2 + 1
    assert b.execute_script("return document.querySelector('th.dataset[data-group=\"0\"]').colSpan") == 1
    b.find_element("css selector", 'button.fold[data-group="0"]').click()
    assert b.execute_script(visible) == before
    # fifty models: each model's sections are a page of its own, which a cell links to
    hrefs = b.execute_script("return Array.from(document.querySelectorAll('#scorecard-table tbody td a'))"
                             ".map(a => a.getAttribute('href'))")
    assert len(hrefs) == 50 * 2 * 2 - len([m for m in range(50) if m % 7 == 3])
    site = result.index.parent
    for href in hrefs:
        page, _, anchor = href.partition("#")
        assert page.startswith("models/") and f'id="{anchor}"' in (site / page).read_text(), href
    assert len(result.pages) == 50 and 'id="m1-accuracy"' not in result.index.read_text()
    b.find_element("css selector", f'#scorecard-table tbody td a[href="{hrefs[0]}"]').click()
    assert b.current_url.endswith(hrefs[0]) and b.title.startswith("bgbench report: ")
    assert [e for e in b.get_log("browser") if e["level"] == "SEVERE"] == []
    assert b.execute_script("return Array.from(document.images).every(i => i.loading === 'lazy')")
    b.execute_script("Array.from(document.images).forEach(i => { i.loading = 'eager'; })")
    WebDriverWait(b, 20).until(lambda d: d.execute_script("return Array.from(document.images).every(i => i.complete)"))
    assert b.execute_script("return Array.from(document.images).every(i => i.naturalWidth > 0)")
