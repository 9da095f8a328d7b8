"""Small ImageNet-style trees the shortcut tests read, written here.

- `write_val(root, layout)`: an ImageNet val of a few classes whose images carry *real* ImageNet val
  file names and classes, taken from the `imagenet-x` package's own annotations (so its error
  ratios join on them), in torchvision's layout (`val/<wnid>/<file>`) or the ILSVRC archive's
  (flat `ILSVRC/Data/CLS-LOC/val/` and `LOC_val_solution.csv`);
- `write_class_folders(root, wnids, per_class)`: `ROOT/<wnid>/<file>` as ImageNet-R publishes it
  (file names that repeat across classes);
- `write_stylized(root, val_root)`: Stylized-ImageNet's layout (`val/<wnid>/<file>`), each image a
  recoloured copy of a val image.

Images are of random sizes (not 224 squares), so the readers' Resize(256) + CenterCrop(224) is
exercised. Every pixel comes from a seeded generator: two calls write the same bytes.
"""
from __future__ import annotations

import csv
from pathlib import Path
from typing import Dict, List, Sequence, Tuple

import numpy as np
from PIL import Image

#: ImageNet-1k class indices used (478 is carton, the class Whac-A-Mole's Carton gap reads).
CLASSES = (1, 207, 478, 817)


def synsets() -> List[str]:
    from bgbench.data.imagenet import imagenet_synsets
    return list(imagenet_synsets())


def annotated(per_class: int, classes: Sequence[int] = CLASSES) -> Dict[int, List[str]]:
    """class index -> `per_class` ImageNet val file names of that class that ImageNet-X annotates
    (top factor, prototypes left out: what its `load_annotations()` returns)."""
    import imagenet_x
    ann = imagenet_x.load_annotations()
    out = {}
    for c in classes:
        names = sorted(ann.loc[ann["class"] == c, "file_name"])[:per_class]
        assert len(names) == per_class, f"ImageNet-X annotates only {len(names)} images of class {c}"
        out[c] = names
    return out


def _image(rng: np.random.Generator, label: int, sides: Tuple[int, int] = (240, 330)) -> Image.Image:
    h, w = int(rng.integers(*sides)), int(rng.integers(*sides))
    base = np.array([(label * 53) % 256, (label * 97) % 256, (label * 151) % 256], dtype=np.float64)
    pixels = np.clip(base + rng.normal(0, 40, (h, w, 3)), 0, 255).astype(np.uint8)
    return Image.fromarray(pixels)


def write_val(root: Path, layout: str = "torchvision", per_class: int = 6, seed: int = 0,
              classes: Sequence[int] = CLASSES, sides: Tuple[int, int] = (240, 330)) -> Dict[str, int]:
    """An ImageNet val of `classes` in `layout` ('torchvision' or 'ilsvrc'), images of random sides
    in `sides`; returns file name -> class."""
    rng = np.random.default_rng(seed)
    wnids = synsets()
    truth: Dict[str, int] = {}
    rows: List[Tuple[str, str]] = []
    for c, names in annotated(per_class, classes).items():
        for name in names:
            im = _image(rng, c, sides)
            if layout == "torchvision":
                folder = root / "val" / wnids[c]
            else:
                folder = root / "ILSVRC" / "Data" / "CLS-LOC" / "val"
                rows.append((Path(name).stem, f"{wnids[c]} 10 10 100 100"))
            folder.mkdir(parents=True, exist_ok=True)
            im.save(folder / name, format="JPEG", quality=90)
            truth[name] = c
    if layout == "ilsvrc":
        (root / "ILSVRC" / "Data" / "CLS-LOC" / "train").mkdir(parents=True, exist_ok=True)
        with open(root / "LOC_val_solution.csv", "w", newline="") as f:
            w = csv.writer(f)
            w.writerow(["ImageId", "PredictionString"])
            w.writerows(rows)
    return truth


def write_class_folders(root: Path, classes: Sequence[int] = CLASSES, per_class: int = 4, seed: int = 1,
                        sides: Tuple[int, int] = (240, 330)) -> None:
    """ROOT/<wnid>/art_<k>.jpg: ImageNet-R's layout, whose file names repeat across classes."""
    rng = np.random.default_rng(seed)
    wnids = synsets()
    for c in classes:
        folder = root / wnids[c]
        folder.mkdir(parents=True, exist_ok=True)
        for k in range(per_class):
            _image(rng, c, sides).save(folder / f"art_{k}.jpg", format="JPEG", quality=90)


def write_stylized(root: Path, val_root: Path) -> None:
    """ROOT/val/<wnid>/<file>.png: each val image with its colours turned, under its own name."""
    for src in sorted((val_root / "val").rglob("*.JPEG")):
        out = root / "val" / src.parent.name / (src.stem + ".png")
        out.parent.mkdir(parents=True, exist_ok=True)
        arr = np.asarray(Image.open(src).convert("RGB"))
        Image.fromarray(arr[..., ::-1].copy()).save(out)
