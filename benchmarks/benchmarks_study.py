"""Issue 49's and issue 60's study: the demo's models, DFR heads and a timm ImageNet model on
Synthetic-9 and every benchmark bgbench reads (ImageNet-D, Spawrious, Hard ImageNet, Waterbirds,
Spurious ImageNet, Salient ImageNet, the ImageNet-E release and CounterAnimal), as generated trees in
their releases' layouts, in one `bgbench study`, one scorecard, one report; and a screenshot of the
report's top (the scorecard, whole) in headless Chromium at 1400 px wide.

Nothing is downloaded. The trees are the tests' generators (`tests/helpers/`: the releases' layouts
with their real class names and ids and generated pixels; Hard ImageNet's masks over a generated
ImageNet, named by `$BGBENCH_IMAGENET`, whose train/ holds the images of Salient ImageNet's masks
(its Mechanical Turk table named by the measure's `annotations` option); Spurious ImageNet's feature
folders beside a generated ImageNet val of their classes, named by the measure's `imagenet` option;
both options relative to the study file, as a study file written by hand has them); the timm model is
`timm:test_resnet.r160_in1k` read from a hand-written hub cache (`tests/helpers/hub_cache.py`:
seeded random weights, so its numbers mean nothing, only where they go); the demo's models are the
demo's architecture (`demo.DEMO_ARCH`) trained on Synthetic-9's ORIGINAL and MIXED-RAND as `bgbench
demo` trains them, on fewer images and epochs; DFR heads are fitted on Spawrious' training split and
on Waterbirds' validation split (DFR's protocol there) so that each has a model that reads it.
Waterbirds is named by its `waterbirds_v1.0/` folder, the release's own folder.

    PYTHONPATH=src .venv/bin/python benchmarks/benchmarks_study.py [--work /tmp/bgbench-benchmarks-study]
        [--screenshot benchmarks/screenshots/benchmarks-study.png]

Prints the scorecard (what `bgbench study` ends with) and where the report and the screenshot are.
"""
from __future__ import annotations

import argparse
import os
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO = HERE.parent


def bgbench(*args, env: dict) -> subprocess.CompletedProcess:
    """`python -m bgbench ARGS` in a fresh interpreter, status passed through; stops on failure."""
    proc = subprocess.run([sys.executable, "-m", "bgbench", *map(str, args)], env=env, stdout=subprocess.PIPE,
                          text=True)
    if proc.returncode != 0:
        raise SystemExit(f"bgbench {args[0]} failed ({proc.returncode})")
    return proc


def trees(work: Path, size: int) -> dict:
    """The datasets (and the ImageNet folders they are read over), written once under `work`."""
    sys.path.insert(0, str(REPO / "tests"))
    from helpers.benchmark_trees import imagenet_d_tree, spawrious_tree
    from helpers.group_trees import RELEASE_FOLDER, waterbirds_tree
    from helpers.hardimagenet_tree import write_tree
    from helpers.release_trees import counteranimal_tree, imagenet_e_tree
    from helpers.salient_imagenet_tree import write_tree as salient_tree

    from bgbench.variants.synth import write_dataset
    out = {}
    synth = work / "synthetic9"
    if not (synth / "original").is_dir():
        write_dataset(synth, per_class=40, size=size, seed=0, split="train", progress=False)
        write_dataset(synth, per_class=8, size=size, seed=0, split="val", progress=False)
    out["synthetic9"] = synth
    out["imagenet-d"] = work / "ImageNet-D"
    if not out["imagenet-d"].is_dir():
        imagenet_d_tree(out["imagenet-d"], {"background": 6, "texture": 4, "material": 4}, size=size)
    out["spawrious"] = work / "spawrious"
    if not out["spawrious"].is_dir():
        spawrious_tree(out["spawrious"], per_folder=12, folders=("0",), size=size)  # m2m's folder
    if not (work / "hin" / "hardImageNet").is_dir():
        write_tree(work / "hin", per_class=2)
    out["hard-imagenet"], out["imagenet"] = work / "hin" / "hardImageNet", work / "hin" / "imagenet"
    out["waterbirds"] = work / "wilds" / RELEASE_FOLDER  # the release's folder itself, not WILDS' root_dir
    if not out["waterbirds"].is_dir():  # every group of val and test >= 10 images: a worst group is scored
        waterbirds_tree(work / "wilds", WATERBIRDS_COUNTS, size=size, release=True)
    out["spurious-imagenet"] = work / "spurious" / "spurious_imagenet"
    if not out["spurious-imagenet"].is_dir():
        spurious_tree(work / "spurious")
    out["salient-imagenet"] = work / "hin" / "salient_imagenet_dataset"
    if not out["salient-imagenet"].is_dir():  # its masks over train/ of the same ImageNet: the plan reads them there
        salient_tree(work / "hin")
    out["imagenet-e"] = work / "ImageNet-E"
    if not out["imagenet-e"].is_dir():
        imagenet_e_tree(out["imagenet-e"])
    out["counteranimal"] = work / "CounterAnimal"
    if not out["counteranimal"].is_dir():
        counteranimal_tree(out["counteranimal"], {"common": 6, "counter": 4})
    return out


#: Waterbirds' images per split and (bird, place) group: training mostly on the bird's own place, as
#: the release's; validation balanced by place.
WATERBIRDS_COUNTS = {"train": {(0, 0): 30, (0, 1): 4, (1, 0): 4, (1, 1): 20},
                     "val": {(0, 0): 10, (0, 1): 10, (1, 0): 10, (1, 1): 10},
                     "test": {(0, 0): 12, (0, 1): 12, (1, 0): 10, (1, 1): 10}}
#: Spurious ImageNet's feature folders: (ImageNet class index, neural PCA component, images); the
#: paper's Figure 1 classes (hummingbird, koala with two features, freight car, hard disc).
SPURIOUS_FEATURES = ((94, 3, 6), (105, 1, 5), (105, 7, 4), (565, 0, 6), (592, 2, 5))


def spurious_tree(base: Path, val_per_class: int = 5) -> None:
    """The release under `base/spurious_imagenet` (`tests/helpers/spurious_imagenet_tree.py`) and
    an ImageNet val of its classes under `base/imagenet` (torchvision's layout, ImageNet's file
    names), the images its score compares the spurious ones against."""
    import numpy as np
    from PIL import Image
    from helpers.spurious_imagenet_tree import write_release

    from bgbench.data.imagenet import imagenet_synsets
    write_release(base / "spurious_imagenet", SPURIOUS_FEATURES)
    rng = np.random.default_rng(5)
    wnids = imagenet_synsets()
    for j, index in enumerate(sorted({f[0] for f in SPURIOUS_FEATURES})):
        folder = base / "imagenet" / "val" / wnids[index]
        folder.mkdir(parents=True)
        for k in range(val_per_class):
            img = rng.integers(0, 256, (256, 256, 3), dtype=np.uint8)
            Image.fromarray(img).save(folder / f"ILSVRC2012_val_{1000 * j + k + 1:08d}.JPEG", format="JPEG")


def screenshot(index: Path, shot: Path, profile: Path, width: int = 1400) -> None:
    """The report's top in headless Chromium at `width` px, down to the scorecard's end. With up to
    four models the scorecard reads down (a block per dataset, side by side where there is room), so
    the window is made tall enough to hold it whole; with more it is one table that scrolls sideways,
    and strips beneath show it scrolled right a view at a time until its last column. Saved as a
    palette PNG."""
    import io

    from PIL import Image
    sys.path.insert(0, str(HERE))
    from report_size import chromium  # the same browser as the report's other benchmarks
    driver = chromium(profile)
    try:
        driver.set_window_size(width, 900)
        driver.get(index.as_uri())
        card = driver.find_element("css selector", ".scorecard-down, .scorecard-scroll")
        bottom = driver.execute_script("return arguments[0].getBoundingClientRect().bottom + window.scrollY;", card)
        driver.set_window_size(width, int(bottom) + 160)  # the window's frame: the page's view is shorter
        top = Image.open(io.BytesIO(driver.get_screenshot_as_png())).convert("RGB")
        scale = top.width / width
        parts = [top.crop((0, 0, top.width, min(top.height, int(bottom * scale) + 8)))]
        scrolls = "scorecard-scroll" in (card.get_attribute("class") or "")
        view = driver.execute_script("return arguments[0].clientWidth;", card) - 240  # less the sticky model column
        left = 0
        while scrolls:  # each strip shows the next columns, until the scroll stops at the last
            moved = driver.execute_script("arguments[0].scrollLeft = arguments[1]; return arguments[0].scrollLeft;",
                                          card, left + view)
            if moved <= left:
                break
            strip = Image.open(io.BytesIO(card.screenshot_as_png)).convert("RGB")
            if moved - left < view // 2 and len(parts) > 1:  # the last few columns: the strip before, moved on
                parts[-1] = strip
            else:
                parts.append(strip)
            left = moved
    finally:
        driver.quit()
    out = Image.new("RGB", (max(p.width for p in parts), sum(p.height + 12 for p in parts)), "white")
    y = 0
    for part in parts:
        out.paste(part, (0, y))
        y += part.height + 12
    shot.parent.mkdir(parents=True, exist_ok=True)
    out.quantize(colors=128, method=Image.Quantize.MEDIANCUT).save(shot, optimize=True)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--work", type=Path, default=Path("/tmp/bgbench-benchmarks-study"))
    ap.add_argument("--screenshot", type=Path, default=HERE / "screenshots" / "benchmarks-study.png")
    ap.add_argument("--epochs", type=int, default=6)
    ap.add_argument("--size", type=int, default=64)
    ap.add_argument("--dry-run", action="store_true", help="print the study's plan (`bgbench study --dry-run`) and stop")
    args = ap.parse_args(argv)
    work = args.work.resolve()
    work.mkdir(parents=True, exist_ok=True)
    data = trees(work, args.size)

    sys.path.insert(0, str(REPO / "tests"))
    from helpers.hub_cache import TAG, write_timm_weights

    from bgbench.demo import DEMO_ARCH
    write_timm_weights(work / "hf")
    env = {**os.environ, "HF_HOME": str(work / "hf"), "HF_HUB_OFFLINE": "1", "BGBENCH_IMAGENET": str(data["imagenet"]),
           "PYTHONPATH": os.pathsep.join(p for p in (str(REPO / "src"), os.environ.get("PYTHONPATH")) if p)}
    db = work / "results.db"
    models = {}
    for variant in ("original", "mixed_rand"):  # the demo's two models, as `bgbench demo` trains them
        ckpt = work / "runs" / variant / "model.pt"
        if not ckpt.is_file():
            bgbench("train", "--model", DEMO_ARCH, "--data", data["synthetic9"], "--variant", variant, "--epochs",
                    args.epochs, "--out", ckpt.parent, "--seed", 0, "--db", db, "--quiet", env=env)
        models[f"demo {variant}"] = f"file:{ckpt}"
    dfr = work / "runs" / "dfr-spawrious" / "model.pt"
    if not dfr.is_file():
        bgbench("train", "--recipe", "dfr", "--model", DEMO_ARCH, "--data", data["spawrious"],  # m2m_hard-train
                "--out", dfr.parent, "--feature-cache", "none", "--db", db, "--quiet", env=env)
    wb = work / "runs" / "dfr-waterbirds" / "model.pt"
    if not wb.is_file():  # DFR's protocol on Waterbirds: the head fitted on its validation split
        bgbench("train", "--recipe", "dfr", "--model", DEMO_ARCH, "--data", data["waterbirds"], "--out", wb.parent,
                "--feature-cache", "none", "--db", db, "--quiet", env=env)
    models[f"timm {TAG.split('.')[0]} (ImageNet)"] = f"timm:{TAG}"
    models["DFR on Spawrious"] = f"file:{dfr}"
    models["DFR on Waterbirds"] = f"file:{wb}"

    labels = {"synthetic9": "Synthetic-9", "imagenet-d": "ImageNet-D", "spawrious": "Spawrious",
              "hard-imagenet": "Hard ImageNet", "waterbirds": "Waterbirds", "spurious-imagenet": "Spurious ImageNet",
              "salient-imagenet": "Salient ImageNet", "imagenet-e": "ImageNet-E release",
              "counteranimal": "CounterAnimal"}
    study = work / "study.toml"

    def rel(path: Path) -> str:  # as a study file is written by hand: relative to its own folder
        return os.path.relpath(path, study.parent)
    lines = ["models = ["] + [f'  {{model = "{m}", label = "{label}"}},' for label, m in models.items()] + ["]"]
    lines += ["datasets = ["] + [f'  {{path = "{rel(data[k])}", label = "{v}"}},' for k, v in labels.items()] + ["]"]
    lines += ["[measures.eval]", "[measures.challenge]", "sample = 40", 'datasets = ["Synthetic-9"]',
              "[measures.noise]", "trials = 1",  # no levels: each dataset's own grid (Hard ImageNet's on its data)
              "[measures.saliency]", "examples = 4", "[measures.ablate]",
              "[measures.spurious_imagenet]", f'imagenet = "{rel(work / "spurious" / "imagenet")}"',
              "[measures.salient_imagenet]", f'annotations = "{rel(work / "hin" / "discover_spurious_features.csv")}"',
              "[report]", 'out = "report"']
    study.write_text("\n".join(lines) + "\n")
    proc = bgbench("study", study, "--db", db, *(["--dry-run"] if args.dry_run else ["--quiet"]), env=env)
    print(proc.stdout)
    if args.dry_run:
        return 0

    index = work / "report" / "index.html"
    shot = args.screenshot.resolve()
    screenshot(index, shot, work / "chromium")
    print(f"report: {index}\nscreenshot: {shot} ({shot.stat().st_size / 1024:.0f} KB)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
