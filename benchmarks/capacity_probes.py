"""Each probe's own work per image, with a network that costs nothing: the probes' CPU proxy.

`capacity.py` times the probes' batches (images and masks from the pixel cache); this times the
whole probe, as `bgbench probe NAME` runs it (`measure.compute`, no pictures), two ways:

- **the host's work alone** (the figure): the probe on torch's `meta` device (`host_only.py`),
  where a tensor operation costs its dispatch and nothing else, as a launch costs the host of a
  card; the time inside the operations is taken off and each launch is charged LAUNCH_SECONDS.
  It is timed at two sizes, so that a run's fixed cost (the dataset's fingerprint and scan, the
  cache's key, the ranking) is told from the cost of an image, and projected to IN-9's 4,050
  foregrounds. Its waits are the reads back to the host (and blocking copies up) that would stop
  a card's queue: none once a batch (`tests/test_host_work.py`).
- with `--cpu-too`, the probe on the CPU with `NullFeatureNet` (a 32x32 average pool to
  ResNet-50's 7x7 grid, a 1x1 convolution to its 2,048 channels, a ReLU, the spatial mean and a
  linear head): its figure includes the arithmetic at 224 px that a GPU run does on the card.

Every shape a probe handles per image (a 7x7x2048 last feature map, 2,048 pooled features, a
224-px Grad-CAM map) is a ResNet-50's. The probes run on the IN-9 release's layout (`original/`
and `fg_mask/` alone, copied from the real-size set); attribution, which needs attribute masks,
and a second ablate row run on the set with Synthetic-9's attribute masks.

A probe runs several forwards per image (noise: 2 regions x 7 levels x 3 trials = 42; ablate: the
clean image and each ablated copy); a card running F forwards/s consumes F / forwards images/s of
it. The goal of each probe's figure is therefore the fastest H100 ResNet-50 forward (20,441 img/s,
bf16 + channels-last + compiled) divided by its forwards per image (saliency: a forward and a
backward, which the card runs at about a third of its forward rate; the goal divides by 3).

    PYTHONPATH=src:benchmarks python benchmarks/capacity_probes.py [--per-class 50] [--repeats 2] [--cpu-too] [--json FILE]
"""
from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
from pathlib import Path
from typing import Optional

import torch
import torch.nn as nn

from host_only import LAUNCH_SECONDS, host_only_run
from bgbench.runs import run_measure

#: The fastest ResNet-50 forward measured on an H100 (`capacity.H100_FASTEST`), and its strict fp32
#: forward (TF32 off, the probes' default), `gpu/results/h100-2026-11-27-feed-2.md`.
H100_FASTEST = 20441.0
H100_FP32 = 2728.0
#: A card's forward + backward of a ResNet-50 takes about three forwards' time.
BACKWARD_COST = 3.0


class NullFeatureNet(nn.Module):
    """A timm-style network at almost no cost with a ResNet-50's shapes: forward_features gives a
    (N, 2048, 7, 7) map from a 224-px image, forward_head its spatial mean (pre_logits) or the
    linear head's logits, get_classifier the head; the 1x1 convolution is Grad-CAM's last layer."""

    def __init__(self, classes: int = 9, features: int = 2048, grid: int = 7):
        super().__init__()
        self.grid = grid
        self.conv = nn.Conv2d(3, features, 1)
        self.head = nn.Linear(features, classes)
        self.num_classes = classes

    def forward_features(self, x: torch.Tensor) -> torch.Tensor:
        pooled = nn.functional.adaptive_avg_pool2d(x, self.grid)
        return torch.relu(self.conv(pooled))

    def forward_head(self, x: torch.Tensor, pre_logits: bool = False) -> torch.Tensor:
        pooled = x.mean(dim=(2, 3))
        return pooled if pre_logits else self.head(pooled)

    def get_classifier(self) -> nn.Module:
        return self.head

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.forward_head(self.forward_features(x))


def null_feature_model(classes: int = 9):
    from bgbench.models.spec import BgModel, ModelSpec
    torch.manual_seed(0)
    return BgModel(NullFeatureNet(classes), ModelSpec(name="null-features", arch="null", num_classes=classes)).eval()


def _configs():
    """(name, config, forwards per image, goal divisor, on the set with attribute masks) of each
    probe, at its defaults without pictures."""
    from bgbench.measures.ablate.probe import AblateConfig
    from bgbench.measures.attribution.probe import AttributionConfig
    from bgbench.measures.features.probe import FeaturesConfig
    from bgbench.measures.noise.probe import NoiseConfig
    from bgbench.measures.saliency.probe import SaliencyConfig
    from bgbench.measures.noise.levels import data_grid, resolve_levels
    noise = NoiseConfig(workers=1)
    forwards = 2 * len(resolve_levels(data_grid(None), noise.kind)[1]) * noise.trials  # the sets are not Hard ImageNet
    return [("noise", noise, forwards, forwards, False),
            ("saliency", SaliencyConfig(examples=0, workers=1), 1, BACKWARD_COST, False),
            ("features", FeaturesConfig(galleries=0, workers=1), 1, 1, False),
            ("ablate", AblateConfig(workers=1), None, None, False),  # forwards per image: counted in the run
            ("ablate+attributes", AblateConfig(workers=1), None, None, True),
            ("attribution", AttributionConfig(workers=1), 1, 1, True)]


#: IN-9's foregrounds (ORIGINAL's test images with masks): the size the host figures are projected to.
IN9_FOREGROUNDS = 4050
#: The noise probe's draws are its host work (`capacity.py` times them apart): it is timed on fewer images.
NOISE_IMAGES = 128


def in9_layout(root: Path, dest: Path) -> Path:
    """A copy of `root` in the IN-9 release's layout: `original/` and `fg_mask/`, no attribute masks."""
    import shutil
    for folder in ("original", "fg_mask"):
        if not (dest / folder).exists():
            shutil.copytree(root / folder, dest / folder)
    return dest


def host_figures(measure, model, root: Path, cfg, images: int, repeats: int) -> dict:
    """The probe's host work on the meta device (`host_only`) on the first half of the images and
    on all of them (the best of `repeats` each): a run's fixed cost, an image's, and the images/s
    one core hands a card over IN-9's foregrounds."""
    import math

    cfg.device = "meta"  # after the config's checks, which know real devices only
    rows = {}
    try:
        def timed(n):
            def run():
                rows[n] = len(run_measure(measure, model, str(root), cfg, progress=False, limit=n).rows)
            host_only_run(run, n, 1)  # meta's kernels load on first use
            return min((host_only_run(run, n, math.ceil(n / cfg.batch_size)) for _ in range(repeats)),
                       key=lambda h: h["own_seconds"])
        half, whole = timed(images // 2), timed(images)
    finally:
        cfg.device = "cpu"
    per_image = max((whole["own_seconds"] - half["own_seconds"]) / (images - images // 2), 1e-9)
    fixed = max(whole["own_seconds"] - per_image * images, 0.0)
    launch = whole["launches_per_image"] * LAUNCH_SECONDS
    batches = math.ceil(images / cfg.batch_size) - math.ceil(images // 2 / cfg.batch_size)
    return {**whole, "per_image_seconds": per_image, "fixed_seconds": fixed, "images": images, "rows": rows[images],
            # the waits that grow with the batches (captum reads a one-image batch's target: a last batch's)
            "waits_a_batch": max(whole["waits"] - half["waits"], 0) / max(batches, 1),
            "per_image_images_s": 1 / (per_image + launch),
            "in9_images_s": IN9_FOREGROUNDS / (fixed + IN9_FOREGROUNDS * (per_image + launch))}


def card_ratio(figure: dict, forwards_s: float) -> float:
    """A model of the share of a card's forward rate the probe gets on IN-9 from this host work:
    the card's time per image (its forwards at `forwards_s`) against the host's (an image's work,
    its launches and its share of a run's fixed cost). Where the probe waits on the device once a
    batch, the two take turns (the card idles while the host works): card / (card + host); where it
    never waits, they overlap: card / max(card, host)."""
    host = 1 / figure["host"]["in9_images_s"]
    forwards = H100_FASTEST / figure["goal_images_s"]  # an image's forwards (saliency's backward counted)
    card = forwards / forwards_s
    if figure["host"]["waits_a_batch"] > 0:
        return card / (card + host)
    return min(1.0, card / host)


def probe_capacity(root: Path, repeats: int = 2, names=None, host_model: str = "null", cpu_too: bool = False,
                   work: Optional[Path] = None, workers: int = 1) -> dict:
    """{probe: {forwards_per_image, goal_images_s, host: {...}, cpu_images_s (with cpu_too)}} on
    `root`'s originals in IN-9's layout (a copy under `work`), or on `root` itself for the probes
    that read attribute masks; one core, from the pixel cache (filled first). `host_model`: the
    network of the meta runs ('null': NullFeatureNet; or a timm architecture, whose launches are
    then counted). `workers`: each probe's threads, which decode ahead and, on the meta device as on
    a GPU, make rows while the next batches launch (`measures.base.land_in_order`); one by default: one core."""
    from bgbench.measures import registry as catalog
    from bgbench.measures.registry import get_measure as get
    catalog.load_all()
    from bgbench.data.in9 import discover
    from bgbench.data.pixel_cache import pixels_of
    in9 = in9_layout(root, Path(work or tempfile.mkdtemp()) / "in9")
    model = null_feature_model()
    on_meta = _host_model(host_model).to("meta")
    out = {}
    for name, cfg, forwards, divisor, with_attributes in _configs():
        if names and name not in names:
            continue
        cfg.workers = workers
        data = root if with_attributes else in9
        layout = discover(data, variants=["original"])
        pixels_of(layout.items("original"), wait=True)
        images = min(len(layout.foregrounds()), NOISE_IMAGES if name == "noise" else 10 ** 9)
        measure = get(name.split("+")[0])
        host = host_figures(measure, on_meta, data, cfg, images, repeats)
        if forwards is None:  # ablate: one forward per stored row (the clean image and each copy)
            forwards = divisor = host["rows"] / images
        figure = {"forwards_per_image": forwards, "goal_images_s": H100_FASTEST / divisor, "images": images,
                  "host": host}
        if cpu_too:
            best = float("inf")
            for _ in range(repeats):
                t = time.perf_counter()
                run_measure(measure, model, str(data), cfg, progress=False, limit=images)
                best = min(best, time.perf_counter() - t)
            figure["cpu_images_s"] = images / best
        out[name] = figure
    return out


def _host_model(arch: str):
    """The network of the host-only runs: NullFeatureNet, or a timm architecture at random init."""
    if arch == "null":
        return null_feature_model()
    import timm
    from bgbench.models.spec import BgModel, ModelSpec
    return BgModel(timm.create_model(arch, num_classes=9), ModelSpec(name=arch, arch=arch, num_classes=9)).eval()


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--per-class", type=int, default=50, help="images per class of the real-size set (default 50)")
    ap.add_argument("--repeats", type=int, default=2)
    ap.add_argument("--probes", nargs="+", help="only these probes")
    ap.add_argument("--host-model", default="null",
                    help="the network of the host-only (meta device) runs: null, or a timm architecture such as "
                         "resnet50 whose launches are then counted (default %(default)s)")
    ap.add_argument("--workers", type=int, default=1,
                    help="each probe's threads (decoding ahead, and making rows as on a GPU); default 1: one core")
    ap.add_argument("--cpu-too", action="store_true",
                    help="also time each probe on the CPU with NullFeatureNet (its arithmetic at 224 px included)")
    ap.add_argument("--json", type=Path, help="write the figures here too")
    args = ap.parse_args(argv)
    torch.set_num_threads(1)  # one core: the figure is per core
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    from realsize_data import realsize_dataset
    root = realsize_dataset(per_class=args.per_class)
    with tempfile.TemporaryDirectory() as work:
        os.environ["BGBENCH_CACHE"] = str(Path(work) / "cache")
        figures = probe_capacity(root, args.repeats, args.probes, args.host_model, args.cpu_too, Path(work),
                                  args.workers)
    print(f"each probe's host work alone, {args.workers} thread{'s' if args.workers > 1 else ''} (on the meta device, network {args.host_model}; each launch "
          f"{LAUNCH_SECONDS * 1e6:.0f} us, assumed), 224-px JPEG, projected to IN-9's {IN9_FOREGROUNDS:,} "
          f"foregrounds; the goal feeds {H100_FASTEST:,.0f} forwards/s:")
    for name, f in figures.items():
        h = f["host"]
        verdict = "met" if h["in9_images_s"] >= f["goal_images_s"] else "NOT met"
        print(f"  {name:<18} {h['in9_images_s']:>9,.0f} img/s  goal {f['goal_images_s']:>7,.0f}: {verdict:<7}  "
              f"({h['per_image_seconds'] * 1e3:.3f} ms an image + {h['fixed_seconds']:.3f} s a run, "
              f"{h['launches_per_image']:.1f} launches an image, {h['waits_a_batch']:.1f} waits a batch; "
              f"{f['forwards_per_image']:.1f} forwards an image; timed on {h['images']} images)")
    print(f"  modelled share of a card's forward rate on IN-9 (`card_ratio`): at an H100's strict fp32 "
          f"{H100_FP32:,.0f} / its fastest {H100_FASTEST:,.0f} forwards/s:")
    for name, f in figures.items():
        f["card_ratio"] = {"fp32": card_ratio(f, H100_FP32), "fastest": card_ratio(f, H100_FASTEST)}
        print(f"  {name:<18} {f['card_ratio']['fp32']:.2f} / {f['card_ratio']['fastest']:.2f}")
    if args.cpu_too:
        print("on the CPU with NullFeatureNet (its arithmetic at 224 px included), one core:")
        for name, f in figures.items():
            print(f"  {name:<18} {f['cpu_images_s']:>9,.0f} img/s")
    if args.json:
        args.json.write_text(json.dumps(figures, indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
