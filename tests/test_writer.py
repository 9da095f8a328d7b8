"""The one dataset writer: --shard K/N and `bgbench merge` (byte-identical to one run), the refusals
of shards that do not fit, the one mask reader (every malformed mask is a bad_mask reject), the
one manifest schema, and worker processes that die with their parent."""
from __future__ import annotations

import csv
import json
import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path
from typing import Dict, List

import numpy as np
import pytest
from PIL import Image

from bgbench.data.synthetic import generate
from conftest import run_cli
from test_build import write_sample
from test_data_errors import assert_one_line_error


def tree(root: Path) -> Dict[str, bytes]:
    """Every file under `root`, by relative path, with its bytes."""
    return {p.relative_to(root).as_posix(): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}


def read_csv(path: Path) -> List[dict]:
    with open(path, newline="") as f:
        return list(csv.DictReader(f))


@pytest.fixture(scope="module")
def build_inputs(tmp_path_factory) -> Path:
    """Images and VOC boxes that exercise build's global steps: a GrabCut failure, an image alone in
    its size (no donor), and unequal classes (balance)."""
    root = tmp_path_factory.mktemp("build_inputs")
    big, small = generate(1, size=40, seed=11), generate(1, size=32, seed=12)
    layout = {"a": big[0:4], "b": big[4:7], "c": big[7:9] + [small[0]]}
    for cls, samples in layout.items():
        for i, s in enumerate(samples):
            write_sample(root / "images", root / "boxes", cls, f"{cls}{i}", s.image, s.box)
    write_sample(root / "images", root / "boxes", "a", "flat", np.full((40, 40, 3), 90, np.uint8), (8, 8, 30, 30))
    return root


def _synth(out: Path, *extra) -> list:
    return ["synth", "--out", out, "--per-class", 3, "--size", 24, "--seed", 2, "--quiet", *extra]


def _build(inputs: Path):
    def args(out: Path, *extra) -> list:
        return ["build", "--images", inputs / "images", "--boxes", inputs / "boxes", "--out", out, "--no-resize",
                "--seed", 4, "--quiet", *extra]
    return args


def _edit(data: Path):
    def args(out: Path, *extra) -> list:
        return ["edit", "--data", data, "--out", out, "--levels", "remove", "rotation_random", "complexity_adv",
                "--model", "timm:test_resnet", "--adv-steps", 1, "--batch-size", 2, "--seed", 6, "--quiet", *extra]
    return args


def _sharded_equals_unsharded(tmp_path: Path, args, merge_workers: int = 2) -> Dict[str, bytes]:
    whole = tmp_path / "whole"
    res = run_cli(*args(whole))
    assert res.returncode == 0, res.stderr
    shards = [tmp_path / f"shard{k}" for k in range(2)]
    for k, d in enumerate(shards):
        res = run_cli(*args(d, "--shard", f"{k}/2"))
        assert res.returncode == 0, res.stderr
        assert (d / "SHARD_val.json").is_file()
    res = run_cli("merge", tmp_path / "merged", *shards, "--workers", merge_workers, "--quiet", "--json")
    assert res.returncode == 0, res.stderr
    assert json.loads(res.stdout)["splits"]["val"]["shards"] == 2
    expected, merged = tree(whole), tree(tmp_path / "merged")
    assert sorted(merged) == sorted(expected)
    for rel, data in expected.items():
        assert merged[rel] == data, rel
    parts = [set(tree(d)) - {"SHARD_val.json", "FILES_val.txt"} for d in shards]
    assert parts[0] and parts[1] and not parts[0] & parts[1]  # each shard wrote a share of its own
    return expected


def test_synth_shards_merge_byte_identical(tmp_path):
    files = _sharded_equals_unsharded(tmp_path, lambda out, *e: _synth(out, *e))
    assert sum(k.startswith("mixed_rand/") for k in files) == 27


def test_build_shards_merge_byte_identical_with_balance_and_donors(tmp_path, build_inputs):
    _sharded_equals_unsharded(tmp_path, _build(build_inputs))
    reasons = {r["source"]: r["reason"] for r in read_csv(tmp_path / "whole" / "rejects.csv")}
    assert reasons.pop("a/flat.png") == "grabcut_failed" and reasons.pop("c/c2.png") == "no_donor_of_same_size"
    assert list(reasons.values()) == ["balanced_out"] * 3  # a: 4 -> 2, b: 3 -> 2 (c keeps its 2)
    for cls in "abc":  # balanced-out images were written by a shard, and are gone after the merge
        assert len(list((tmp_path / "merged" / "mixed_same" / "val" / cls).iterdir())) == 2
        assert len(list((tmp_path / "merged" / "only_bg_t" / "val" / cls).iterdir())) == 2


def test_edit_shards_merge_byte_identical_with_the_adversarial_level(tmp_path):
    data = tmp_path / "data"
    assert run_cli("synth", "--out", data, "--per-class", 1, "--size", 32, "--quiet").returncode == 0
    masks = sorted((data / "fg_mask" / "val").rglob("*.npy"))
    np.save(masks[3], np.zeros((32, 32, 0), np.uint8))  # a reject, merged from one shard
    _sharded_equals_unsharded(tmp_path, _edit(data))  # blocks of 2 images: shard 0 gets 0-1, 4-5, 8
    rejects = read_csv(tmp_path / "whole" / "rejects.csv")
    assert [r["reason"] for r in rejects] == ["bad_mask"]
    assert len(list((tmp_path / "whole" / "complexity_adv" / "val").rglob("*.png"))) == 8


def test_edit_under_torchrun_writes_what_one_process_writes(tmp_path):
    """Two processes write into one output (rank 0's stage) and rank 0 joins their rows: every
    file, the adversarial level's and the tables included, is one process's, with images of two
    sizes in one block (the feed cuts the block's batch where the size changes)."""
    data = tmp_path / "data"
    assert run_cli("synth", "--out", data, "--per-class", 1, "--size", 32, "--quiet").returncode == 0
    wide = sorted((data / "original" / "val").rglob("*.png"))[1]
    Image.open(wide).resize((40, 32)).save(wide)
    mask = data / "fg_mask" / "val" / wide.parent.name / f"{wide.stem}.npy"
    np.save(mask, np.asarray(Image.fromarray(np.load(mask).astype(np.uint8) * 255).resize((40, 32))) > 0)
    one, two = tmp_path / "one", tmp_path / "two"
    assert run_cli(*_edit(data)(one)).returncode == 0
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[1] / "src"), "OMP_NUM_THREADS": "1"}
    proc = subprocess.run([sys.executable, "-m", "torch.distributed.run", "--standalone", "--nproc-per-node", "2",
                           "-m", "bgbench", *map(str, _edit(data)(two, "--db", tmp_path / "two.db"))],
                          env=env, capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr[-3000:]
    expected = tree(one)
    assert tree(two) == expected
    assert sum(k.startswith("complexity_adv/") for k in expected) == 9
    assert not [p for p in tmp_path.iterdir() if p.name.startswith(".")]  # no stage left beside the outputs


@pytest.fixture
def synth_shards(tmp_path) -> Path:
    for k in range(2):
        assert run_cli(*_synth(tmp_path / f"s{k}", "--shard", f"{k}/2")).returncode == 0
    return tmp_path


@pytest.mark.parametrize("make, dirs, needles", [
    (None, ["s0"], ["shard 1/2", "missing"]),
    (None, ["s0", "s0", "s1"], ["given twice"]),
    (["--seed", 3, "--shard", "1/2"], ["s0", "x"], ["seed", "3", "2"]),
    (["--shard", "1/3"], ["s0", "x"], ["shard count N"]),
    (["--per-class", 4, "--shard", "1/2"], ["s0", "x"], ["per_class"]),
])
def test_merge_refuses_shards_that_do_not_fit(synth_shards, make, dirs, needles):
    if make is not None:
        assert run_cli("synth", "--out", synth_shards / "x", "--size", 24, "--quiet",
                       *(["--per-class", 3] if "--per-class" not in make else []),
                       *(["--seed", 2] if "--seed" not in make else []), *make).returncode == 0
    proc = run_cli("merge", synth_shards / "out", *[synth_shards / d for d in dirs])
    assert_one_line_error(proc, *needles)
    assert not (synth_shards / "out" / "manifest.csv").exists()


def test_merge_refuses_its_own_shards_and_plain_folders_and_needs_overwrite(synth_shards, synth_root):
    s0, s1 = synth_shards / "s0", synth_shards / "s1"
    assert_one_line_error(run_cli("merge", s0, s0, s1), "one of the shard folders")
    assert_one_line_error(run_cli("merge", synth_shards / "o", s0, synth_root), "SHARD_<split>.json")
    assert run_cli("merge", synth_shards / "o", s0, s1, "--quiet").returncode == 0
    assert_one_line_error(run_cli("merge", synth_shards / "o", s0, s1), "--overwrite")
    assert run_cli("merge", synth_shards / "o", s0, s1, "--overwrite", "--quiet").returncode == 0


@pytest.mark.parametrize("shard", ["2/2", "x", "1/0", "1/2/3"])
def test_bad_shard_is_a_one_line_error(tmp_path, shard):
    assert_one_line_error(run_cli(*_synth(tmp_path / "s", "--shard", shard)), "--shard")


# ---------------------------------------------------------------------------------------------
# the one mask reader

def _pickled(path: Path) -> None:
    np.save(path, np.array([{"a": 1}], dtype=object), allow_pickle=True)


BAD_MASKS = {  # how each malformed mask file is made
    "no channels": lambda p: np.save(p, np.zeros((32, 32, 0), np.uint8)),
    "no pixels": lambda p: np.save(p, np.zeros((0, 0), np.uint8)),
    "five channels": lambda p: np.save(p, np.ones((32, 32, 5), np.uint8)),
    "one axis": lambda p: np.save(p, np.ones(32, np.uint8)),
    "four axes": lambda p: np.save(p, np.ones((32, 32, 1, 1), np.uint8)),
    "strings": lambda p: np.save(p, np.full((32, 32), "x")),
    "objects": _pickled,
    "empty file": lambda p: p.write_bytes(b""),
    "truncated": lambda p: p.write_bytes(b"\x93NUMPY\x01\x00v\x00{'descr': '|u1', 'fortran_order': False, "),
    "wrong size": lambda p: np.save(p, np.ones((31, 32), np.uint8)),
}


def test_every_malformed_mask_is_a_bad_mask_reject_in_edit(synth_copy, tmp_path):
    masks = sorted((synth_copy / "fg_mask" / "val").rglob("*.npy"))
    broken = {}
    for (name, make), path in zip(BAD_MASKS.items(), masks[::3]):
        make(path)
        broken[f"{path.parent.name}/{path.stem}"] = name
    out = tmp_path / "edits"
    proc = run_cli("edit", "--data", synth_copy, "--out", out, "--levels", "remove", "--quiet")
    assert proc.returncode == 0, proc.stderr
    reasons = {r["image"]: r["reason"] for r in read_csv(out / "rejects.csv")}
    assert reasons == {image: "bad_mask" for image in broken}, broken
    assert len(list((out / "original" / "val").rglob("*.png"))) == 36 - len(broken)


def test_a_channelless_mask_is_a_bad_mask_reject_in_build(tmp_path):
    samples = generate(1, size=40, seed=3)[:3]
    for i, s in enumerate(samples):
        write_sample(tmp_path / "images", tmp_path / "boxes", "a", f"s{i}", s.image, s.box)
        (tmp_path / "masks" / "a").mkdir(parents=True, exist_ok=True)
        np.save(tmp_path / "masks" / "a" / f"s{i}.npy", s.mask if i else np.zeros((40, 40, 0), np.uint8))
    proc = run_cli("build", "--images", tmp_path / "images", "--boxes", tmp_path / "boxes", "--masks",
                   tmp_path / "masks", "--out", tmp_path / "out", "--no-resize", "--quiet")
    assert proc.returncode == 0, proc.stderr
    assert [(r["source"], r["reason"]) for r in read_csv(tmp_path / "out" / "rejects.csv")] == [("a/s0.png", "bad_mask")]


def test_read_mask_accepts_channel_stacks_and_any_number_type(tmp_path):
    from bgbench.data.images import read_mask
    m = np.zeros((6, 5), bool)
    m[1:3, 2:4] = True
    for arr in (m, m.astype(np.float32) * 0.5, np.stack([m.astype(np.uint8) * 255] * 3, axis=2), m[..., None]):
        np.save(tmp_path / "m.npy", arr)
        assert np.array_equal(read_mask(tmp_path / "m.npy", (6, 5)), m)
    Image.fromarray(m.astype(np.uint8) * 255).save(tmp_path / "m.png")
    assert np.array_equal(read_mask(tmp_path / "m.png", (6, 5)), m)


# ---------------------------------------------------------------------------------------------
# one manifest schema

def test_synth_build_and_edit_write_one_manifest_schema(synth_root, tmp_path, build_inputs):
    assert run_cli(*_build(build_inputs)(tmp_path / "b")).returncode == 0
    assert run_cli("edit", "--data", synth_root, "--out", tmp_path / "e", "--levels", "size_full",
                   "--quiet").returncode == 0
    headers = set()
    for root in (synth_root, tmp_path / "b", tmp_path / "e"):
        with open(root / "manifest.csv", newline="") as f:
            headers.add(tuple(next(csv.reader(f))))
        with open(root / "rejects.csv", newline="") as f:
            assert next(csv.reader(f)) == ["split", "image", "source", "folder", "reason", "detail"]
    assert headers == {("split", "folder", "image", "label", "class", "source", "box", "mask_source", "fg_fraction",
                        "bg_image", "bg_class", "bg_fallback", "params")}
    for r in read_csv(tmp_path / "e" / "manifest.csv"):  # edit's boxes are end-exclusive, like every box
        if r["folder"] == "original":
            ys, xs = np.nonzero(np.load(tmp_path / "e" / "fg_mask" / "val" / f"{r['image']}.npy"))
            assert r["box"] == f"{xs.min()} {ys.min()} {xs.max() + 1} {ys.max() + 1}"


# ---------------------------------------------------------------------------------------------
# workers die with their parent

SLOW_EDIT = """
    import sys, time
    from bgbench.edits.registry import register_inpainter
    from bgbench.edits.pipeline import EditConfig, edit_dataset

    @register_inpainter("slow-test")
    def slow(image, mask):
        time.sleep(0.4)
        return image.copy()

    edit_dataset(EditConfig(data=sys.argv[1], out=sys.argv[2], levels=("remove",), inpainter="slow-test",
                            workers=2), progress=False)
"""
SLOW_BUILD = """
    import sys, time
    import bgbench.variants.prepare as P
    from bgbench.variants.build import BuildConfig, build
    from bgbench.variants.preprocess import Preprocess
    fast = P.grabcut_mask

    def slow(*args, **kwargs):
        time.sleep(0.4)
        return fast(*args, **kwargs)

    P.grabcut_mask = slow
    root = sys.argv[1]
    build(BuildConfig(images=root + "/images", boxes=root + "/boxes", out=sys.argv[2], workers=2,
                      preprocess=Preprocess(None, None)), progress=False)
"""


def _children(pid: int) -> List[int]:
    kids = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                stat = (entry / "stat").read_text()
            except OSError:
                continue
            fields = stat.rsplit(")", 1)[1].split()
            if int(fields[1]) == pid:
                kids.append(int(entry.name))
    return kids


def _alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return False
    return state not in ("Z", "X")


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc")
@pytest.mark.parametrize("job", ["edit", "build"])
def test_workers_die_with_a_killed_parent(tmp_path, synth_root, build_inputs, job):
    script, data = (SLOW_EDIT, synth_root) if job == "edit" else (SLOW_BUILD, build_inputs)
    out = tmp_path / "out"
    def stage():  # where the job writes until it is complete (named with its pid and a token)
        found = list(tmp_path.glob(".out.bgbench-val.*.partial"))
        return found[0] if found else tmp_path / "no-stage-yet"

    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}
    parent = subprocess.Popen([sys.executable, "-c", textwrap.dedent(script), str(data), str(out)], env=env,
                              stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    workers: List[int] = []
    try:
        deadline = time.time() + 120
        while time.time() < deadline and parent.poll() is None:
            workers = [k for k in _children(parent.pid) if _alive(k)]
            if len(workers) >= 2 and any((stage() / "fg_mask" / "val").rglob("*.npy")):
                break  # the pool is at work
            time.sleep(0.1)
        assert parent.poll() is None and len(workers) >= 2, parent.stderr.read().decode() if parent.poll() else workers
        parent.send_signal(signal.SIGKILL)
        parent.wait()
        deadline = time.time() + 5
        while time.time() < deadline and any(_alive(w) for w in workers):
            time.sleep(0.1)
        survivors = [w for w in workers if _alive(w)]
        assert not survivors, f"workers {survivors} outlived their parent"
        written = len(tree(stage()))
        time.sleep(1.0)
        assert len(tree(stage())) == written and not out.exists()  # nothing writes on; the output folder untouched
    finally:
        for w in workers:
            if _alive(w):
                os.kill(w, signal.SIGKILL)
