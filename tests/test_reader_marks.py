"""`data.resolve` imports a reader only where its marks are (`_READERS`): every released layout the
tests can build is marked where its finder finds it, at its root and at each folder a user may name,
so that a finder's files and its marks cannot drift apart unseen."""
from importlib import import_module
from pathlib import Path

import pytest

from bgbench.data.resolve import _READERS, resolve_layout
from helpers.benchmark_trees import imagenet_d_tree, spawrious_tree
from helpers.group_trees import groups_tree, waterbirds_tree
from helpers.hardimagenet_tree import write_tree as hard_imagenet_tree
from helpers.release_trees import counteranimal_tree, imagenet_e_tree
from helpers.rival10_tree import write_rival10
from helpers.salient_imagenet_tree import write_tree as salient_imagenet_tree
from helpers.spurious_imagenet_tree import write_release

TREES = {
    "rival10": lambda root: write_rival10(root),
    "hardimagenet": lambda root: hard_imagenet_tree(root)[0],
    "imagenet_d": lambda root: imagenet_d_tree(root, {"background": 1}),
    "spawrious": lambda root: spawrious_tree(root, per_folder=1, size=16),
    "imagenet_e": lambda root: imagenet_e_tree(root / "ImageNet-E"),
    "counteranimal": lambda root: counteranimal_tree(root, {"common": 1, "counter": 1}),
    "spurious_imagenet": lambda root: write_release(root, ((207, 0, 2),)),
    "salient_imagenet": lambda root: salient_imagenet_tree(root)[0],
    "groups": lambda root: groups_tree(root, {(0, 0): 2, (1, 1): 2}),
    "waterbirds": lambda root: waterbirds_tree(root, {"test": {(0, 0): 1, (0, 1): 1, (1, 0): 1, (1, 1): 1}}),
}


def test_every_reader_has_a_tree_here():
    assert set(TREES) == set(_READERS)


@pytest.mark.parametrize("name", sorted(TREES))
def test_a_reader_is_marked_wherever_its_finder_finds_its_layout(name, tmp_path):
    root = Path(TREES[name](tmp_path / "tree"))
    marked, finder, _ = _READERS[name]
    module, attr = finder.split(":")
    find = getattr(import_module(module), attr)
    folders = [root, root.parent, *(p for p in root.iterdir() if p.is_dir())]
    found = [folder for folder in folders if find(folder) is not None]
    assert root in found or root.parent in found  # the tree is this reader's
    assert [folder for folder in found if not marked(folder)] == []


@pytest.mark.parametrize("name", ["imagenet_d", "spawrious", "groups", "waterbirds", "imagenet_e", "counteranimal"])
def test_the_tree_reads_as_its_layout(name, tmp_path):
    """The resolved layout comes from this reader's module (no earlier reader's marks claim the tree)."""
    root = Path(TREES[name](tmp_path / "tree"))
    module = _READERS[name][1].split(":")[0]
    assert type(resolve_layout(root)).__module__ == module
