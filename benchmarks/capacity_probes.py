"""Each probe's own work per image, with a network that costs nothing: the probes' CPU proxy.

`capacity.py` times the probes' batches (images and masks from the pixel cache); this times the
whole probe, as `bgbench probe NAME` runs it (`measure.compute`, no pictures), with a timm-style
network whose forward is almost free: a 32x32 average pool to ResNet-50's 7x7 grid, a 1x1
convolution to its 2,048 channels, a ReLU, the spatial mean and a linear head. Every shape a probe
handles per image (a 7x7x2048 last feature map, 2,048 pooled features, a 224-px Grad-CAM map) is a
ResNet-50's; what is left to time is bgbench's and its libraries' work around the network.

A probe runs several forwards per image (noise: 2 regions x 7 levels x 3 trials = 42; ablate: the
clean image and each ablated copy); a card running F forwards/s consumes F / forwards images/s of
it. The goal of each probe's figure is therefore the fastest H100 ResNet-50 forward (20,441 img/s,
bf16 + channels-last + compiled) divided by its forwards per image (saliency: a forward and a
backward, which the card runs at about a third of its forward rate; the goal divides by 3).

    PYTHONPATH=src:benchmarks python benchmarks/capacity_probes.py [--per-class 20] [--repeats 2] [--json FILE]
"""
from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
from pathlib import Path

import torch
import torch.nn as nn

from host_only import LAUNCH_SECONDS

#: The fastest ResNet-50 forward measured on an H100 (`capacity.H100_FASTEST`).
H100_FASTEST = 20441.0
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
    """(name, config, forwards per image, goal divisor) of each probe, at its defaults without pictures."""
    from bgbench.measures.ablate.probe import AblateConfig
    from bgbench.measures.attribution.probe import AttributionConfig
    from bgbench.measures.features.probe import FeaturesConfig
    from bgbench.measures.noise.probe import NoiseConfig
    from bgbench.measures.saliency.probe import SaliencyConfig
    noise = NoiseConfig(workers=1)
    forwards = 2 * len(noise.levels) * noise.trials
    return [("noise", noise, forwards, forwards),
            ("saliency", SaliencyConfig(examples=0, workers=1), 1, BACKWARD_COST),
            ("features", FeaturesConfig(galleries=0, workers=1), 1, 1),
            ("ablate", AblateConfig(workers=1), None, None),  # forwards per image: counted in the run
            ("attribution", AttributionConfig(workers=1), 1, 1)]


def probe_capacity(root: Path, repeats: int = 2, names=None, host_model: str = "null") -> dict:
    """{probe: {images_s, forwards_per_image, goal_images_s, host: {...}}}: the best of `repeats`
    runs of each probe on `root`'s originals, one core, from the pixel cache (filled first); `host`
    is the same probe run on the meta device (`host_only`), its host work alone, with `host_model`
    ('null': NullFeatureNet; or a timm architecture, whose launches are then counted)."""
    import math

    from bgbench.measures import catalog
    from bgbench.measures.registry import get_measure as get
    from host_only import host_only_run
    catalog.load_all()
    from bgbench.data.layout import discover
    from bgbench.data.pixel_cache import pixels_of
    layout = discover(root, variants=["original"])
    pixels_of(layout.items("original"), wait=True)
    images = len(layout.foregrounds())
    model = null_feature_model()
    on_meta = _host_model(host_model).to("meta")
    out = {}
    for name, cfg, forwards, divisor in _configs():
        if names and name not in names:
            continue
        measure = get(name)
        best, result = float("inf"), None
        for _ in range(repeats):
            t = time.perf_counter()
            result = measure.compute(model, str(root), cfg, progress=False)
            best = min(best, time.perf_counter() - t)
        if forwards is None:  # ablate: one forward per stored row (the clean image and each copy)
            forwards = len(result.rows) / images
            divisor = forwards
        cfg.device = "meta"  # after the config's checks, which know real devices only

        def on_the_host():
            return measure.compute(on_meta, str(root), cfg, progress=False)
        host_only_run(on_the_host, images, 1)  # meta's kernels load on first use
        host = min((host_only_run(on_the_host, images, math.ceil(images / cfg.batch_size)) for _ in range(repeats)),
                   key=lambda h: h["own_seconds"])
        cfg.device = "cpu"
        out[name] = {"images_s": images / best, "forwards_per_image": forwards,
                     "goal_images_s": H100_FASTEST / divisor, "images": images, "host": host}
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
    ap.add_argument("--per-class", type=int, default=20, help="images per class of the real-size set (default 20)")
    ap.add_argument("--repeats", type=int, default=2)
    ap.add_argument("--probes", nargs="+", help="only these probes")
    ap.add_argument("--host-model", default="null",
                    help="the network of the host-only (meta device) runs: null, or a timm architecture such as "
                         "resnet50 whose launches are then counted (default %(default)s)")
    ap.add_argument("--json", type=Path, help="write the figures here too")
    args = ap.parse_args(argv)
    torch.set_num_threads(1)  # one core: the figure is per core
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    from realsize_data import realsize_dataset
    root = realsize_dataset(per_class=args.per_class)
    with tempfile.TemporaryDirectory() as cache:
        os.environ["BGBENCH_CACHE"] = cache
        figures = probe_capacity(root, args.repeats, args.probes, args.host_model)
    print(f"each probe with a network that costs nothing (ResNet-50's shapes), one core, 224-px JPEG:")
    for name, f in figures.items():
        verdict = "met" if f["images_s"] >= f["goal_images_s"] else "NOT met"
        print(f"  {name:<12} {f['images_s']:>9,.0f} img/s  ({f['forwards_per_image']:.0f} forwards an image; "
              f"goal {f['goal_images_s']:,.0f} img/s to feed {H100_FASTEST:,.0f} forwards/s: {verdict})")
    print(f"the host's work alone (the probe on the meta device, network {args.host_model}; launches at "
          f"{LAUNCH_SECONDS * 1e6:.0f} us each, assumed), one core:")
    for name, f in figures.items():
        h = f["host"]
        verdict = "met" if h["host_images_s"] >= f["goal_images_s"] else "NOT met"
        print(f"  {name:<12} {h['host_images_s']:>9,.0f} img/s  (own work {h['own_seconds'] * 1e3 / f['images']:.2f} "
              f"ms an image, {h['launches_per_image']:.1f} launches an image, {h['waits_per_batch']:.1f} waits a "
              f"batch; goal {f['goal_images_s']:,.0f}: {verdict})")
    if args.json:
        args.json.write_text(json.dumps(figures, indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
