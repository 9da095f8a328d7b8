"""`bgbench demo`: the paper's Fig. 5 in miniature, end to end, offline, on a CPU.

Generates Synthetic-9 (train and test), trains one small model on ORIGINAL and one on
MIXED-RAND, evaluates both on all 8 variants, prints both tables with their BG-Gaps, stores the
runs and writes everything under ./bgbench-demo/, ending with the HTML report (report/index.html).
"""
from __future__ import annotations

import json
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Dict, Optional

import torch

from . import runs
from .api import evaluate
from .console import status
from .data.synthetic import write_dataset
from .evaluate.report import EvalReport
from .report.render import render_report
from .store import Store
from .train.loop import TrainConfig, train, training_record

DEMO_ARCH = "timm:test_resnet"


def run_demo(out: str | Path = "bgbench-demo", db: Optional[str] = None, per_class: int = 150,
             test_per_class: int = 50, size: int = 64, epochs: int = 20, seed: int = 0,
             progress: bool = True) -> "DemoResult":
    """Run the demo; its summary is also written to OUT/summary.json."""
    t0 = time.time()
    out = Path(out)
    data = out / "synthetic9"
    torch.manual_seed(seed)
    status(f"[1/4] generating Synthetic-9 ({per_class}/class train, {test_per_class}/class test, {size}px) -> {data}")
    write_dataset(data, per_class=per_class, size=size, seed=seed, split="train", progress=progress)
    write_dataset(data, per_class=test_per_class, size=size, seed=seed, split="val", progress=progress)
    store = Store(db or out / "results.db")
    summary = {"data": str(data), "db": str(store.path), "models": {}}
    reports = {}
    for step, variant in enumerate(("original", "mixed_rand"), start=2):
        status(f"[{step}/4] training {DEMO_ARCH} on {variant} ({epochs} epochs)")
        run_dir = out / "runs" / variant
        ckpt = train(TrainConfig(data=str(data), variant=variant, model=DEMO_ARCH, out=str(run_dir),
                                 epochs=epochs, seed=seed), progress=progress)
        runs.record(store, *training_record(run_dir))
        reports[variant] = evaluate(f"file:{ckpt}", data, progress=progress, seed=seed)
        runs.record(store, reports[variant].provenance, reports[variant])
        summary["models"][variant] = {"checkpoint": str(ckpt), **reports[variant].to_dict()}
    status(f"[4/4] writing the report -> {out / 'report'}")
    page = render_report(store, out / "report", run_ids=[r.run_id for r in reports.values()], progress=False)
    summary["report"] = str(page.index)
    summary["seconds"] = round(time.time() - t0, 1)
    (out / "summary.json").write_text(json.dumps(summary, indent=1))
    store.close()
    return DemoResult(summary=summary, reports=reports, out=out, db=Path(summary["db"]), report=page.index)


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
        parts.append(f"runs stored in {self.db}; outputs under {self.out}/ ({self.summary['seconds']:.0f}s)")
        parts.append(f"report: {self.report}")
        return "\n".join(parts)
