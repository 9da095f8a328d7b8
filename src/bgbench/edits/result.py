"""What `bgbench edit` returns: the written rows and rejects, per-level means, and its provenance."""
from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, List, Optional

import numpy as np

from ..data import manifest as M
from ..data.shards import Shard
from ..result import Result

ORIGINAL = "original"
#: Per-level means, as the table, the JSON and the recorded metrics name them.
MEASURES = ("pixel_rate", "glcm_contrast", "glcm_dissimilarity")


@dataclass
class EditResult(Result):
    out: Path
    levels: List[str]
    rows: List[M.ManifestRow]
    rejects: List[M.RejectRow]
    skipped: List[str] = field(default_factory=list)  # levels not run, with why
    run_id: Optional[int] = None
    shard: Optional[Shard] = None
    provenance: Any = None  # provenance.Provenance: how `record` files the run

    def images(self) -> int:
        return sum(1 for r in self.rows if r.folder == ORIGINAL)

    def level_means(self) -> List[dict]:
        """Per level: images, mean pixel rate and mean GLCM contrast / dissimilarity of the background
        (a row's pixel rate is its fg_fraction, its GLCM statistics are in its params)."""
        out = []
        for level in [ORIGINAL, *self.levels]:
            rows = [r for r in self.rows if r.folder == level]
            out.append({"level": level, "images": len(rows), **{key: _mean(rows, key) for key in MEASURES}})
        return out

    def outputs(self) -> dict:
        return {"out": str(self.out), "images": self.images(),
                "edited": sum(1 for r in self.rows if r.folder != ORIGINAL), "rejected": len(self.rejects),
                "reasons": dict(Counter(r.reason for r in self.rejects)), "levels": self.level_means(),
                "skipped": self.skipped, "manifest": str(self.out / M.MANIFEST),
                "shard": str(self.shard) if self.shard else None}

    to_dict = outputs
    table = level_means  # one row per level: images, mean pixel rate and mean GLCM contrast and dissimilarity

    def metric_rows(self) -> list:
        return [(key, m["level"], m[key], None, None, m["images"]) for m in self.level_means()
                for key in ("glcm_contrast", "glcm_dissimilarity", "pixel_rate") if m[key] is not None]

    def text(self) -> str:
        if self.shard is not None:
            return (f"{self.levels_table()}\nshard {self.shard}: edited {self.images()} images in {self.out}; join the "
                    f"shards with `bgbench merge`")
        return (f"{self.levels_table()}\nedited {self.images()} images into {len(self.levels)} levels in {self.out}; "
                f"manifest {self.out / M.MANIFEST}")

    def levels_table(self) -> str:
        f = lambda v: "-" if v is None else f"{v:.4f}"  # noqa: E731
        lines = [f"{'level':<18}{'images':>7}{'pixel rate':>12}{'GLCM contrast':>15}{'dissimilarity':>15}",
                 *(f"{m['level']:<18}{m['images']:>7}{f(m['pixel_rate']):>12}{f(m['glcm_contrast']):>15}"
                   f"{f(m['glcm_dissimilarity']):>15}" for m in self.level_means())]
        if self.rejects:
            by = ", ".join(f"{k}: {n}" for k, n in sorted(Counter(r.reason for r in self.rejects).items()))
            lines.append(f"rejected {len(self.rejects)} ({by}); see {self.out / M.REJECTS}")
        return "\n".join(lines)


def _mean(rows: List[M.ManifestRow], key: str) -> Optional[float]:
    """The mean of the rows' finite `key` values (a pixel rate is a row's fg_fraction, GLCM statistics
    are in its params), to 4 decimals; None: there is none."""
    v = [r.fg_fraction if key == "pixel_rate" else (r.params or {}).get(key) for r in rows]
    v = np.array([x for x in v if x is not None], dtype=np.float64)
    v = v[np.isfinite(v)]
    return round(float(v.mean()), 4) if v.size else None
