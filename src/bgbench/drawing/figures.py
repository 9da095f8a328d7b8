"""The report's figures, in one style: plain arrays and dicts in, an image file's path out.

Every figure is a function of stored tables (no model, no store access), so the report can be
redrawn at any time from the results store alone. matplotlib runs on the Agg backend: nothing
here needs a display.

A figure is written in the format its path's suffix names: `.png` (a chart as a palette PNG,
photographs in every colour) or `.webp`. A path without a suffix lets the figure choose: a chart is a palette PNG (8-25 KB here; the same charts as SVG measured larger,
text as text included, and drawing both to keep the smaller doubled the report's drawing time), a
figure of photographs (`photo=True`) lossy WebP; the path written is returned.
"""
from __future__ import annotations

from contextlib import contextmanager
from pathlib import Path
from typing import Dict, Iterator, List, Sequence, Tuple

import io

import numpy as np

from ..data.images import decode_image

#: One palette for every figure (colour-blind safe, Okabe-Ito order).
PALETTE = ("#0072B2", "#E69F00", "#009E73", "#D55E00", "#CC79A7", "#56B4E9", "#F0E442", "#000000", "#999999")
STYLE = {
    "font.size": 9, "axes.titlesize": 10, "axes.labelsize": 9, "legend.fontsize": 7,
    "axes.spines.top": False, "axes.spines.right": False, "axes.grid": True, "axes.grid.axis": "y",
    "grid.alpha": 0.3, "axes.prop_cycle": None, "savefig.dpi": 100, "savefig.bbox": "tight",
    "svg.fonttype": "none", "svg.hashsalt": "bgbench",
}
#: WebP quality of a figure of photographs.
PHOTO_QUALITY = 70
#: The resolution of a figure of photographs written for the page (a chart's is STYLE's).
PHOTO_DPI = 72
#: The widest a run's own picture is copied into the report (it is reduced to this, in pixels).
PICTURE_WIDTH = 640


def _pyplot():
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    return plt


@contextmanager
def _subplots(*args, **kwargs) -> Iterator:
    """`plt.subplots(*args, **kwargs)` (the figure and its axes) in the report's style."""
    plt = _pyplot()
    from cycler import cycler
    with plt.rc_context({**STYLE, "axes.prop_cycle": cycler(color=PALETTE)}):
        yield plt.subplots(*args, **kwargs)


def _save(fig, path: Path, photo: bool = False) -> Path:
    """Write `fig` in the format of `path`'s suffix, or, without one, the smaller fitting format
    (see the module's docstring); close it and return the path written."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    try:
        suffix = path.suffix.lower()
        if suffix == ".png" and photo:  # a run's own picture of photographs: every colour kept
            fig.savefig(path, pil_kwargs={"optimize": True})
            return path
        webp = suffix == ".webp" or (not suffix and photo)
        if suffix not in (".png", ".webp"):
            path = path.with_suffix(".webp" if webp else ".png")
        _raster(fig, webp, path)
        return path
    finally:
        _pyplot().close(fig)


def _raster(fig, photo: bool, path: Path) -> None:
    """Write the figure as a lossy WebP (`photo`), else as a PNG of at most 256 colours (what a chart
    drawn in a few colours needs; Pillow's median cut picks them), compressed."""
    from PIL import Image
    buf = io.BytesIO()
    fig.savefig(buf, format="png", **({"dpi": PHOTO_DPI} if photo else {}))
    with Image.open(io.BytesIO(buf.getvalue())) as im:
        rgb = im.convert("RGB")
    if photo:
        rgb.save(path, format="WEBP", quality=PHOTO_QUALITY, method=4)
    else:
        rgb.quantize(256, dither=Image.Dither.NONE).save(path, format="PNG", optimize=True)


def _save_horizontal(fig, ax, path: Path) -> Path:
    """`_save` of a chart of horizontal bars: its grid lines run across the bars, not along them."""
    ax.grid(axis="x", alpha=0.3)
    ax.grid(axis="y", visible=False)
    return _save(fig, path)


def accuracy_bars(path: Path, variants: Sequence[str], value: Sequence[float], lo: Sequence[float],
                  hi: Sequence[float]) -> Path:
    """Accuracy per variant as bars, with the 95% interval as error bars (fractions in, % shown)."""
    v, lo, hi = (100 * np.asarray(a, dtype=float) for a in (value, lo, hi))
    with _subplots(figsize=(max(3.5, 0.5 * len(variants) + 1.2), 2.8)) as (fig, ax):
        x = np.arange(len(variants))
        ax.bar(x, v, color=PALETTE[0], width=0.65)
        ax.errorbar(x, v, yerr=[v - lo, hi - v], fmt="none", ecolor="black", capsize=3, linewidth=1)
        ax.set_xticks(x, list(variants), rotation=30, ha="right")
        ax.set(ylim=(0, 100), ylabel="accuracy (%)")
        return _save(fig, path)


def top_backgrounds_grid(path: Path, rows: Dict[str, List[Tuple[Path, float]]]) -> Path:
    """The paper's Fig. 4: per class (one row), its most fooling backgrounds, each titled with its ASR.

    rows: class name -> [(background image path, attack success rate), ...] in rank order.
    """
    k = max((len(v) for v in rows.values()), default=1)
    with _subplots(len(rows), k, figsize=(1.4 * k + 1.2, 1.45 * len(rows)), squeeze=False) as (fig, axes):
        for r, (name, cells) in enumerate(rows.items()):
            for j in range(k):
                ax = axes[r][j]
                ax.axis("off")
                if j < len(cells):
                    bg, asr = cells[j]
                    ax.imshow(decode_image(bg))
                    ax.set_title(f"ASR {100 * asr:.0f}%", fontsize=7, pad=2)
            axes[r][0].text(-0.08, 0.5, name, transform=axes[r][0].transAxes, ha="right", va="center", fontsize=8)
        fig.suptitle("Most fooling backgrounds per class", fontsize=10)
        fig.tight_layout()
        return _save(fig, path, photo=True)


def challenge_figures(report, out_dir: Path) -> Dict[str, str]:
    """The --full figures of a challenge report (paper Fig. 4 and Fig. 24) in `out_dir`: {name: path}."""
    out_dir = Path(out_dir)
    grid = {cls: [(Path(e["path"]), e["asr"]) for e in entries] for cls, entries in report.full["top5"].items()}
    asr = np.array([row[2] for row in report.asr_rows], dtype=float)
    labels = np.array([row[1] for row in report.asr_rows])
    classes = [row["class"] for row in report.per_class]
    return {"top5_grid": str(top_backgrounds_grid(out_dir / "top5_backgrounds.png", grid)),
            "asr_histogram": str(asr_histogram(out_dir / "asr_histogram.png", asr, labels, classes))}


def asr_histogram(path: Path, asr: np.ndarray, bg_labels: np.ndarray, classes: Sequence[str]) -> Path:
    """The paper's Fig. 24: histogram of attack success rates over all backgrounds, stacked by class."""
    with _subplots(figsize=(6.0, 3.2)) as (fig, ax):
        series = [asr[bg_labels == c] for c in range(len(classes))]
        ax.hist(series, bins=np.linspace(0, 1, 21), stacked=True, label=list(classes),
                color=[PALETTE[c % len(PALETTE)] for c in range(len(classes))])
        ax.set(xlabel="attack success rate of a background", ylabel="backgrounds")
        ax.legend(ncol=2, frameon=False)
        return _save(fig, path)


def category_bars(path: Path, shares: Dict[str, float]) -> Path:
    """The paper's Table 3 as bars: share of the test images in each prediction category."""
    names = list(shares)
    v = 100 * np.array([shares[n] for n in names], dtype=float)
    with _subplots(figsize=(4.2, 2.4)) as (fig, ax):
        y = np.arange(len(names))
        ax.barh(y, v, color=[PALETTE[i % len(PALETTE)] for i in range(len(names))])
        ax.set_yticks(y, names)
        ax.invert_yaxis()
        ax.set(xlim=(0, 100), xlabel="share of images (%)")
        return _save_horizontal(fig, ax, path)


def binned_curves(path: Path, curves: Dict[str, List[dict]], xlabel: str, x_key: str = "mid") -> Path:
    """Accuracy per bin or level, one line per series, with the 95% interval as a band.

    Each point is a dict with 'acc', 'acc_lo'/'lo', 'acc_hi'/'hi' and the x value under `x_key`.
    """
    with _subplots(figsize=(4.2, 2.8)) as (fig, ax):
        for i, (name, points) in enumerate(curves.items()):
            x = np.array([p[x_key] for p in points], dtype=float)
            acc, lo, hi = (100 * np.array([p.get(k, p.get(alt)) for p in points], dtype=float)
                           for k, alt in (("acc", "acc"), ("acc_lo", "lo"), ("acc_hi", "hi")))
            color = PALETTE[i % len(PALETTE)]
            ax.plot(x, acc, marker="o", color=color, label=name)
            ax.fill_between(x, lo, hi, color=color, alpha=0.2, linewidth=0)
        ax.set(ylim=(0, 100), xlabel=xlabel, ylabel="accuracy (%)")
        ax.legend(frameon=False)
        return _save(fig, path)


def drop_bars(path: Path, labels: Sequence[str], drop: Sequence[float], lo: Sequence[float],
              hi: Sequence[float]) -> Path:
    """Accuracy drop from the unedited images per edit level (ImageNet-E), with paired intervals."""
    d, lo, hi = (100 * np.asarray(a, dtype=float) for a in (drop, lo, hi))
    with _subplots(figsize=(4.6, 0.28 * len(labels) + 0.9)) as (fig, ax):
        y = np.arange(len(labels))
        ax.barh(y, d, color=[PALETTE[3] if v > 0 else PALETTE[2] for v in d])
        ax.errorbar(d, y, xerr=[d - lo, hi - d], fmt="none", ecolor="black", capsize=2, linewidth=1)
        ax.set_yticks(y, list(labels))
        ax.invert_yaxis()
        ax.axvline(0, color="black", linewidth=0.8)
        ax.set_xlabel("accuracy drop from original (points)")
        return _save_horizontal(fig, ax, path)


def hijack_heatmap(path: Path, shares: np.ndarray, classes: Sequence[str]) -> Path:
    """The background-hijack matrix: foreground class (rows) x background class (columns), each
    cell the share of that row's foregrounds turned into the column's class; the diagonal (and
    any empty cell, NaN) greyed."""
    n = len(classes)
    import matplotlib
    with _subplots(figsize=(0.62 * n + 2.6, 0.5 * n + 1.6)) as (fig, ax):
        cmap = matplotlib.colormaps["Reds"].with_extremes(bad="#d9d9d9")
        im = ax.imshow(np.ma.masked_invalid(100 * shares), cmap=cmap, vmin=0, vmax=100)
        for a in range(n):
            for b in range(n):
                v = shares[a, b]
                ax.text(b, a, "–" if np.isnan(v) else f"{100 * v:.0f}", ha="center", va="center", fontsize=7,
                        color="white" if not np.isnan(v) and v > 0.6 else "black")
        short = [c if len(c) <= 14 else c[:13] + "…" for c in classes]
        ax.set_xticks(np.arange(n), short, rotation=40, ha="right")
        ax.set_yticks(np.arange(n), short)
        ax.set(xlabel="background class b", ylabel="foreground class a")
        ax.grid(False)
        ax.spines[:].set_visible(False)
        fig.colorbar(im, ax=ax, fraction=0.046, pad=0.04, label="foregrounds of a turned into b (%)")
        return _save(fig, path)


def picture(source: Path, path: Path) -> Path:
    """A run's own picture (a PNG of images and maps, such as the features probe's galleries)
    copied for the page as lossy WebP at `path` (its suffix set), at most PICTURE_WIDTH pixels
    wide; returns the path written."""
    from PIL import Image
    path = Path(path).with_suffix(".webp")
    path.parent.mkdir(parents=True, exist_ok=True)
    with Image.open(source) as im:
        rgb = im.convert("RGB")
    if rgb.width > PICTURE_WIDTH:
        rgb = rgb.resize((PICTURE_WIDTH, round(rgb.height * PICTURE_WIDTH / rgb.width)), Image.Resampling.LANCZOS)
    rgb.save(path, format="WEBP", quality=PHOTO_QUALITY, method=4)
    return path
