"""The saliency probe: Grad-CAM (Captum's LayerGradCam) on the predicted class, its alignment
with the object mask per image, class summaries, and a PNG of example overlays.
"""
from __future__ import annotations

import math
import time
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Dict, List, Optional

import numpy as np

from .. import checks
from ..errors import BgbenchError
from ..evaluation.metrics import Z95
from .saliency_metrics import saliency_alignment

METRICS = ("precision", "iou", "dice", "density_diff")


@dataclass
class SaliencyConfig:
    layer: Optional[str] = None  # module path inside the network; default: the last feature stage
    batch_size: int = 32
    device: str = "cpu"
    examples: int = 8

    def __post_init__(self):
        checks.at_least("--batch-size", self.batch_size, 1)
        checks.at_least("--examples", self.examples, 0)
        checks.device(self.device)


def mean_interval(values: np.ndarray):
    """Mean with a normal 95% interval (NaNs, from all-zero CAMs, left out)."""
    v = np.asarray(values, dtype=np.float64)
    v = v[~np.isnan(v)]
    if v.size == 0:
        return float("nan"), float("nan"), float("nan"), 0
    m = float(v.mean())
    half = Z95 * float(v.std(ddof=1)) / math.sqrt(v.size) if v.size > 1 else 0.0
    return m, m - half, m + half, int(v.size)


@dataclass
class SaliencyResult:
    """rows: (image_id, label, pred, precision, iou, dice, density_diff)."""

    rows: List[tuple]
    classes: List[str]
    layer: str
    overlays: Optional[str] = None
    seconds: float = 0.0
    run_id: Optional[int] = None
    provenance: object = None

    def table_rows(self) -> Dict[str, List[tuple]]:
        return {"probe_saliency": self.rows}

    def column(self, name: str, label: Optional[int] = None) -> np.ndarray:
        k = 3 + METRICS.index(name)
        return np.array([r[k] for r in self.rows if label is None or r[1] == label], dtype=np.float64)

    def metric_rows(self) -> List[tuple]:
        return [(f"saliency_{name}", "", *mean_interval(self.column(name))) for name in METRICS]

    def per_class(self) -> Dict[str, Dict[str, float]]:
        out = {}
        for c, cls in enumerate(self.classes):
            if any(r[1] == c for r in self.rows):
                out[cls] = {name: mean_interval(self.column(name, c))[0] for name in METRICS}
        return out

    def outputs(self) -> dict:
        return {"overlays": self.overlays, "layer": self.layer, "images": len(self.rows),
                "seconds": round(self.seconds, 2)}

    def to_dict(self) -> dict:
        overall = {name: dict(zip(("value", "lo", "hi", "n"), mean_interval(self.column(name)))) for name in METRICS}
        return {"run_id": self.run_id, "layer": self.layer, "overall": overall, "per_class": self.per_class(),
                "overlays": self.overlays}

    def table(self) -> str:
        lines = [f"saliency alignment (Grad-CAM on the predicted class, layer {self.layer})",
                 f"{'class':<24}" + "".join(f"{n:>14}" for n in METRICS)]
        for cls, vals in self.per_class().items():
            lines.append(f"{cls:<24}" + "".join(f"{vals[n]:14.3f}" for n in METRICS))
        lines.append(f"{'overall':<24}" + "".join(f"{mean_interval(self.column(n))[0]:14.3f}" for n in METRICS))
        if self.overlays:
            lines.append(f"example overlays: {self.overlays}")
        return "\n".join(lines)


def default_layer(net) -> str:
    """The last feature stage of a timm model (its feature_info), else the last conv module."""
    name = _last_feature_stage(net)
    if name is not None:
        return name
    import torch.nn as nn
    convs = [n for n, mod in net.named_modules() if isinstance(mod, nn.Conv2d)]
    if not convs:
        raise BgbenchError("cannot find a convolutional layer for Grad-CAM; name one with --layer")
    return convs[-1]


def _last_feature_stage(net) -> Optional[str]:
    """The module path of a timm model's last feature stage, or None when it has no usable feature_info."""
    info = getattr(net, "feature_info", None)
    if info is None:
        return None
    try:
        name = info[-1]["module"] if isinstance(info, list) else info.module_name()[-1]
        net.get_submodule(name)
    except (AttributeError, KeyError, IndexError, TypeError):
        return None
    return name


def resolve_layer(model, name: Optional[str]):
    """(name, module) of the Grad-CAM target layer inside model.net."""
    name = name or default_layer(model.net)
    try:
        return name, model.net.get_submodule(name)
    except AttributeError:
        names = [n for n, _ in model.net.named_modules() if n][-8:]
        raise BgbenchError(f"--layer {name!r} is not a module of {model.spec.name} (last ones: {', '.join(names)})") from None


def gradcam_batch(model, layer, x):
    """(CAM upsampled to the image size and ReLU'd (N,H,W), raw predicted class (N,)), batched."""
    import torch
    from captum.attr import LayerAttribution, LayerGradCam
    with torch.no_grad():
        target = model(x).argmax(dim=1)
    cam = LayerGradCam(model, layer).attribute(x, target=target, relu_attributions=True)
    cam = LayerAttribution.interpolate(cam, tuple(x.shape[-2:]), interpolate_mode="bilinear")
    return cam.clamp_min(0).squeeze(1).detach(), target


def probe_saliency(model, data, cfg: SaliencyConfig, out_dir: Optional[str | Path] = None, progress: bool = True,
                   limit: Optional[int] = None) -> SaliencyResult:
    """Grad-CAM alignment of `model` on the originals and masks of `data`."""
    from .. import console
    from ..data.layout import resolve_layout
    from ..models.spec import check_compatible
    from ..runs import Provenance
    from .batches import masked_batches

    t0 = time.time()
    layout = resolve_layout(data, ["original"])
    pairs = layout.foregrounds()[:limit] if limit else layout.foregrounds()
    check_compatible(model, layout.classes)
    model = model.to(cfg.device).eval()
    layer_name, layer = resolve_layer(model, cfg.layer)
    rows: List[tuple] = []
    examples = []
    bar = console.progress(enabled=progress, total=len(pairs), desc="saliency probe", unit="img")
    for items, x, m in masked_batches(pairs, cfg.batch_size, cfg.device):
        cams, preds = gradcam_batch(model, layer, x)
        cams, preds, masks = cams.cpu().numpy(), preds.cpu().numpy(), m[:, 0].cpu().numpy() > 0.5
        for k, it in enumerate(items):
            s = saliency_alignment(cams[k], masks[k])
            rows.append((it.image_id, it.label, int(preds[k]), *(s[n] for n in METRICS)))
            if len(examples) < cfg.examples:
                examples.append((it.image_id, x[k].permute(1, 2, 0).cpu().numpy(), cams[k], masks[k], s["precision"]))
        bar.update(len(items))
    bar.close()
    result = SaliencyResult(rows=rows, classes=list(layout.classes), layer=layer_name)
    if examples and out_dir is not None:
        result.overlays = str(write_overlays(examples, Path(out_dir) / "saliency_overlays.png"))
    result.seconds = time.time() - t0
    config = {**asdict(cfg), "layer": layer_name, "split": layout.split, "images": len(pairs)}
    result.provenance = Provenance.of("probe_saliency", config, model=model, layout=layout)
    return result


def write_overlays(examples, path: Path) -> Path:
    """A grid of images with their CAM overlaid and the mask outlined."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    path.parent.mkdir(parents=True, exist_ok=True)
    cols = min(4, len(examples))
    rows = math.ceil(len(examples) / cols)
    fig, axes = plt.subplots(rows, cols, figsize=(2.6 * cols, 2.8 * rows), squeeze=False)
    for ax in axes.ravel():
        ax.axis("off")
    for ax, (image_id, img, cam, mask, prec) in zip(axes.ravel(), examples):
        ax.imshow(img)
        ax.imshow(cam / cam.max() if cam.max() > 0 else cam, cmap="jet", alpha=0.45, vmin=0, vmax=1)
        ax.contour(mask.astype(float), levels=[0.5], colors="white", linewidths=0.8)
        ax.set_title(f"{image_id.split('/')[-1][:18]}\nprecision {prec:.2f}", fontsize=7)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path
