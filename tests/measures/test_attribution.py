"""Attributes and feature attribution: Synthetic-9's parts read back from the files, feature IoU by hand, and features on the class-defining parts of a trained model."""
from pathlib import Path
import numpy as np
import pytest
import torch
from PIL import Image
import bgbench
from bgbench.measures.attribution.probe import feature_ious


# the class-defining part of each Synthetic-9 class, written out: dot 0, 3, 6; stripes 1, 4, 7; notch 2, 5, 8
CLASS_PART = {0: "dot", 1: "stripes", 2: "notch", 3: "dot", 4: "stripes", 5: "notch", 6: "dot", 7: "stripes",
              8: "notch"}


def _attr_files(root: Path, split: str = "val"):
    """(class index, image, object mask, {part: mask}) of every original, read with numpy and PIL."""
    classes = sorted(p.name for p in (root / "original" / split).iterdir())
    for label, cls in enumerate(classes):
        for img in sorted((root / "original" / split / cls).iterdir()):
            obj = np.load(root / "fg_mask" / split / cls / f"{img.stem}.npy") != 0
            npz = root / "attr_mask" / split / cls / f"{img.stem}.npz"
            with np.load(npz, allow_pickle=False) as z:
                parts = {k: z[k] != 0 for k in z.files}
            yield label, np.asarray(Image.open(img).convert("RGB")), obj, parts


def test_synthetic9_objects_carry_their_class_part_and_a_shared_rim(synth_root):
    seen_rim, count = set(), 0
    for label, image, obj, parts in _attr_files(synth_root):
        count += 1
        assert CLASS_PART[label] in parts and parts[CLASS_PART[label]].any()
        assert set(parts) <= {CLASS_PART[label], "rim"}  # no other class's part
        for name, m in parts.items():
            assert m.shape == obj.shape and not (m & ~obj).any()  # inside the object
        if "dot" in parts:
            assert (image[parts["dot"]] == 255).all()  # painted white
        if "notch" in parts:
            assert (image[parts["notch"]] == 0).all()  # painted black
        if "rim" in parts:
            seen_rim.add(label)
            assert not (parts["rim"] & parts[CLASS_PART[label]]).any()  # the rim is outside the interior
    assert count == 36 and len(seen_rim) >= 3  # the rim is shared across classes


def test_feature_iou_against_maps_worked_by_hand():
    maps = torch.zeros(3, 2, 2)
    maps[0] = torch.tensor([[1.0, 0.0], [0.0, 0.0]])  # top-left quarter after nearest-like upsampling
    maps[1] = torch.tensor([[1.0, 1.0], [0.6, 0.4]])  # >= 0.5 of max: three quarters
    # maps[2] all zero: empty
    masks = torch.zeros(1, 4, 4, dtype=torch.bool)
    masks[0, :2, :2] = True  # the top-left quarter
    ious = feature_ious(maps, masks).numpy()
    # bilinear 2 -> 4 (corners not aligned): each 2x2 block keeps its value at 1 of its pixels and
    # blends toward its neighbours; binarized at 0.5 of the max, map 0 covers its own block exactly
    up0 = np.array([[1, .75, .25, 0], [.75, .5625, .1875, 0], [.25, .1875, .0625, 0], [0, 0, 0, 0]])
    on0 = up0 >= 0.5
    want0 = (on0[:2, :2].sum()) / (on0.sum() + 4 - on0[:2, :2].sum())
    assert ious[0, 0] == pytest.approx(want0, rel=1e-6)
    assert ious[0, 2] == pytest.approx(1e-10 / (4 + 1e-10))  # an empty map: eps over the mask
    assert ious.shape == (1, 3) and 0 < ious[0, 1] < 1


def test_a_model_trained_on_original_has_features_on_the_class_defining_parts(tmp_path):
    """test_resnet trained briefly on a 96-px Synthetic-9's ORIGINAL (3 x 3 feature maps): for each
    class-defining part, the best feature's mean IoU beats that of a map covering the whole image
    (the part's share of the image, from the mask files), and the dot's is recomputed here from the
    network's own feature maps. The IoUs are whatever this model gives; nothing is tuned to pass."""
    import torch.nn.functional as F
    root = tmp_path / "s9"
    bgbench.build(root, preset="synthetic-9", per_class=10, size=96, split="train", progress=False)
    bgbench.build(root, preset="synthetic-9", per_class=4, size=96, split="val", progress=False)
    trained = bgbench.train(root, tmp_path / "run", variant="original", model="timm:test_resnet", epochs=6, lr=0.01,
                            seed=0, progress=False)
    model = bgbench.load_model(f"file:{trained['checkpoint']}")
    result = bgbench.probe("attribution", model, root, top=3, progress=False)
    s = result.summary()
    files = list(_attr_files(root))
    for part in ("dot", "stripes", "notch"):
        share = np.mean([parts[part].mean() for _, _, _, parts in files if part in parts])
        best = s.best[part]
        print(f"{part}: feature {best['feature']} of class {best['class']}, mean IoU {best['iou']:.3f} "
              f"[{best['lo']:.3f}, {best['hi']:.3f}]; whole-image map {share:.3f}")
        assert best["iou"] > share
        assert CLASS_PART[int(best["class"][:2])] == part  # found in a class the part defines
    # the dot's best feature in class 0, recomputed: bilinear upsampling, >= 0.5 of the max, IoU
    group = s.groups["dot"][sorted(p.name for p in (root / "original" / "val").iterdir())[0]]
    k = group["features"][0]["feature"]
    ious = []
    with torch.no_grad():
        for label, image, _, parts in files:
            if label != 0:
                continue
            x = torch.from_numpy(image).permute(2, 0, 1).float()[None] / 255
            fmap = model.net.forward_features(model.normalize(x))[0, k]
            up = F.interpolate(fmap[None, None], size=image.shape[:2], mode="bilinear", align_corners=False)[0, 0]
            on = (up >= 0.5 * up.max()).numpy() & (float(up.max()) > 0)
            m = parts["dot"]
            ious.append(((on & m).sum() + 1e-10) / ((on | m).sum() + 1e-10))
    assert group["features"][0]["iou"] == pytest.approx(float(np.mean(ious)), abs=1e-5)


@pytest.mark.parametrize("arch", ["test_resnet", "test_mambaout", "test_vit"])
def test_feature_maps_have_one_channel_per_penultimate_feature(arch):
    """A CNN's map as it is, a channels-last net's (timm output_fmt NHWC) turned to channels first,
    a ViT's patch tokens on their 4 x 4 grid (64 px, 16-px patches): always num_features channels."""
    from bgbench.probing.feature_maps import feature_maps
    model = bgbench.load_model(f"timm:{arch}")
    x = torch.rand(2, 3, 64, 64)
    with torch.no_grad():
        maps = feature_maps(model, x)
        raw = model.net.forward_features(model.normalize(x))
    assert maps.shape[:2] == (2, model.net.num_features)
    if arch == "test_mambaout":
        assert torch.equal(maps, raw.permute(0, 3, 1, 2))
    if arch == "test_vit":
        assert maps.shape[2:] == (4, 4) and torch.equal(maps[:, :, 0, 1], raw[:, raw.shape[1] - 16 + 1])
