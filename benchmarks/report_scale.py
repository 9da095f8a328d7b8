"""The report at scale, without inference (issue 36): N models x D datasets of stored runs, every
measure that has a section (galleries included), and what writing and opening their report costs.

How the store is filled. Each dataset is Synthetic-9 (`--per-class` images per class at `--size`
px, the demo's 64 by default) with its ImageNet-E edits (the demo's four model-free levels). Once
per dataset, the tiny `timm:test_resnet` runs every measure for real at its default settings (eval
of the dataset and of its edits, the full challenge, the noise, saliency, features, ablate and
attribution probes): these *template* runs give each table its real rows, configs and pictures.
Then each benchmark model gets copies of them with its predictions drawn at random (a skill and a
reliance on the background drawn per model, so models differ and their galleries show other
images) and its own pictures (the template's shifted, so no two models share a file): eval runs
through `predictions_report` (the predictions-file door of `bgbench eval --predictions`), probes through their measure's
own `summarize` and `bgbench.record`, the challenge as its tables, metrics and prediction matrix.
A third of the models get a training run on MIXED-RAND (the report's leakage and provenance).

What is measured, for each N (the stores nest: N=2 is the first two models of N=10, ...):
- the report written by `bgbench report` in a process of its own: wall seconds, peak memory (the
  process's maximum resident set, imports included), size on disk (bytes, and du's blocks), files;
- the same per (model, dataset), a dataset counting with its edits folder (N x D pairs);
- headless Chromium's time from navigation start to the end of the load event of a fresh load
  (cache cleared), median of `--loads`, of index.html and (a report of more than 12 models puts
  each model's sections on a page of its own) of the largest model page, with the <img> elements
  and how many failed.

    PYTHONPATH=src .venv/bin/python benchmarks/report_scale.py [--models 2 10 50] [--datasets 2]
        [--work /tmp/bgbench-report-scale] [--screenshot /tmp/report_shots/scale-50.png]

The datasets and template runs are cached under --work (delete it to rebuild them); the stores and
reports of the run are made afresh in a temporary folder and removed at the end (--keep keeps them).
"""
from __future__ import annotations

import argparse
import csv
import hashlib
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Dict, List, Optional

import numpy as np

TEMPLATE_MODEL = "timm:test_resnet"
#: The demo's model-free ImageNet-E levels.
EDIT_LEVELS = ("remove", "size_0.05", "rotation_random", "complexity_20")
PROBES = ("noise", "saliency", "features", "ablate", "attribution")
#: The budgets of issue 36, per (model, dataset) at default settings, and for the whole report at N=50.
BUDGET_BYTES, BUDGET_FILES, BUDGET_PEAK_MB, BUDGET_LOAD_S = 1_000_000, 100, 500, 3.0

#: Runs `bgbench report` as a user would and prints, on its last stderr line, the process's peak
#: memory and the report's wall time (its own process: the peak is the report's, imports included).
#: The peak is /proc's VmHWM, the high-water mark of this program's own memory: getrusage's
#: ru_maxrss would also count the benchmark's memory, which the child held between fork and exec.
REPORT_PROCESS = """
import json, resource, sys, time
from bgbench.cli import main
t0 = time.perf_counter()
code = main(["report", "--db", sys.argv[1], "--out", sys.argv[2], "--quiet", "--json"])
seconds = time.perf_counter() - t0
try:
    with open("/proc/self/status") as f:
        peak = next(int(line.split()[1]) for line in f if line.startswith("VmHWM:")) / 1024
except OSError:
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
print(json.dumps({"code": code, "seconds": seconds, "peak_mb": peak}), file=sys.stderr)
"""


# ---------------------------------------------------------------------------------------------
# the template runs: every measure once, for real, per dataset


def template(work: Path, d: int, per_class: int, size: int) -> Dict[str, Path]:
    """Dataset d, its edits and a store of template runs (made once, cached in `work`)."""
    import bgbench
    from bgbench.store import Store
    root, edits = work / f"synthetic9-{d}", work / f"synthetic9-{d}-edits"
    db, pictures = work / f"template-{d}.db", work / f"template-{d}-pictures"
    if not (root / "original").is_dir():
        bgbench.build(root, preset="synthetic-9", per_class=per_class, size=size, seed=100 + d, split="val",
                      progress=False)
    if not (edits / "original").is_dir():
        bgbench.build(edits, preset="imagenet-e", data=root, levels=list(EDIT_LEVELS), progress=False)
    if not db.is_file():
        status(f"template runs of dataset {d} with {TEMPLATE_MODEL} (once; cached in {work})")
        tmp = db.with_suffix(".partial")
        tmp.unlink(missing_ok=True)
        with Store(tmp) as store:
            for data in (root, edits):
                bgbench.record(bgbench.evaluate(TEMPLATE_MODEL, data, progress=False), store)
            bgbench.record(bgbench.challenge(TEMPLATE_MODEL, root, store, full=True, out_dir=pictures / "challenge",
                                             progress=False), store)
            for name in PROBES:
                bgbench.record(bgbench.probe(name, TEMPLATE_MODEL, root, out_dir=pictures / name, progress=False),
                               store)
        tmp.rename(db)
    return {"root": root, "edits": edits, "db": db}


# ---------------------------------------------------------------------------------------------
# one benchmark model: the template runs with its own predictions


class Model:
    """A benchmark model: its name, weights' sha256, skill and reliance on the background."""

    def __init__(self, m: int):
        self.m = m
        self.rng = np.random.default_rng(1000 + m)
        self.name = f"timm:bench_net_{m:02d}"
        self.sha = hashlib.sha256(f"bench model {m}".encode()).hexdigest()
        self.skill = float(self.rng.uniform(0.55, 0.97))
        self.reliance = float(self.rng.uniform(0.0, 1.0))
        self.spec = {"name": self.name, "arch": "bench_net", "checkpoint_sha256": self.sha, "label_space": "dataset",
                     "checkpoint": f"/models/bench_net_{m:02d}.safetensors", "extra": {"format": "safetensors"}}

    def p_right(self, variant: str) -> float:
        """The chance of a right prediction on a variant (or an edit level)."""
        s, r = self.skill, self.reliance
        table = {"original": s, "mixed_same": s, "mixed_rand": s * (1 - 0.7 * r), "mixed_next": s * (1 - 0.9 * r),
                 "only_fg": s * (1 - 0.6 * r), "no_fg": 0.11 + 0.8 * r * s, "only_bg_t": 0.11 + 0.8 * r * s,
                 "only_bg_b": 0.11 + 0.6 * r * s, "bg_blurred": s * (1 - 0.3 * r)}
        return table.get(variant, s * (0.6 + 0.4 * self.rng.random()))

    def pred(self, label: int, p: float, classes: int) -> int:
        if self.rng.random() < p:
            return int(label)
        return int((label + 1 + self.rng.integers(classes - 1)) % classes)


def add_model(store, model: Model, t: Dict[str, Path], scratch: Path) -> None:
    """Record `model`'s runs on one dataset (and its edits) in `store`, from dataset `t`'s templates."""
    from bgbench.store import Store
    with Store(t["db"], create=False) as tpl:
        runs = {r["kind"] + (":edits" if r["kind"] == "eval" and r["data_root"] == str(t["edits"].resolve()) else ""): r
                for r in tpl.runs() if r["status"] in ("done", "sampled")}
        _eval(store, tpl, runs["eval"], model, t["root"], scratch)
        _eval(store, tpl, runs["eval:edits"], model, t["edits"], scratch)
        _challenge(store, tpl, runs["challenge"], model, t["root"], scratch)
        for name in PROBES:
            _probe(store, tpl, runs[f"probe_{name}"], name, model, scratch)
    if model.m % 3 == 2:  # trained by bgbench on MIXED-RAND: its training run (leakage, provenance)
        _train(store, model, t["root"])


def _provenance(run, model: Model, config: Optional[dict] = None):
    from bgbench.recording import Provenance
    return Provenance(kind=run["kind"], config=config if config is not None else json.loads(run["config"]),
                      model=model.name, spec=model.spec, data_root=run["data_root"],
                      data_fingerprint=run["data_fingerprint"], seed=run["seed"])


def _eval(store, tpl, run, model: Model, root: Path, scratch: Path) -> None:
    import bgbench
    rows = tpl.predictions(run["id"])
    classes = len(json.loads(run["config"])["classes"])
    path = scratch / f"preds-{model.m}-{run['id']}.csv"
    with path.open("w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["image_id", "variant", "pred"])
        for r in rows:
            w.writerow([r["image_id"], r["variant"], model.pred(r["label"], model.p_right(r["variant"]), classes)])
    from bgbench.measures.eval.config import PredictionFileConfig
    from bgbench.prediction_files import predictions_report
    report = predictions_report(path, root, PredictionFileConfig(name=model.name))
    config = {**report.provenance.config, "variants": json.loads(run["config"]).get("variants")}
    report.provenance = _provenance(run, model, {**json.loads(run["config"]), **config})
    bgbench.record(report, store)
    path.unlink()


class _Tables:
    """A run known by its tables, metrics and outputs (what `bgbench.record` writes)."""

    def __init__(self, provenance, tables, metrics, outputs):
        self.provenance, self._tables, self._metrics, self._outputs = provenance, tables, metrics, outputs
        self.run_id = None

    def table_rows(self):
        return self._tables

    def metric_rows(self):
        return self._metrics

    def outputs(self):
        return self._outputs


def _challenge(store, tpl, run, model: Model, root: Path, scratch: Path) -> None:
    """A --full challenge from a random prediction matrix: verdicts, attack success rates, metrics."""
    import bgbench
    from bgbench.data.in9 import discover
    from bgbench.evaluation.metrics import wilson_interval
    layout = discover(root, split="val", variants=["original", "only_bg_t"])
    pairs, bgs = layout.foregrounds(), layout.items("only_bg_t")
    fg_y = np.array([it.label for it, _ in pairs])
    bg_y = np.array([it.label for it in bgs])
    c = len(layout.classes)
    robust = model.skill * (1 - 0.8 * model.reliance)
    # a composite keeps its foreground's class with the model's robustness, else takes the background's
    keep = model.rng.random((len(pairs), len(bgs))) < robust ** 0.02
    matrix = np.where(keep, fg_y[:, None], bg_y[None, :]).astype(np.uint8)
    clean = np.array([model.pred(y, model.skill, c) for y in fg_y])
    fooled = (matrix != fg_y[:, None]).any(axis=1)
    asr = np.array([float(np.mean(matrix[fg_y != bg_y[j], j] == bg_y[j])) for j in range(len(bgs))])
    fg_rows = []
    for i, ((it, _), f) in enumerate(zip(pairs, fooled)):
        j = int(np.argmax(matrix[i] != fg_y[i])) if f else None
        fg_rows.append((it.image_id, int(fg_y[i]), int(clean[i]), int(f), len(bgs) if not f else j + 1,
                        bgs[j].image_id if f else None, int(matrix[i, j]) if f else None))
    bg_rows = [(it.image_id, int(bg_y[j]), float(asr[j])) for j, it in enumerate(bgs)]

    def est(k: int, n: int, name: str, variant: str = "") -> tuple:
        lo, hi = wilson_interval(k, n) if n else (None, None)
        return (name, variant, k / n if n else None, lo, hi, n)
    never = int((~fooled).sum())
    metrics = [est(never, len(pairs), "challenge_accuracy"), est(int((clean == fg_y).sum()), len(pairs),
                                                                 "clean_accuracy"),
               ("fooled", "", float(fooled.sum()), None, None, len(pairs)),
               ("challenge_pairs", "", float(matrix.size), None, None, None)]
    for k, name in enumerate(layout.classes):
        mine = fg_y == k
        metrics.append(est(int((~fooled[mine]).sum()), int(mine.sum()), "challenge_accuracy_class", name))
        others = fg_y != k
        hit = (matrix[others][:, bg_y == k] == k).any(axis=1)
        metrics.append(est(int(hit.sum()), int(others.sum()), "class_fool_rate", name))
    path = scratch / f"challenge-{model.m}-{run['id']}.npy"
    np.save(path, matrix)
    outputs = {**json.loads(run["outputs"] or "{}"), "matrix": str(path)}
    result = _Tables(_provenance(run, model), {"challenge_fg": fg_rows, "challenge_bg": bg_rows}, metrics, outputs)
    bgbench.record(result, store)


def _probe(store, tpl, run, name: str, model: Model, scratch: Path) -> None:
    """A probe run: the template's rows with this model's predictions (and values), its summary by
    the measure's own `summarize`, its pictures the template's shifted."""
    import bgbench
    from bgbench.measures.registry import get_measure
    from bgbench.measures.result import MeasureResult
    measure = get_measure(name)
    columns = measure.table.column_names
    rows = [list(r[c] for c in columns) for r in tpl.probe_rows(measure.table.name, run["id"])]
    config = json.loads(run["config"])
    classes = len(config.get("classes") or []) or 9
    col = {c: k for k, c in enumerate(columns)}
    rng = model.rng
    if name == "noise":
        for r in rows:
            hurt = r[col["level"]] * (1.6 if (r[col["region"]] == "bg") == (model.reliance > 0.5) else 0.6)
            r[col["pred"]] = model.pred(r[col["label"]], model.skill * max(0.05, 1 - hurt), classes)
            r[col["correct"]] = int(r[col["pred"]] == r[col["label"]])
    elif name == "ablate":
        for r in rows:
            p = model.skill * (1 - 0.5 * model.reliance if r[col["region"]] == "bg" else 0.7)
            r[col["pred"]] = model.pred(r[col["label"]], p, classes)
            r[col["correct"]] = int(r[col["pred"]] == r[col["label"]])
            r[col["true_prob"]] = float(np.clip(p + rng.normal(0, 0.1), 0, 1))
    elif name == "saliency":
        values = [r[3:] for r in rows]
        order = rng.permutation(len(rows))
        for r, k in zip(rows, order):
            r[col["pred"]] = model.pred(r[col["label"]], model.skill, classes)
            r[3:] = values[k]
    elif name in ("features", "attribution"):
        floats = [c for c in columns if c in ("contribution", "mean_activation", "bg_share", "bg_area", "iou")]
        for c in floats:
            values = [r[col[c]] for r in rows]
            for r, k in zip(rows, rng.permutation(len(rows))):
                r[col[c]] = values[k]
    outputs = {k: v for k, v in json.loads(run["outputs"] or "{}").items() if k not in ("images", "seconds")}
    folder = scratch / f"{name}-{model.m}-{run['id']}"
    if name == "saliency":
        outputs["examples"] = [{**ex, "overlay": _shifted(Path(ex["overlay"]), folder, model.m)}
                               for ex in outputs.get("examples", [])]
        outputs["overlays"] = None
    if name == "features":
        outputs["galleries"] = {c: _shifted(Path(p), folder, model.m) for c, p in outputs.get("galleries", {}).items()}
    result = MeasureResult(name, [measure.row.of(tuple(r)) for r in rows], config, extra=outputs)
    result.provenance = _provenance(run, model, config)
    bgbench.record(result, store)


def _shifted(source: Path, folder: Path, m: int) -> str:
    """The template's picture rolled by a model's own offset: a picture of this model alone."""
    from PIL import Image
    folder.mkdir(parents=True, exist_ok=True)
    with Image.open(source) as im:
        rgb = np.asarray(im.convert("RGB"))
    target = folder / source.name
    Image.fromarray(np.roll(rgb, (3 * m + 1, 5 * m + 2), axis=(0, 1))).save(target)
    return str(target)


def _train(store, model: Model, root: Path) -> None:
    import bgbench
    from bgbench.recording import Metric, Outputs, Provenance
    config = {"variant": "mixed_rand", "recipe": "bgswap", "epochs": 20, "swa": False, "data": str(root.resolve()),
              "model": "timm:bench_net"}
    result = Outputs(values={"checkpoint": model.spec["checkpoint"], "checkpoint_sha256": model.sha},
                     metrics=[Metric("train_accuracy", 0.9)],
                     provenance=Provenance(kind="train", config=config, model=model.name, spec=model.spec, seed=0,
                                           data_root=str(root.resolve())))
    bgbench.record(result, store)


# ---------------------------------------------------------------------------------------------
# measuring a report


def on_disk(root: Path) -> Dict[str, int]:
    files = [p for p in root.rglob("*") if p.is_file()]
    return {"bytes": sum(p.stat().st_size for p in files), "blocks": sum(p.stat().st_blocks * 512 for p in files),
            "files": len(files)}


def write_report(db: Path, out: Path) -> dict:
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(Path(__file__).resolve().parents[1] / "src"),
                                                        os.environ.get("PYTHONPATH", "")])}
    t0 = time.perf_counter()
    proc = subprocess.run([sys.executable, "-c", REPORT_PROCESS, str(db), str(out)], capture_output=True, text=True,
                          env=env)
    wall = time.perf_counter() - t0
    if proc.returncode != 0:
        sys.exit(f"bgbench report failed:\n{proc.stderr}")
    return {**json.loads(proc.stderr.strip().splitlines()[-1]), "wall": wall, **json.loads(proc.stdout)}


def load_times(driver, page: Path, loads: int) -> List[float]:
    """Seconds from navigation start to the end of the load event, of `loads` fresh loads."""
    times = []
    for _ in range(loads):
        driver.execute_cdp_cmd("Network.clearBrowserCache", {})
        driver.get(page.resolve().as_uri())
        nav = driver.execute_script("return performance.getEntriesByType('navigation')[0].toJSON()")
        times.append((nav["loadEventEnd"] - nav["startTime"]) / 1000)
    return times


#: An image that failed: loaded (not a lazy one still waiting) with no pixels.
BROKEN = "return Array.from(document.images).filter(i => i.complete && i.naturalWidth === 0).length"


def load(driver, index: Path, loads: int, screenshot: Optional[Path]) -> dict:
    """The first page's load (and, in a report of a page per model, the largest model page's), its
    <img> elements, and those that failed to load."""
    times = load_times(driver, index, loads)
    images, broken = driver.execute_script("return document.images.length"), driver.execute_script(BROKEN)
    if screenshot is not None:
        screenshot.parent.mkdir(parents=True, exist_ok=True)
        driver.execute_script("window.scrollTo(0, 0)")
        driver.save_screenshot(str(screenshot))
    pages = sorted((index.parent / "models").glob("*.html"), key=lambda p: p.stat().st_size)
    page = {"page_load": None, "page_images": None}
    if pages:
        page_times = load_times(driver, pages[-1], loads)
        page = {"page_load": statistics.median(page_times), "page_images": driver.execute_script(
            "return document.images.length")}
        broken += driver.execute_script(BROKEN)
    return {"load": statistics.median(times), "load_min": min(times), "load_max": max(times), "images": images,
            "broken": broken, "pages": len(pages), "index_mb": index.stat().st_size / 1e6, **page}


def status(text: str) -> None:
    print(text, file=sys.stderr, flush=True)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--models", type=int, nargs="+", default=[2, 10, 50], help="the Ns (default %(default)s)")
    ap.add_argument("--datasets", type=int, default=2, help="datasets D, each with its edits (default %(default)s)")
    ap.add_argument("--per-class", type=int, default=10, help="images per class of each dataset (default %(default)s)")
    ap.add_argument("--size", type=int, default=64, help="image side in px (default %(default)s, the demo's)")
    ap.add_argument("--loads", type=int, default=3, help="Chromium loads per report, median (default %(default)s)")
    ap.add_argument("--work", default=os.path.join(tempfile.gettempdir(), "bgbench-report-scale"),
                    help="cache of the datasets and template runs (default %(default)s)")
    ap.add_argument("--screenshot", type=Path, help="a screenshot of the top of the largest N's page, this PNG")
    ap.add_argument("--keep", type=Path, help="keep the stores and reports in this folder")
    args = ap.parse_args()
    import bgbench
    from bgbench.store import Store
    work = Path(args.work)
    work.mkdir(parents=True, exist_ok=True)
    templates = [template(work, d, args.per_class, args.size) for d in range(args.datasets)]
    run_dir = Path(tempfile.mkdtemp(prefix="bgbench-report-scale-")) if args.keep is None else args.keep
    run_dir.mkdir(parents=True, exist_ok=True)
    scratch = run_dir / "pictures"
    scratch.mkdir(exist_ok=True)
    db = run_dir / "results.db"
    ns = sorted(set(args.models))
    rows, filled, t_fill = [], 0, time.perf_counter()
    from report_size import chromium  # the same browser as the demo report's benchmark
    driver = chromium(run_dir / "profile", page_load_timeout=120)
    try:
        for n in ns:
            with Store(db) as store:
                for m in range(filled, n):
                    model = Model(m)
                    for t in templates:
                        add_model(store, model, t, scratch)
                status(f"store: {n} models x {args.datasets} datasets filled ({time.perf_counter() - t_fill:.0f}s)")
            filled = n
            stored = run_dir / f"results-{n}.db"
            shutil.copyfile(db, stored)
            out = run_dir / f"report-{n}"
            made = write_report(stored, out)
            disk = on_disk(out)
            shot = args.screenshot if n == ns[-1] else None
            page = load(driver, out / "index.html", args.loads, shot)
            pairs = n * args.datasets
            rows.append({"n": n, **made, **disk, **page, "pairs": pairs, "per_pair_bytes": disk["bytes"] / pairs,
                         "per_pair_blocks": disk["blocks"] / pairs, "per_pair_files": disk["files"] / pairs})
            status(f"N={n}: report {made['seconds']:.1f}s, {made['peak_mb']:.0f} MB peak, {disk['bytes'] / 1e6:.2f} MB "
                   f"in {disk['files']} files, Chromium load {page['load']:.2f}s")
    finally:
        driver.quit()
    load_avg = os.getloadavg()
    print(f"report_scale: {args.datasets} datasets (Synthetic-9, {args.per_class}/class, {args.size}px, each with its "
          f"edits), every measure at its defaults; bgbench {bgbench.__version__}; load average "
          f"{load_avg[0]:.2f} {load_avg[1]:.2f} {load_avg[2]:.2f} at the end")
    print("| N | (model, dataset) pairs | write (s) | peak memory (MB) | on disk (MB) | du (MB) | files | "
          "per pair: MB | per pair: files | index.html (MB) | Chromium load of index.html (s), median (min-max) | "
          "model pages: count, load of the largest (s) | <img> on index.html (broken) |")
    print("|---|---|---|---|---|---|---|---|---|---|---|---|---|")
    for r in rows:
        pages = f"{r['pages']}, {r['page_load']:.2f}" if r["pages"] else "- (one page)"
        print(f"| {r['n']} | {r['pairs']} | {r['seconds']:.1f} | {r['peak_mb']:.0f} | {r['bytes'] / 1e6:.2f} | "
              f"{r['blocks'] / 1e6:.2f} | {r['files']} | {r['per_pair_bytes'] / 1e6:.3f} | {r['per_pair_files']:.1f} | "
              f"{r['index_mb']:.2f} | {r['load']:.2f} ({r['load_min']:.2f}-{r['load_max']:.2f}) | {pages} | "
              f"{r['images']} ({r['broken']}) |")
    last = rows[-1]
    checks = [("per pair <= 1 MB", all(r["per_pair_bytes"] <= BUDGET_BYTES for r in rows)),
              (f"per pair <= about {BUDGET_FILES} files", all(r["per_pair_files"] <= BUDGET_FILES for r in rows)),
              (f"peak memory < {BUDGET_PEAK_MB} MB at N={last['n']}", last["peak_mb"] < BUDGET_PEAK_MB),
              (f"Chromium load < {BUDGET_LOAD_S} s at N={last['n']}", last["load"] < BUDGET_LOAD_S
               and (last["page_load"] or 0) < BUDGET_LOAD_S), ("no broken image", all(not r["broken"] for r in rows))]
    if len(rows) > 1:
        first = rows[0]
        k = last["n"] / first["n"]
        print(f"growth from N={first['n']} to N={last['n']} ({k:.0f}x the models): write time "
              f"{last['seconds'] / first['seconds']:.1f}x, peak memory {last['peak_mb'] / first['peak_mb']:.2f}x, "
              f"bytes {last['bytes'] / first['bytes']:.1f}x, files {last['files'] / first['files']:.1f}x")
    print("budgets: " + "; ".join(f"{name}: {'holds' if ok else 'FAILS'}" for name, ok in checks))
    if args.keep is None:
        shutil.rmtree(run_dir)


if __name__ == "__main__":
    main()
