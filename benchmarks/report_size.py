"""The HTML report's weight and how fast headless Chromium renders it (issue: a report of the demo
stays under 10 MB and renders in under 3 s).

Renders the report of a results store (by default the demo's, `./bgbench-demo/results.db`: run
`bgbench demo` first), then prints: seconds to write it, its size on disk (index.html, figures,
thumbnails, full-size copies), the number of thumbnails, and the page's load time in headless
Chromium (navigation start to the end of the load event, every image decoded), the median of
`--loads` fresh loads, with the number of <img> elements and how many failed to load.

    PYTHONPATH=src .venv/bin/python benchmarks/report_size.py [--db bgbench-demo/results.db]
"""
from __future__ import annotations

import argparse
import shutil
import statistics
import tempfile
import time
from pathlib import Path


def folder_bytes(root: Path) -> int:
    return sum(p.stat().st_size for p in root.rglob("*") if p.is_file())


def chromium(profile: Path, page_load_timeout: float = 60):
    """Headless Chromium (Debian's, via selenium) at 1400 x 1000 with a profile of its own."""
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service
    opts = webdriver.ChromeOptions()
    opts.binary_location = shutil.which("chromium")
    for flag in ("--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
                 "--disable-background-networking", "--no-first-run", f"--user-data-dir={profile}",
                 "--window-size=1400,1000"):
        opts.add_argument(flag)
    driver = webdriver.Chrome(service=Service(shutil.which("chromedriver")), options=opts)
    driver.set_page_load_timeout(page_load_timeout)
    return driver


def load_seconds(driver, url: str) -> float:
    """Navigation start to load-event end of a fresh load (the cache is dropped first)."""
    driver.execute_cdp_cmd("Network.clearBrowserCache", {})
    driver.get(url)
    nav = driver.execute_script("return performance.getEntriesByType('navigation')[0].toJSON()")
    return (nav["loadEventEnd"] - nav["startTime"]) / 1000


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--db", default="bgbench-demo/results.db")
    ap.add_argument("--loads", type=int, default=5)
    args = ap.parse_args()
    import bgbench
    out = Path(tempfile.mkdtemp(prefix="bgbench-report-bench-"))
    t0 = time.perf_counter()
    result = bgbench.report(args.db, out / "site", progress=False)
    written = time.perf_counter() - t0
    site = result.index.parent
    thumbs = list((site / "figures" / "thumbs").glob("*")) if (site / "figures" / "thumbs").is_dir() else []
    print(f"report of {args.db}: written in {written:.1f} s; {folder_bytes(site) / 1e6:.2f} MB on disk "
          f"(index.html {result.index.stat().st_size / 1e6:.2f} MB, {len(thumbs)} thumbnails, "
          f"{folder_bytes(site / 'figures') / 1e6:.2f} MB of figures)")
    driver = chromium(out / "profile")
    try:
        url = result.index.resolve().as_uri()
        times = [load_seconds(driver, url) for _ in range(args.loads)]
        images = driver.execute_script("return Array.from(document.images).map(i => i.complete && "
                                       "i.naturalWidth > 0);")
    finally:
        driver.quit()
    print(f"headless Chromium load (navigation start to load end): median {statistics.median(times):.2f} s "
          f"over {len(times)} loads (min {min(times):.2f}, max {max(times):.2f}); {len(images)} <img>, "
          f"{images.count(False)} not loaded")
    shutil.rmtree(out)


if __name__ == "__main__":
    main()
