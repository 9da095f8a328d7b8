"""The noise probe (RIVAL10): runner (I/O) and the summary of a stored probe run.

`probe_noise` decodes images and masks, runs the engine in batches and returns a result whose
per-image rows go to the `probe_noise` table; `noise_summary` recomputes the curves and RFS from
that table with no inference.
"""
from __future__ import annotations

import math
from dataclasses import asdict, dataclass
from typing import Dict, List, Optional, Sequence, Tuple

import numpy as np

from .. import checks
from ..errors import BgbenchError
from ..store import Store
from .rfs import relative_foreground_sensitivity
from .tables import run_row

SIGMA_LEVELS = (0.125, 0.25, 0.375, 0.5, 0.625, 0.75)
L2_LEVELS = (30.0, 60.0, 90.0, 120.0, 150.0, 180.0)
KINDS = ("sigma", "l2")


@dataclass
class NoiseConfig:
    """How to probe. kind 'sigma' uses per-pixel std levels; 'l2' noise with a fixed L2 norm."""

    levels: Optional[List[float]] = None
    kind: str = "sigma"
    trials: int = 3
    batch_size: int = 64
    device: str = "cpu"
    seed: int = 0
    mapping: str = "argmax"

    def __post_init__(self):
        checks.one_of("--noise", self.kind, KINDS)
        checks.at_least("--trials", self.trials, 1)
        checks.at_least("--batch-size", self.batch_size, 1)
        checks.one_of("--mapping", self.mapping, ("argmax", "superclass"))
        if self.levels is None:
            self.levels = list(SIGMA_LEVELS if self.kind == "sigma" else L2_LEVELS)
        if not self.levels:
            raise BgbenchError("--levels needs at least one noise level")
        for v in self.levels:
            checks.at_least("a noise level", v, 0)
        self.levels = [float(v) for v in self.levels]
        checks.device(self.device)


@dataclass
class NoiseProbeResult:
    """Per-image correctness; rows: (image_id, label, region, level, trial, correct)."""

    rows: List[tuple]
    config: dict
    seconds: float = 0.0
    run_id: Optional[int] = None
    provenance: object = None

    def table_rows(self) -> Dict[str, List[tuple]]:
        return {"probe_noise": self.rows}

    def summary(self) -> "NoiseSummary":
        return summarize(self.rows)

    def metric_rows(self) -> List[tuple]:
        s = self.summary()
        rows = []
        for region, curve in s.curves.items():
            for p in curve:
                rows.append((f"noise_acc_{region}", f"{p['level']:g}", p["acc"], p["lo"], p["hi"], p["n"]))
        rows += [("rfs", f"{lvl:g}", v, None, None, None) for lvl, v in s.rfs.items()]
        rows.append(("rfs", "", s.rfs_overall, None, None, None))
        return rows

    def outputs(self) -> dict:
        return {"images": len({r[0] for r in self.rows}), "seconds": round(self.seconds, 2)}


@dataclass
class NoiseSummary:
    curves: Dict[str, List[dict]]
    rfs: Dict[float, float]
    rfs_overall: float
    run_id: Optional[int] = None

    def to_dict(self) -> dict:
        return {"curves": self.curves, "rfs": {f"{k:g}": v for k, v in self.rfs.items()},
                "rfs_overall": self.rfs_overall}

    def table(self) -> str:
        head = f"noise sensitivity{f' of run {self.run_id}' if self.run_id else ''} (accuracy over trials, 95% CI)"
        lines = [head, f"{'level':>8} {'fg noise':>8} {'95% CI':>15} {'bg noise':>9} {'95% CI':>15} {'RFS':>7}"]
        for fg, bg in zip(self.curves["fg"], self.curves["bg"]):
            lines.append(f"{fg['level']:>8g} {100 * fg['acc']:7.1f}% [{100 * fg['lo']:5.1f},{100 * fg['hi']:5.1f}]"
                         f" {100 * bg['acc']:8.1f}% [{100 * bg['lo']:5.1f},{100 * bg['hi']:5.1f}]"
                         f" {self.rfs[fg['level']]:+7.3f}")
        lines.append(f"RFS overall {self.rfs_overall:+.3f}  (> 0: foreground noise hurts more)")
        return "\n".join(lines)


def trial_interval(accs: Sequence[float]) -> Tuple[float, float, float]:
    """Mean over trials with a 95% t-interval across trials, clipped to [0,1]."""
    a = np.asarray(accs, dtype=np.float64)
    m = float(a.mean())
    if a.size < 2:
        return m, m, m
    from scipy import stats  # scipy ships with scikit-image
    half = float(stats.t.ppf(0.975, a.size - 1) * a.std(ddof=1) / math.sqrt(a.size))
    return m, max(0.0, m - half), min(1.0, m + half)


def summarize(rows: Sequence[tuple]) -> NoiseSummary:
    """Curves and RFS from per-image rows (image_id, label, region, level, trial, correct)."""
    acc: Dict[Tuple[str, float, int], List[int]] = {}
    for _, _, region, level, trial, correct in rows:
        acc.setdefault((region, float(level), int(trial)), []).append(int(correct))
    levels = sorted({k[1] for k in acc})
    curves: Dict[str, List[dict]] = {"fg": [], "bg": []}
    for region in curves:
        for lvl in levels:
            per_trial = [float(np.mean(v)) for (r, l, _), v in sorted(acc.items()) if r == region and l == lvl]
            n = sum(len(v) for (r, l, _), v in acc.items() if r == region and l == lvl)
            m, lo, hi = trial_interval(per_trial) if per_trial else (float("nan"),) * 3
            curves[region].append({"level": lvl, "acc": m, "lo": lo, "hi": hi, "n": n, "trials": len(per_trial)})
    rfs = {c_fg["level"]: relative_foreground_sensitivity(c_fg["acc"], c_bg["acc"])
           for c_fg, c_bg in zip(curves["fg"], curves["bg"])}
    overall = relative_foreground_sensitivity(float(np.mean([c["acc"] for c in curves["fg"]])),
                                              float(np.mean([c["acc"] for c in curves["bg"]])))
    return NoiseSummary(curves, rfs, overall)


def noise_summary(store: Store, run_id: int) -> NoiseSummary:
    """Curves and RFS of a stored probe_noise run, recomputed from its per-image table."""
    run_row(store, run_id, kinds=("probe_noise",))
    rows = [(r["image_id"], r["label"], r["region"], r["level"], r["trial"], r["correct"])
            for r in store.probe_rows("probe_noise", run_id)]
    if not rows:
        raise BgbenchError(f"probe_noise run {run_id} has no per-image results stored")
    s = summarize(rows)
    s.run_id = int(run_id)
    return s


def probe_noise(model, data, cfg: NoiseConfig, progress: bool = True, limit: Optional[int] = None
                ) -> NoiseProbeResult:
    """Run the noise probe of `model` on the originals and masks of `data` (any dataset with masks)."""
    import time

    import torch

    from .. import console
    from ..data.layout import resolve_layout
    from ..evaluation.predict import decide
    from ..models.spec import check_compatible
    from ..runs import Provenance
    from .batches import masked_batches
    from .noise_engine import REGIONS, noisy_correct

    t0 = time.time()
    layout = resolve_layout(data, ["original"])
    pairs = layout.foregrounds()[:limit] if limit else layout.foregrounds()
    check_compatible(model, layout.classes)
    model = model.to(cfg.device).eval()
    gen = torch.Generator(device=cfg.device).manual_seed(cfg.seed)

    def predict(x):
        return decide(model, model(x), cfg.mapping)[0]

    rows: List[tuple] = []
    bar = console.progress(enabled=progress, total=len(pairs), desc="noise probe", unit="img")
    with torch.inference_mode():
        for items, x, m in masked_batches(pairs, cfg.batch_size, cfg.device):
            y = torch.as_tensor([it.label for it in items], device=cfg.device)
            ok = noisy_correct(predict, x, m, y, cfg.levels, cfg.trials, cfg.kind, gen,
                               chunk=cfg.batch_size).cpu().numpy()
            for r, region in enumerate(REGIONS):
                for li, level in enumerate(cfg.levels):
                    for t in range(cfg.trials):
                        rows.extend((it.image_id, it.label, region, level, t, int(ok[r, li, t, k]))
                                    for k, it in enumerate(items))
            bar.update(len(items))
    bar.close()
    config = asdict(cfg)
    result = NoiseProbeResult(rows=rows, config=config, seconds=time.time() - t0)
    result.provenance = Provenance.of("probe_noise", {**config, "split": layout.split, "images": len(pairs)},
                                      model=model, layout=layout, seed=cfg.seed)
    return result
