"""Screenshots of the report at 1,400 px in headless Chromium (issue 46): one model, and the
50-model benchmark store, each on two datasets with their edits (four column groups).

The stores are filled as `report_scale.py` fills them (its template runs: every measure once, for
real, by the tiny `timm:test_resnet`; each model a copy with its own predictions and pictures): the
one-model store is its first model. Each report is written by `bgbench report`'s own function and
opened at a window 1,400 px wide; what is shot (the window, not the whole page):

- `report-1-model-scorecard.png`: the top of the page, the scorecard with its four groups;
- `report-1-model-gallery.png`: the noise gallery (a gallery at the page's width);
- `report-1-model-features.png`: a class's heatmap gallery of the features measure;
- `report-50-scorecard.png`: the top of the 50-model page;
- `report-50-scorecard-last-group.png`: the same after a click on the last group's link;
- `report-50-model-page.png`: a model's page (its sections on a page of their own), at its galleries.

Each PNG is reduced to 256 colours (a page of text and thumbnails keeps its look at a few hundred KB).

    PYTHONPATH=src .venv/bin/python benchmarks/report_screenshots.py [--out benchmarks/screenshots]
        [--work /tmp/bgbench-report-scale]

The datasets and template runs are cached under --work (shared with report_scale.py), and so are
the two stores (--work/screenshot-stores; delete it to fill them again).
"""
from __future__ import annotations

import argparse
import os
import shutil
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
WIDTH, HEIGHT = 1400, 900


def shoot(driver, path: Path) -> None:
    """The window as a PNG of 256 colours."""
    from io import BytesIO

    from PIL import Image
    with Image.open(BytesIO(driver.get_screenshot_as_png())) as im:
        im.convert("RGB").quantize(256, dither=Image.Dither.NONE).save(path, optimize=True)
    wide, inner = driver.execute_script("return [document.documentElement.scrollWidth, window.innerWidth]")
    print(f"{path} ({path.stat().st_size / 1e3:.0f} kB; the page {wide} px wide in a {inner} px window"
          f"{', scrolls sideways' if wide > inner else ''})", file=sys.stderr)


def show(driver, selector: str) -> None:
    """Scroll the element `selector` names to the top of the window, its images loaded."""
    from selenium.webdriver.support.ui import WebDriverWait
    driver.execute_script("Array.from(document.images).forEach(i => { i.loading = 'eager'; });"
                          f"document.querySelector({selector!r}).scrollIntoView({{block: 'start'}});"
                          "window.scrollBy(0, -60);")  # below the sticky filter bar
    WebDriverWait(driver, 30).until(lambda d: d.execute_script(
        "return Array.from(document.images).every(i => i.complete)"))
    time.sleep(0.3)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--out", type=Path, default=HERE / "screenshots", help="folder of the PNGs (default %(default)s)")
    ap.add_argument("--work", default=os.path.join(tempfile.gettempdir(), "bgbench-report-scale"),
                    help="cache of the datasets and template runs (default %(default)s)")
    ap.add_argument("--per-class", type=int, default=10, help="images per class of each dataset (default %(default)s)")
    args = ap.parse_args()
    sys.path.insert(0, str(HERE))
    import report_scale as scale
    from report_size import chromium
    from bgbench.reporting.render import render_report
    from bgbench.store import Store
    work = Path(args.work)
    work.mkdir(parents=True, exist_ok=True)
    templates = [scale.template(work, d, args.per_class, 64) for d in range(2)]
    stores = work / "screenshot-stores"  # kept: a second run only writes the reports again
    scratch = stores / "pictures"
    if not (stores / "results-50.db").is_file():
        shutil.rmtree(stores, ignore_errors=True)
        scratch.mkdir(parents=True)
        for first, last, db in ((0, 1, "results-1.db"), (1, 50, "filling.db")):  # the stores nest
            with Store(stores / db) as store:
                for m in range(first, last):
                    for t in templates:
                        scale.add_model(store, scale.Model(m), t, scratch)
            if db == "results-1.db":
                shutil.copyfile(stores / db, stores / "filling.db")
            print(f"store of {last} model(s) filled", file=sys.stderr)
        (stores / "filling.db").rename(stores / "results-50.db")
    run = Path(tempfile.mkdtemp(prefix="bgbench-report-shots-"))
    args.out.mkdir(parents=True, exist_ok=True)
    reports = {}
    try:
        for n in (1, 50):
            with Store(stores / f"results-{n}.db") as store:
                reports[n] = render_report(store, run / f"report-{n}", progress=False)
        driver = chromium(run / "profile", page_load_timeout=120)
        try:
            driver.set_window_size(WIDTH, HEIGHT)
            one = reports[1].index.resolve().as_uri()
            driver.get(one)
            shoot(driver, args.out / "report-1-model-scorecard.png")
            show(driver, "[id$='-noise_gallery']")
            shoot(driver, args.out / "report-1-model-gallery.png")
            show(driver, "[id$='-features'] figure")
            shoot(driver, args.out / "report-1-model-features.png")
            driver.get(reports[50].index.resolve().as_uri())
            shoot(driver, args.out / "report-50-scorecard.png")
            links = driver.find_elements("css selector", ".scorecard-groups a")
            if links:
                links[-1].click()
                time.sleep(0.5)
                shoot(driver, args.out / "report-50-scorecard-last-group.png")
            page = sorted(reports[50].pages)[0]
            driver.get(Path(page).resolve().as_uri())
            show(driver, "[id$='-noise_gallery']")
            shoot(driver, args.out / "report-50-model-page.png")
        finally:
            driver.quit()
    finally:
        shutil.rmtree(run, ignore_errors=True)


if __name__ == "__main__":
    main()
