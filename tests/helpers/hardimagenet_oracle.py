"""Hard ImageNet's loader and figures written out from their definitions in its repository
(mmoayeri/HardImageNet, commit a39e3f996f70eb538ff71829b80781bac617a2d4), independently of
bgbench: the oracle its tests hold bgbench to. Each function names the source file and lines it
restates; the quirks of the source are facts of its figures and are kept, each said where it is.

- `release_items`: `datasets/hard_imagenet.py` (class `HardImageNet`, lines 13-75) with
  `augmentations.py`'s `standard_resize_center_crop` (lines 29-38);
- `noisy_accuracies`, `rfs`: `rfs.py` (`l2_normalize`, `compute_rfs`, `noisy_fg_bg_accs`, lines 11-78);
- `gray_object`, `gray_box`, `tiled`, `ablated_figures`: `ablations.py` (`replace_with_gray`,
  `get_bbox`, `tile` and the functions it calls, `eval_under_ablation`: lines 14-45, 79-203);
- `saliency_scores`: `saliency_analysis.py` (`binarize`, `delta_saliency_density`,
  `intersection_over_union_and_dice`, `compute_salient_alignment_scores`, lines 67-163).
"""
from __future__ import annotations

import os
import pickle
import warnings
from pathlib import Path
from typing import Callable, Dict, List, NamedTuple

import numpy as np
import torch
from PIL import Image
from torchvision import transforms

IMAGENET_MEAN, IMAGENET_STD = (0.485, 0.456, 0.406), (0.229, 0.224, 0.225)
#: the size the loader squashes every image and mask to before its 224-px centre crop
SQUASH, CROP = 256, 224


class Item(NamedTuple):
    image_id: str  # '<wnid>/<ImageNet file stem>', as bgbench names an image
    image: torch.Tensor  # (3, 224, 224) in [0, 1]
    mask: torch.Tensor  # (3, 224, 224) in {0, 1}
    label: int


def _tensor(pil: Image.Image) -> torch.Tensor:
    """Squashed to 256 x 256 (torchvision's Resize of a PIL image), the centre 224 x 224, in [0, 1],
    a single channel repeated to three."""
    size = pil.size
    pil = transforms.functional.resize(pil, [SQUASH, SQUASH])
    assert pil.size == (SQUASH, SQUASH), size
    t = transforms.functional.to_tensor(transforms.functional.center_crop(pil, [CROP, CROP]))
    return t.repeat(3, 1, 1) if t.shape[0] == 1 else t


def release_items(hard: Path, imagenet: Path, split: str = "val", ft: bool = True) -> List[Item]:
    """The loader's items, in its order: every entry of HARD/<split>/ in directory order (its glob),
    the mask of ImageNet's IMAGENET/<split>/<wnid>/<rest>, where the name is '<wnid>_<rest>' (the
    wnid up to the first '_'). Image and mask opened as they are and squashed, cropped and made
    tensors alike; more than three channels keep the first three; every mask value above 0 is 1
    (so a JPEG mask's faint artefacts count as object). The label is the wnid's ImageNet index
    (meta/idx_to_wnid.pkl read backwards), with `ft` its position in meta/hard_imagenet_idx.pkl."""
    with open(Path(hard) / "meta" / "idx_to_wnid.pkl", "rb") as f:
        index_of = {wnid: index for index, wnid in pickle.load(f).items()}
    with open(Path(hard) / "meta" / "hard_imagenet_idx.pkl", "rb") as f:
        order = list(pickle.load(f))
    out = []
    for name in os.listdir(Path(hard) / split):
        wnid = name.split("_")[0]
        rest = name[len(wnid) + 1:]
        with Image.open(Path(imagenet) / split / wnid / rest) as img, Image.open(Path(hard) / split / name) as m:
            image, mask = _tensor(img), _tensor(m)
        image, mask = image[:3], mask[:3]
        mask = (mask > 0).float()
        label = index_of[wnid]
        out.append(Item(f"{wnid}/{os.path.splitext(rest)[0]}", image, mask, order.index(label) if ft else label))
    return out


def imagenet_normalized(x: torch.Tensor) -> torch.Tensor:
    mean = torch.tensor(IMAGENET_MEAN).view(-1, 1, 1)
    return (x - mean) / torch.tensor(IMAGENET_STD).view(-1, 1, 1)


def _predict(net, images: torch.Tensor) -> torch.Tensor:
    """The argmax of the network's logits on the normalized images (the source feeds `model(x)`
    ImageNet-normalized pixels). torch's argmax takes NaN for the largest value and returns its
    first index, so an image of NaN pixels, whose logits are all NaN, is predicted class 0."""
    with torch.no_grad():
        return net(imagenet_normalized(images)).argmax(1)


def rfs(fg: float, bg: float) -> float:
    """`compute_rfs`: (bg − fg) / (2 min(a, 1 − a)) with a their mean; 0 where a is 0 or 1."""
    a = 0.5 * (fg + bg)
    return 0.0 if a in (0.0, 1.0) else (bg - fg) / (2 * min(a, 1 - a))


def noisy_accuracies(net, items: List[Item], level: float, trials: int,
                     noise_of: Callable[[str, int], torch.Tensor], l2: bool = False):
    """`noisy_fg_bg_accs` at one level: (rfs, fg accuracy, bg accuracy). Each trial draws one field
    per image (`noise_of(image_id, trial)`, (3, H, W)); the foreground gets it times the mask, the
    background times 1 − mask, scaled by σ = `level` (or, with `l2`, to L2 norm `level` over all
    channels and pixels: the field divided by its norm, with no guard, so an empty region's 0 / 0
    makes the image NaN), added to the image and clamped to [0, 1] (torch's clamp keeps NaN).
    Accuracy per class pools the trials; a region's accuracy is the mean over the classes present
    of their accuracies, and the label compared is the ImageNet index (the loader's ft=False)."""
    correct: Dict[str, Dict[int, int]] = {"fg": {}, "bg": {}}
    count: Dict[int, int] = {}
    images = torch.stack([it.image for it in items])
    masks = torch.stack([it.mask for it in items])
    for trial in range(trials):
        field = torch.stack([noise_of(it.image_id, trial) for it in items])
        for region, where in (("fg", masks), ("bg", 1 - masks)):
            noise = where * field
            if l2:
                noise = level * noise / noise.flatten(1).pow(2).sum(1).sqrt().view(-1, 1, 1, 1)
            else:
                noise = level * noise
            preds = _predict(net, torch.clamp(images + noise, 0, 1))
            for it, pred in zip(items, preds.tolist()):
                correct[region][it.label] = correct[region].get(it.label, 0) + int(pred == it.label)
        for it in items:
            count[it.label] = count.get(it.label, 0) + 1
    fg, bg = [float(np.mean([correct[r].get(c, 0) / n for c, n in count.items()])) for r in ("fg", "bg")]
    return rfs(fg, bg), fg, bg


# ---- ablations.py ------------------------------------------------------------------------------

def gray_object(image: np.ndarray, mask: np.ndarray) -> np.ndarray:
    """`replace_with_gray` (keep_shape): the object's pixels 0.5. image (3, H, W), mask (H, W) in {0, 1}."""
    return image * (1 - mask) + 0.5 * mask


def box_of(mask: np.ndarray) -> np.ndarray:
    """`get_bbox`: 1 on rows min..max and columns min..max of the mask's pixels, each end left out
    (the source slices [min:max]); all 0 for an empty mask."""
    box = np.zeros_like(mask)
    rows, cols = np.nonzero(mask)
    if len(rows):
        box[rows.min():rows.max(), cols.min():cols.max()] = 1
    return box


def gray_box(image: np.ndarray, mask: np.ndarray) -> np.ndarray:
    """`replace_with_gray` (keep_shape=False): `box_of` the mask's first channel made 0.5."""
    box = box_of(mask)
    return image * (1 - box) + 0.5 * box


def _first_zero(sums: list) -> int:
    """The index of the first zero in `sums` (0 when none is)."""
    return next((k for k, s in enumerate(sums) if s == 0), 0)


def _neighbour(image, mask, c0, c1, r0, r1, side: str):
    """`trim_tile`: the window of rows r0:r1 and columns c0:c1 (its starts raised to 0, its ends
    lowered to the image's height for the columns and its width for the rows, as the source pairs
    them), whole when it holds no object pixel; else trimmed by the source's scans, which sum the
    window's mask along the axes below and search lists of partial sums for their first zero (the
    trim kept as that list index: `_first_zero`). Returns (tile, size), size as the source counts it."""
    _, h, w = image.shape
    c0, r0 = max(c0, 0), max(r0, 0)
    c1, r1 = min(c1, h), min(r1, w)
    window = mask[r0:r1, c0:c1]
    if window.sum() == 0:
        return image[:, r0:r1, c0:c1], (c1 - c0) * (r1 - r0)
    width, height = c1 - c0, r1 - r0
    per_row, per_col = window.sum(1), window.sum(0)
    if side == "left":  # tails of the per-row sums, taken over as many starts as the window is wide
        k = _first_zero([per_row[i:].sum() for i in range(width)])
        return image[:, r0:r1, c0 + k:c1], k * height
    if side == "right":  # heads of the per-column sums, longest first
        k = _first_zero([per_col[:i].sum() for i in range(width, 0, -1)])
        return image[:, r0:r1, c0:c0 + k], k * height
    if side == "up":  # heads of the per-column sums, as many as the window is high, longest first
        k = _first_zero([per_col[:i].sum() for i in range(height, 0, -1)])
        return image[:, r0:r0 + k, c0:c1], width * k
    k = _first_zero([per_row[i:].sum() for i in range(height)])  # down: tails of the per-row sums
    return image[:, r0 + k:r1, c0:c1], width * k


def _floor_div(a, b):
    """numpy's integer division, which gives 0 (with a warning) for a divisor of 0, as the source's
    numpy integers do on an empty tile."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        return int(np.int64(a) // np.int64(b)), int(np.int64(a) % np.int64(b))


def _filled(tile: np.ndarray, height: int, width: int, side: str) -> np.ndarray:
    """`repeat_tile_to_fill_bbox`: a (3, height, width) box of copies of `tile`, zero elsewhere.
    right/up: copies from the box's start, the last one cut to what is left; left/down: copies from
    the box's end backwards, what is left at its start filled with the tile's end."""
    out = np.zeros((3, height, width), dtype=tile.dtype)
    axis = 2 if side in ("right", "left") else 1
    length, step = (width, tile.shape[2]) if axis == 2 else (height, tile.shape[1])
    copies, rest = _floor_div(length, step)

    def put(lo, hi, piece):
        index = [slice(None)] * 3
        index[axis] = slice(lo, hi)
        out[tuple(index)] = piece

    def part(lo, hi):
        index = [slice(None)] * 3
        index[axis] = slice(lo, hi)
        return tile[tuple(index)]
    for i in range(copies):
        if side in ("right", "up"):
            put(i * step, min(length, (i + 1) * step), tile)
        else:
            put(max(0, length - (i + 1) * step), length - i * step, tile)
    if rest:
        if side in ("right", "up"):
            put(step * copies, length, part(0, rest))
        else:
            put(0, rest, part(step - rest, step))
    return out


def tiled(image: np.ndarray, mask: np.ndarray) -> np.ndarray:
    """`tile`: each 4-connected instance of the mask, in label order, has its box (`box_of`, then
    the corners of that box: first to last row and column of it) filled with the largest of its four
    neighbouring windows (`_neighbour`, the first of right, left, up, down on a tie) repeated; the
    source's row coordinates serve as its windows' columns and back, which the box's transpose
    undoes when it is written. Later instances see earlier fills. image (3, H, W), mask (H, W)."""
    from scipy import ndimage
    out = image.copy()
    instances, n = ndimage.label(mask)
    for j in range(1, n + 1):
        box = box_of((instances == j).astype(mask.dtype))
        if box.sum() == 0:
            continue
        rows, cols = np.nonzero(box)
        x0, x1, y0, y1 = rows.min(), rows.max(), cols.min(), cols.max()
        tiles = [_neighbour(out, mask, x1, 2 * x1 - x0, y0, y1, "right"),
                 _neighbour(out, mask, 2 * x0 - x1, x0, y0, y1, "left"),
                 _neighbour(out, mask, x0, x1, y1, 2 * y1 - y0, "up"),
                 _neighbour(out, mask, x0, x1, 2 * y0 - y1, y1, "down")]
        best = int(np.argmax([size for _, size in tiles]))
        fill = _filled(tiles[best][0], y1 - y0, x1 - x0, ("right", "left", "up", "down")[best])
        out[:, x0:x1, y0:y1] = fill.swapaxes(1, 2)
    return out


def ablated_figures(net, items: List[Item], ablation) -> tuple:
    """`eval_under_ablation` one image at a time (bs=1, as `compute_ablated_accs` calls it):
    (accuracy, mean softmax probability of the true ImageNet class) over the ablated images."""
    right, probs = 0, []
    for it in items:
        x = torch.from_numpy(np.ascontiguousarray(ablation(it.image.numpy(), it.mask[0].numpy()))).float()
        with torch.no_grad():
            logits = net(imagenet_normalized(x)[None].float())
        right += int(logits.argmax(1)[0] == it.label)
        probs.append(float(torch.softmax(logits, 1)[0, it.label]))
    return right / len(items), float(np.mean(probs))


# ---- saliency_analysis.py ----------------------------------------------------------------------

def binarized(a, threshold: float = 0.5) -> np.ndarray:
    """`binarize`: NaN to 0, then 1 at or above the threshold, 0 below."""
    a = np.nan_to_num(np.array(a, dtype=np.float64), nan=0.0)
    return (a >= threshold).astype(np.float64)


def iou(mask, cam, eps: float = 1e-10) -> float:
    """`intersection_over_union_and_dice`'s IoU of the binarized mask and map, eps in both terms."""
    a, b = binarized(mask) > 0, binarized(cam) > 0
    return float(((a & b).sum() + eps) / ((a | b).sum() + eps))


def density_difference(cam, mask) -> float:
    """`delta_saliency_density`: the map's mean over the object less its mean over the rest."""
    return float(np.sum(cam * mask) / np.sum(mask) - np.sum(cam * (1 - mask)) / np.sum(1 - mask))


def saliency_scores(cam, items: List[Item]) -> tuple:
    """`compute_salient_alignment_scores`: batches of 32 images in the loader's order, less those
    whose mask is empty, go unnormalized to the CAM object, each image's map for its true class,
    NaN in a map made 0; ({position: IoU}, {position: density difference}) by position in `items`."""
    from pytorch_grad_cam.utils.model_targets import ClassifierOutputTarget
    ious, densities = {}, {}
    for start in range(0, len(items), 32):
        batch = [k for k in range(start, min(start + 32, len(items))) if items[k].mask.sum() > 0]
        if not batch:
            continue
        maps = cam(input_tensor=torch.stack([items[k].image for k in batch]),
                   targets=[ClassifierOutputTarget(items[k].label) for k in batch], eigen_smooth=False)
        maps = np.nan_to_num(maps, nan=0.0)
        for k, m in zip(batch, maps):
            mask = items[k].mask[0].numpy()
            ious[k], densities[k] = iou(mask, m), density_difference(m, mask)
    return ious, densities
