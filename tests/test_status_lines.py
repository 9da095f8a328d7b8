"""Status lines say what a run did (issue 58, item 7): images read from the pixel cache."""
from conftest import run_cli


def test_an_eval_says_how_many_images_it_read_from_the_pixel_cache(synth_root, tmp_path):
    args = ["eval", "--model", "timm:test_resnet", "--data", synth_root, "--db", tmp_path / "r.db",
            "--variants", "original", "mixed_rand", "--rerun"]
    first = run_cli(*args)
    assert first.returncode == 0, first.stderr
    again = run_cli(*args)
    assert again.returncode == 0, again.stderr
    n = 2 * 36  # two variants of the tiny set's 36 test images
    assert f"read {n} of {n} images from the pixel cache" in again.stderr
    fresh = run_cli(*args, "--no-cache")
    assert fresh.returncode == 0 and "from the pixel cache" not in fresh.stderr
