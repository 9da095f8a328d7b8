"""Whac-A-Mole on a laptop: one row of the dilemma, measured on Synthetic-9 with two shortcuts.

Synthetic-9's train split gets both controlled shortcuts (`bgbench synth --correlation P
--watermark-correlation Q`): a share P of each class's images on its own class's background
family, and a share Q of one class's images (08_bar, the carton's part) carrying ImageNet-W's
watermark. timm:test_resnet is trained on ORIGINAL (ERM); DFR then refits its last layer on the
train split balanced over (class, background family), as `bgbench train --recipe dfr` does. A study
measures both models on the clean val split: eval (BG-Gap), a sampled Backgrounds Challenge,
Whac-A-Mole's IN-9 gap (in9_gap: its Resize(256) and CenterCrop(224)) and the watermark measure (the
mark added to every val image; Carton gap on 08_bar). It prints the
shortcut table and the DFR model's paired changes: what fixing the background shortcut did to
the watermark one, whichever way it goes.

    PYTHONPATH=src python benchmarks/whac_a_mole.py [--out /tmp/bgbench-wam] [--per-class 150] [--epochs 20]
"""
from __future__ import annotations

import argparse
import time
from pathlib import Path

from bgbench import record, train
from bgbench.store import Store
from bgbench.studies.runner import run_study
from bgbench.studies.spec import study_from_dict
from bgbench.variants.synth import write_dataset

ARCH = "timm:test_resnet"


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--out", default="/tmp/bgbench-wam")
    p.add_argument("--per-class", type=int, default=150)
    p.add_argument("--test-per-class", type=int, default=50)
    p.add_argument("--size", type=int, default=64)
    p.add_argument("--correlation", type=float, default=0.9, help="P, the background shortcut")
    p.add_argument("--watermark-correlation", type=float, default=0.9, help="Q, the watermark shortcut")
    p.add_argument("--epochs", type=int, default=20)
    p.add_argument("--seed", type=int, default=0)
    args = p.parse_args()
    out = Path(args.out)
    data = out / "synthetic9"
    t0 = time.time()
    write_dataset(data, per_class=args.per_class, size=args.size, seed=args.seed, split="train", progress=False,
                  overwrite=True, correlation=args.correlation, watermark_correlation=args.watermark_correlation)
    write_dataset(data, per_class=args.test_per_class, size=args.size, seed=args.seed, split="val", progress=False,
                  overwrite=True)
    store = Store(out / "results.db")
    erm = train(data, out / "erm", variant="original", model=ARCH, epochs=args.epochs, seed=args.seed, progress=False)
    record(erm, store)
    t_erm = time.time()
    dfr = train(data, out / "dfr", model=f"file:{erm['checkpoint']}", recipe="dfr", seed=args.seed,
                feature_cache="none", progress=False)
    record(dfr, store)
    t_dfr = time.time()
    store.close()
    study = study_from_dict({
        "models": [{"model": f"file:{erm['checkpoint']}", "label": "ERM"},
                   {"model": f"file:{dfr['checkpoint']}", "label": "ERM + DFR"}],
        "datasets": [{"path": str(data), "label": "synthetic9"}],
        "measures": {"eval": {"seed": args.seed}, "challenge": {"sample": 200, "seed": args.seed},
                     "in9_gap": {"seed": args.seed}, "watermark": {"seed": args.seed}}}, source="whac_a_mole", out=out / "report")
    result = run_study(study, out / "results.db", progress=False, rerun=True)
    print(f"Synthetic-9 {args.size}px, train {args.per_class}/class with P = {args.correlation} (backgrounds) and "
          f"Q = {args.watermark_correlation} (watermark on 08_bar); val {args.test_per_class}/class, clean")
    print(f"ERM training {t_erm - t0:.0f}s (data included), DFR {t_dfr - t_erm:.0f}s, the study "
          f"{result.seconds:.0f}s")
    print(result.shortcuts.text() if result.shortcuts is not None else "no shortcut measured")
    print(f"report: {result.report / 'index.html'}")


if __name__ == "__main__":
    main()
