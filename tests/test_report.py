"""`bgbench report` and `bgbench leaderboard --format html`: pages rendered from a store filled by
the real code paths (train, eval, challenge --full), escaped, and checked in headless Chromium."""
import json
import os
import re
import shutil
import sqlite3
from pathlib import Path

import pytest

from scipy.stats import binomtest

from bgbench.reporting.context import select_subjects
from bgbench.reporting.render import render_report
from bgbench.reporting.sections import SECTIONS, _compare_pair, list_sections
from bgbench.store import Store
from conftest import assert_one_line_error, run_cli

XSS = "<script>alert(1)</script>"
CHROMIUM, CHROMEDRIVER = "/usr/bin/chromium", "/usr/bin/chromedriver"


@pytest.fixture(scope="session")
def report_store(tmp_path_factory, synth_root) -> Path:
    """A store with: a bgbench-trained model (train + eval + challenge --full runs), a random-init
    model (eval), and a model whose name is a script tag (eval), all on the tiny Synthetic-9."""
    import bgbench
    tmp = tmp_path_factory.mktemp("report_store")
    db = tmp / "results.db"
    with Store(db) as store:
        trained_run = bgbench.train(synth_root, tmp / "train", variant="mixed_rand", model="timm:test_resnet",
                                    epochs=1, seed=0, progress=False)
        bgbench.record(trained_run, store)
        ckpt = trained_run["checkpoint"]
        for model in (f"file:{ckpt}", "timm:test_resnet"):
            bgbench.record(bgbench.evaluate(model, synth_root, progress=False), store)
        evil = bgbench.evaluate("timm:test_resnet", synth_root, variants=["original", "mixed_same", "mixed_rand"],
                                progress=False)
        evil.provenance.model = XSS
        bgbench.record(evil, store)
        trained = bgbench.load_model(f"file:{ckpt}")
        bgbench.record(bgbench.challenge(trained, synth_root, store, batch_size=64, full=True,
                                         out_dir=tmp / "challenge", progress=False), store)
        bgbench.record(bgbench.probe("noise", trained, synth_root, levels=[0.25, 0.5], trials=3, progress=False), store)
        bgbench.record(bgbench.probe("saliency", trained, synth_root, examples=4, out_dir=tmp / "saliency",
                                              progress=False), store)
        bgbench.record(bgbench.probe("features", trained, synth_root, top_features=2, top_images=3, galleries=2,
                                              out_dir=tmp / "features", progress=False), store)
        bgbench.record(bgbench.probe("ablate", trained, synth_root, progress=False), store)
        bgbench.record(bgbench.probe("ablate", "timm:test_resnet", synth_root, progress=False), store)
    return db


@pytest.fixture(scope="session")
def rendered(report_store, tmp_path_factory):
    out = tmp_path_factory.mktemp("report") / "site"
    with Store(report_store) as store:
        result = render_report(store, out, progress=False)
    return result


def _html(result) -> str:
    return result.index.read_text(encoding="utf-8")


def test_every_section_with_data_is_on_the_page(rendered, report_store):
    html = _html(rendered)
    # every section with data: all but the edits (no edit runs in this store) and their gallery
    assert rendered.sections == ["ablation", "accuracy", "boxsize", "categories", "categories_gallery", "challenge",
                                 "challenge_gallery", "comparisons", "features", "groups", "hijack", "leakage", "noise",
                                 "noise_gallery", "overview", "provenance", "saliency", "saliency_gallery", "scorecard"]
    assert len(rendered.models) == 3
    with Store(report_store) as store:
        ch = [r for r in store.runs("challenge")][0]
        chal = {(m["name"], m["variant"]): m["value"] for m in store.metrics(ch["id"])}
        train = store.runs("train")[0]
    assert f"{100 * chal[('challenge_accuracy', '')]:.1f}%" in html
    assert html.count('class="section-challenge"') == 1  # only the model with a challenge run
    assert html.count('class="section-accuracy"') == 3
    # the analyses: categories for the two eval runs with the needed variants (the third has no
    # only_bg_t), box size for all three (the third on original), noise and saliency for the one
    # model that was probed
    assert html.count('class="section-categories"') == 2 and html.count('class="section-boxsize"') == 3
    assert html.count('class="section-noise"') == 1 and html.count('class="section-saliency"') == 1
    # leakage only for the MIXED-RAND-trained model; NO-FG apart, as silhouette signal
    assert html.count('class="section-leakage"') == 1
    # worst-group accuracy for each eval run with MIXED-RAND (the groups from the synthetic manifest)
    with Store(report_store) as store:
        mixed = [r for r in store.runs("eval") if "mixed_rand" in store.run_variants(r["id"])]
    assert mixed and html.count('class="section-groups"') == len(mixed)
    leak = html.split('class="section-leakage"')[1].split("</table>")[0]
    with Store(report_store) as store:
        trained = next(r for r in store.runs("eval") if r["model"].startswith("file:"))
        for variant, label in (("only_bg_t", "only_bg_t"), ("no_fg", "silhouette signal (no_fg)")):
            rows = store.predictions(trained["id"], variant)
            acc = sum(r["pred"] == r["label"] for r in rows) / len(rows)
            cells = re.search(rf"<td>{re.escape(label)}</td>(.*?)</tr>", leak, re.S).group(1)
            assert f"{100 * (acc - 1 / 9):+.1f}%" in cells, variant
    # the saliency overlays are the saliency gallery's images (one per example), not one grid
    gallery = html.split('class="section-saliency_gallery"')[1].split("</section>")[0]
    assert "figures/thumbs/" in gallery and not any("saliency-overlays" in p.name for p in rendered.figures)
    # the features probe: its two galleries copied beside the page, and the stored background shares shown
    assert html.count('class="section-features"') == 1
    assert len([p for p in rendered.figures if "-features-" in p.name]) == 2
    with Store(report_store) as store:
        run = store.runs("probe_features")[-1]
        shares = [r["bg_share"] for r in store.probe_rows("probe_features", run["id"])]
    features = html.split('class="section-features"')[1].split('class="section-')[0]
    assert all(f"<strong>{s:.3f}</strong>" in features for s in shares if s is not None)
    # Fig. 24 drawn for the --full run, Fig. 4 its gallery (each class's top backgrounds by ASR, read
    # from the stored rates); every chart a palette PNG, every copied picture a WebP, beside the page
    assert any("asr-histogram" in p.name for p in rendered.figures)
    with Store(report_store) as store:
        rates = store.challenge_backgrounds(store.runs("challenge")[0]["id"])
    fig4 = html.split('class="section-challenge"')[1].split("Most fooling backgrounds per class")[1]
    fig4 = fig4.split('class="section-')[0]
    best = max(rates, key=lambda r: (r["asr"], r["bg_id"]))
    assert f"{best['bg_id']}" in fig4 and f"ASR {100 * best['asr']:.0f}%" in fig4
    for path in rendered.figures:
        head = path.read_bytes()[:16]
        assert path.parent == rendered.index.parent / "figures" and f'src="figures/{path.name}"' in html
        if path.suffix == ".png":
            assert head[:8] == b"\x89PNG\r\n\x1a\n" and head[8:16] and _palette(path)
        else:
            assert path.suffix == ".webp" and head[8:12] == b"WEBP"
    # provenance: the checkpoint's sha256 links the evaluated model to its training run
    assert train["checkpoint_sha256"] in html
    assert "Trained by bgbench</strong> (train run %d)" % train["id"] in html
    assert "mixed_rand, erm" in html  # the overview's 'trained on'


def _palette(path: Path) -> bool:
    """Whether a PNG is written in a palette of at most 256 colours (a compressed chart)."""
    from PIL import Image
    with Image.open(path) as im:
        return im.mode == "P"


def test_the_ablation_heatmap_is_region_by_model_from_the_stored_rows(rendered, report_store):
    """Each cell recomputed here from the probe_ablate rows: clean accuracy minus ablated accuracy
    on the images that have the region, and the mean drop in true-class probability."""
    html = _html(rendered).split('id="ablation"')[1].split("</section>")[0]
    acc_map, prob_map = html.split('<table class="heatmap">')[1:3]
    with Store(report_store) as store:
        runs = [r["id"] for r in store.runs("probe_ablate")]
        assert len(runs) == 2 and all(f"run {i}" in html for i in runs)
        per_run = [[dict(r) for r in store.probe_rows("probe_ablate", i)] for i in runs]
    regions = sorted({r["region"] for r in per_run[0]} - {"none"})
    assert {"fg", "bg", "attr:dot", "attr:rim"} <= set(regions)  # Synthetic-9's parts
    for region in regions:
        label = {"fg": "object (foreground)", "bg": "background"}.get(region, region.removeprefix("attr:"))
        for table, key in ((acc_map, "correct"), (prob_map, "true_prob")):
            row = re.search(rf"<tr><td>{re.escape(label)}</td>(.*?)</tr>", table, re.S).group(1)
            shown = re.findall(r'<td class="num" style="background: [^"]+">([^\s<]+)', row)
            assert len(shown) == 2
            for rows, cell in zip(per_run, shown):
                clean = {r["image_id"]: r[key] for r in rows if r["region"] == "none"}
                hit = [(clean[r["image_id"]], r[key]) for r in rows if r["region"] == region]
                drop = sum(c - a for c, a in hit) / len(hit)
                assert cell == f"{100 * drop:+.1f}%", (region, key)


def _cells(html: str, variant: str):
    row = re.search(rf"<tr><td>{re.escape(variant)}</td>(.*?)</tr>", html, re.S).group(1)
    return re.findall(r'<td class="num">([^<]*)</td>', row)


def test_comparisons_use_mcnemar_on_the_stored_predictions(rendered, report_store):
    """Each variant's discordant counts and exact McNemar p-value, counted here from the stored
    rows and tested with scipy's binomial test."""
    html = _html(rendered).split('id="comparisons"')[1].split("</section>")[0]
    assert html.count("<h3><a href=") == 3  # three models on one dataset: three pairs
    first = html.split("<h3>")[1]
    run_a, run_b = map(int, re.search(r"eval runs (\d+) vs (\d+)", first).groups())
    with Store(report_store) as store:
        checked = 0
        for variant in json.loads(store.get_run(run_a)["config"])["variants"]:
            a = {r["image_id"]: r["pred"] == r["label"] for r in store.predictions(run_a, variant)}
            b = {r["image_id"]: r["pred"] == r["label"] for r in store.predictions(run_b, variant)}
            assert sorted(a) == sorted(b)
            a_only = sum(a[i] and not b[i] for i in a)
            b_only = sum(b[i] and not a[i] for i in a)
            p = binomtest(min(a_only, b_only), a_only + b_only, 0.5).pvalue if a_only + b_only else 1.0
            cells = _cells(first, variant)
            assert cells[3:5] == [str(a_only), str(b_only)], variant
            assert float(cells[5]) == pytest.approx(p, abs=5e-4, rel=0.05), variant
            assert cells[6] == str(len(a))
            checked += a_only + b_only
    assert checked > 0  # the two models do disagree somewhere, so the counts are not trivially zero


def test_report_and_compare_give_the_same_numbers(rendered, report_store):
    """The report's comparison of a pair and `bgbench compare` on the same two runs agree, cell by cell."""
    html = _html(rendered).split('id="comparisons"')[1].split("</section>")[0]
    for pair in html.split("<h3>")[1:]:
        runs = re.search(r"eval runs (\d+) vs (\d+)", pair).groups()
        proc = run_cli("compare", *runs, "--db", report_store, "--json")
        assert proc.returncode == 0, proc.stderr
        doc = json.loads(proc.stdout)
        assert doc["variants"]
        for variant, c in doc["variants"].items():
            cells = _cells(pair, variant)
            assert cells[0] == f"{100 * c['acc_a']['value']:.1f}%" and cells[1] == f"{100 * c['acc_b']['value']:.1f}%"
            assert cells[2] == f"{100 * c['diff']:+.1f}%"
            assert cells[3:5] == [str(c["a_only"]), str(c["b_only"])] and cells[6] == str(c["n"])
            assert float(cells[5]) == pytest.approx(c["p_value"], abs=5e-4, rel=0.05)
        gap = re.search(r"BG-Gap difference \(A &minus; B\): <strong>([^<]*)</strong>\s*"
                        r'<span class="meta">\[([^,]*), ([^\]]*)\], n = (\d+)', pair)
        if doc["bg_gap_diff"] is not None:
            g = doc["bg_gap_diff"]
            assert gap.groups() == (f"{100 * g['value']:+.1f}%", f"{100 * g['lo']:+.1f}%", f"{100 * g['hi']:+.1f}%",
                                    str(g["n"]))


def _hand_eval(store, model, correct, ids=None, fp="fp"):
    rid = store.start_run("eval", {"variants": list(correct), "classes": ["a", "b"]}, model=model,
                          spec={"checkpoint_sha256": model * 8}, data_root="/d", data_fingerprint=fp)
    store.insert("predictions", rid, [(v, (ids or {}).get(v, "a/{}").format(i), 0, 0 if ok else 1, 0.9, None, None, None)
                                      for v, oks in correct.items() for i, ok in enumerate(oks)])
    store.finish_run(rid)
    return rid


def test_compare_pair_against_a_table_worked_by_hand(tmp_path):
    """A right on 5/6 originals, B on 3/6, disagreeing on two images, both A's: p = 2 * 1/4 = 0.5.
    BG-Gap A = 4/4 - 2/4 = 0.5, B = 2/4 - 2/4 = 0: difference 0.5. Per foreground the gap
    differences are (1, 1, 0, 0): a bootstrap mean of 4 draws is 0 with probability 1/16 and 1
    with probability 1/16, both above 2.5%, so the 95% percentile interval is exactly [0, 1]."""
    correct = {"A": {"original": [1, 1, 1, 0, 1, 1], "mixed_same": [1, 1, 1, 1], "mixed_rand": [0, 0, 1, 1]},
               "B": {"original": [0, 0, 1, 0, 1, 1], "mixed_same": [1, 1, 0, 0], "mixed_rand": [1, 1, 0, 0]}}
    with Store(tmp_path / "r.db") as store:
        for model, variants in correct.items():
            _hand_eval(store, model, variants)
        a, b = select_subjects(store)
        found = _compare_pair(type("Ctx", (), {"store": store})(), a, b)
    original = found["variants"][0]
    assert (original["variant"], original["a_only"], original["b_only"]) == ("original", 2, 0)
    assert original["p_value"] == pytest.approx(0.5) and original["diff"] == pytest.approx(2 / 6)
    assert found["bg_gap"]["value"] == pytest.approx(0.5) and found["bg_gap"]["n"] == 4
    assert (found["bg_gap"]["lo"], found["bg_gap"]["hi"]) == (0.0, 1.0)
    assert found["challenge"] is None and found["refused"] == []


def test_report_refuses_what_compare_refuses(tmp_path):
    """Two runs on one fingerprint whose images differ (a/0..a/3 vs b/0..b/3): `bgbench compare`
    refuses them, so the report shows the same reason instead of numbers on a narrowed set."""
    with Store(tmp_path / "r.db") as store:
        ra = _hand_eval(store, "A", {"original": [1, 1, 0, 0]})
        rb = _hand_eval(store, "B", {"original": [1, 0, 1, 0]}, ids={"original": "b/{}"})
        result = render_report(store, tmp_path / "site", progress=False)
    proc = run_cli("compare", ra, rb, "--db", tmp_path / "r.db")
    assert_one_line_error(proc, "not on the same images")
    reason = proc.stderr.strip().removeprefix("bgbench: error: ")
    html = result.index.read_text().split('id="comparisons"')[1].split("</section>")[0]
    assert "not compared: " + reason.replace("'", "&#39;") in html
    assert "<td>original</td>" not in html


def test_user_strings_are_escaped_in_the_html(rendered):
    html = _html(rendered)
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in html
    assert XSS not in html
    assert XSS not in rendered.leaderboard.read_text()


def test_the_registry_is_open_to_new_sections():
    assert [s.name for s in list_sections("model")][:3] == ["accuracy", "challenge", "challenge_gallery"]
    assert all(s.template == f"sections/{s.name}.html.j2" for s in SECTIONS.values())
    from importlib.resources import files
    for s in SECTIONS.values():
        assert files("bgbench.reporting").joinpath("templates", s.template).is_file()


def test_missing_backgrounds_leave_a_note_not_a_broken_image(report_store, synth_root, tmp_path):
    db = tmp_path / "moved.db"
    shutil.copy(report_store, db)
    with sqlite3.connect(db) as conn:
        conn.execute("UPDATE runs SET data_root=? WHERE kind='challenge'", (str(tmp_path / "gone"),))
    with Store(db) as store:
        result = render_report(store, tmp_path / "site", progress=False)
    html = _html(result)
    assert "of these background images are no longer under" in html and str(tmp_path / "gone") in html
    assert any("asr-histogram" in p.name for p in result.figures)  # Fig. 24 needs only the stored table


def test_cli_report_json_and_selection(report_store, tmp_path):
    proc = run_cli("report", "--db", report_store, "--out", tmp_path / "r", "--models", "timm:*", "--json", "--quiet")
    assert proc.returncode == 0, proc.stderr
    doc = json.loads(proc.stdout)
    assert doc["models"] == ["timm:test_resnet [random init, seed 0]"] and Path(doc["index"]).is_file()
    with Store(report_store) as store:
        challenge_id = store.runs("challenge")[0]["id"]
    proc = run_cli("report", "--db", report_store, "--out", tmp_path / "c", "--runs", challenge_id, "--quiet")
    assert proc.returncode == 0, proc.stderr
    html = (tmp_path / "c" / "index.html").read_text()
    assert 'class="section-challenge"' in html and 'class="section-accuracy"' not in html


@pytest.mark.parametrize("args, needles", [
    (["--runs", "999"], ["--runs", "999"]),
    (["--runs", "1"], ["--runs", "train run"]),
    (["--models", "timm:nope"], ["--models", "timm:nope", "timm:test_resnet"]),
])
def test_cli_report_bad_selection(report_store, tmp_path, args, needles):
    assert_one_line_error(run_cli("report", "--db", report_store, "--out", tmp_path / "r", *args), *needles)


def test_cli_report_bad_paths(report_store, tmp_path):
    assert_one_line_error(run_cli("report", "--db", tmp_path / "none.db", "--out", tmp_path / "r"),
                          "--db", "none.db")
    (tmp_path / "file").write_text("x")
    assert_one_line_error(run_cli("report", "--db", report_store, "--out", tmp_path / "file"), "--out", "not a folder")
    empty = tmp_path / "empty.db"
    Store(empty).close()
    assert_one_line_error(run_cli("report", "--db", empty, "--out", tmp_path / "r"), "no finished", "empty.db")


# ---------------------------------------------------------------- the scorecard as files to publish


def _stored_metric(db, model: str, weights: str, fingerprint: str, kind: str, name: str, variant: str):
    """(value, lo, hi, n) of a metric of the newest finished run of `kind` of one model (its string
    and weights) on one dataset, read with sqlite3 (no bgbench code); None when there is none."""
    with sqlite3.connect(db) as conn:
        run = conn.execute("SELECT id FROM runs WHERE kind=? AND model=? AND coalesce(checkpoint_sha256, '')=? AND "
                           "data_fingerprint=? AND status IN ('done', 'sampled') ORDER BY id DESC LIMIT 1",
                           (kind, model, weights, fingerprint)).fetchone()
        return None if run is None else conn.execute(
            "SELECT value, lo, hi, n FROM metrics WHERE run_id=? AND name=? AND variant=?", (run[0], name, variant)
        ).fetchone()


def _float(text: str):
    return None if text == "" else float(text)


def test_exported_scorecard_equals_the_stored_metrics(report_store, tmp_path):
    """`bgbench export --scorecard`: one CSV row per (model, dataset) and one strict JSON per model
    and dataset, each headline the stored metric of the model's newest run of its kind there (read
    back here with sqlite3), its interval and n; the JSON file says the same as the CSV row."""
    import csv
    from bgbench.measures.registry import measure_of_kind
    proc = run_cli("export", "--scorecard", "--out", tmp_path / "pub", "--db", report_store, "--json")
    assert proc.returncode == 0, proc.stderr
    strict = lambda c: pytest.fail(f"not strict JSON: {c}")  # noqa: E731
    doc = json.loads(proc.stdout, parse_constant=strict)
    with open(doc["csv"], newline="") as f:
        rows = list(csv.DictReader(f))
    with sqlite3.connect(report_store) as conn:
        pairs = conn.execute("SELECT DISTINCT model, data_fingerprint FROM runs WHERE kind IN ('eval', 'challenge') "
                             "AND status='done'").fetchall()
    assert len(rows) == doc["rows"] == len(pairs) == len(doc["model_info"]) == 3
    assert {(r["model_string"], r["data_fingerprint"]) for r in rows} == set(pairs)
    infos = {(i["name"], i["data_fingerprint"]): i for i in
             (json.loads(Path(p).read_text(), parse_constant=strict) for p in doc["model_info"])}
    checked = 0
    for row in rows:
        ids = [k for k in row if k.count(":") >= 1 and not k.endswith((":lo", ":hi", ":n"))]
        for key in ids:
            if row[key] == "" or key.startswith(("categories:", "edits:")):  # computed from the rows, not stored
                continue
            kind, metric, *variant = key.split(":")
            measure = measure_of_kind(kind) or measure_of_kind(f"probe_{kind}")
            stored = _stored_metric(report_store, row["model_string"], row["weights_sha256"], row["data_fingerprint"],
                                    measure.kind, metric, variant[0] if variant else "")
            if stored is None and metric == "worst_group_accuracy":  # a group dataset's own groups
                stored = _stored_metric(report_store, row["model_string"], row["weights_sha256"],
                                        row["data_fingerprint"], measure.kind, metric, "original")
            value, lo, hi, n = stored
            assert (_float(row[key]), _float(row[f"{key}:lo"]), _float(row[f"{key}:hi"])) == (value, lo, hi), key
            assert row[f"{key}:n"] == ("" if n is None else str(n)), key
            checked += 1
        info = infos[(row["model"], row["data_fingerprint"])]
        assert (info["model"], info["weights_sha256"] or "", info["dataset"], info["protocol"],
                info["bgbench_version"]) == (row["model_string"], row["weights_sha256"], row["dataset"],
                                             row["protocol"], row["bgbench_version"])
        assert info["headlines"] and all(
            (h["value"], h["lo"], h["hi"]) == (_float(row[k]), _float(row[f"{k}:lo"]), _float(row[f"{k}:hi"]))
            for k, h in info["headlines"].items())
    assert checked >= 8  # BG-Gap, clean accuracy, worst group, challenge, the probes' headlines
    # a rewrite removes only what the export wrote
    (tmp_path / "pub" / "mine.txt").write_text("kept")
    assert run_cli("export", "--scorecard", "--out", tmp_path / "pub", "--db", report_store, "--models",
                   "timm:*").returncode == 0
    left = sorted(p.relative_to(tmp_path / "pub").as_posix() for p in (tmp_path / "pub").rglob("*") if p.is_file())
    assert "mine.txt" in left and len([p for p in left if p.endswith(".json")]) == 1


def test_the_report_links_its_scorecard_files(rendered):
    html = _html(rendered)
    card = html[html.index('id="scorecard"'):html.index('id="overview"')]
    site = rendered.index.parent
    links = re.findall(r'href="(scorecard/[^"]+)"', card)
    assert "scorecard/scorecard.csv" in links and "scorecard/model_info/" in links
    jsons = [link for link in links if link.endswith(".json")]
    assert len(jsons) == 3 and all((site / link).is_file() for link in jsons)
    listed = (site / "REPORT_FILES.txt").read_text()
    assert "scorecard/scorecard.csv" in listed and all(link in listed for link in jsons)


def test_export_needs_a_run_or_the_scorecard(report_store, tmp_path):
    for args in ([], ["1", "--scorecard"]):
        proc = run_cli("export", *args, "--out", tmp_path / "x", "--db", report_store)
        assert proc.returncode == 2 and "Traceback" not in proc.stderr and "error:" in proc.stderr
    assert_one_line_error(run_cli("export", "1", "--models", "timm:*", "--out", tmp_path / "x.csv", "--db",
                                  report_store), "--models", "--scorecard")
    assert_one_line_error(run_cli("export", "--scorecard", "--models", "timm:nope", "--out", tmp_path / "x",
                                  "--db", report_store), "--models", "timm:nope")
    assert not (tmp_path / "x").exists()


def test_cli_leaderboard_html(report_store, tmp_path):
    proc = run_cli("leaderboard", "--db", report_store, "--format", "html")
    assert proc.returncode == 0, proc.stderr
    html = proc.stdout
    assert html.startswith("<!DOCTYPE html>") and 'class="sortable leaderboard"' in html
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in html and XSS not in html
    assert "http://" not in html and "https://" not in html  # nothing fetched from a network
    out = tmp_path / "lb.html"
    assert run_cli("leaderboard", "--db", report_store, "--format", "html", "--out", out).returncode == 0
    assert out.read_text().strip() == html.strip().replace(re.search(r"generated \S+", html).group(0),
                                                           re.search(r"generated \S+", out.read_text()).group(0))


# ---------------------------------------------------------------- in a real browser


def _browser_or_skip():
    if not (Path(CHROMIUM).exists() and Path(CHROMEDRIVER).exists()):
        if os.environ.get("CI"):
            pytest.fail("CI must have chromium and chromium-driver (.ci/run installs them)")
        pytest.skip("chromium / chromedriver not installed")


@pytest.fixture(scope="module")
def browser(tmp_path_factory):
    _browser_or_skip()
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service
    opts = webdriver.ChromeOptions()
    opts.binary_location = CHROMIUM
    for flag in ("--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
                 "--disable-background-networking", "--disable-component-update", "--disable-sync", "--no-first-run",
                 f"--user-data-dir={tmp_path_factory.mktemp('chromium-profile')}", "--window-size=1200,900"):
        opts.add_argument(flag)
    opts.set_capability("goog:loggingPrefs", {"browser": "ALL"})
    driver = webdriver.Chrome(service=Service(CHROMEDRIVER), options=opts)
    driver.set_page_load_timeout(30)
    yield driver
    driver.quit()


def _severe(driver):
    return [e for e in driver.get_log("browser") if e["level"] == "SEVERE"]


def test_report_in_headless_chromium(browser, rendered):
    from selenium.common.exceptions import NoAlertPresentException
    from selenium.webdriver.support.ui import WebDriverWait
    browser.get(rendered.index.resolve().as_uri())
    assert browser.title == "bgbench report"
    assert _severe(browser) == []
    # every image is lazy (fetched as it scrolls into view); made eager here, each one loads
    assert browser.execute_script("return Array.from(document.images).every(i => i.loading === 'lazy')")
    browser.execute_script("Array.from(document.images).forEach(i => { i.loading = 'eager'; })")
    WebDriverWait(browser, 20).until(
        lambda d: d.execute_script("return Array.from(document.images).every(i => i.complete)"))
    images = browser.execute_script(
        "return Array.from(document.images).map(i => [i.getAttribute('src'), i.complete, i.naturalWidth]);")
    site, srcs = rendered.index.parent, {src for src, _, _ in images}
    charts = {p.relative_to(site).as_posix() for p in rendered.figures if not {"full", "thumbs"} & set(p.parts)}
    assert charts <= srcs and len(charts) >= 5 and all((site / src).is_file() for src in srcs)
    assert all(complete and width > 0 for _, complete, width in images), images
    heatmap = "document.querySelectorAll('#ablation table.heatmap tbody tr')"
    assert browser.execute_script(f"return {heatmap}.length") >= 2 * 6  # two maps: object, background, 4 parts
    shades = browser.execute_script(
        f"return Array.from({heatmap}).map(r => getComputedStyle(r.cells[1]).backgroundColor);")
    assert any(s not in ("rgba(0, 0, 0, 0)", "transparent") for s in shades)  # the cells are shaded
    for section in ("overview", "comparisons", "ablation"):
        assert browser.execute_script(f"return document.getElementById('{section}') !== null")
    assert browser.execute_script("return document.querySelectorAll('section.model').length") == 3
    # the script-tag model name shows as text, and no script from it ran
    assert XSS in browser.execute_script("return document.body.innerText")
    with pytest.raises(NoAlertPresentException):
        browser.switch_to.alert.text
    # the page's own scripts: table sorting, the filters, the scorecard's sort, filter and folding
    # (three models: the scorecard reads down, a block per dataset, with nothing to sort or filter)
    assert browser.execute_script("return document.scripts.length") == 2
    browser.save_screenshot(str(rendered.index.parent / "screenshot.png"))


def test_leaderboard_sorts_in_headless_chromium(browser, report_store, tmp_path):
    page = tmp_path / "leaderboard.html"
    assert run_cli("leaderboard", "--db", report_store, "--format", "html", "--out", page).returncode == 0
    browser.get(page.resolve().as_uri())
    assert _severe(browser) == []
    column = "Array.from(document.querySelectorAll('table.leaderboard')[0].tBodies[0].rows).map(r => r.cells[1].innerText)"
    before = browser.execute_script(f"return {column};")
    assert "reported" in browser.execute_script(
        "return Array.from(document.querySelectorAll('tr.reported td:nth-child(3)')).map(c => c.innerText).join(' ')")
    header = browser.find_element("xpath", "(//table[contains(@class,'leaderboard')])[1]//th[2]")
    header.click()
    ascending = browser.execute_script(f"return {column};")
    assert ascending == sorted(before, key=str.lower) and header.get_attribute("aria-sort") == "ascending"
    header.click()
    assert browser.execute_script(f"return {column};") == sorted(before, key=str.lower, reverse=True)


def test_demo_ends_by_writing_its_report(tmp_path):
    from bgbench.demo import run_demo
    result = run_demo(out=tmp_path / "demo", per_class=3, test_per_class=2, size=32, epochs=1, progress=False)
    assert result.report == tmp_path / "demo" / "report" / "index.html" and result.report.is_file()
    assert f"report: {result.report}" in result.text()
    html = result.report.read_text()
    # two models, each evaluated on Synthetic-9 and on the small set's edits: four accuracy sections
    assert html.count('class="section-accuracy"') == 4 and "original, erm" in html and "mixed_rand, erm" in html
    card = html[html.index('id="scorecard"'):html.index('id="overview"')]  # the page opens with a scorecard
    assert html.index('id="scorecard"') < html.index('class="model"')
    # two models: the scorecard reads down, a block per dataset with a column per model
    blocks = card.count('<table class="scorecard-block"')
    assert card.count('<th class="num model">') == 2 * blocks and "trained on ORIGINAL" in card
    assert "trained on MIXED-RAND" in card
    assert html.count('class="model"') == 2  # one section per model, its datasets as subsections
    assert html.count('class="dataset-title"') == 2 * blocks >= 2 * 2
    for section in ("categories", "noise", "saliency", "features"):  # the demo's analyses reach its report
        assert html.count(f'class="section-{section}"') == 2, section
    assert json.loads((tmp_path / "demo" / "summary.json").read_text())["report"] == str(result.report)


def _eval_run(store, model, variants, correct, ten_crop=False, fp="fp-edit"):
    rid = store.start_run("eval", {"variants": list(variants), "classes": ["a", "b"], "ten_crop": ten_crop},
                          model=model, spec={"checkpoint_sha256": "e" * 64}, data_root="/edits", data_fingerprint=fp)
    store.insert("predictions", rid, [(v, f"a/{i}", 0, 0 if ok else 1, 0.9, None, None, None)
                                      for v in variants for i, ok in enumerate(correct[v])])
    store.finish_run(rid)
    return rid


def test_edit_drops_section_and_ten_crop_kept_apart(tmp_path):
    """Drops worked by hand: original 4/4, size_0.05 1/4 -> drop 75 points; remove 2/4 -> 50."""
    correct = {"original": [1, 1, 1, 1], "size_0.05": [1, 0, 0, 0], "remove": [1, 1, 0, 0]}
    with Store(tmp_path / "r.db") as store:
        _eval_run(store, "timm:m", list(correct), correct)
        _eval_run(store, "timm:m", list(correct), {v: [0, 0, 0, 0] for v in correct}, ten_crop=True)
        result = render_report(store, tmp_path / "site", progress=False)
    html = result.index.read_text()
    assert "edits" in result.sections
    assert html.count('class="section-edits"') == 2  # the plain and the ten-crop subject, each its own
    assert "timm:m [sha256 eeeeeeee] (ten-crop)" in html
    plain = html.split('class="section-edits"')[1]
    assert "+75.0%" in plain and "+50.0%" in plain
