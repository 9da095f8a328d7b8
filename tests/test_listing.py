"""A dataset's listing with os.scandir: the fingerprint must equal what `Path.rglob` gave (every
stored run carries it, and a study matches runs by it), and the images and masks found must be
those pathlib's `iterdir`, `is_file` and `suffix` found, links inside and outside the root too."""
from __future__ import annotations

import hashlib
import os
from pathlib import Path

import pytest

from bgbench.data.images import IMAGE_SUFFIXES
from bgbench.data.in9 import discover
from bgbench.data.layout import dataset_fingerprint
from bgbench.errors import DataError


def rglob_fingerprint(root: Path, split: str) -> str:
    """The fingerprint as bgbench computed it before (pathlib's recursive glob), written here."""
    h = hashlib.sha256()
    for folder in sorted(p for p in root.iterdir() if (p / split).is_dir()):
        for path in sorted((folder / split).rglob("*")):
            if path.is_file():
                h.update(f"{path.relative_to(root).as_posix()}:{path.stat().st_size}".encode())
    return h.hexdigest()[:16]


def write(path: Path, size: int) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(b"x" * size)


def test_the_fingerprint_is_rglobs_on_a_tree_with_links_dots_and_names_that_sort_apart(tmp_path):
    root = tmp_path / "data"
    # 'a.b' sorts before 'a/...' as a string ('.' < '/') but after 'a' as a path part.
    for k, rel in enumerate(["original/val/a/x.JPEG", "original/val/a.b/y.JPEG", "original/val/a-b/z.png",
                             "original/val/a/deeper/w.JPEG", "original/val/.hidden", "fg_mask/val/a/x.npy",
                             "mixed_rand/val/a/x.JPEG", "mixed_rand/val/é/ü.JPEG", "notes/README"]):
        write(root / rel, 3 + k)
    (root / "loose.txt").write_text("not a variant")
    outside = tmp_path / "outside"
    write(outside / "big.bin", 99)
    (root / "original/val/linked.JPEG").symlink_to(outside / "big.bin")  # a file by its target's size
    (root / "original/val/linked_dir").symlink_to(outside, target_is_directory=True)  # not entered
    (root / "original/val/broken.JPEG").symlink_to(tmp_path / "missing")  # no file
    (root / "mixed_rand/val/empty").mkdir()
    expected = rglob_fingerprint(root, "val")
    assert dataset_fingerprint(root, "val") == expected
    os.truncate(root / "original/val/a/deeper/w.JPEG", 1)  # a size changes: so does the fingerprint
    assert dataset_fingerprint(root, "val") == rglob_fingerprint(root, "val") != expected


def test_the_fingerprint_of_the_suites_dataset_is_rglobs(synth_root):
    assert dataset_fingerprint(Path(synth_root), "val") == rglob_fingerprint(Path(synth_root), "val")


def pathlib_scan(root: Path, variant: str, classes) -> list:
    """The images of a variant as bgbench listed them before: sorted iterdir, is_file, suffix, stem."""
    found = []
    for label, cls in enumerate(classes):
        for p in sorted((root / variant / "val" / cls).iterdir()):
            if p.is_file() and p.suffix.lower() in IMAGE_SUFFIXES:
                found.append((f"{cls}/{p.stem}", label, p))
    return found


def test_the_images_and_masks_found_are_pathlibs_with_odd_names_and_links(tmp_path):
    root = tmp_path / "data"
    names = ["b.JPEG", "a.jpg", "..JPEG", "name.", ".hidden.png", "x.y.PNG", "notes.txt", "ü.JPEG"]
    for cls in ("c0", "c1"):
        for k, name in enumerate(names):
            write(root / "original/val" / cls / name, 5 + k)
            write(root / "fg_mask/val" / cls / (name.rsplit(".", 1)[0] + ".npy"), 3)
        (root / "original/val" / cls / "dir.JPEG").mkdir()  # a folder, not an image
        (root / "original/val" / cls / "inside.JPEG").symlink_to(root / "original/val" / cls / "b.JPEG")
        (root / "original/val" / cls / "broken.JPEG").symlink_to(tmp_path / "missing.JPEG")
        write(root / "fg_mask/val" / cls / "inside.npy", 3)  # '..JPEG' (stem '.') has '..npy' above
    layout = discover(root, variants=["original"])
    got = [(it.image_id, it.label, it.path) for it in layout.items("original")]
    assert got == pathlib_scan(root, "original", ("c0", "c1"))
    assert {i for i, _, _ in got} >= {"c0/inside", "c0/x.y", "c1/ü"} and "c0/name" not in {i for i, _, _ in got}
    masks = {it.image_id: mask for it, mask in layout.foregrounds()}
    assert masks == {i: root / "fg_mask/val" / f"{i}.npy" for i, _, _ in got}


def test_an_image_or_a_mask_that_links_outside_the_root_is_still_refused(tmp_path):
    root = tmp_path / "data"
    write(root / "original/val/c0/a.JPEG", 4)
    write(root / "fg_mask/val/c0/a.npy", 4)
    write(tmp_path / "outside/secret.JPEG", 4)
    (root / "original/val/c0/b.JPEG").symlink_to(tmp_path / "outside/secret.JPEG")
    with pytest.raises(DataError, match="leads outside the dataset root"):
        discover(root, variants=["original"]).items("original")
    (root / "original/val/c0/b.JPEG").unlink()
    (root / "fg_mask/val/c0/a.npy").unlink()
    (root / "fg_mask/val/c0/a.npy").symlink_to(tmp_path / "outside/secret.JPEG")
    with pytest.raises(DataError, match="leads outside the dataset root"):
        discover(root, variants=["original"]).foregrounds()
    (root / "fg_mask/val/c0/a.npy").unlink()
    with pytest.raises(DataError, match="no mask for"):
        discover(root, variants=["original"]).foregrounds()
