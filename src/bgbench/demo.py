"""`bgbench demo`: the paper's Fig. 5 in miniature, end to end, offline, on a CPU.

Generates Synthetic-9 (train and test), trains one small model on ORIGINAL and one on
MIXED-RAND, then runs the study shipped in `resources/demo_study.toml` on both, through the
runner of `bgbench study`: eval on all 8 variants, the noise probe (two levels of RIVAL10's σ
grid: its RFS is on that grid), Grad-CAM saliency, the spurious-feature probe, and on a small set
(the test split's first images of each class) the ImageNet-E edits and the full Backgrounds
Challenge; the study writes the report (report/index.html), which opens with a two-row
scorecard. It prints both tables with their BG-Gaps, the prediction categories (paper Table 3),
RFS, saliency precision and the features' background shares, and what last-layer retraining
(DFR) of the ORIGINAL-trained model does to its BG-Gap. Everything is stored and written under
./bgbench-demo/.
"""
from __future__ import annotations

import json
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Dict, Optional

import torch

import tomllib

from .api import evaluate, train
from .console import status
from .distributed import pin_threads
from .errors import BgbenchError
from .measures.eval.results import EvalReport
from .recording import record
from .store import Store
from .studies.runner import StudyResult, run_study
from .studies.spec import Study, measure_options, report_only, study_from_dict
from .variants.synth import write_dataset

DEMO_ARCH = "timm:test_resnet"
#: torch CPU threads of the whole demo: its numbers are the manual's on any CPU, busy or idle.
DEMO_THREADS = 1
#: The demo's measures: a study file shipped in the package, run as `bgbench study` runs one.
DEMO_STUDY = Path(__file__).resolve().parent / "resources" / "demo_study.toml"
#: The demo's two models, as the study, its scorecard and its report name them.
LABELS = {"original": "trained on ORIGINAL", "mixed_rand": "trained on MIXED-RAND"}
#: The full challenge (every foreground x every background) and the edits run on the first
#: images of each class of the test split's generator, written as a small dataset of their own
#: (Synthetic-9 draws each image from its own seed, so they are the test split's first images):
#: 10 per class is 90 x 90 = 8,100 composites per model, seconds on a CPU.
DEMO_SMALL_PER_CLASS = 10


def run_demo(out: str | Path = "bgbench-demo", db: Optional[str] = None, per_class: int = 150,
             test_per_class: int = 50, size: int = 64, epochs: int = 20, seed: int = 0,
             progress: bool = True) -> "DemoResult":
    """Run the demo; its summary is also written to OUT/summary.json."""
    t0 = time.time()
    out = Path(out)
    data, small = out / "synthetic9", out / "synthetic9-small"
    if test_per_class < 2:
        raise BgbenchError("the demo needs at least 2 test images per class (its small set is a part of them)")
    # fewer than the test split's own: a study refuses two datasets with the same images
    small_per_class = min(DEMO_SMALL_PER_CLASS, test_per_class - 1)
    torch.manual_seed(seed)
    # one torch thread, busy machine or idle: another count sums floats in another order, and the
    # 20 epochs of training turn that into other numbers than the manual's (and one thread is the
    # fastest for this tiny network on a shared machine: docs/how-to/scale-out.md, CPU threads)
    pin_threads(DEMO_THREADS)
    status(f"[1/5] generating Synthetic-9 ({per_class}/class train, {test_per_class}/class test, {size}px) -> {data}, "
           f"and its first {small_per_class} test images per class -> {small}")
    for root, n, split in ((data, per_class, "train"), (data, test_per_class, "val"),
                           (small, small_per_class, "val")):
        write_dataset(root, per_class=n, size=size, seed=seed, split=split, progress=progress, overwrite=True)
    store = Store(db or out / "results.db")
    checkpoints = {}
    for step, variant in enumerate(("original", "mixed_rand"), start=2):
        status(f"[{step}/5] training {DEMO_ARCH} on {variant} ({epochs} epochs)")
        trained = train(data, out / "runs" / variant, variant=variant, model=DEMO_ARCH, epochs=epochs, seed=seed,
                        progress=progress)
        record(trained, store)
        checkpoints[variant] = str(trained["checkpoint"])
    study = demo_study(out, data, small, checkpoints, seed)
    noise, edits = (next(m.options for m in study.measures if m.name == n) for n in ("noise", "edits"))
    status(f"[4/5] the demo's study ({DEMO_STUDY.name}) on both models: eval, noise (σ {', '.join(noise['levels'])}, "
           f"{noise['trials']} trials), Grad-CAM saliency and spurious features on {data}; on {small}: the edits "
           f"(ImageNet-E levels {', '.join(edits['levels'])}), the full Backgrounds Challenge and an eval of the "
           f"edits; then the report -> {study.out}")
    ran = run_study(study, store.path, progress=progress, rerun=True)  # every demo measures anew, never reusing a store's runs
    reports = {variant: ran.result(LABELS[variant], "synthetic9", "eval") for variant in checkpoints}
    models = {variant: {"checkpoint": ckpt, **reports[variant].to_dict(), **_analyses(store, ran, LABELS[variant])}
              for variant, ckpt in checkpoints.items()}
    status("[5/5] last-layer retraining (DFR) of the ORIGINAL-trained model on MIXED-RAND train")
    dfr = _last_layer_retraining(store, data, out, models, seed, progress)
    summary = {"data": str(data), "small": str(small), "db": str(store.path), "models": models, "dfr": dfr,
               "report": str(ran.report / "index.html"), "seconds": round(time.time() - t0, 1)}
    (out / "summary.json").write_text(json.dumps(summary, indent=1))
    store.close()
    return DemoResult(summary=summary, reports=reports, out=out, db=Path(summary["db"]), report=Path(summary["report"]))


def demo_study(out: Path, data: Path, small: Path, checkpoints: Dict[str, str], seed: int) -> Study:
    """The shipped study file's measures (`resources/demo_study.toml`) on the demo's two models and
    two datasets, its seed added to every measure that takes one; the report goes to OUT/report."""
    doc = tomllib.loads(DEMO_STUDY.read_text(encoding="utf-8"))
    shown = report_only()
    for name, options in doc["measures"].items():
        if name not in shown and "seed" in measure_options(name):
            options["seed"] = seed
    doc["models"] = [{"model": f"file:{ckpt}", "label": LABELS[v]} for v, ckpt in checkpoints.items()]
    doc["datasets"] = [{"path": str(data), "label": "synthetic9"}, {"path": str(small), "label": "synthetic9-small"}]
    return study_from_dict(doc, source=str(DEMO_STUDY), out=out / "report")


def _last_layer_retraining(store: Store, data: Path, out: Path, models: dict, seed: int, progress: bool) -> dict:
    """DFR on the ORIGINAL-trained model: its last layer refit on the train split's MIXED-RAND
    (recorded, with the eval of the result), and its wall time beside the MIXED-RAND training's
    (the sum of that run's epochs, so that a rerun that reuses it still compares)."""
    status("      last-layer retraining (DFR) of the ORIGINAL-trained model on MIXED-RAND train")
    fitted = train(data, out / "runs" / "dfr", model=f"file:{models['original']['checkpoint']}", recipe="dfr",
                   seed=seed, feature_cache="none", progress=progress)
    record(fitted, store)
    after = evaluate(f"file:{fitted['checkpoint']}", data, progress=progress, seed=seed)
    run_id = record(after, store)
    head = json.loads((out / "runs" / "dfr" / "head.json").read_text())
    log = (out / "runs" / "mixed_rand" / "log.jsonl").read_text().splitlines()
    full = sum(json.loads(line)["seconds"] for line in log if line.strip())
    before = models["original"]
    return {"checkpoint": str(fitted["checkpoint"]), "run_id": run_id, "seconds": head["seconds"], "c": head["c"],
            "mixed_rand_training_seconds": round(full, 2),
            "before": {"bg_gap": before["bg_gap"]["value"], "mixed_rand": before["accuracy"]["mixed_rand"]["value"]},
            "after": {"bg_gap": after.bg_gap.value, "mixed_rand": after.accuracy["mixed_rand"].value}}


def _analyses(store: Store, ran: StudyResult, label: str) -> dict:
    """From the study's steps: on synthetic9, the prediction categories of the eval run and the
    noise, saliency and features probes; on the small set, the full challenge (the report's hijack
    matrix and challenge galleries) and the eval of its edits."""
    from .measures.categories.summary import prediction_categories
    from .measures.registry import get_measure
    categories = prediction_categories(store, ran.run_id(label, "synthetic9", "eval"))
    noise_run = ran.run_id(label, "synthetic9", "noise")
    sal = ran.result(label, "synthetic9", "saliency").to_dict()
    features = ran.result(label, "synthetic9", "features").summary()  # the top spurious feature, the mean of all
    top = features.top_spurious
    challenge = ran.result(label, "synthetic9-small", "challenge")
    drops = ran.result(label, "synthetic9-small edits", "eval")
    return {"categories": categories.to_dict()["overall"],
            "features": {"run_id": ran.run_id(label, "synthetic9", "features"), "bg_share": features.bg_share,
                         "bg_area": features.bg_area, "spurious": features.spurious,
                         "features": len(features.features), "rule": features.rule,
                         "top_spurious": None if top is None else {
                             k: top[k] for k in ("class", "feature", "rank", "contribution", "bg_share", "bg_area")}},
            "noise": {"run_id": noise_run, **get_measure("noise").read(store, noise_run).to_dict()},
            "saliency": {"run_id": ran.run_id(label, "synthetic9", "saliency"), "layer": sal["layer"],
                         "overlays": sal["overlays"], "aggregation": sal["aggregation"]["headline"],
                         **{k: v["value"] for k, v in sal["headline"].items()},
                         "image_mean": {k: v["value"] for k, v in sal["image_mean"].items()}},
            "challenge": {"run_id": ran.run_id(label, "synthetic9-small", "challenge"),
                          "challenge_accuracy": challenge.challenge_accuracy.value,
                          "clean_accuracy": challenge.clean_accuracy.value, "foregrounds": challenge.total},
            "edits": {"run_id": ran.run_id(label, "synthetic9-small edits", "eval"),
                      "accuracy": {v: e.value for v, e in drops.accuracy.items()}}}


def _features_line(variant: str, f: dict) -> str:
    """One line per model: its top spurious feature's background share, and the mean over all top features."""
    top = f["top_spurious"]
    head = ("no spurious candidate" if top is None else
            f"top spurious feature {top['class']} #{top['feature']}: background share {top['bg_share']:.3f} "
            f"(area {top['bg_area']:.3f})")
    mean = "-" if f["bg_share"] is None else f"{f['bg_share']:.3f}"
    return (f"{variant:<12} {head}; all {f['features']} top features: {mean} (area {f['bg_area']:.3f}), "
            f"{f['spurious']} candidates")


def _scores_line(variant: str, m: dict) -> str:
    """One line per model: its prediction categories, RFS and saliency precision."""
    precision = m["saliency"]["precision"]  # None when every map was zero (1x1 features)
    return (f"{variant:<12} {100 * m['categories']['BG Required']:11.1f}% "
            f"{100 * m['categories']['BG Fools']:8.1f}% {m['noise']['rfs_overall']:+7.3f} "
            f"{'-' if precision is None else format(precision, '.3f'):>19}")


@dataclass
class DemoResult:
    """What the demo measured; `text()` is what `bgbench demo` prints."""

    summary: dict
    reports: Dict[str, EvalReport]
    out: Path
    db: Path
    report: Path

    def text(self) -> str:
        models = {v: self.summary["models"][v] for v in self.reports}
        first = next(iter(models.values()))
        dfr = self.summary["dfr"]
        b, a = dfr["before"], dfr["after"]
        n = first["challenge"]["foregrounds"]
        levels = list(first["edits"]["accuracy"])
        parts = [line for variant, report in self.reports.items()
                 for line in (f"== trained on {variant.upper()} ==", report.text(), "")]
        parts += [
            f"BG-Gap: ORIGINAL-trained {100 * self.reports['original'].bg_gap.value:.1f}%  vs  "
            f"MIXED-RAND-trained {100 * self.reports['mixed_rand'].bg_gap.value:.1f}%",
            f"DFR (the ORIGINAL-trained model's last layer refit on MIXED-RAND, {dfr['seconds']:.0f}s vs "
            f"{dfr['mixed_rand_training_seconds']:.0f}s to train on MIXED-RAND): BG-Gap "
            f"{100 * b['bg_gap']:.1f}% -> {100 * a['bg_gap']:.1f}%, MIXED-RAND accuracy "
            f"{100 * b['mixed_rand']:.1f}% -> {100 * a['mixed_rand']:.1f}%",
            "", f"{'trained on':<12} {'BG Required':>12} {'BG Fools':>9} {'RFS':>7} {'saliency precision':>19}",
            *(_scores_line(v, m) for v, m in models.items()),
            f"(RFS on grid {first['noise']['grid']['label']}; > 0: noise on the object hurts more than noise "
            "on the background. Saliency precision: share of Grad-CAM mass on the object, mean of the "
            "per-predicted-class means)",
            "", f"Backgrounds Challenge (--full) on the small set ({n} foregrounds x {n} backgrounds):",
            *(f"{v:<12} challenge accuracy {100 * m['challenge']['challenge_accuracy']:5.1f}%  "
              f"(clean {100 * m['challenge']['clean_accuracy']:.1f}%)" for v, m in models.items()),
            "", "ImageNet-E edits of the small set (accuracy; original first, then each edit level):",
            f"{'trained on':<12} " + " ".join(f"{lv:>15}" for lv in levels),
            *(f"{v:<12} " + " ".join(f"{100 * m['edits']['accuracy'][lv]:14.1f}%" for lv in levels)
              for v, m in models.items()),
            "", "spurious features (each class's top 5 penultimate features by weight x mean activation; "
                "background share of their activation maps on their 5 most activating test images):",
            *(_features_line(v, m["features"]) for v, m in models.items()),
            f"runs stored in {self.db}; outputs under {self.out}/ ({self.summary['seconds']:.0f}s)",
            f"report: {self.report}"]
        return "\n".join(parts)
