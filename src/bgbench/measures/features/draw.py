"""The features probe's galleries: re-run the network on the images they show (each once), then
one PNG per class (`features_gallery`). The ranking never needs this second pass; only the
pictures do, so its cost is bounded by the galleries' images, not by the dataset."""
from __future__ import annotations

from pathlib import Path
from typing import Dict, List, Sequence

from .engine import RankedFeature, gallery_order
from .gallery import GalleryRow, write_gallery
from ..common.names import prediction_namer

GALLERY_FILE = "features_class{:04d}.png"


def caption(f: RankedFeature) -> str:
    share = "-" if f.bg_share is None else f"{f.bg_share:.2f}"
    flag = "  SPURIOUS?" if f.spurious else ""
    return (f"#{f.rank} feature {f.feature}{flag}\ncontribution {f.contribution:+.3f}\n"
            f"bg share {share} (area {f.bg_area:.2f})")


def draw_galleries(head, pairs: Sequence, ranked: Sequence[RankedFeature], config: dict, cfg,
                   out: Path) -> Dict[int, str]:
    """{class index: PNG path} for the `cfg.galleries` largest classes: per top feature a row of its
    top images, each with the feature's activation map over it and the mask outlined."""
    import torch

    from ...evaluation.feed import masked_batches
    classes = gallery_order(ranked, cfg.galleries)
    shown = [f for f in ranked if f.class_index in set(classes)]
    wanted = sorted({i for f in shown for i in f.top})
    needed: Dict[int, List[int]] = {}
    for f in shown:
        for i in f.top:
            needed.setdefault(i, []).append(f.feature)
    cells: Dict[tuple, object] = {}
    images: Dict[int, tuple] = {}
    position = {pairs[i][0].image_id: i for i in wanted}
    with torch.no_grad():
        for _, (items, x, m, _) in masked_batches([pairs[i] for i in wanted], batch_size=cfg.batch_size,
                                                  device=cfg.device, workers=cfg.workers):
            maps, _, _ = head.forward(x)
            for k, it in enumerate(items):
                i = position[it.image_id]
                images[i] = (x[k].permute(1, 2, 0).cpu().numpy(), m[k, 0].cpu().numpy() > 0.5)
                for j in needed[i]:
                    cells[(i, j)] = maps[k, j].float().cpu().numpy()
    name = prediction_namer(config["classes"], config["label_space"] == "dataset")
    out.mkdir(parents=True, exist_ok=True)
    written = {}
    for c in classes:
        rows = [GalleryRow(caption(f), [(images[i][0], cells[(i, f.feature)], images[i][1]) for i in f.top])
                for f in shown if f.class_index == c]
        title = (f"{name(c)}: top {len(rows)} features by contribution to its logit, each on its "
                 f"{max(len(r.panels) for r in rows)} most activating images; object mask outlined in white")
        written[c] = str(write_gallery(rows, title, out / GALLERY_FILE.format(c)))
    return written
