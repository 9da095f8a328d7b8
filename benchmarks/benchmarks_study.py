"""Issue 49's study: the demo's models and a timm ImageNet model on Synthetic-9 and generated
ImageNet-D, Spawrious and Hard ImageNet trees, in one `bgbench study`, one scorecard, one report;
and a screenshot of the report's top (the scorecard, whole) in headless Chromium at 1400 px wide.

Nothing is downloaded. The trees are the tests' generators (`tests/helpers/`: the releases' layouts
with their real class names and generated pixels; Hard ImageNet's masks over a generated ImageNet,
named by `$BGBENCH_IMAGENET`); the timm model is `timm:test_resnet.r160_in1k` read from a
hand-written hub cache (`tests/helpers/hub_cache.py`: seeded random weights, so its numbers mean
nothing, only where they go); the demo's models are the demo's architecture (`demo.DEMO_ARCH`)
trained on Synthetic-9's ORIGINAL and MIXED-RAND as `bgbench demo` trains them, on fewer images and
epochs; a DFR head is fitted on Spawrious' training split so that Spawrious has a model that reads it.

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
    """The four datasets, written once under `work`."""
    sys.path.insert(0, str(REPO / "tests"))
    from helpers.benchmark_trees import imagenet_d_tree, spawrious_tree
    from helpers.hardimagenet_tree import write_tree

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
    return out


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
    models[f"timm {TAG.split('.')[0]} (ImageNet)"] = f"timm:{TAG}"
    models["DFR on Spawrious"] = f"file:{dfr}"

    labels = {"synthetic9": "Synthetic-9", "imagenet-d": "ImageNet-D", "spawrious": "Spawrious",
              "hard-imagenet": "Hard ImageNet"}
    study = work / "study.toml"
    lines = ["models = ["] + [f'  {{model = "{m}", label = "{label}"}},' for label, m in models.items()] + ["]"]
    lines += ["datasets = ["] + [f'  {{path = "{data[k]}", label = "{v}"}},' for k, v in labels.items()] + ["]"]
    lines += ["[measures.eval]", "[measures.challenge]", "sample = 40", 'datasets = ["Synthetic-9"]',
              "[measures.noise]", "trials = 1",  # no levels: each dataset's own grid (Hard ImageNet's on its data)
              "[measures.saliency]", "examples = 4", "[measures.ablate]",
              "[report]", f'out = "{work / "report"}"']
    study.write_text("\n".join(lines) + "\n")
    proc = bgbench("study", study, "--db", db, "--quiet", env=env)
    print(proc.stdout)

    index = work / "report" / "index.html"
    shot = args.screenshot.resolve()
    screenshot(index, shot, work / "chromium")
    print(f"report: {index}\nscreenshot: {shot} ({shot.stat().st_size / 1024:.0f} KB)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
