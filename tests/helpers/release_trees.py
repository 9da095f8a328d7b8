"""The ImageNet-E and CounterAnimal releases generated in the tests, in the layouts their releases have,
with real ImageNet file names, class indices and class names, and tiny drawn pixels.

ImageNet-E (the folder names an `os.listdir` of the release shows in gabrielkasmi/spectral-attribution's
`notebooks/1-plots-spectral-decomposition.ipynb`; file names as its `utils/helpers.py`
`retrieve_edited_samples` opens them; labels.txt as its `read_label` splits it):
    ROOT/labels.txt, ROOT/{ori,full}/<stem>.JPEG, ROOT/<other level>/<stem>.png, ROOT/{vis,eval}.py
CounterAnimal (the third-party loaders' and the reproduction README's layout):
    ROOT/LAION-final/<ImageNet index> <name>/{common,counter}-<background>/<image>.jpg,
    ROOT/LAION-final/imagenet_names.txt
"""
from pathlib import Path
from typing import Dict, Sequence, Tuple

import numpy as np
from PIL import Image

#: ImageNet val files and their ground-truth class indices (ILSVRC2012's validation labels), all
#: of animal classes, as ImageNet-E's are: sea snake, Shetland sheepdog, garter snake, porcupine,
#: cougar, vulture.
IMAGENET_E_IMAGES = {"ILSVRC2012_val_00000001": 65, "ILSVRC2012_val_00000003": 230, "ILSVRC2012_val_00000006": 57,
                     "ILSVRC2012_val_00000007": 334, "ILSVRC2012_val_00000012": 286, "ILSVRC2012_val_00000018": 23}
#: The release's folders (the notebook's listing), ori first.
IMAGENET_E_FOLDERS = ("ori", "rec", "20_smooth", "20_hard", "20_adv", "random_bg", "full", "01", "008", "005",
                      "rp", "rd")
JPEG_FOLDERS = ("ori", "full")

#: CounterAnimal classes: (ImageNet index, folder name, common background, counter background). The
#: indices and names are ImageNet's; the background pairs are this test's.
COUNTERANIMAL_CLASSES: Tuple[Tuple[int, str, str, str], ...] = (
    (100, "black swan", "water", "grass"), (296, "ice bear", "snow", "grass"), (291, "lion", "grass", "sand"))


def _pixels(rng: np.random.Generator, size: int) -> np.ndarray:
    base = rng.integers(0, 256, size=3)
    noise = rng.integers(-20, 21, size=(size, size, 3))
    return np.clip(base + noise, 0, 255).astype(np.uint8)


def imagenet_e_tree(root: Path, images: Dict[str, int] = IMAGENET_E_IMAGES,
                    folders: Sequence[str] = IMAGENET_E_FOLDERS, size: int = 40, seed: int = 0) -> Path:
    """The release at `root`: labels.txt (file name, a tab, the class index; no newline after the last
    line, as `read_label`'s split needs), each folder holding every image, drawn anew per folder."""
    root = Path(root)
    root.mkdir(parents=True, exist_ok=True)
    (root / "labels.txt").write_text("\n".join(f"{stem}.JPEG\t{label}" for stem, label in images.items()))
    (root / "vis.py").write_text("# the release's own script\n")
    (root / "eval.py").write_text("# the release's own script\n")
    rng = np.random.default_rng(seed)
    for folder in folders:
        (root / folder).mkdir(exist_ok=True)
        for stem in images:
            suffix = ".JPEG" if folder in JPEG_FOLDERS else ".png"
            image = Image.fromarray(_pixels(rng, size))
            image.save(root / folder / f"{stem}{suffix}", **({"format": "JPEG", "quality": 95} if suffix == ".JPEG"
                                                             else {}))
    return root


def counteranimal_tree(root: Path, per_group: Dict[str, int], classes=COUNTERANIMAL_CLASSES, size: int = 40,
                       seed: int = 0) -> Path:
    """`root/LAION-final/<index> <name>/<group>-<background>/<n>.jpg`, per_group[group] images each."""
    final = Path(root) / "LAION-final"
    rng = np.random.default_rng(seed)
    for index, name, common, counter in classes:
        for group, background in (("common", common), ("counter", counter)):
            folder = final / f"{index} {name}" / f"{group}-{background}"
            folder.mkdir(parents=True, exist_ok=True)
            for n in range(per_group[group]):
                Image.fromarray(_pixels(rng, size)).save(folder / f"{n:04d}.jpg", quality=95)
    (final / "imagenet_names.txt").write_text("\n".join(f"{index}\t{name}" for index, name, _, _ in classes) + "\n")
    return Path(root)
