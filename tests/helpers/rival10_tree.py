"""A small RIVAL10 release written in its exact format, for the tests (no download).

    ROOT/test/ordinary/<wnid>_<n>.JPEG
    ROOT/test/ordinary/<wnid>_<n>_attr_labels.npy    2 x 18 int: present, changed
    ROOT/test/ordinary/<wnid>_<n>_merged_mask.JPEG   the union of the attribute masks
    ROOT/test/ordinary/<wnid>_<n>_attr_dict.pkl      attribute -> base64 of a JPEG of the mask

Masks are encoded as RIVAL10 encodes them: a JPEG of the mask (white on black, RGB), its bytes in
base64, in a pickled dict with `entire-object` beside the attributes. The tables below are written
out by hand from RIVAL10's `label_mappings.json` and `wnid_to_class.json` and ImageNet-1k's class
order, independently of bgbench's reading of them.
"""
from __future__ import annotations

import base64
import io
import pickle
from pathlib import Path

import numpy as np
from PIL import Image

#: WordNet id -> (RIVAL10 class, its label, ImageNet-1k index): two ImageNet classes per class.
WNIDS = {
    "n03796401": ("truck", 0, 675), "n04467665": ("truck", 0, 867),
    "n02814533": ("car", 1, 436), "n03100240": ("car", 1, 511),
    "n02690373": ("plane", 2, 404), "n04552348": ("plane", 2, 895),
    "n03673027": ("ship", 3, 628), "n03095699": ("ship", 3, 510),
    "n02123394": ("cat", 4, 283), "n02124075": ("cat", 4, 285),
    "n02099712": ("dog", 5, 208), "n02099601": ("dog", 5, 207),
    "n02389026": ("equine", 6, 339), "n02391049": ("equine", 6, 340),
    "n02423022": ("deer", 7, 353), "n02422699": ("deer", 7, 352),
    "n01644900": ("frog", 8, 32), "n01644373": ("frog", 8, 31),
    "n01531178": ("bird", 9, 11), "n01532829": ("bird", 9, 12),
}
CLASSES = ("truck", "car", "plane", "ship", "cat", "dog", "equine", "deer", "frog", "bird")
ATTRS = ["long-snout", "wings", "wheels", "text", "horns", "floppy-ears", "ears", "colored-eyes", "tail",
         "mane", "beak", "hairy", "metallic", "rectangular", "wet", "long", "tall", "patterned"]
SIZE = 224


def encode(mask: np.ndarray, fmt: str = "JPEG") -> str:
    """base64 of a JPEG (or PNG) of the mask, white on black, as RIVAL10's dicts hold them."""
    buf = io.BytesIO()
    rgb = np.repeat(np.where(mask, 255, 0).astype(np.uint8)[..., None], 3, axis=2)
    Image.fromarray(rgb).save(buf, format=fmt, **({"quality": 95} if fmt == "JPEG" else {}))
    return base64.b64encode(buf.getvalue()).decode("ascii")


def _disc(h, w, cy, cx, r):
    yy, xx = np.mgrid[0:h, 0:w]
    return (yy - cy) ** 2 + (xx - cx) ** 2 <= r * r


def image_masks(k: int, h: int = SIZE, w: int = SIZE):
    """The k-th image's object mask and attribute masks (block-aligned, so JPEG keeps them crisp):
    'wheels' is the object's lower band, 'ears' a square on its top; 'text' is in the dict but
    labelled absent on odd images (it must then be ignored)."""
    obj = np.zeros((h, w), bool)
    y0, x0 = 48 + 8 * (k % 4), 40 + 8 * (k % 5)
    obj[y0:y0 + 96, x0:x0 + 112] = True
    wheels = np.zeros_like(obj)
    wheels[y0 + 64:y0 + 96, x0:x0 + 112] = True
    ears = np.zeros_like(obj)
    ears[y0:y0 + 32, x0 + 32:x0 + 64] = True
    text = np.zeros_like(obj)
    text[y0 + 32:y0 + 48, x0 + 16:x0 + 96] = True
    return obj, {"wheels": wheels, "ears": ears, "text": text}


def write_rival10(root: Path, split: str = "test", per_wnid: int = 1, odd_size: bool = True) -> Path:
    """Write the tree; returns ROOT. With `odd_size`, the first image is 200 x 160 (to be resized)."""
    folder = Path(root) / split / "ordinary"
    folder.mkdir(parents=True, exist_ok=True)
    rng = np.random.default_rng(0)
    k = 0
    for wnid, (cls, label, _) in WNIDS.items():
        for n in range(per_wnid):
            h, w = (160, 200) if (odd_size and k == 0) else (SIZE, SIZE)
            obj, attrs = image_masks(k, h, w)
            img = rng.integers(0, 256, (h, w, 3), dtype=np.uint8) // 2
            img[obj] = np.array([40 + 20 * label, 200 - 15 * label, 120], np.uint8)
            stem = f"{wnid}_{1000 + n}"
            Image.fromarray(img).save(folder / f"{stem}.JPEG", quality=95)
            labels = np.zeros((2, 18), np.int64)
            labels[0, ATTRS.index("wheels")] = 1
            labels[0, ATTRS.index("ears")] = 1
            labels[0, ATTRS.index("text")] = int(k % 2 == 0)
            np.save(folder / f"{stem}_attr_labels.npy", labels)
            merged = attrs["wheels"] | attrs["ears"] | (attrs["text"] if k % 2 == 0 else False)
            Image.fromarray(np.where(merged, 255, 0).astype(np.uint8)).save(folder / f"{stem}_merged_mask.JPEG")
            masks = {name: encode(m) for name, m in attrs.items()}
            masks["entire-object"] = encode(obj)
            with open(folder / f"{stem}_attr_dict.pkl", "wb") as f:
                pickle.dump(masks, f)
            k += 1
    return Path(root)


class Hostile:
    """Unpickling this runs `touch <target>`: what a restricted unpickler must never do."""

    def __init__(self, target: Path):
        self.target = str(target)

    def __reduce__(self):
        import os
        return os.system, (f"touch {self.target}",)


def plant_hostile(root: Path, target: Path, split: str = "test") -> Path:
    """Replace the last image's dict with a pickle whose loading would create `target`."""
    path = sorted((Path(root) / split / "ordinary").glob("*_attr_dict.pkl"))[-1]
    path.write_bytes(pickle.dumps({"entire-object": Hostile(target)}))
    return path
