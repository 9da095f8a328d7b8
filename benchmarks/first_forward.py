"""Time to the first forward of `bgbench eval`, per model scheme: timm, open_clip and Hugging Face.

What a user waits for before a model command does any work: the interpreter, the imports (torch,
torchvision, timm, open_clip or transformers), building the model (and, for a zero-shot CLIP, its
text head), discovering the data and decoding the first batch. Each command runs in a fresh
interpreter, as a user's does; the child marks, in seconds since the parent spawned it:
- `imports`: the CLI's module and torch imported (what every model command pays),
- `model built`: `models.options.build` returned (the scheme's library imported, weights loaded),
- `first forward`: the first batch entered `BgModel.forward`,
- `exit`: the whole command (one variant of `--per-class` images per class).

The models are offline: `timm:resnet50` (seeded random init), and the tiny open_clip and
Hugging Face ViT folders the tests build (`tests/helpers/foundation_models.py`): their libraries'
imports are the real ones, their weights are small. The data: the 224-px JPEG set of
`realsize_data.py`. Best of `--repeats` runs each, with `PYTHONDONTWRITEBYTECODE` as the caller has it.

    PYTHONPATH=src:benchmarks .venv/bin/python benchmarks/first_forward.py [--repeats 3] [--per-class 6]
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

CHILD = r"""
import sys, time, json
t0 = float(sys.argv[1])
marks = {}
from bgbench.cli import main
import torch
from bgbench.models import options, spec
marks["imports"] = time.time() - t0
build, forward = options.build, spec.BgModel.forward
def timed_build(*a, **k):
    model = build(*a, **k)
    marks.setdefault("model built", time.time() - t0)
    return model
def timed_forward(self, x):
    marks.setdefault("first forward", time.time() - t0)
    return forward(self, x)
options.build, spec.BgModel.forward = timed_build, timed_forward
code = main(sys.argv[2:])
marks["exit"] = time.time() - t0
sys.stderr.write("MARKS " + json.dumps(marks) + "\n")
sys.exit(code)
"""


def run_once(model: str, data: Path, db: Path) -> dict:
    args = ["eval", "--model", model, "--data", str(data), "--variants", "original", "--quiet", "--db", str(db)]
    t0 = time.time()
    proc = subprocess.run([sys.executable, "-c", CHILD, repr(t0), *args], capture_output=True, text=True)
    line = [ln for ln in proc.stderr.splitlines() if ln.startswith("MARKS ")]
    if proc.returncode != 0 or not line:
        raise SystemExit(f"{model}: exit {proc.returncode}\n{proc.stderr[-2000:]}")
    return json.loads(line[0][6:])


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--per-class", type=int, default=6)
    args = ap.parse_args()
    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))
    from helpers.foundation_models import tiny_clip, tiny_vit
    from realsize_data import realsize_dataset
    data = realsize_dataset(per_class=args.per_class)
    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        models = {"timm:resnet50": "timm:resnet50",
                  "openclip: (tiny local, zero-shot, 80 templates)": f"openclip:{tiny_clip(tmp / 'clip')}",
                  "hf: (tiny local ViT)": f"hf:{tiny_vit(tmp / 'vit', image_size=32)}"}
        rows = {}
        for _ in range(args.repeats):  # interleaved, so drift hits every scheme alike
            for label, model in models.items():
                marks = run_once(model, data, tmp / "results.db")
                best = rows.get(label)
                if best is None or marks["first forward"] < best["first forward"]:
                    rows[label] = marks
    print(f"bgbench eval, {9 * args.per_class} images (224-px JPEG), best of {args.repeats}; "
          f"PYTHONDONTWRITEBYTECODE={os.environ.get('PYTHONDONTWRITEBYTECODE', '')!r}, "
          f"load average {os.getloadavg()[0]:.2f}, {os.cpu_count()} CPUs")
    print("| model | imports (CLI + torch) | model built | first forward | whole command |")
    print("|---|---|---|---|---|")
    for label, m in rows.items():
        print(f"| {label} | {m['imports']:.2f} s | {m['model built']:.2f} s | {m['first forward']:.2f} s | "
              f"{m['exit']:.2f} s |")


if __name__ == "__main__":
    main()
