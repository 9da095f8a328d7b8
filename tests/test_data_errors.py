"""Bad input gets a clear one-line error naming the file or folder, and no traceback."""
import shutil

import numpy as np
import pytest

from conftest import assert_one_line_error, run_cli

MODEL = ["--model", "timm:test_resnet"]


def _eval(root, *extra):
    return run_cli("eval", *MODEL, "--data", root, "--quiet", "--db", root.parent / "r.db", *extra)


def test_missing_val_folder(synth_copy):
    shutil.rmtree(synth_copy / "mixed_rand" / "val")
    assert_one_line_error(_eval(synth_copy), "mixed_rand", "no val/")


def test_class_folders_differ_between_variants(synth_copy):
    (synth_copy / "only_fg" / "val" / "04_ring").rename(synth_copy / "only_fg" / "val" / "04_donut")
    assert_one_line_error(_eval(synth_copy), "only_fg", "differ", "04_donut")


def test_original_without_mask(synth_copy):
    victim = sorted((synth_copy / "fg_mask" / "val" / "02_triangle").iterdir())[0]
    victim.unlink()
    assert_one_line_error(_eval(synth_copy, "--variants", "original"), "no mask", victim.stem)


def test_mask_shape_differs_from_image(synth_copy):
    victim = sorted((synth_copy / "fg_mask" / "val" / "03_cross").iterdir())[1]
    np.save(victim, np.zeros((7, 9), np.uint8))
    assert_one_line_error(_eval(synth_copy, "--variants", "original"), str(victim), "9x7")


def test_corrupt_image(synth_copy):
    victim = sorted((synth_copy / "mixed_same" / "val" / "05_star").iterdir())[0]
    victim.write_bytes(b"\x89PNG\r\n\x1a\n this is not really a png")
    assert_one_line_error(_eval(synth_copy, "--variants", "mixed_same"), "cannot read image", victim.name)


def test_truncated_image(synth_copy):
    victim = sorted((synth_copy / "original" / "val" / "00_circle").iterdir())[0]
    victim.write_bytes(victim.read_bytes()[:60])
    assert_one_line_error(_eval(synth_copy, "--variants", "original"), "cannot read image", victim.name)


def test_empty_dataset(tmp_path):
    for cls in ("a", "b"):
        (tmp_path / "data" / "original" / "val" / cls).mkdir(parents=True)
    assert_one_line_error(_eval(tmp_path / "data"), "no images", "empty")


def test_not_a_dataset(tmp_path):
    (tmp_path / "data" / "stuff").mkdir(parents=True)
    assert_one_line_error(_eval(tmp_path / "data"), "no <variant>/val/")
    assert_one_line_error(_eval(tmp_path / "nowhere"), "no such file or folder")


def test_model_and_dataset_class_count_mismatch(synth_root, tmp_path):
    proc = run_cli("eval", "--model", "timm:test_resnet", "--data", synth_root, "--quiet", "--db",
                   tmp_path / "r.db")
    assert proc.returncode == 0, proc.stderr  # 9 outputs by default: fits Synthetic-9
    import timm
    import torch
    torch.save(timm.create_model("test_resnet", num_classes=4).state_dict(), tmp_path / "four.pt")
    proc = run_cli("eval", "--model", "timm:test_resnet", "--checkpoint", tmp_path / "four.pt", "--data",
                   synth_root, "--quiet", "--db", tmp_path / "r.db")
    assert_one_line_error(proc, "4 outputs", "9 classes")


@pytest.mark.parametrize("bad", ["timm:no_such_arch", "resnet18", "zoo:nothing"])
def test_bad_model_strings(synth_root, tmp_path, bad):
    proc = run_cli("eval", "--model", bad, "--data", synth_root, "--quiet", "--db", tmp_path / "r.db")
    assert_one_line_error(proc)
