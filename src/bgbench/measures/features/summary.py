"""The summary of a features probe, from its stored rows alone (no model): per class its top
features, and over all of them the mean background share beside the background's area share
(an evenly spread map's share, the chance level), the spurious candidates, and the top one."""
from __future__ import annotations

import json
import math
from dataclasses import dataclass, field
from typing import Dict, List, Optional, Sequence

from ...store.schema import TableRow
from ..result import Summary



@dataclass(frozen=True, slots=True, order=True)
class FeaturesRow(TableRow):
    """One top feature (a row of the probe's table, one per class and rank): feature `feature`,
    ranked `rank` in class `class_index` by its `contribution` (its `weight` times its
    `mean_activation` over the class's `images`), its map's share on the background `bg_share`
    beside the background's area share `bg_area`, `spurious` 1 when it is a candidate; its top
    images, their activations and background shares as JSON lists."""

    class_index: int
    rank: int
    feature: int
    contribution: float
    weight: float
    mean_activation: float
    images: int
    bg_share: Optional[float]
    bg_area: float
    spurious: int
    top_images: str
    top_activations: str
    top_bg_shares: str


#: Lists stored as JSON text.
JSON_COLUMNS = ("top_images", "top_activations", "top_bg_shares")


def rule_text(threshold: Optional[float]) -> str:
    """The spurious-candidate rule in words (recorded in the run and shown beside the counts)."""
    if threshold is None:
        return "background share > background area share (the map is denser on the background than on the object)"
    return f"background share > {threshold:g}"


def _mean(values: Sequence[Optional[float]]) -> Optional[float]:
    known = [v for v in values if v is not None]
    return sum(known) / len(known) if known else None


@dataclass
class FeaturesSummary(Summary):
    """per_class: [{class_index, name, images, bg_share, spurious, features: [row dicts]}]."""

    per_class: List[dict]
    rule: str
    group_by: str
    config: Dict[str, object] = field(default_factory=dict)

    @property
    def features(self) -> List[dict]:
        return [f for c in self.per_class for f in c["features"]]

    @property
    def bg_share(self) -> Optional[float]:
        return _mean([f["bg_share"] for f in self.features])

    @property
    def bg_area(self) -> Optional[float]:
        return _mean([f["bg_area"] for f in self.features])

    @property
    def spurious(self) -> int:
        return sum(1 for f in self.features if f["spurious"])

    @property
    def top_spurious(self) -> Optional[dict]:
        """The spurious candidate with the largest contribution to its class's logit (ties: lower
        class, then rank), with its class name; None when no feature is flagged."""
        flagged = [(f, c) for c in self.per_class for f in c["features"] if f["spurious"]]
        if not flagged:
            return None
        f, c = min(flagged, key=lambda fc: (-fc[0]["contribution"], fc[1]["class_index"], fc[0]["rank"]))
        return {"class": c["name"], "class_index": c["class_index"], **f}

    def document(self) -> dict:
        return {"group_by": self.group_by, "rule": self.rule, "features": len(self.features),
                "bg_share": self.bg_share, "bg_area": self.bg_area, "spurious": self.spurious,
                "top_spurious": self.top_spurious, "per_class": self.per_class,
                **{k: self.config.get(k) for k in ("top_features", "top_images", "threshold")}}

    def metrics(self) -> List[tuple]:
        """features_bg_share and features_bg_area (variant '': over every top feature; a class name:
        its own), features_spurious (count; n: features), features_top_spurious_bg_share."""
        n = len(self.features)
        rows = [("features_bg_share", "", self.bg_share, None, None, n),
                ("features_bg_area", "", self.bg_area, None, None, n),
                ("features_spurious", "", float(self.spurious), None, None, n)]
        for c in self.per_class:
            rows += [("features_bg_share", c["name"], c["bg_share"], None, None, len(c["features"])),
                     ("features_bg_area", c["name"], c["bg_area"], None, None, len(c["features"]))]
        top = self.top_spurious
        rows.append(("features_top_spurious_bg_share", "", None if top is None else top["bg_share"], None, None,
                     self.spurious))
        return rows

    def lines(self) -> List[str]:
        lines = [f"spurious-feature discovery (Salient ImageNet: features ranked by weight x mean activation over "
                 f"the images grouped by {self.group_by}; maps on each feature's top images)",
                 f"{'class':<22}{'images':>7}{'rank':>5}{'feature':>8}{'contrib.':>10}{'bg share':>9}"
                 f"{'bg area':>8}  {'spurious':<9}top images"]
        for c in self.per_class:
            for f in c["features"]:
                shown = ", ".join(i.split("/")[-1] for i in f["top_images"][:3])
                more = f" +{len(f['top_images']) - 3}" if len(f["top_images"]) > 3 else ""
                lines.append(f"{c['name'][:21]:<22}{c['images']:>7}{f['rank']:>5}{f['feature']:>8}"
                             f"{f['contribution']:>+10.3f}{_f(f['bg_share']):>9}{_f(f['bg_area']):>8}  "
                             f"{'yes' if f['spurious'] else 'no':<9}{shown}{more}")
        lines.append(f"mean over the {len(self.features)} top features: background share {_f(self.bg_share)} "
                     f"(background area {_f(self.bg_area)}: an evenly spread map's share); {self.spurious} "
                     f"spurious candidates ({self.rule})")
        top = self.top_spurious
        lines.append("no spurious candidate" if top is None else
                     f"top spurious candidate: {top['class']} feature {top['feature']} (rank {top['rank']}, "
                     f"contribution {top['contribution']:+.3f}): background share {_f(top['bg_share'])} "
                     f"(area {_f(top['bg_area'])})")
        return lines


def _f(v: Optional[float]) -> str:
    return "-" if v is None or (isinstance(v, float) and math.isnan(v)) else f"{v:.3f}"


def summarize_features(rows: Sequence[FeaturesRow], class_name, config: dict) -> FeaturesSummary:
    """rows: the probe's (stored or fresh); class_name: index -> display name."""
    by_class: Dict[int, dict] = {}
    for row in rows:
        f = {name: getattr(row, name) for name in FeaturesRow.names()}
        f.update({key: json.loads(f[key]) for key in JSON_COLUMNS if isinstance(f[key], str)})
        f["spurious"] = bool(f["spurious"])
        c = int(f.pop("class_index"))
        entry = by_class.setdefault(c, {"class_index": c, "name": class_name(c), "images": int(f["images"]),
                                        "features": []})
        entry["features"].append(f)
    per_class = [by_class[c] for c in sorted(by_class)]
    for entry in per_class:
        entry["features"].sort(key=lambda f: f["rank"])
        entry["bg_share"] = _mean([f["bg_share"] for f in entry["features"]])
        entry["bg_area"] = _mean([f["bg_area"] for f in entry["features"]])
        entry["spurious"] = sum(1 for f in entry["features"] if f["spurious"])
    threshold = config.get("threshold")
    return FeaturesSummary(per_class=per_class, rule=rule_text(threshold), group_by=str(config.get("group_by")),
                           config=dict(config))
