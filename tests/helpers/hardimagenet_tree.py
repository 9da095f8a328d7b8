"""A small Hard ImageNet release and the ImageNet it is drawn on, written in their exact layouts (no download).

    HARD/meta/hard_imagenet_idx.pkl           [537, 379, ...]: the 15 ImageNet indices, in order
    HARD/meta/idx_to_wnid.pkl                 {ImageNet index: wnid} for all 1000 classes
    HARD/val/<wnid>_<ImageNet file name>      one mask per image
    IMAGENET/val/<wnid>/<ImageNet file name>  torchvision's layout, which Hard ImageNet's loader reads

The classes are written out here from the paper's Table 1 and timm's ImageNet-1k synsets,
independently of bgbench's table. Images are of several sizes and aspect ratios (the loader
squashes them to 256 x 256); masks are grayscale PNGs (most) or RGB JPEGs, both named `.JPEG` as
the image they belong to, and one mask lies outside the centre crop (empty once cropped).
"""
from __future__ import annotations

import pickle
from pathlib import Path
from typing import Dict, Tuple

import numpy as np
from PIL import Image

#: ImageNet index -> (wnid, name), in hard_imagenet_idx.pkl's order (the paper's Table 1).
TABLE = {537: ("n03218198", "dog sled"), 379: ("n02492660", "howler monkey"), 785: ("n04162706", "seat belt"),
         795: ("n04228054", "ski"), 837: ("n04356056", "sunglasses"), 433: ("n02807133", "swimming cap"),
         416: ("n02777292", "balance beam"), 602: ("n03535780", "gymnastics horizontal bar"),
         706: ("n03899768", "patio"), 746: ("n04019541", "hockey puck"), 655: ("n03770439", "miniskirt"),
         810: ("n04264628", "keyboard space bar"), 890: ("n04540053", "volleyball"),
         981: ("n09835506", "baseball player"), 801: ("n04251144", "snorkel")}
INDICES = list(TABLE)
SIZES = ((180, 240), (300, 200), (256, 256), (150, 170))  # (H, W)


def class_colour(k: int) -> np.ndarray:
    return np.array([(37 * k + 40) % 256, (91 * k + 120) % 256, (53 * k + 200) % 256], dtype=np.int64)


def _object(h: int, w: int, k: int, n: int) -> np.ndarray:
    """A rectangle and, on every other image (class index plus image number odd), a second blob
    (two instances: the tile ablation's case), so a tree of one image per class has both kinds."""
    m = np.zeros((h, w), bool)
    y0, x0 = h // 4 + 3 * (n % 3), w // 4 + 5 * (k % 4)
    m[y0:y0 + h // 3, x0:x0 + w // 3] = True
    if (k + n) % 2:
        yy, xx = np.mgrid[0:h, 0:w]
        m |= (yy - (3 * h) // 4) ** 2 + (xx - (3 * w) // 4) ** 2 <= (min(h, w) // 10) ** 2
    return m


def write_tree(base: Path, per_class: int = 2, split: str = "val") -> Tuple[Path, Path, Dict[str, dict]]:
    """(HARD root, IMAGENET root, image id -> {wnid, index, mask}) of a freshly written pair of trees."""
    from timm.data import ImageNetInfo
    info = ImageNetInfo()
    hard, imagenet = Path(base) / "hardImageNet", Path(base) / "imagenet"
    (hard / "meta").mkdir(parents=True, exist_ok=True)
    (hard / split).mkdir(parents=True, exist_ok=True)
    with open(hard / "meta" / "hard_imagenet_idx.pkl", "wb") as f:
        pickle.dump(INDICES, f)
    with open(hard / "meta" / "idx_to_wnid.pkl", "wb") as f:
        pickle.dump({k: info.index_to_label_name(k) for k in range(1000)}, f)
    rng = np.random.default_rng(7)
    made = {}
    count = 0
    for k, index in enumerate(INDICES):
        wnid = TABLE[index][0]
        assert info.index_to_label_name(index) == wnid
        (imagenet / split / wnid).mkdir(parents=True, exist_ok=True)
        for n in range(per_class):
            h, w = SIZES[count % len(SIZES)]
            name = f"ILSVRC2012_val_{10 * k + n + 1:08d}.JPEG" if split == "val" else f"{wnid}_{100 + n}.JPEG"
            obj = _object(h, w, k, n)
            if count == 5:  # an object in the corner, cut away by the centre crop
                obj[:] = False
                obj[:8, :8] = True
            img = rng.integers(0, 256, (h, w, 3)).astype(np.int64)
            img = (img // 3 + 2 * (class_colour(k + 3 * n)) // 3)  # a background that varies
            img[obj] = class_colour(k)
            img = np.clip(img + rng.integers(-20, 21, img.shape), 0, 255).astype(np.uint8)
            Image.fromarray(img).save(imagenet / split / wnid / name, format="JPEG", quality=92)
            mask_path = hard / split / f"{wnid}_{name}"
            if count % 4 == 3:
                rgb = np.repeat(np.where(obj, 255, 0).astype(np.uint8)[..., None], 3, axis=2)
                Image.fromarray(rgb).save(mask_path, format="JPEG", quality=95)
            else:
                Image.fromarray(np.where(obj, 255, 0).astype(np.uint8), mode="L").save(mask_path, format="PNG")
            made[f"{wnid}/{Path(name).stem}"] = {"wnid": wnid, "index": index, "label": k, "mask": mask_path}
            count += 1
    return hard, imagenet, made
