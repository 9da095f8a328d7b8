"""A small Salient ImageNet release, the ImageNet training images it is drawn on, and a Mechanical
Turk table in the repository's columns, written in their layouts (no download; none of the
release's own data, which is under a non-commercial licence).

    SALIENT/wordnet_dict.py                        {class index: wnid}, a Python dict literal
    SALIENT/<wnid>/image_names_map.csv             a column per feature index, the image names
    SALIENT/<wnid>/feature_<k>/<name>.JPEG         224 x 224 grayscale soft masks
    IMAGENET/train/<wnid>/<name>.JPEG              images of several sizes (Resize(256) exercised)
    ANNOTATIONS.csv                                WorkerId, Input.wordnet_id, Input.class_index,
                                                   Input.feature_index, Input.feature_rank,
                                                   Answer.main, Answer.confidence, Answer.reasons

The classes and feature indices are real (bee 309 with feature 1941, sulphur butterfly 325 with
feature 595: the repository README's examples; dog sled 537, volcano 980); their votes are made up.
"""
from __future__ import annotations

import csv
from pathlib import Path
from typing import Dict, Tuple

import numpy as np
from PIL import Image

#: class index -> (wnid, {feature index: (spurious votes of 5, image numbers its column lists)}); every
#: column is as long as the others, as the release's (its reader takes each column whole)
CLASSES = {
    309: ("n02206856", {1941: (3, (0, 1, 2)), 100: (1, (2, 3, 4)), 7: (5, (3, 4, 5))}),
    325: ("n02281406", {595: (0, (0, 1, 2)), 12: (2, (1, 3, 4))}),
    537: ("n03218198", {300: (4, (0, 1, 3)), 44: (3, (1, 2, 4)), 1200: (0, (0, 2, 3))}),
    980: ("n09472597", {5: (0, (0, 1, 2))}),
}
#: Images are smooth (a colour and slow waves), so Gaussian noise on a region is what raises their
#: pixel-to-pixel differences.
SIZES = ((300, 260), (256, 340), (280, 280), (320, 300), (270, 310))  # (H, W)


def class_colour(index: int) -> tuple:
    """Each class's base colour (0-255): smooth images of nearby colours, one class to a colour."""
    return (60 + (53 * index) % 140, 60 + (97 * index) % 140, 60 + (31 * index) % 140)


def image_name(wnid: str, n: int) -> str:
    return f"{wnid}_{1000 + 17 * n}"


def _mask(rng: np.random.Generator) -> np.ndarray:
    """A soft blob, 0-255, as the release's activation maps are."""
    yy, xx = np.mgrid[0:224, 0:224]
    cy, cx, r = rng.integers(40, 184), rng.integers(40, 184), rng.integers(30, 90)
    return np.clip(255 * np.exp(-((yy - cy) ** 2 + (xx - cx) ** 2) / (2.0 * r * r)), 0, 255).astype(np.uint8)


def write_tree(base: Path, seed: int = 11) -> Tuple[Path, Path, Path]:
    """(SALIENT root, IMAGENET root, the annotations file) of a freshly written release."""
    rng = np.random.default_rng(seed)
    salient, imagenet = Path(base) / "salient_imagenet_dataset", Path(base) / "imagenet"
    salient.mkdir(parents=True)
    table = {index: wnid for index, (wnid, _) in CLASSES.items()}
    (salient / "wordnet_dict.py").write_text(repr(table) + "\n")
    votes = []
    for k, (index, (wnid, features)) in enumerate(CLASSES.items()):
        folder = salient / wnid
        folder.mkdir()
        numbers = sorted({n for _, listed in features.values() for n in listed})
        (imagenet / "train" / wnid).mkdir(parents=True)
        for n in numbers:
            h, w = SIZES[(k + n) % len(SIZES)]
            yy, xx = np.mgrid[0:h, 0:w]
            colour = np.array(class_colour(index), np.float64) + rng.normal(0, 25, 3)  # some nearer another class
            img = colour + 12 * np.sin(yy / 40.0)[..., None] + 12 * np.cos(xx / 55.0)[..., None]  # smooth
            img = np.clip(img, 0, 255)
            Image.fromarray(img.astype(np.uint8)).save(imagenet / "train" / wnid / f"{image_name(wnid, n)}.JPEG",
                                                       format="JPEG", quality=92)
        longest = len(next(iter(features.values()))[1])
        assert all(len(listed) == longest for _, listed in features.values())
        with open(folder / "image_names_map.csv", "w", newline="") as f:
            writer = csv.writer(f)
            writer.writerow([str(feature) for feature in features])
            for row in range(longest):
                writer.writerow([image_name(wnid, features[ft][1][row]) for ft in features])
        for rank, (feature, (spurious, listed)) in enumerate(features.items(), start=1):
            (folder / f"feature_{feature}").mkdir()
            for n in listed:
                Image.fromarray(_mask(rng), mode="L").save(folder / f"feature_{feature}" / f"{image_name(wnid, n)}.JPEG",
                                                           format="JPEG", quality=95)
            for worker in range(5):
                answer = ("background" if worker % 2 else "separate_object") if worker < spurious else "main_object"
                votes.append([worker, wnid, index, feature, rank, answer, 4.0, "made up"])
    annotations = Path(base) / "discover_spurious_features.csv"
    with open(annotations, "w", newline="") as f:
        writer = csv.writer(f)
        writer.writerow(["WorkerId", "Input.wordnet_id", "Input.class_index", "Input.feature_index",
                         "Input.feature_rank", "Answer.main", "Answer.confidence", "Answer.reasons"])
        writer.writerows(votes)
    return salient, imagenet, annotations


def spurious_votes() -> Dict[Tuple[int, int], int]:
    return {(index, feature): v for index, (_, features) in CLASSES.items() for feature, (v, _) in features.items()}
