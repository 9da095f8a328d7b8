"""Two stored runs on the same images, compared pairwise (DESIGN.md §2, "Comparing two models").

Eval runs: per variant, the accuracy difference with an exact McNemar p-value, and the BG-Gap
difference with a paired bootstrap over foregrounds. Challenge runs: McNemar on the verdicts.

This is the one comparison: `bgbench compare` and the report's comparisons both call
`compare_runs`. Its rule: two runs are compared only on the same data (equal data fingerprints)
and, per variant, on exactly the same images with the same labels; anything else is refused
with a one-line reason, never silently narrowed to the images both happen to share, because a
paired test on a subset the user did not choose answers a question nobody asked.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Dict, Optional

import numpy as np

from .result import Result
from .errors import BgbenchError, with_article
from .evaluation.metrics import Estimate, accuracy, mcnemar, paired_difference
from .data.layout import IN9_VARIANTS
from .probing.tables import RunTable, stored_table
from .evaluation.metrics import REPLICATES, interval

CHALLENGE_KINDS = ("challenge",)


@dataclass
class VariantComparison:
    acc_a: Estimate
    acc_b: Estimate
    diff: float
    test: Dict[str, float]

    @property
    def n(self) -> int:
        return self.acc_a.n

    def as_dict(self) -> dict:
        return {"acc_a": self.acc_a.as_dict(), "acc_b": self.acc_b.as_dict(), "diff": self.diff, "n": self.n,
                **self.test}


@dataclass
class Comparison(Result):
    """A minus B, pairwise on shared images."""

    run_a: Optional[int]  # None for tables that were never stored
    run_b: Optional[int]
    kind: str
    variants: Dict[str, VariantComparison] = field(default_factory=dict)
    bg_gap_diff: Optional[Estimate] = None
    challenge: Optional[VariantComparison] = None

    def to_dict(self) -> dict:
        return {"run_a": self.run_a, "run_b": self.run_b, "kind": self.kind,
                "variants": {v: c.as_dict() for v, c in self.variants.items()},
                "bg_gap_diff": self.bg_gap_diff.as_dict() if self.bg_gap_diff else None,
                "challenge": self.challenge.as_dict() if self.challenge else None}

    def table(self) -> list:
        """One row per variant (and the challenge): both accuracies, A - B and the paired test."""
        rows = list(self.variants.items()) + ([("challenge", self.challenge)] if self.challenge else [])
        return [{"variant": v, "acc_a": c.acc_a.value, "acc_b": c.acc_b.value, "diff": c.diff, "n": c.n, **c.test}
                for v, c in rows]

    def text(self) -> str:
        def name(run_id: Optional[int]) -> str:
            return "table" if run_id is None else f"run {run_id}"
        lines = [f"{name(self.run_a)} (A) vs {name(self.run_b)} (B), paired on the same images",
                 f"{'':<12} {'acc A':>7} {'acc B':>7} {'A - B':>8} {'A only':>7} {'B only':>7} {'McNemar p':>10} "
                 f"{'n':>6}"]
        for r in self.table():
            lines.append(f"{r['variant']:<12} {100 * r['acc_a']:6.1f}% {100 * r['acc_b']:6.1f}% {100 * r['diff']:+7.1f}% "
                         f"{r['a_only']:>7} {r['b_only']:>7} {r['p_value']:>10.3g} {r['n']:>6}")
        if self.bg_gap_diff is not None:
            g = self.bg_gap_diff
            lines.append(f"BG-Gap A - B: {100 * g.value:+.1f}%  95% CI {interval(g.lo, g.hi, g.n, lambda v: f'{100 * v:+.1f}%')} "
                         f"(paired bootstrap over {g.n} foregrounds)")
        if self.challenge is not None:
            lines.append("challenge row: accuracy = share of foregrounds never fooled")
        return "\n".join(lines)


def compare_runs(store, run_a: int, run_b: int, n_boot: int = REPLICATES, seed: int = 0) -> Comparison:
    """Compare two eval runs, or two challenge runs, on the same images (A minus B)."""
    ra, rb = (store.run_row(run, kinds=("eval", *CHALLENGE_KINDS)) for run in (run_a, run_b))
    if ra["kind"] != rb["kind"]:
        raise BgbenchError(f"run {run_a} is {with_article(ra['kind'])} run and run {run_b} "
                           f"{with_article(rb['kind'])} run; compare two of the same kind")
    if ra["data_fingerprint"] != rb["data_fingerprint"]:
        raise BgbenchError(f"runs {run_a} and {run_b} are on different data (fingerprint "
                           f"{_short_fp(ra['data_fingerprint'])} of {ra['data_root'] or '?'} vs "
                           f"{_short_fp(rb['data_fingerprint'])} of {rb['data_root'] or '?'}); compare runs on one dataset")
    if ra["kind"] in CHALLENGE_KINDS:
        return _compare_challenges(store, int(run_a), int(run_b))
    return compare_tables(stored_table(store, run_a), stored_table(store, run_b), n_boot=n_boot, seed=seed)


def compare_tables(ta: RunTable, tb: RunTable, n_boot: int = REPLICATES, seed: int = 0) -> Comparison:
    """Compare two per-image tables on the same images (A minus B): McNemar per shared variant, and
    the BG-Gap difference with a paired bootstrap over foregrounds."""
    if ta.data_fingerprint and tb.data_fingerprint and ta.data_fingerprint != tb.data_fingerprint:
        raise BgbenchError(f"{ta.name} and {tb.name} are on different data (fingerprint "
                           f"{_short_fp(ta.data_fingerprint)} of {ta.data_root or '?'} vs {_short_fp(tb.data_fingerprint)} "
                           f"of {tb.data_root or '?'}); compare results on one dataset")
    pa, pb = ta.variants, tb.variants
    order = {v: k for k, v in enumerate(IN9_VARIANTS)}
    shared = sorted((v for v in pa if v in pb), key=lambda v: (order.get(v, len(order)), v))
    if not shared:
        raise BgbenchError(f"{ta.name} and {tb.name} share no variant ({', '.join(pa)} vs {', '.join(pb)})")
    out = Comparison(ta.run_id, tb.run_id, "eval")
    for v in shared:
        a, b = pa[v], pb[v]
        _same_images(a.image_ids, b.image_ids, a.labels, b.labels, ta.name, tb.name, v)
        ca, cb = a.correct, b.correct
        out.variants[v] = VariantComparison(accuracy(ca), accuracy(cb), float(ca.mean() - cb.mean()), mcnemar(ca, cb))
    if "mixed_same" in shared and "mixed_rand" in shared:
        gap_a = _gap_per_foreground(pa)
        gap_b = _gap_per_foreground(pb)
        if gap_a.size:  # no foreground in both mixed variants: no BG-Gap (and no NaN in --json)
            out.bg_gap_diff = paired_difference(gap_a, gap_b, n_boot=n_boot, seed=seed)
    return out


def _short_fp(fingerprint: Optional[str]) -> str:
    return fingerprint[:12] if fingerprint else "none"


def _gap_per_foreground(p) -> np.ndarray:
    """Per foreground: correct on mixed_same minus correct on mixed_rand (its mean is the BG-Gap)."""
    s, r = p["mixed_same"], p["mixed_rand"]
    sc, rc, si, ri = s.correct, r.correct, s.by_id(), r.by_id()
    return np.array([float(sc[si[i]]) - float(rc[ri[i]]) for i in s.image_ids if i in ri])


def _same_images(ids_a, ids_b, labels_a, labels_b, name_a: str, name_b: str, what: str) -> None:
    if list(ids_a) != list(ids_b):
        only_a = sorted(set(ids_a) - set(ids_b))
        only_b = sorted(set(ids_b) - set(ids_a))
        example = (only_a or only_b or ["(same ids, different order)"])[0]
        raise BgbenchError(f"{name_a} and {name_b} are not on the same images ({what}: {len(only_a)} only in "
                           f"{_short(name_a)}, {len(only_b)} only in {_short(name_b)}, e.g. {example}); "
                           f"compare runs on one dataset")
    if not np.array_equal(labels_a, labels_b):
        raise BgbenchError(f"{name_a} and {name_b} label the same images differently ({what}); "
                           f"compare runs on one dataset")


def _short(name: str) -> str:
    """'run 3' -> '3', the short name the count's clause uses ('2 only in 3'); other names as they are."""
    return name[4:] if name.startswith("run ") else name


def _compare_challenges(store, run_a: int, run_b: int) -> Comparison:
    fa, fb = store.challenge_results(run_a), store.challenge_results(run_b)
    if not fa or not fb:
        raise BgbenchError(f"challenge run {run_a if not fa else run_b} has no verdicts stored")
    ids_a, ids_b = [r["image_id"] for r in fa], [r["image_id"] for r in fb]
    la, lb = (np.array([r["label"] for r in f]) for f in (fa, fb))
    _same_images(ids_a, ids_b, la, lb, f"run {run_a}", f"run {run_b}", "challenge foregrounds")
    sa, sb = (np.array([not r["fooled"] for r in f]) for f in (fa, fb))
    out = Comparison(run_a, run_b, "challenge")
    out.challenge = VariantComparison(accuracy(sa), accuracy(sb), float(sa.mean() - sb.mean()), mcnemar(sa, sb))
    return out
