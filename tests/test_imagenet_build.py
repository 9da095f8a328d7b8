"""`bgbench build --imagenet ROOT --preset in9|in9l|full-in` on generated ImageNet trees in both release
layouts (the ILSVRC archive and torchvision's), with real ImageNet's quirks.

Expectations are independent of bgbench: the synsets of each IN-9 folder come from upstream's
`in_to_in9.json` and ImageNet's class order from timm's synset list, both read here as files.
"""
from __future__ import annotations

import csv
import importlib.util
import json
import shutil
from pathlib import Path
from typing import Dict, List, Tuple

import numpy as np
import pytest
from PIL import Image, ImageDraw

import bgbench
from conftest import assert_one_line_error, run_cli

IN9 = ("00_dog", "01_bird", "02_wheeled vehicle", "03_reptile", "04_carnivore", "05_insect",
       "06_musical instrument", "07_primate", "08_fish")
VARIANTS8 = ("original", "only_bg_b", "only_bg_t", "no_fg", "only_fg", "mixed_same", "mixed_rand", "mixed_next")
SIZE = (60, 80)  # (h, w): small, so GrabCut is quick
TRAIN_PER_WNID, VAL_PER_WNID = 3, 2
FAST = ("--no-resize", "--quiet")


def upstream_table() -> Dict[int, int]:
    raw = json.loads((Path(bgbench.__file__).parent / "resources" / "in_to_in9.json").read_text())
    return {int(k): int(v) for k, v in raw.items() if int(v) >= 0}


def timm_synsets() -> List[str]:
    spec = importlib.util.find_spec("timm")
    path = Path(list(spec.submodule_search_locations)[0]) / "data" / "_info" / "imagenet_synsets.txt"
    return [ln.strip() for ln in path.read_text().splitlines() if ln.strip()]


SYNSETS = timm_synsets()
TABLE = upstream_table()
INDEX = {w: k for k, w in enumerate(SYNSETS)}
# two synsets per IN-9 class (the first two upstream maps to it), and two that map to none
MAPPED = {c: [SYNSETS[k] for k in sorted(k for k, v in TABLE.items() if v == c)[:2]] for c in range(9)}
UNMAPPED = [SYNSETS[k] for k in range(1000) if k not in TABLE][:2]
WNIDS = sorted([w for ws in MAPPED.values() for w in ws] + UNMAPPED, key=INDEX.get)

# the quirks of real ImageNet, and where they are
CMYK, GRAY, PNG_JPEG = f"{MAPPED[0][0]}_0", f"{MAPPED[0][0]}_1", f"{MAPPED[0][0]}_2"
NO_XML, BAD_XML = f"{MAPPED[0][1]}_0", f"{MAPPED[1][0]}_0"
QUIRK_IMAGES = (CMYK, GRAY, PNG_JPEG)


def draw(rng: np.random.Generator) -> Tuple[Image.Image, Tuple[int, int, int, int]]:
    """A bright noisy ellipse on a dark noisy background, and its box: GrabCut separates them even in gray."""
    h, w = SIZE
    base = rng.integers(10, 70, 3)
    bg = np.clip(base + rng.normal(0, 12, (h, w, 3)), 0, 255).astype(np.uint8)
    im = Image.fromarray(bg)
    bw, bh = int(rng.integers(w // 3, w // 2)), int(rng.integers(h // 3, h // 2))
    x0, y0 = int(rng.integers(4, w - bw - 4)), int(rng.integers(4, h - bh - 4))
    fill = tuple(int(v) for v in rng.integers(170, 255, 3))
    ImageDraw.Draw(im).ellipse((x0, y0, x0 + bw - 1, y0 + bh - 1), fill=fill)
    return im, (x0, y0, x0 + bw, y0 + bh)


def voc(wnid: str, *boxes) -> str:
    objs = "".join(f"<object><name>{wnid}</name><bndbox><xmin>{b[0]}</xmin><ymin>{b[1]}</ymin><xmax>{b[2]}</xmax>"
                   f"<ymax>{b[3]}</ymax></bndbox></object>" for b in boxes)
    return f"<annotation><filename>x</filename>{objs}</annotation>"


def save(im: Image.Image, path: Path, stem: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    if stem == CMYK:
        im.convert("CMYK").save(path, "JPEG", quality=95)
    elif stem == GRAY:
        im.convert("L").save(path, "JPEG", quality=95)
    elif stem == PNG_JPEG:
        im.save(path, "PNG")  # named .JPEG, as one file of real ImageNet's train set
    else:
        im.save(path, "JPEG", quality=95)


def images() -> Dict[str, List[Tuple[str, str, Image.Image, tuple]]]:
    """split -> [(wnid, stem, image, boxes)], the same for both layouts."""
    rng = np.random.default_rng(0)
    out: Dict[str, list] = {"train": [], "val": []}
    n = 0
    for wnid in WNIDS:
        for k in range(TRAIN_PER_WNID):
            im, box = draw(rng)
            out["train"].append((wnid, f"{wnid}_{k}", im, (box,)))
        for k in range(VAL_PER_WNID):
            n += 1
            im, box = draw(rng)
            boxes = (box, (1, 1, 12, 12)) if wnid == MAPPED[2][0] and k == 0 else (box,)
            out["val"].append((wnid, f"ILSVRC2012_val_{n:08d}", im, boxes))
    return out


SEVERAL = next(stem for wnid, stem, _, boxes in images()["val"] if len(boxes) > 1)


def write_ilsvrc(root: Path) -> None:
    """Kaggle's ILSVRC archive: flat val, its classes and boxes in LOC_val_solution.csv (no val XML here)."""
    data, ann = root / "ILSVRC" / "Data" / "CLS-LOC", root / "ILSVRC" / "Annotations" / "CLS-LOC"
    root.mkdir(parents=True)
    (root / "LOC_synset_mapping.txt").write_text("".join(f"{w} name\n" for w in SYNSETS))
    rows = []
    for split, items in images().items():
        for wnid, stem, im, boxes in items:
            if split == "train":
                save(im, data / "train" / wnid / f"{stem}.JPEG", stem)
                if stem != NO_XML:
                    (ann / "train" / wnid).mkdir(parents=True, exist_ok=True)
                    text = "<annotation><object>" if stem == BAD_XML else voc(wnid, *boxes)
                    (ann / "train" / wnid / f"{stem}.xml").write_text(text)
            else:
                save(im, data / "val" / f"{stem}.JPEG", stem)
                rows.append((stem, " ".join(f"{wnid} {' '.join(map(str, b))}" for b in boxes)))
    with open(root / "LOC_val_solution.csv", "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["ImageId", "PredictionString"])
        w.writerows(rows)


def write_torchvision(root: Path) -> Path:
    """torchvision's train/<wnid>/, val/<wnid>/, and the box archives extracted to boxes/<wnid>/, boxes/val/."""
    boxes_dir = root / "boxes"
    for split, items in images().items():
        for wnid, stem, im, boxes in items:
            save(im, root / "data" / split / wnid / f"{stem}.JPEG", stem)
            if stem == NO_XML:
                continue
            xml = boxes_dir / wnid / f"{stem}.xml" if split == "train" else boxes_dir / "val" / f"{stem}.xml"
            xml.parent.mkdir(parents=True, exist_ok=True)
            xml.write_text("<annotation><object>" if stem == BAD_XML else voc(wnid, *boxes))
    return boxes_dir


@pytest.fixture(scope="module")
def trees(tmp_path_factory):
    root = tmp_path_factory.mktemp("imagenet")
    write_ilsvrc(root / "ilsvrc")
    boxes = write_torchvision(root / "tv")
    return {"ilsvrc": (root / "ilsvrc",), "tv": (root / "tv" / "data", "--boxes", boxes), "root": root}


def build(tree: tuple, out: Path, preset: str, split: str, *extra, fast: tuple = FAST) -> None:
    res = run_cli("build", "--imagenet", *tree, "--preset", preset, "--split", split, "--out", out, *fast, *extra,
                  "--db", out.parent / f"{out.name}.db")
    assert res.returncode == 0, res.stderr


def read_csv(path: Path) -> List[dict]:
    with open(path, newline="") as f:
        return list(csv.DictReader(f))


def files(root: Path) -> Dict[Path, bytes]:
    return {p.relative_to(root): p.read_bytes() for p in sorted(root.rglob("*"))
            if p.is_file() and p.suffix != ".json"}


def wnid_of(stem: str, split: str) -> str:
    return next(w for w, s, _, _ in images()[split] if s == stem)


@pytest.fixture(scope="module")
def in9_val(trees):
    out = trees["root"] / "in9_val"
    build(trees["ilsvrc"], out, "in9", "val")
    return out


def test_in9_val_follows_upstream_table_and_keeps_imagenet_stems(trees, in9_val):
    assert sorted(p.name for p in in9_val.iterdir() if p.is_dir()) == sorted(VARIANTS8 + ("fg_mask",))
    assert sorted(p.name for p in (in9_val / "original" / "val").iterdir()) == list(IN9)
    rows = [r for r in read_csv(in9_val / "manifest.csv") if r["folder"] == "original"]
    assert rows
    for r in rows:
        folder, stem = r["image"].split("/")
        params = json.loads(r["params"])
        wnid = wnid_of(stem, "val")  # from the generated tree, not from bgbench
        assert params["wnid"] == wnid and params["imagenet_index"] == INDEX[wnid]
        assert folder == IN9[TABLE[INDEX[wnid]]] and r["class"] == folder
        assert (trees["ilsvrc"][0] / r["source"]).is_file() and Path(r["source"]).stem == stem
        assert (in9_val / "original" / "val" / folder / f"{stem}.png").is_file()
        assert (in9_val / "fg_mask" / "val" / folder / f"{stem}.npy").is_file()
    assert not {wnid_of(r["image"].split("/")[1], "val") for r in rows} & set(UNMAPPED)
    counts = {c: sum(r["class"] == c for r in rows) for c in IN9}
    assert len(set(counts.values())) == 1, counts  # balanced
    rejects = {r["image"].split("/")[1]: r["reason"] for r in read_csv(in9_val / "rejects.csv")}
    assert rejects[SEVERAL] == "several_boxes"
    # every mapped val image is built or rejected with a reason; unmapped ones are not listed at all
    mapped = {s for w, s, _, _ in images()["val"] if w not in UNMAPPED}
    assert {r["image"].split("/")[1] for r in rows} | set(rejects) == mapped


def test_same_build_from_either_layout_any_workers_and_shards(trees, in9_val):
    root = trees["root"]
    build(trees["tv"], root / "tv_val", "in9", "val", "--workers", "2")
    for k in (0, 1):
        build(trees["tv"], root / f"shard{k}", "in9", "val", "--shard", f"{k}/2")
    res = run_cli("merge", root / "merged", root / "shard0", root / "shard1", "--quiet", "--db", root / "m.db")
    assert res.returncode == 0, res.stderr
    for other in ("tv_val", "merged"):
        same_build(in9_val, root / other)


def test_in9_train_quirks(trees):
    out = trees["root"] / "in9_train"
    build(trees["tv"], out, "in9", "train", "--no-balance")
    built = {r["image"].split("/")[1]: r for r in read_csv(out / "manifest.csv") if r["folder"] == "original"}
    rejects = {r["image"].split("/")[1]: r for r in read_csv(out / "rejects.csv")}
    assert rejects[NO_XML]["reason"] == "missing_annotation"
    assert rejects[BAD_XML]["reason"] == "bad_annotation"
    for stem in QUIRK_IMAGES:  # decoded by content, converted to RGB, built like any other
        assert stem in built, rejects.get(stem)
        folder = built[stem]["class"]
        im = Image.open(out / "original" / "train" / folder / f"{stem}.png")
        assert im.mode == "RGB" and im.size == SIZE[::-1]
    gray = np.asarray(Image.open(out / "original" / "train" / built[GRAY]["class"] / f"{GRAY}.png"))
    assert np.array_equal(gray[..., 0], gray[..., 1]) and np.array_equal(gray[..., 1], gray[..., 2])


def test_in9l_keeps_every_image_of_the_mapped_synsets(trees):
    out = trees["root"] / "in9l"
    build(trees["ilsvrc"], out, "in9l", "train", "--no-balance")
    assert sorted(p.name for p in out.iterdir() if p.is_dir()) == ["original"]
    rows = [r for r in read_csv(out / "manifest.csv")]
    expected = {s: IN9[TABLE[INDEX[w]]] for w, s, _, _ in images()["train"] if w not in UNMAPPED}
    assert {r["image"].split("/")[1]: r["class"] for r in rows} == expected  # NO_XML and BAD_XML included
    assert not (out / "rejects.csv").is_file() or not read_csv(out / "rejects.csv")
    balanced = trees["root"] / "in9l_bal"
    build(trees["ilsvrc"], balanced, "in9l", "train")
    counts = {c: sum(r["class"] == c for r in read_csv(balanced / "manifest.csv")) for c in IN9}
    assert set(counts.values()) == {min(sum(v == c for v in expected.values()) for c in IN9)}
    for k in (0, 1):  # a shard array gives the same balanced in9l
        build(trees["ilsvrc"], trees["root"] / f"in9l_shard{k}", "in9l", "train", "--shard", f"{k}/2")
    res = run_cli("merge", trees["root"] / "in9l_merged", trees["root"] / "in9l_shard0", trees["root"] / "in9l_shard1",
                  "--quiet", "--db", trees["root"] / "in9l_m.db")
    assert res.returncode == 0, res.stderr
    same_build(balanced, trees["root"] / "in9l_merged")


@pytest.fixture(scope="module")
def full_in(trees):
    out = trees["root"] / "full_in"
    build(trees["tv"], out, "full-in", "val")
    return out


def same_build(a: Path, b: Path) -> None:
    """Every file equal, and the tables equal but for `source` (each layout has its own paths)."""
    want, got = files(a), files(b)
    assert sorted(got) == sorted(want)
    for rel, data in want.items():
        if rel.name in ("manifest.csv", "rejects.csv"):
            strip = [{k: v for k, v in r.items() if k != "source"} for r in read_csv(b / rel)]
            assert strip == [{k: v for k, v in r.items() if k != "source"} for r in read_csv(a / rel)]
        else:
            assert got[rel] == data, rel


def test_in9l_and_full_in_build_alike_from_both_layouts(trees, full_in):
    root = trees["root"]
    build(trees["ilsvrc"], root / "full_in_ilsvrc", "full-in", "val", "--workers", "2")
    same_build(full_in, root / "full_in_ilsvrc")
    for layout in ("ilsvrc", "tv"):
        build(trees[layout], root / f"in9l_val_{layout}", "in9l", "val", "--no-balance")
    same_build(root / "in9l_val_ilsvrc", root / "in9l_val_tv")
    kept = {r["image"].split("/")[1] for r in read_csv(root / "in9l_val_tv" / "manifest.csv")}
    assert SEVERAL in kept  # several boxes: rejected by in9, kept by in9l
    assert kept == {s for w, s, _, _ in images()["val"] if w not in UNMAPPED}
    # torchvision's Resize + CenterCrop, as for real ImageNet (smaller here)
    build(trees["tv"], root / "in9l_val_crop", "in9l", "val", "--no-balance", "--resize", "48", "--crop", "40",
          fast=("--quiet",))
    for r in read_csv(root / "in9l_val_crop" / "manifest.csv"):
        source = np.asarray(Image.open(trees["tv"][0] / r["source"]).convert("RGB"))  # the ImageNet file
        h, w = source.shape[:2]
        rw, rh = (int(48 * w / h), 48) if h <= w else (48, int(48 * h / w))
        resized = Image.fromarray(source).resize((rw, rh), Image.BILINEAR)
        top, left = int(round((rh - 40) / 2.0)), int(round((rw - 40) / 2.0))
        expected = np.asarray(resized)[top:top + 40, left:left + 40]
        got = np.asarray(Image.open(root / "in9l_val_crop" / "original" / "val" / f"{r['image']}.png"))
        assert np.array_equal(got, expected), r["image"]


def test_full_in_is_scored_on_its_own_1000_labels(trees, in9_val, full_in):
    out = full_in
    classes = sorted(p.name for p in (out / "original" / "val").iterdir())
    assert classes == SYNSETS  # 1000 wnid folders: folder position = ImageNet index
    rows = [r for r in read_csv(out / "manifest.csv") if r["folder"] == "original"]
    for r in rows:
        stem = r["image"].split("/")[1]
        assert r["class"] == wnid_of(stem, "val") and int(r["label"]) == INDEX[r["class"]]
    assert {r["class"] for r in rows} & set(UNMAPPED)  # every synset, mapped or not
    assert sorted(p.name for p in out.iterdir() if p.is_dir()) == sorted(VARIANTS8 + ("fg_mask",))
    import timm
    import torch
    weights = trees["root"] / "in1k.pt"  # a 1000-class ImageNet model
    torch.save(timm.create_model("test_resnet", num_classes=1000).state_dict(), weights)
    db = trees["root"] / "eval.db"
    for data in (out, in9_val):
        res = run_cli("eval", "--model", "timm:test_resnet", "--checkpoint", weights, "--data", data, "--quiet",
                      "--db", db, "--json")
        assert res.returncode == 0, res.stderr
        assert json.loads(res.stdout)
    from bgbench.store import Store
    with Store(db, create=False) as store:
        full_run = store.runs("eval")[0]["id"]
        got = [(r["label"], r["pred"], r["top5_classes"], r["superclass_probs"]) for r in store.predictions(full_run)]
    assert got
    for label, pred, top5, sums in got:  # no mapping: the prediction is the model's own top-1 ImageNet class
        assert pred == json.loads(top5)[0] and 0 <= label < 1000
        assert json.loads(sums) == []  # the 1000 masses are the probabilities themselves: not stored
    # re-deciding stored outputs under the superclass rule is the same decision on Full-IN
    docs = {}
    for mapping in ("argmax", "superclass"):
        res = run_cli("analyze", "categories", full_run, "--mapping", mapping, "--json", "--db", db)
        assert res.returncode == 0, res.stderr
        docs[mapping] = json.loads(res.stdout)
    strip = [{k: v for k, v in d.items() if k != "mapping"} for d in docs.values()]
    assert strip[0] == strip[1]
    res = run_cli("report", "--db", db, "--out", trees["root"] / "report.html")
    assert res.returncode == 0, res.stderr
    html = (trees["root"] / "report.html" / "index.html").read_text()
    assert "full_in" in html and "in9_val" in html


def test_bad_input_is_one_line(trees, tmp_path):
    (tmp_path / "empty").mkdir()
    res = run_cli("build", "--imagenet", tmp_path / "empty", "--preset", "in9", "--out", tmp_path / "o")
    assert_one_line_error(res, "neither ImageNet layout")
    res = run_cli("build", "--images", trees["ilsvrc"][0], "--preset", "in9", "--out", tmp_path / "o")
    assert_one_line_error(res, "--preset", "--imagenet")
    res = run_cli("build", "--imagenet", trees["tv"][0], "--preset", "in9", "--out", tmp_path / "o")
    assert_one_line_error(res, "--boxes")
    flat = tmp_path / "flat"
    val = flat / "ILSVRC" / "Data" / "CLS-LOC" / "val"
    val.mkdir(parents=True)
    draw(np.random.default_rng(1))[0].save(val / "ILSVRC2012_val_00000001.JPEG", "JPEG")
    res = run_cli("build", "--imagenet", flat, "--preset", "in9", "--out", tmp_path / "o")
    assert_one_line_error(res, "LOC_val_solution.csv")
    odd = tmp_path / "odd"
    (odd / "val" / "n99999999").mkdir(parents=True)
    res = run_cli("build", "--imagenet", odd, "--preset", "in9l", "--out", tmp_path / "o")
    assert_one_line_error(res, "n99999999", "not an ImageNet-1k wnid")
    shuffled = tmp_path / "shuffled"
    shutil.copytree(flat, shuffled)
    swapped = [SYNSETS[1], SYNSETS[0], *SYNSETS[2:]]
    (shuffled / "LOC_synset_mapping.txt").write_text("".join(f"{w} x\n" for w in swapped))
    res = run_cli("build", "--imagenet", shuffled, "--preset", "in9", "--out", tmp_path / "o")
    assert_one_line_error(res, "LOC_synset_mapping.txt", "line 1")
    # a failed run loses nothing already built
    before = files(trees["root"] / "in9_val")
    res = run_cli("build", "--imagenet", odd, "--preset", "in9l", "--out", trees["root"] / "in9_val", "--overwrite")
    assert_one_line_error(res, "n99999999")
    assert files(trees["root"] / "in9_val") == before


def test_progress_lines_outside_a_terminal_give_rate_and_eta(monkeypatch):
    """A Slurm log is no terminal: its progress lines must still say when the build ends."""
    import io
    import re
    import sys

    from bgbench import console
    err = io.StringIO()
    monkeypatch.setattr(sys, "stderr", err)
    monkeypatch.setattr(console, "LOG_EVERY_S", 0.0)
    clock = iter(float(t) for t in range(0, 100_000, 2))  # two seconds per look at the clock
    monkeypatch.setattr(console.time, "time", lambda: next(clock))
    bar = console.progress(enabled=True, total=3600, desc="prepare", unit="img")
    for _ in range(10):
        bar.update(1)
    lines = err.getvalue().splitlines()
    assert len(lines) == 10
    for n, line in enumerate(lines, start=1):
        elapsed = int(re.search(r" in (\d+)s", line).group(1))
        rate = n / elapsed
        h, rest = divmod(round((3600 - n) / rate), 3600)
        assert line.startswith(f"prepare: {n}/3600 img in {elapsed}s, {rate:.3g} img/s, ETA "), line
        assert line.endswith(f"ETA {h}:{rest // 60:02d}:{rest % 60:02d}"), line
