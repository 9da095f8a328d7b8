"""ImageNet-D and Spawrious trees generated in the tests, in the layouts their releases have, with
their real class names (ImageNet-D's from its repository's `preprocessing/imgnet_d2imgnet_id.txt`,
Spawrious' from `spawrious/torch.py`) and Synthetic-9 drawings for pixels.

ImageNet-D (chenshuang-zhang/imagenet_d, README "Dataset"):
    ROOT/{background,texture,material}/<class folder>/<image>.jpg, ROOT/questions/<nuisance>.csv
Spawrious (aengusl/spawrious, `spawrious/torch.py`):
    ROOT/spawrious224/{0,1}/<location>/<breed>/<image>.png
"""
from pathlib import Path
from typing import Dict, Sequence

import numpy as np
from PIL import Image

from bgbench.data.synthetic import draw_sample

#: A few of ImageNet-D's real class folders (keys of its imgnet_d2imgnet_id.txt), among them
#: classes with one, two and three ImageNet indices (banana [954], bicycle [671, 444], chair [423,
#: 559, 765]).
IMAGENET_D_CLASSES = ("banana", "bicycle", "chair", "helmet", "mug")


def imagenet_d_tree(root: Path, counts: Dict[str, int], classes: Sequence[str] = IMAGENET_D_CLASSES,
                    size: int = 32, seed: int = 0, questions: bool = True) -> Path:
    """`root/<nuisance>/<class>/<n>.jpg`: counts[nuisance] images per class, each drawn as
    Synthetic-9's class (position of the class) on a texture family; `questions/` as released."""
    root = Path(root)
    rng = np.random.default_rng(seed)
    for nuisance, k in counts.items():
        for label, cls in enumerate(classes):
            folder = root / nuisance / cls
            folder.mkdir(parents=True, exist_ok=True)
            for n in range(k):
                sample = draw_sample(label % 9, size, 0.5, rng)
                Image.fromarray(sample.image).save(folder / f"{cls}_{nuisance}_{n:03d}.jpg", quality=90)
    if questions:
        (root / "questions").mkdir(exist_ok=True)
        for nuisance in counts:
            (root / "questions" / f"{nuisance}.csv").write_text("image_dir\tgt_category\ttop1_pred_cate\t"
                                                                "top2_pred_cate\n")
    return root


#: Spawrious' breeds (labels) and locations, as `SpawriousBenchmark` lists them.
BREEDS = ("bulldog", "corgi", "dachshund", "labrador")
LOCATIONS = ("desert", "jungle", "dirt", "mountain", "snow", "beach")


def spawrious_tree(root: Path, per_folder: int, folders: Sequence[str] = ("0", "1"), size: int = 32,
                   seed: int = 0) -> Path:
    """`root/spawrious224/<folder>/<location>/<breed>/<n>.png` for every location and breed: the
    breed is Synthetic-9's class of its label, the location a texture family."""
    root = Path(root)
    rng = np.random.default_rng(seed)
    for folder in folders:
        for family, location in enumerate(LOCATIONS):
            for label, breed in enumerate(BREEDS):
                where = root / "spawrious224" / folder / location / breed
                where.mkdir(parents=True, exist_ok=True)
                for n in range(per_folder):
                    sample = draw_sample(label, size, 1.0, rng, family=family)
                    Image.fromarray(sample.image).save(where / f"{location}_{breed}_{n:03d}.png")
    return root
