"""The Spurious ImageNet score, pure: from each image's probability of its class, per class the
separation of the user's ImageNet val images of the class (positives) from the release's images of
the class's spurious feature without the object (negatives), then the mean over classes.

As `dataset/spurious_score.py` (YanNeu/spurious_imagenet, `calculate_spurious_score`) computes it:
the score of an image is the softmax probability of the class (`get_probabilities_targets`,
`torch.softmax(out, dim=1)`, over all 1000 outputs), the classes are those the spurious images
name (`set(out_loader.dataset.targets)`: a class with two feature folders is one class there too),
and a class's number is scikit-learn's `average_precision_score` with the val images labelled 1
and the spurious images 0: the area under the precision-recall curve, which the repository's
README and table call the AUC. `spurious_score` is its mean over classes (`mean_auc_score`, the
published "spurious score"), `spurious_score_joint` the same over every image pooled
(`joint_auc_score`). The ROC AUC of the same scores (`roc_auc_score`), which the paper's wording
"AUC" may also be read as, is reported beside it as `spurious_auroc`, and each class's mean
probabilities and the share of each set predicted as the class (the repository's table).

The mean's 95% interval is a seeded percentile bootstrap over the classes (the repository gives none).
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any, Dict, List, Sequence

import numpy as np

from ...evaluation.metrics import bootstrap_mean, REPLICATES
from ..result import Summary, estimate_row

VAL, SPURIOUS = "imagenet_val", "spurious"


@dataclass(kw_only=True)
class SpuriousSummary(Summary):
    """The score (`spurious_score`: mean AP over classes, the published number), the mean ROC AUC,
    the pooled AP, and each class's row (worst first in the printed table)."""

    score: dict
    auroc: dict
    joint: float
    classes: List[dict] = field(default_factory=list)
    images: Dict[str, int] = field(default_factory=dict)

    def document(self) -> Dict[str, Any]:
        return {"spurious_score": self.score, "spurious_auroc": self.auroc, "spurious_score_joint": self.joint,
                "images": self.images, "classes": self.classes}

    def metrics(self) -> List[tuple]:
        rows = [estimate_row("spurious_score", "", self.score), estimate_row("spurious_auroc", "", self.auroc),
                ("spurious_score_joint", "", self.joint, None, None, sum(self.images.values()))]
        rows += [("spurious_class_ap", c["wnid"], c["ap"], None, None, c["val_images"] + c["spurious_images"])
                 for c in self.classes]
        return rows

    def lines(self, shown: int = 10) -> List[str]:
        s, a = self.score, self.auroc
        lines = [f"Spurious ImageNet{self.of_run()}: {len(self.classes)} classes, {self.images.get(SPURIOUS, 0)} spurious "
                 f"images against {self.images.get(VAL, 0)} ImageNet val images",
                 f"spurious score (mean AP, spurious_score.py)  {s['value']:.4f}  [{s['lo']:.4f}, {s['hi']:.4f}]",
                 f"mean ROC AUC                                 {a['value']:.4f}  [{a['lo']:.4f}, {a['hi']:.4f}]",
                 f"joint AP (all images pooled)                 {self.joint:.4f}",
                 f"{'class':<12}{'index':>6}{'AP':>8}{'ROC AUC':>9}{'p val':>8}{'p spur':>8}{'val as':>8}{'spur as':>9}"]
        worst = sorted(self.classes, key=lambda c: (c["ap"], c["index"]))
        lines += [f"{c['wnid']:<12}{c['index']:>6}{c['ap']:>8.4f}{c['auroc']:>9.4f}{c['val_prob']:>8.4f}"
                  f"{c['spurious_prob']:>8.4f}{c['val_classified_as']:>8.1%}{c['spurious_classified_as']:>9.1%}"
                  for c in worst[:shown]]
        if len(worst) > shown:
            lines.append(f"(the {shown} lowest of {len(worst)} classes; --json lists every one)")
        return lines


def summarize_spurious(rows: Sequence[Any], classes: Sequence[str], indices: Sequence[int], seed: int = 0,
                       replicates: int = REPLICATES) -> SpuriousSummary:
    """The summary of a run's rows (`probe.SpuriousRow`: arm, image_id, label, pred, score), each
    label a position in `classes` (wnids) whose ImageNet indices are `indices`."""
    from sklearn.metrics import average_precision_score, roc_auc_score
    by: Dict[tuple, List[Any]] = {}
    for r in rows:
        by.setdefault((r.arm, int(r.label)), []).append(r)
    per_class, pooled_pos, pooled_neg = [], [], []
    for label in sorted({lab for arm, lab in by if arm == SPURIOUS}):
        pos = sorted(by.get((VAL, label), []), key=lambda r: r.image_id)
        neg = sorted(by[(SPURIOUS, label)], key=lambda r: r.image_id)
        p, n = np.array([r.score for r in pos], float), np.array([r.score for r in neg], float)
        y, s = np.r_[np.ones(len(p)), np.zeros(len(n))], np.r_[p, n]
        ap = float(average_precision_score(y, s)) if len(p) else math.nan
        auroc = float(roc_auc_score(y, s)) if len(p) else math.nan
        per_class.append({"wnid": classes[label], "index": int(indices[label]), "ap": ap, "auroc": auroc,
                          "val_prob": float(p.mean()) if len(p) else math.nan, "spurious_prob": float(n.mean()),
                          "val_classified_as": float(np.mean([r.pred == label for r in pos])) if pos else math.nan,
                          "spurious_classified_as": float(np.mean([r.pred == label for r in neg])),
                          "val_images": len(p), "spurious_images": len(n)})
        pooled_pos.append(p)
        pooled_neg.append(n)
    pos_all = np.concatenate(pooled_pos) if pooled_pos else np.zeros(0)
    neg_all = np.concatenate(pooled_neg) if pooled_neg else np.zeros(0)
    joint = float(average_precision_score(np.r_[np.ones(len(pos_all)), np.zeros(len(neg_all))],
                                          np.r_[pos_all, neg_all])) if len(pos_all) else math.nan
    aps = np.array([c["ap"] for c in per_class], float)
    aurocs = np.array([c["auroc"] for c in per_class], float)
    images = {VAL: int(sum(c["val_images"] for c in per_class)),
              SPURIOUS: int(sum(c["spurious_images"] for c in per_class))}
    return SpuriousSummary(score=bootstrap_mean(aps, replicates, seed).as_dict(),
                           auroc=bootstrap_mean(aurocs, replicates, seed).as_dict(),
                           joint=joint, classes=per_class, images=images)
