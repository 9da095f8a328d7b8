"""What the report says of where its numbers come from (issue 58, item 6): the class map and the
precision in a model's provenance, only reference protocols under "reference protocol", the
recipe of a checkpoint trained into another store, a study laid out in its own order whatever
its run ids, and a heading that a jump to its anchor leaves below the sticky filter bar."""
from __future__ import annotations

import json
import re

import pytest

from conftest import run_cli
from helpers.hub_cache import TAG, use_offline_hub, write_timm_weights

MODEL = f"timm:{TAG}"


def _ok(proc):
    assert proc.returncode == 0, proc.stderr
    return proc


def _dd(page: str, term: str) -> str:
    """The text of a provenance list's entry `term` (tags removed)."""
    found = re.search(rf"<dt>{term}</dt><dd>(.*?)</dd>", page, re.S)
    assert found, term
    return re.sub(r"<[^>]+>", "", found.group(1)).strip()


def test_provenance_names_the_class_map_and_keeps_saliencys_scoring_out_of_the_protocol(synth_root, tmp_path,
                                                                                       monkeypatch):
    use_offline_hub(monkeypatch, tmp_path / "hf")
    write_timm_weights(tmp_path / "hf")
    classes = sorted(p.name for p in (synth_root / "original" / "val").iterdir())
    (tmp_path / "mine.json").write_text(json.dumps({str(100 + 7 * k): c for k, c in enumerate(classes)}))
    db = tmp_path / "r.db"
    common = ["--model", MODEL, "--class-map", tmp_path / "mine.json", "--data", synth_root, "--db", db, "--quiet"]
    _ok(run_cli("eval", *common))
    _ok(run_cli("probe", "saliency", *common, "--examples", "0"))
    _ok(run_cli("report", "--db", db, "--out", tmp_path / "rep"))
    page = (tmp_path / "rep" / "index.html").read_text()
    assert _dd(page, "class map").startswith("mine.json sha256 ")
    with open(tmp_path / "rep" / "scorecard" / "scorecard.csv") as f:  # the same map as the CSV names
        assert f"mine.json" in f.read()
    assert _dd(page, "reference protocol") == "none"  # saliency scores as RIVAL10: not a --protocol
    assert _dd(page, "precision") == "fp32 (exact)"


def test_a_checkpoint_trained_into_another_store_shows_its_recipe(synth_root, model_ckpt, tmp_path):
    """`model_ckpt` was trained with no store: its training run is in none of this report's."""
    db = tmp_path / "r.db"
    _ok(run_cli("eval", "--model", f"file:{model_ckpt}", "--data", synth_root, "--db", db, "--quiet"))
    _ok(run_cli("report", "--db", db, "--out", tmp_path / "rep"))
    page = (tmp_path / "rep" / "index.html").read_text()
    row = re.search(r"<tr data-model=.*?</tr>", page, re.S).group(0)
    assert "<td>original, erm</td>" in row
    assert "as its checkpoint records" in page


def _study(tmp_path, synth_root, model_ckpt) -> "Path":
    """Two models and two datasets, declared in an order that is neither alphabetical nor by run."""
    from bgbench.variants.synth import write_dataset
    for seed, name in enumerate(("zulu", "bravo")):
        write_dataset(tmp_path / name, per_class=2, size=32, seed=seed, split="val", progress=False)
    path = tmp_path / "study.toml"
    path.write_text(f'models = [{{model = "file:{model_ckpt}", label = "yankee"}}, '
                    f'{{model = "timm:test_resnet", label = "alpha"}}]\n'
                    f'datasets = [{{path = "{tmp_path / "zulu"}", label = "zulu"}}, '
                    f'{{path = "{tmp_path / "bravo"}", label = "bravo"}}]\n[measures.eval]\n')
    return path


def test_a_studys_scorecard_is_in_the_studys_order_whatever_its_run_ids(synth_root, model_ckpt, tmp_path):
    study = _study(tmp_path, synth_root, model_ckpt)
    first = json.loads(_ok(run_cli("study", study, "--db", tmp_path / "a.db", "--out", tmp_path / "a",
                                   "--json", "--quiet")).stdout)
    # the second store holds the last model's eval on the last dataset first: the study reuses it as run 1
    _ok(run_cli("eval", "--model", "timm:test_resnet", "--data", tmp_path / "bravo", "--db", tmp_path / "b.db",
                "--quiet"))
    second = json.loads(_ok(run_cli("study", study, "--db", tmp_path / "b.db", "--out", tmp_path / "b",
                                    "--json", "--quiet")).stdout)
    def order(doc):  # the scorecard's records: a row per model, its datasets in the groups' order
        return [(c["model"].split(" [")[0], c["dataset"]) for c in doc["scorecard"] if c["title"] == "BG-Gap"]
    assert order(first) == [("yankee", "zulu"), ("yankee", "bravo"), ("alpha", "zulu"), ("alpha", "bravo")]
    assert order(second) == order(first)


CHROMIUM, CHROMEDRIVER = "/usr/bin/chromium", "/usr/bin/chromedriver"


def test_a_jump_to_an_anchor_stops_below_the_sticky_filter_bar(synth_root, model_ckpt, tmp_path):
    import os
    from pathlib import Path
    if not (Path(CHROMIUM).exists() and Path(CHROMEDRIVER).exists()):
        if os.environ.get("CI"):
            pytest.fail("CI must have chromium and chromium-driver (.ci/run installs them)")
        pytest.skip("chromium / chromedriver not installed")
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service
    db = tmp_path / "r.db"
    _ok(run_cli("eval", "--model", f"file:{model_ckpt}", "--data", synth_root, "--db", db, "--quiet"))
    _ok(run_cli("report", "--db", db, "--out", tmp_path / "rep"))
    page = (tmp_path / "rep" / "index.html").read_text()
    anchors = re.findall(r'<div id="(m1-[^"]+)" class="section-', page)
    assert anchors and 'id="filters"' in page
    opts = webdriver.ChromeOptions()
    opts.binary_location = CHROMIUM
    for flag in ("--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
                 f"--user-data-dir={tmp_path / 'profile'}", "--window-size=1400,900"):
        opts.add_argument(flag)
    driver = webdriver.Chrome(service=Service(CHROMEDRIVER), options=opts)
    try:
        for anchor in anchors[-2:]:  # far down the page: the jump scrolls
            driver.get(f"file://{tmp_path / 'rep' / 'index.html'}#{anchor}")
            bar, heading, scrolled = driver.execute_script(
                "var b = document.getElementById('filters').getBoundingClientRect();"
                f"var h = document.getElementById('{anchor}').getBoundingClientRect();"
                "return [b.bottom, h.top, window.scrollY];")
            assert scrolled > 0 and heading >= bar, (anchor, bar, heading)
    finally:
        driver.quit()
