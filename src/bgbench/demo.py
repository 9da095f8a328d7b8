"""`bgbench demo`: the paper's Fig. 5 in miniature, end to end, offline, on a CPU.

Generates Synthetic-9 (train and test), trains one small model on ORIGINAL and one on
MIXED-RAND, evaluates both on all 8 variants, prints both tables with their BG-Gaps, what
last-layer retraining (DFR) of the ORIGINAL-trained model does to its BG-Gap, the prediction categories (paper Table 3), the noise probe's RFS, Grad-CAM saliency precision and
the spurious-feature probe's background shares (RIVAL10); on a small set (the test split's first
images of each class) it runs the full Backgrounds Challenge and ImageNet-E edits for both. It stores the runs and writes everything
under ./bgbench-demo/, ending with the HTML report (report/index.html) and its galleries.
"""
from __future__ import annotations

import json
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Dict, Optional

import torch

from .api import challenge, edit, evaluate, probe_features, probe_noise, probe_saliency, train
from .console import status
from .variants.synth import write_dataset
from .evaluation.results import EvalReport
from .reporting.render import render_report
from .recording import record
from .store import Store

DEMO_ARCH = "timm:test_resnet"
#: The demo's noise probe stays cheap: two levels of RIVAL10's σ grid (60/255 and 120/255, out of
#: 30/255 … 210/255), three trials each, on the test split. Its RFS is on that two-level grid.
DEMO_NOISE_LEVELS = ("60/255", "120/255")
DEMO_NOISE_TRIALS = 3
#: The full challenge (every foreground x every background) and the edits run on the first
#: images of each class of the test split's generator, written as a small dataset of their own
#: (Synthetic-9 draws each image from its own seed, so they are the test split's first images):
#: 10 per class is 90 x 90 = 8,100 composites per model, seconds on a CPU.
DEMO_SMALL_PER_CLASS = 10
#: Edit levels that need no model: the object removed, shrunk to a 5% pixel rate, rotated, and
#: its background made busier (seed 003's lambda = +20).
DEMO_EDIT_LEVELS = ("remove", "size_0.05", "rotation_random", "complexity_20")


def run_demo(out: str | Path = "bgbench-demo", db: Optional[str] = None, per_class: int = 150,
             test_per_class: int = 50, size: int = 64, epochs: int = 20, seed: int = 0,
             small_per_class: int = DEMO_SMALL_PER_CLASS, progress: bool = True) -> "DemoResult":
    """Run the demo; its summary is also written to OUT/summary.json."""
    t0 = time.time()
    out = Path(out)
    data, small = out / "synthetic9", out / "synthetic9-small"
    small_per_class = min(small_per_class, test_per_class)
    torch.manual_seed(seed)
    status(f"[1/5] generating Synthetic-9 ({per_class}/class train, {test_per_class}/class test, {size}px) -> {data}, "
           f"and its first {small_per_class} test images per class -> {small}")
    write_dataset(data, per_class=per_class, size=size, seed=seed, split="train", progress=progress,
                  overwrite=True)
    write_dataset(data, per_class=test_per_class, size=size, seed=seed, split="val", progress=progress,
                  overwrite=True)
    write_dataset(small, per_class=small_per_class, size=size, seed=seed, split="val", progress=progress,
                  overwrite=True)
    store = Store(db or out / "results.db")
    summary = {"data": str(data), "small": str(small), "db": str(store.path), "models": {}}
    reports, shown = {}, []
    for step, variant in enumerate(("original", "mixed_rand"), start=2):
        status(f"[{step}/5] training {DEMO_ARCH} on {variant} ({epochs} epochs)")
        run_dir = out / "runs" / variant
        trained = train(data, run_dir, variant=variant, model=DEMO_ARCH, epochs=epochs, seed=seed, progress=progress)
        record(trained, store)
        ckpt = trained["checkpoint"]
        reports[variant] = evaluate(f"file:{ckpt}", data, progress=progress, seed=seed)
        record(reports[variant], store)
        summary["models"][variant] = {"checkpoint": str(ckpt), **reports[variant].to_dict(),
                                      **_analyses(store, reports[variant].run_id, f"file:{ckpt}", data,
                                                  out / "runs" / variant, seed, progress)}
        shown += [reports[variant].run_id] + [summary["models"][variant][k]["run_id"] for k in ("noise", "saliency", "features")]
    summary["dfr"] = _last_layer_retraining(store, data, out, summary["models"], seed, progress)
    status(f"[4/5] on {small}: the edits (ImageNet-E levels {', '.join(DEMO_EDIT_LEVELS)}), and for each model "
           f"the full Backgrounds Challenge (challenge --full) and an eval of the edits")
    edited = edit(small, out / "edits", levels=list(DEMO_EDIT_LEVELS), seed=seed, overwrite=True, progress=progress)
    record(edited, store)
    for variant, model in summary["models"].items():
        model.update(_small_set_runs(store, small, out / "edits", f"file:{model['checkpoint']}",
                                     out / "runs" / variant, seed, progress))
        shown += [model["challenge"]["run_id"], model["edits"]["run_id"]]
    status(f"[5/5] writing the report -> {out / 'report'}")
    labels = {f"file:{m['checkpoint']}": f"trained on {v.upper().replace('_', '-')}"
              for v, m in summary["models"].items()}  # the scorecard's two rows
    page = render_report(store, out / "report", run_ids=shown, labels=labels, progress=False)  # the demo's own runs
    summary["report"] = str(page.index)
    summary["seconds"] = round(time.time() - t0, 1)
    (out / "summary.json").write_text(json.dumps(summary, indent=1))
    store.close()
    return DemoResult(summary=summary, reports=reports, out=out, db=Path(summary["db"]), report=page.index)


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


def _small_set_runs(store: Store, small: Path, edits: Path, model_name: str, out: Path, seed: int,
                    progress: bool) -> dict:
    """The full challenge on the small set (every foreground against every background: the
    report's hijack matrix and challenge galleries) and the eval of its edits (recorded)."""
    from .models import create_model
    model = create_model(model_name)
    report = challenge(model, small, store, full=True, seed=seed, out_dir=out / "challenge", progress=progress)
    challenge_run = record(report, store)
    drops = evaluate(model, edits, progress=progress, seed=seed)
    edits_run = record(drops, store)
    return {"challenge": {"run_id": challenge_run, "challenge_accuracy": report.challenge_accuracy.value,
                          "clean_accuracy": report.clean_accuracy.value, "foregrounds": report.total,
                          "matrix": report.full["matrix"]},
            "edits": {"run_id": edits_run, "accuracy": {v: e.value for v, e in drops.accuracy.items()}}}


def _analyses(store: Store, eval_run: int, model_name: str, data: Path, out: Path, seed: int,
              progress: bool) -> dict:
    """Prediction categories of the eval run, and the noise, saliency and features probes (recorded)."""
    from .measures.categories.summary import prediction_categories
    from .measures.noise.probe import noise_summary
    from .models import create_model
    status(f"      analysing {model_name}: prediction categories, noise probe "
           f"(σ {', '.join(DEMO_NOISE_LEVELS)}, {DEMO_NOISE_TRIALS} trials), Grad-CAM saliency, spurious features")
    categories = prediction_categories(store, eval_run)
    model = create_model(model_name)
    noise = probe_noise(model, data, levels=list(DEMO_NOISE_LEVELS), trials=DEMO_NOISE_TRIALS, seed=seed,
                        progress=progress)
    noise_run = record(noise, store)
    saliency = probe_saliency(model, data, out_dir=out, progress=progress)
    saliency_run = record(saliency, store)
    sal = saliency.to_dict()
    features = probe_features(model, data, out_dir=out, progress=progress)
    features_run = record(features, store)
    return {"categories": categories.to_dict()["overall"],
            "features": {"run_id": features_run, **_features_headline(features.summary())},
            "noise": {"run_id": noise_run, **noise_summary(store, noise_run).to_dict()},
            "saliency": {"run_id": saliency_run, "layer": sal["layer"], "overlays": sal["overlays"],
                         "aggregation": sal["aggregation"]["headline"],
                         **{k: v["value"] for k, v in sal["headline"].items()},
                         "image_mean": {k: v["value"] for k, v in sal["image_mean"].items()}}}


def _features_headline(summary) -> dict:
    """The features probe in a few numbers: the top spurious feature and the mean over all top features."""
    top = summary.top_spurious
    return {"bg_share": summary.bg_share, "bg_area": summary.bg_area, "spurious": summary.spurious,
            "features": len(summary.features), "rule": summary.rule,
            "top_spurious": None if top is None else {k: top[k] for k in ("class", "feature", "rank", "contribution",
                                                                          "bg_share", "bg_area")}}


def _features_line(variant: str, f: dict) -> str:
    """One line per model: its top spurious feature's background share, and the mean over all top features."""
    top = f["top_spurious"]
    head = ("no spurious candidate" if top is None else
            f"top spurious feature {top['class']} #{top['feature']}: background share {top['bg_share']:.3f} "
            f"(area {top['bg_area']:.3f})")
    mean = "-" if f["bg_share"] is None else f"{f['bg_share']:.3f}"
    return (f"{variant:<12} {head}; all {f['features']} top features: {mean} (area {f['bg_area']:.3f}), "
            f"{f['spurious']} candidates")


@dataclass
class DemoResult:
    """What the demo measured; `text()` is what `bgbench demo` prints."""

    summary: dict
    reports: Dict[str, EvalReport]
    out: Path
    db: Path
    report: Path

    def text(self) -> str:
        parts = []
        for variant, report in self.reports.items():
            parts += [f"== trained on {variant.upper()} ==", report.table(), ""]
        g_orig = self.reports["original"].bg_gap.value
        g_rand = self.reports["mixed_rand"].bg_gap.value
        parts.append(f"BG-Gap: ORIGINAL-trained {100 * g_orig:.1f}%  vs  MIXED-RAND-trained {100 * g_rand:.1f}%")
        models = self.summary["models"]
        dfr = self.summary.get("dfr")
        if dfr is not None:
            b, a = dfr["before"], dfr["after"]
            parts.append(f"DFR (the ORIGINAL-trained model's last layer refit on MIXED-RAND, {dfr['seconds']:.0f}s vs "
                         f"{dfr['mixed_rand_training_seconds']:.0f}s to train on MIXED-RAND): BG-Gap "
                         f"{100 * b['bg_gap']:.1f}% -> {100 * a['bg_gap']:.1f}%, MIXED-RAND accuracy "
                         f"{100 * b['mixed_rand']:.1f}% -> {100 * a['mixed_rand']:.1f}%")
        if all("categories" in models[v] for v in self.reports):
            parts += ["", f"{'trained on':<12} {'BG Required':>12} {'BG Fools':>9} {'RFS':>7} {'saliency precision':>19}"]
            for v in self.reports:
                m = models[v]
                precision = m["saliency"]["precision"]  # None when every map was zero (1x1 features)
                parts.append(f"{v:<12} {100 * m['categories']['BG Required']:11.1f}% "
                             f"{100 * m['categories']['BG Fools']:8.1f}% {m['noise']['rfs_overall']:+7.3f} "
                             f"{'-' if precision is None else format(precision, '.3f'):>19}")
            grid = models[next(iter(self.reports))]["noise"]["grid"]["label"]
            parts.append(f"(RFS on grid {grid}; > 0: noise on the object hurts more than noise on the background. "
                         "Saliency precision: share of Grad-CAM mass on the object, mean of the per-predicted-class "
                         "means)")
        if all("challenge" in models[v] for v in self.reports):
            n = models[next(iter(self.reports))]["challenge"]["foregrounds"]
            parts += ["", f"Backgrounds Challenge (--full) on the small set ({n} foregrounds x {n} backgrounds):"]
            for v in self.reports:
                c = models[v]["challenge"]
                parts.append(f"{v:<12} challenge accuracy {100 * c['challenge_accuracy']:5.1f}%  "
                             f"(clean {100 * c['clean_accuracy']:.1f}%)")
        if all("features" in models[v] for v in self.reports):
            parts += ["", "spurious features (each class's top 5 penultimate features by weight x mean activation; "
                          "background share of their activation maps on their 5 most activating test images):"]
            parts += [_features_line(v, models[v]["features"]) for v in self.reports]
        parts.append(f"runs stored in {self.db}; outputs under {self.out}/ ({self.summary['seconds']:.0f}s)")
        parts.append(f"report: {self.report}")
        return "\n".join(parts)
