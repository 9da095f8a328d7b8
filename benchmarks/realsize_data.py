"""A real-size benchmark dataset, made once and cached: the IN-9 layout at 224 px in JPEG.

Real IN-9 is 224-px JPEG (quality 75, as the release), not Synthetic-9's 64-px PNG: decoding,
resizing and the input pipeline cost differently there. This writes Synthetic-9 at 224 px (the
exact masks, boxes and mixed variants of `bgbench synth`) and re-encodes every variant image as
JPEG quality 75 under the same stem, so every command reads it as it reads IN-9; `fg_mask/` stays
as it is. The folder is reused while its recipe (size, images per class, quality, seed) is the
same: `$BGBENCH_CACHE/bench/in9-<size>-q<quality>-<n>` (default ~/.cache/bgbench/bench/...).

    PYTHONPATH=src python benchmarks/realsize_data.py [--per-class 50] [--size 224] [--quality 75]
"""
from __future__ import annotations

import argparse
import contextlib
import json
import os
import shutil
import tempfile
import time
from pathlib import Path

from PIL import Image

RECIPE = "realsize-v1"


def cache_root() -> Path:
    base = os.environ.get("BGBENCH_CACHE")
    return (Path(base).expanduser() if base else Path.home() / ".cache" / "bgbench") / "bench"


@contextlib.contextmanager
def fresh_pixel_cache():
    """An empty pixel cache for the block (`$BGBENCH_CACHE` set to a temporary folder, then put
    back as it was): a first pass timed there decodes every image."""
    before = os.environ.get("BGBENCH_CACHE")
    with tempfile.TemporaryDirectory() as cache:
        os.environ["BGBENCH_CACHE"] = cache
        try:
            yield Path(cache)
        finally:
            if before is None:
                os.environ.pop("BGBENCH_CACHE", None)
            else:
                os.environ["BGBENCH_CACHE"] = before


def realsize_dataset(per_class: int = 50, size: int = 224, quality: int = 75, seed: int = 0,
                     progress: bool = True) -> Path:
    """The cached dataset's root (written now if it is missing or was made by another recipe)."""
    from bgbench.variants.synth import write_dataset
    root = cache_root() / f"in9-{size}-q{quality}-{per_class}"
    recipe = {"recipe": RECIPE, "per_class": per_class, "size": size, "quality": quality, "seed": seed}
    stamp = root / "REALSIZE.json"
    if stamp.is_file() and json.loads(stamp.read_text()) == recipe:
        return root
    if root.exists():
        shutil.rmtree(root)
    t0 = time.time()
    tmp = root.with_name(root.name + ".tmp")
    if tmp.exists():
        shutil.rmtree(tmp)
    write_dataset(tmp, per_class=per_class, size=size, seed=seed, split="val", progress=progress, workers=2)
    for png in sorted(tmp.glob("*/val/*/*.png")):
        if png.parts[-4] in ("fg_mask", "attr_mask"):
            continue
        Image.open(png).convert("RGB").save(png.with_suffix(".JPEG"), quality=quality)
        png.unlink()
    (tmp / "REALSIZE.json").write_text(json.dumps(recipe))
    tmp.rename(root)
    print(f"wrote {root} in {time.time() - t0:.0f}s", flush=True)
    return root


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--per-class", type=int, default=50)
    ap.add_argument("--size", type=int, default=224)
    ap.add_argument("--quality", type=int, default=75)
    args = ap.parse_args()
    print(realsize_dataset(args.per_class, args.size, args.quality))


if __name__ == "__main__":
    main()
