"""Hard ImageNet (mmoayeri/HardImageNet) read as its own loader reads it, over the user's ImageNet:
bgbench's layout against the loader of `datasets/hard_imagenet.py` written out from its definition
(tests/helpers/hardimagenet_oracle.py) on a tree written in the release layout, and the one-line
errors of a tree that is not what it claims."""
import os
import pickle
import shutil

import numpy as np
import pytest
from PIL import Image

from bgbench.data.hardimagenet import IMAGENET_ENV, HardImageNetLayout
from bgbench.data.images import decode_item
from bgbench.data.resolve import resolve_layout
from bgbench.errors import DataError
from helpers.hardimagenet_oracle import release_items
from helpers.hardimagenet_tree import INDICES, TABLE, write_tree
from helpers.shared_pickles import deep_key_dict, shared_lists


@pytest.fixture(scope="module")
def trees(tmp_path_factory):
    return write_tree(tmp_path_factory.mktemp("hin"))


@pytest.fixture
def env(trees, monkeypatch):
    monkeypatch.setenv(IMAGENET_ENV, str(trees[1]))
    return trees


def _source_items(hard, imagenet, ft):
    """id -> (image (3,224,224), mask (3,224,224), label) as Hard ImageNet's loader gives them."""
    return {it.image_id: (it.image, it.mask, it.label) for it in release_items(hard, imagenet, ft=ft)}


def test_the_layout_finds_the_loaders_items_labels_images_and_masks(env):
    hard, imagenet, made = env
    layout = resolve_layout(hard)
    assert isinstance(layout, HardImageNetLayout) and layout.kind == "hardimagenet" and layout.split == "val"
    assert layout.classes == tuple(TABLE[i][0] for i in INDICES)
    ours = {it.image_id: (it, ref) for it, ref in layout.foregrounds()}
    theirs_ft, theirs = _source_items(hard, imagenet, ft=True), _source_items(hard, imagenet, ft=False)
    assert set(ours) == set(theirs) == set(made)
    for image_id, (it, ref) in ours.items():
        img, mask, label_ft = theirs_ft[image_id]
        assert it.label == label_ft  # ft=True: the position among the 15
        assert INDICES[it.label] == theirs[image_id][2]  # ft=False: the ImageNet index
        pixels = decode_item(it)
        assert pixels.shape == (224, 224, 3) and layout.image_hw() == (224, 224)
        assert np.array_equal(pixels, np.round(img.numpy().transpose(1, 2, 0) * 255).astype(np.uint8))
        ours_mask = ref.read((224, 224))
        assert np.array_equal(ours_mask, mask[0].numpy() > 0)
        assert all(np.array_equal(mask[c].numpy(), mask[0].numpy()) for c in (1, 2))
    assert sum(not ref.read((224, 224)).any() for _, ref in ours.values()) == 1  # the object cropped away


def test_the_split_folder_and_the_ilsvrc_layout_read_the_same(env, tmp_path):
    hard, imagenet, made = env
    a = resolve_layout(hard)
    assert [it.image_id for it in resolve_layout(hard / "val").items("original")] == \
        [it.image_id for it in a.items("original")]
    # the same images in the ILSVRC archive's layout: flat val/ and LOC_val_solution.csv
    ilsvrc = tmp_path / "ilsvrc"
    flat = ilsvrc / "ILSVRC" / "Data" / "CLS-LOC" / "val"
    flat.mkdir(parents=True)
    (ilsvrc / "ILSVRC" / "Data" / "CLS-LOC" / "train").mkdir()
    rows = ["ImageId,PredictionString"]
    for info in made.values():
        stem = info["mask"].name[len(info["wnid"]) + 1:]
        shutil.copy(imagenet / "val" / info["wnid"] / stem, flat / stem)
        rows.append(f"{os.path.splitext(stem)[0]},{info['wnid']} 1 1 5 5")
    (ilsvrc / "LOC_val_solution.csv").write_text("\n".join(rows) + "\n")
    os.environ[IMAGENET_ENV] = str(ilsvrc)
    b = resolve_layout(hard)
    assert [(it.image_id, it.label) for it in b.items("original")] == \
        [(it.image_id, it.label) for it in a.items("original")]
    assert all(np.array_equal(decode_item(x), decode_item(y)) for x, y in zip(a.items("original"),
                                                                            b.items("original")))


def _copy(trees, tmp_path):
    hard = tmp_path / "hard"
    shutil.copytree(trees[0], hard)
    return hard


def test_without_imagenet_it_says_so_in_one_line(trees, monkeypatch):
    monkeypatch.delenv(IMAGENET_ENV, raising=False)
    with pytest.raises(DataError, match=f"masks only; its images are your ImageNet's: set {IMAGENET_ENV}") as e:
        resolve_layout(trees[0])
    assert "\n" not in str(e.value)


@pytest.mark.parametrize("break_it, message", [
    (lambda h: (h / "val" / "readme.txt").write_text("x"), "not a Hard ImageNet mask name"),
    (lambda h: shutil.copy(next((h / "val").iterdir()), h / "val" / "n01440764_ILSVRC2012_val_00000293.JPEG"),
     "n01440764 is not one of Hard ImageNet's 15 classes"),
    (lambda h: shutil.copy(next((h / "val").iterdir()), h / "val" / "n03218198_ILSVRC2012_val_09999999.JPEG"),
     "has no ImageNet image val/n03218198/ILSVRC2012_val_09999999.JPEG"),
    (lambda h: pickle.dump([1, 2, 3], open(h / "meta" / "hard_imagenet_idx.pkl", "wb")),
     r"lists \[1, 2, 3\], not Hard ImageNet's 15 ImageNet classes"),
    (lambda h: pickle.dump({537: "n00000000"}, open(h / "meta" / "idx_to_wnid.pkl", "wb")),
     "gives ImageNet class 537 \\(dog sled\\) the WordNet id 'n00000000'"),
    (lambda h: shutil.rmtree(h / "val") or (h / "val").mkdir(), "no masks under"),
])
def test_a_tree_that_is_not_what_it_claims_is_one_line(env, tmp_path, break_it, message):
    hard = _copy(env, tmp_path)
    break_it(hard)
    with pytest.raises(DataError, match=message) as e:
        resolve_layout(hard).foregrounds()
    assert "\n" not in str(e.value)


@pytest.mark.parametrize("meta", ["hard_imagenet_idx.pkl", "idx_to_wnid.pkl"])
def test_a_missing_meta_file_is_refused_naming_it(env, tmp_path, meta):
    """Its loader opens both meta files (datasets/hard_imagenet.py), so a release without one is
    refused, naming it: not read as another layout, and no table put in the file's place. The split
    folder given as --data says the same."""
    from conftest import assert_one_line_error, run_cli
    hard = _copy(env, tmp_path)
    (hard / "meta" / meta).unlink()
    for data in (hard, hard / "val"):
        with pytest.raises(DataError, match=f"meta/{meta} is missing: Hard ImageNet's loader") as e:
            resolve_layout(data)
        assert "\n" not in str(e.value) and "IN-9" not in str(e.value)
    assert_one_line_error(run_cli("eval", "--model", "timm:test_resnet", "--data", hard, "--db", tmp_path / "r.db"),
                          f"{meta} is missing")


@pytest.mark.parametrize("meta, content, message", [
    ("hard_imagenet_idx.pkl", pickle.dumps([shared_lists(18)] * 15), "not a list of ImageNet class indices"),
    ("idx_to_wnid.pkl", pickle.dumps({537: shared_lists(18)}), "not a dict of ImageNet index -> WordNet id"),
    ("idx_to_wnid.pkl", deep_key_dict(18, "n03218198"), "not a dict of ImageNet index -> WordNet id"),
])
def test_a_meta_pickle_of_shared_references_is_refused_never_rendered(env, tmp_path, meta, content, message):
    # at depth 40 rendering (or, for a tuple key, loading) ran for hours; at 18 the old message was megabytes long
    hard = _copy(env, tmp_path)
    (hard / "meta" / meta).write_bytes(content)
    with pytest.raises(DataError, match=f"refused .*{meta}: {message} \\(it builds") as e:
        resolve_layout(hard)
    assert len(str(e.value)) < 400 and "[[" not in str(e.value) and "((" not in str(e.value)


def test_a_mask_of_the_wrong_size_is_one_line(env, tmp_path):
    hard = _copy(env, tmp_path)
    mask = sorted((hard / "val").iterdir())[0]
    Image.new("L", (64, 48)).save(mask, format="PNG")
    with pytest.raises(DataError, match=r"is 64x48 but its ImageNet image .* is \d+x\d+: not this image's mask"):
        resolve_layout(hard).foregrounds()


def test_a_pickle_that_would_run_code_is_refused_not_run(env, tmp_path):
    hard = _copy(env, tmp_path)

    class Boom:
        def __reduce__(self):
            return (os.system, ("echo ran > " + str(tmp_path / "ran"),))
    with open(hard / "meta" / "hard_imagenet_idx.pkl", "wb") as f:
        pickle.dump(Boom(), f)
    with pytest.raises(DataError, match="refused .*hard_imagenet_idx.pkl: not a list of ImageNet class indices"):
        resolve_layout(hard)
    assert not (tmp_path / "ran").exists()


def test_an_image_link_out_of_imagenet_is_refused(env, tmp_path):
    hard, imagenet, made = env
    copy = tmp_path / "imagenet"
    shutil.copytree(imagenet, copy)
    victim = next((copy / "val").iterdir())
    first = sorted(victim.iterdir())[0]
    outside = tmp_path / "outside.JPEG"
    shutil.move(first, outside)
    first.symlink_to(outside)
    os.environ[IMAGENET_ENV] = str(copy)
    with pytest.raises(DataError, match="leads outside the dataset root"):
        resolve_layout(hard)
