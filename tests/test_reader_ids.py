"""Every benchmark reader gives each image its own id, and takes only names the store can keep:
two files of one stem are two images or one line refusing them, and a file name that is not UTF-8
is one line, both before any model runs (issue 61)."""
import os
import shutil
from pathlib import Path

import numpy as np
import pytest
from PIL import Image

from bgbench.data.hardimagenet import IMAGENET_ENV
from bgbench.data.resolve import resolve_layout
from bgbench.errors import DataError
from helpers.benchmark_trees import imagenet_d_tree, spawrious_tree
from helpers.hardimagenet_tree import write_tree
from helpers.rival10_tree import write_rival10

#: A name with a byte that is no UTF-8 (Latin-1's e acute), as a Linux file system keeps it.
BAD_NAME = os.fsdecode(b"caf\xe9.png")


def _png(path: Path) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    Image.fromarray(np.full((24, 24, 3), 90, np.uint8)).save(path, format="PNG")
    return path


@pytest.fixture(scope="module")
def hard_trees(tmp_path_factory):
    return write_tree(tmp_path_factory.mktemp("hin"), per_class=1)


def _hard_copy(hard_trees, tmp_path, monkeypatch):
    hard, imagenet = tmp_path / "hard", tmp_path / "imagenet"
    shutil.copytree(hard_trees[0], hard)
    shutil.copytree(hard_trees[1], imagenet)
    monkeypatch.setenv(IMAGENET_ENV, str(imagenet))
    return hard, imagenet


def _hard_pair(hard, imagenet, name=None):
    """A second image of the first mask's class, with its mask: `name` in ImageNet, `<wnid>_name` in
    Hard ImageNet (default: the first image's stem with .png)."""
    mask = sorted((hard / "val").iterdir())[0]
    wnid, _, image = mask.name.partition("_")
    name = name or f"{Path(image).stem}.png"
    shutil.copy(imagenet / "val" / wnid / image, imagenet / "val" / wnid / name)
    shutil.copy(mask, hard / "val" / f"{wnid}_{name}")
    return mask, wnid, image


def _one_line(error) -> str:
    text = str(error.value)
    assert "\n" not in text
    return text


# ----------------------------------------------------------------------------------------------
# two files, one stem


def test_hard_imagenet_refuses_two_masks_of_one_id(hard_trees, tmp_path, monkeypatch):
    hard, imagenet = _hard_copy(hard_trees, tmp_path, monkeypatch)
    mask, wnid, image = _hard_pair(hard, imagenet)
    with pytest.raises(DataError, match="give one image id") as e:
        resolve_layout(hard)
    assert f"{wnid}/{Path(image).stem}" in _one_line(e) and mask.name in _one_line(e)


def test_in9_refuses_two_images_of_one_stem(tmp_path):
    _png(tmp_path / "original" / "val" / "cat" / "x.png")
    _png(tmp_path / "original" / "val" / "cat" / "x.jpg")
    _png(tmp_path / "original" / "val" / "dog" / "y.png")
    with pytest.raises(DataError, match=r"have one image id 'cat/x'") as e:
        resolve_layout(tmp_path)
    assert "x.png" in _one_line(e) and "x.jpg" in _one_line(e)


def test_rival10_refuses_two_images_of_one_stem(tmp_path):
    root = write_rival10(tmp_path / "r", odd_size=False)
    first = sorted((root / "test" / "ordinary").glob("*.JPEG"))[0]
    shutil.copy(first, first.with_suffix(".png"))
    with pytest.raises(DataError, match="have one image id") as e:
        resolve_layout(root)
    assert first.stem in _one_line(e)


def test_imagenet_refuses_a_flat_val_image_that_is_also_in_its_class_folder(tmp_path):
    val = tmp_path / "ILSVRC" / "Data" / "CLS-LOC" / "val"
    _png(val / "x.png")
    _png(val / "n01440764" / "x.png")
    (tmp_path / "LOC_val_solution.csv").write_text("ImageId,PredictionString\nx,n01440764 1 1 9 9\n")
    with pytest.raises(DataError, match="have one image id 'n01440764/x.png'") as e:
        resolve_layout(tmp_path)
    assert str(val / "x.png") in _one_line(e)


# ----------------------------------------------------------------------------------------------
# a file name that is not UTF-8


def test_imagenet_d_refuses_a_name_that_is_not_utf8(tmp_path):
    root = imagenet_d_tree(tmp_path / "d", {"background": 1})
    _png(root / "background" / "banana" / BAD_NAME)
    with pytest.raises(DataError, match="is not valid UTF-8") as e:
        resolve_layout(root)
    assert "caf\\xe9" in _one_line(e)


def test_spawrious_refuses_a_name_that_is_not_utf8(tmp_path):
    root = spawrious_tree(tmp_path / "s", per_folder=1, folders=("0",))
    _png(root / "spawrious224" / "0" / "snow" / "bulldog" / BAD_NAME)
    with pytest.raises(DataError, match="is not valid UTF-8") as e:
        resolve_layout(root, split="m2m_hard-test")
    assert "caf\\xe9" in _one_line(e)


def test_hard_imagenet_refuses_a_name_that_is_not_utf8(hard_trees, tmp_path, monkeypatch):
    hard, imagenet = _hard_copy(hard_trees, tmp_path, monkeypatch)
    _hard_pair(hard, imagenet, BAD_NAME)
    with pytest.raises(DataError, match="is not valid UTF-8") as e:
        resolve_layout(hard)
    assert "caf\\xe9" in _one_line(e)


def test_rival10_refuses_a_name_that_is_not_utf8(tmp_path):
    root = write_rival10(tmp_path / "r", odd_size=False)
    first = sorted((root / "test" / "ordinary").glob("*.JPEG"))[0]
    shutil.copy(first, first.with_name(first.stem + os.fsdecode(b"\xe9.JPEG")))
    with pytest.raises(DataError, match="is not valid UTF-8") as e:
        resolve_layout(root)
    assert "\\xe9" in _one_line(e)
