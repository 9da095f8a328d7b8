"""Hostile and careless input, as a new user or an attacker would give it (issue 40): group files
that name files outside their dataset, broken rows, bad box numbers, output folders that hold other
people's files, killed runs. Every check asserts what was kept on disk, not only the exit status,
and each one failed before its fix."""
from __future__ import annotations

import csv
import hashlib
import json
import os
import sqlite3
from pathlib import Path
from typing import Dict, List

import numpy as np
import pytest
from PIL import Image

from conftest import assert_one_line_error, run_cli
from helpers.group_trees import groups_tree, waterbirds_tree

ARCH = "timm:test_resnet"


def read_rows(path: Path) -> List[dict]:
    with open(path, newline="") as f:
        return list(csv.DictReader(f))


def write_rows(path: Path, rows: List[dict]) -> None:
    with open(path, "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=list(rows[0]))
        w.writeheader()
        w.writerows(rows)


def snapshot(root: Path) -> Dict[str, str]:
    """Every file under `root`: relative path -> sha256 of its bytes."""
    return {p.relative_to(root).as_posix(): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(root.rglob("*")) if p.is_file()}


def stored_image_ids(db: Path) -> List[str]:
    """Every image id of every stored prediction (none when the store was never made)."""
    if not db.is_file():
        return []
    con = sqlite3.connect(db)
    try:
        return [r[0] for r in con.execute("SELECT image_id FROM predictions")]
    except sqlite3.OperationalError:  # no predictions table: nothing was stored
        return []
    finally:
        con.close()


# -- group files: nothing outside the dataset root is read -----------------------------------------

@pytest.fixture
def victim(tmp_path) -> Path:
    """A readable image outside every dataset root: what a hostile group file points at."""
    path = tmp_path / "outside" / "secret.png"
    path.parent.mkdir()
    Image.fromarray(np.full((32, 32, 3), 7, np.uint8)).save(path)
    return path


def _group_tree(kind: str, root: Path) -> Path:
    """A tiny group dataset, every row in the test split: `root/groups.csv` or `root/metadata.csv`."""
    if kind == "groups":
        groups_tree(root, {(0, 0): 2, (1, 1): 2}, split="test")
        return root / "groups.csv"
    waterbirds_tree(root, {"test": {(0, 0): 1, (0, 1): 1, (1, 0): 1, (1, 1): 1}})
    return root / "metadata.csv"


def _image_column(table: Path) -> str:
    return "image" if table.name == "groups.csv" else "img_filename"


@pytest.fixture(scope="module")
def two_classes(tmp_path_factory) -> str:
    """A 2-class test_resnet checkpoint (the group trees have two classes), as `file:PATH`."""
    import timm
    from bgbench.models.checkpoint import save_checkpoint
    from bgbench.models.spec import BgModel, ModelSpec
    path = tmp_path_factory.mktemp("two_classes") / "model.pt"
    net = timm.create_model("test_resnet", num_classes=2)
    save_checkpoint(BgModel(net, ModelSpec(name="two", arch="test_resnet", num_classes=2, input_size=(3, 32, 32))), path)
    return f"file:{path}"


def _eval(model: str, data: Path, db: Path):
    return run_cli("eval", "--model", model, "--data", data, "--db", db, "--quiet")


@pytest.mark.parametrize("kind", ["groups", "waterbirds"])
@pytest.mark.parametrize("how", ["dotdot", "absolute", "symlink"])
def test_a_group_file_naming_a_file_outside_its_root_is_refused(kind, how, victim, two_classes, tmp_path):
    root = tmp_path / "data"
    table = _group_tree(kind, root)
    rows = read_rows(table)
    if how == "dotdot":
        named = "../outside/secret.png"
    elif how == "absolute":
        named = str(victim)
    else:
        (root / "escape.png").symlink_to(victim)
        named = "escape.png"
    rows[1][_image_column(table)] = named
    write_rows(table, rows)
    before, secret = snapshot(root), victim.read_bytes()
    db = tmp_path / "r.db"
    assert_one_line_error(_eval(two_classes, root, db), table.name, "line 3", "outside")
    assert stored_image_ids(db) == []  # nothing of the outside file (nor of the dataset) was stored
    assert victim.read_bytes() == secret and snapshot(root) == before


@pytest.mark.parametrize("kind", ["groups", "waterbirds"])
def test_a_repeated_row_is_refused_naming_both_lines(kind, two_classes, tmp_path):
    root = tmp_path / "data"
    table = _group_tree(kind, root)
    rows = read_rows(table)
    write_rows(table, rows + [rows[0]])  # line 2 again, as line 6
    before = snapshot(root)
    db = tmp_path / "r.db"
    assert_one_line_error(_eval(two_classes, root, db), table.name, "lines 2 and 6")
    assert stored_image_ids(db) == [] and snapshot(root) == before


def test_a_waterbirds_row_with_an_unknown_split_is_refused(two_classes, tmp_path):
    root = tmp_path / "data"
    table = _group_tree("waterbirds", root)
    rows = read_rows(table)
    rows[2]["split"] = "7"
    write_rows(table, rows)
    before = snapshot(root)
    db = tmp_path / "r.db"
    assert_one_line_error(_eval(two_classes, root, db), "metadata.csv", "line 4", "split", "'7'")
    assert stored_image_ids(db) == [] and snapshot(root) == before


@pytest.mark.parametrize("kind", ["groups", "waterbirds"])
def test_a_short_row_is_one_line_naming_it(kind, two_classes, tmp_path):
    root = tmp_path / "data"
    table = _group_tree(kind, root)
    text = table.read_text().splitlines()
    text[2] = text[2].split(",", 1)[0]  # the row's first field only
    table.write_text("\n".join(text) + "\n")
    before = snapshot(root)
    db = tmp_path / "r.db"
    assert_one_line_error(_eval(two_classes, root, db), table.name, "line 3")
    assert stored_image_ids(db) == [] and snapshot(root) == before


# -- build --imagenet: a bad box number rejects its image, never the build -------------------------

def _imagenet_images(rng, wnids, per_wnid: int):
    """(wnid, k, image, box) for `per_wnid` drawings of each synset (test_imagenet_build's drawing)."""
    from test_imagenet_build import draw
    return [(w, k, *draw(rng)) for w in wnids for k in range(per_wnid)]


def _built_and_rejected(out: Path, split: str):
    built = {r["image"].split("/")[1] for r in read_rows(out / "manifest.csv") if r["folder"] == "original"}
    rejected = {r["image"].split("/")[1]: r for r in read_rows(out / "rejects.csv")}
    for stem in built:  # what the manifest lists is on disk
        assert any((out / "original" / split).glob(f"*/{stem}.png")), stem
    return built, rejected


def ilsvrc_val(root: Path, per_wnid: int = 2, bad_words: Dict[tuple, str] = {}, seed: int = 3) -> set:
    """An ILSVRC release with a flat val of `per_wnid` images of a dog and a bird synset, classed
    by LOC_val_solution.csv; `bad_words[(wnid, k)]` replaces a coordinate of that image's box.
    Returns the stems of the images whose box was spoilt."""
    from test_imagenet_build import MAPPED, SYNSETS
    val = root / "ILSVRC" / "Data" / "CLS-LOC" / "val"
    val.mkdir(parents=True)
    (root / "LOC_synset_mapping.txt").write_text("".join(f"{w} name\n" for w in SYNSETS))
    rows, bad = [["ImageId", "PredictionString"]], set()
    for n, (wnid, k, im, box) in enumerate(_imagenet_images(np.random.default_rng(seed),
                                                            (MAPPED[0][0], MAPPED[1][0]), per_wnid)):
        stem = f"ILSVRC2012_val_{n + 1:08d}"
        im.save(val / f"{stem}.JPEG", "JPEG", quality=95)
        coords = [str(v) for v in box]
        if (wnid, k) in bad_words:
            coords[k % 4] = bad_words[wnid, k]
            bad.add(stem)
        rows.append([stem, f"{wnid} {' '.join(coords)}"])
    with open(root / "LOC_val_solution.csv", "w", newline="") as f:
        csv.writer(f).writerows(rows)
    return bad


def test_bad_numbers_in_loc_val_solution_reject_their_images(tmp_path):
    from test_imagenet_build import MAPPED
    root = tmp_path / "ilsvrc"
    bad = ilsvrc_val(root, 4, {(MAPPED[0][0], 2): "inf", (MAPPED[0][0], 3): "abc", (MAPPED[1][0], 2): "nan",
                               (MAPPED[1][0], 3): "1e999"})
    before, out = snapshot(root), tmp_path / "out"
    res = run_cli("build", "--imagenet", root, "--preset", "in9", "--split", "val", "--out", out, "--no-resize",
                  "--quiet", "--db", tmp_path / "r.db")
    assert res.returncode == 0, res.stderr
    built, rejected = _built_and_rejected(out, "val")
    assert {s for s, r in rejected.items() if r["reason"] == "bad_annotation"} == bad
    assert all("LOC_val_solution.csv line" in rejected[s]["detail"] for s in bad)
    assert len(built) == 4 and not built & bad
    assert snapshot(root) == before  # the ImageNet tree is only read


def test_bad_numbers_in_an_xml_annotation_reject_their_images(tmp_path):
    from test_imagenet_build import MAPPED, voc
    root, boxes = tmp_path / "tv", tmp_path / "boxes"
    bad_words = {(MAPPED[0][0], 2): "inf", (MAPPED[0][0], 3): "-inf", (MAPPED[1][0], 2): "nan",
                 (MAPPED[1][0], 3): "abc"}
    bad = set()
    for wnid, k, im, box in _imagenet_images(np.random.default_rng(4), (MAPPED[0][0], MAPPED[1][0]), 4):
        stem = f"{wnid}_{k}"
        (root / "train" / wnid).mkdir(parents=True, exist_ok=True)
        (boxes / wnid).mkdir(parents=True, exist_ok=True)
        im.save(root / "train" / wnid / f"{stem}.JPEG", "JPEG", quality=95)
        coords = list(box)
        if (wnid, k) in bad_words:
            coords[k] = bad_words[wnid, k]
            bad.add(stem)
        (boxes / wnid / f"{stem}.xml").write_text(voc(wnid, coords))
    before, out = snapshot(tmp_path), tmp_path / "out"
    res = run_cli("build", "--imagenet", root, "--boxes", boxes, "--preset", "in9", "--split", "train", "--out", out,
                  "--no-resize", "--quiet", "--db", tmp_path / "r.db")
    assert res.returncode == 0, res.stderr
    built, rejected = _built_and_rejected(out, "train")
    assert {s for s, r in rejected.items() if r["reason"] == "bad_annotation"} == bad
    assert len(built) == 4 and not built & bad
    assert {k: v for k, v in snapshot(tmp_path).items() if not k.startswith(("out/", "r.db"))} == before


# -- --db naming something that is no results store --------------------------------------------------

@pytest.mark.parametrize("command", [["runs"], ["eval", "--model", ARCH, "--variants", "original", "--quiet"]])
def test_db_naming_a_folder_is_one_line_and_leaves_it_alone(command, synth_root, tmp_path):
    folder = tmp_path / "results"
    folder.mkdir()
    (folder / "notes.txt").write_text("mine")
    args = command + (["--data", synth_root] if command[0] == "eval" else [])
    assert_one_line_error(run_cli(*args, "--db", folder), str(folder), "is a folder")
    assert snapshot(folder) == {"notes.txt": hashlib.sha256(b"mine").hexdigest()}


def test_db_naming_a_file_that_is_no_store_is_one_line_and_leaves_it_alone(synth_root, tmp_path):
    notes = tmp_path / "notes.txt"
    notes.write_text("not a database, but long enough to have a header page of its own " * 20)
    before = snapshot(tmp_path)
    assert_one_line_error(run_cli("eval", "--model", ARCH, "--data", synth_root, "--variants", "original", "--quiet",
                                  "--db", notes), str(notes), "SQLite")
    assert snapshot(tmp_path) == before


# -- a resumed challenge: its counters add up over its processes ------------------------------------

def test_a_resumed_challenge_counts_the_composites_of_every_process(synth_root, tmp_path, monkeypatch):
    """A --full run stopped after 10 stored verdicts, then resumed: every composite was evaluated
    once (36 foregrounds x 36 backgrounds), by two processes, and the stored count says so."""
    from bgbench.store import Store
    db = tmp_path / "r.db"
    args = ["challenge", "--model", ARCH, "--data", synth_root, "--full", "--batch-size", 8, "--save-every", 1,
            "--out", tmp_path / "figures", "--db", db, "--quiet", "--json"]
    real, calls = Store.add_challenge_results, []

    def stop_after_ten(self, *a, **k):
        calls.append(1)
        if len(calls) > 10:
            raise KeyboardInterrupt  # as a kill would, between two stored verdicts
        return real(self, *a, **k)

    monkeypatch.setattr(Store, "add_challenge_results", stop_after_ten)
    try:
        run_cli(*args)
    except KeyboardInterrupt:
        pass
    monkeypatch.setattr(Store, "add_challenge_results", real)
    con = sqlite3.connect(db)
    first = con.execute("SELECT count(*) FROM challenge_fg").fetchone()[0]
    con.close()
    assert 0 < first < 36
    res = run_cli(*args)
    assert res.returncode == 0, res.stderr
    assert "resuming challenge run 1" in res.stderr
    con = sqlite3.connect(db)
    rows = con.execute("SELECT pairs FROM challenge_fg WHERE run_id=1").fetchall()
    stored = con.execute("SELECT value FROM metrics WHERE run_id=1 AND name='challenge_pairs'").fetchone()[0]
    con.close()
    assert len(rows) == 36 and sum(r[0] for r in rows) == 36 * 36
    assert stored == 36 * 36 == json.loads(res.stdout)["pairs"]


# -- killed DFR runs: a damaged cache is recomputed, a rerun finishes and records once ---------------

@pytest.fixture(scope="module")
def six_groups(tmp_path_factory) -> Path:
    """3 classes on 2 texture families, 6 images each: a group dataset DFR fits in a second."""
    return groups_tree(tmp_path_factory.mktemp("six_groups"), {(c, f): 6 for c in range(3) for f in range(2)})


def _dfr(data: Path, out: Path, db: Path, cache="none", *extra):
    return run_cli("train", "--recipe", "dfr", "--model", ARCH, "--data", data, "--out", out, "--feature-cache",
                   cache, "--retrains", 2, "--db", db, *extra)


def _train_runs(db: Path) -> List[tuple]:
    """(status, checkpoint path, checkpoint sha256) of every stored training run."""
    con = sqlite3.connect(db)
    rows = con.execute("SELECT status, outputs, checkpoint_sha256 FROM runs WHERE kind='train' ORDER BY id").fetchall()
    con.close()
    return [(s, json.loads(o or "{}").get("checkpoint"), sha) for s, o, sha in rows]


@pytest.mark.parametrize("damage", ["truncated", "empty"])
def test_a_damaged_feature_cache_is_said_and_recomputed(damage, six_groups, tmp_path):
    cache, db = tmp_path / "cache", tmp_path / "r.db"
    assert _dfr(six_groups, tmp_path / "a", db, cache, "--quiet").returncode == 0
    [npz] = cache.glob("*.npz")
    whole = npz.read_bytes()
    npz.write_bytes(whole[:len(whole) // 2] if damage == "truncated" else b"")  # a kill mid-write, by another tool
    res = _dfr(six_groups, tmp_path / "b", db, cache)
    assert res.returncode == 0, res.stderr
    said = [ln for ln in res.stderr.splitlines() if npz.name in ln]
    assert len(said) == 1 and "recomput" in said[0], res.stderr
    assert npz.read_bytes() == whole  # the same features, whole again
    assert (tmp_path / "b" / "model.pt").is_file()


def test_the_same_fit_twice_gives_the_same_bytes_and_each_out_is_recorded_once(six_groups, tmp_path, monkeypatch):
    db = tmp_path / "r.db"
    assert _dfr(six_groups, tmp_path / "a", db, "none", "--quiet").returncode == 0
    monkeypatch.setattr(os, "getpid", lambda: 4242)  # another process, as a rerun would be
    assert _dfr(six_groups, tmp_path / "b", db, "none", "--quiet").returncode == 0
    a, b = (tmp_path / "a" / "model.pt").read_bytes(), (tmp_path / "b" / "model.pt").read_bytes()
    assert a == b
    again = _dfr(six_groups, tmp_path / "b", db)
    assert again.returncode == 0 and "already holds this head" in again.stderr
    assert (tmp_path / "b" / "model.pt").read_bytes() == b
    sha = hashlib.sha256(a).hexdigest()
    assert _train_runs(db) == [("done", str(tmp_path / "a" / "model.pt"), sha),
                               ("done", str(tmp_path / "b" / "model.pt"), sha)]


def _die_at_write(monkeypatch, out: Path, n: int) -> None:
    """The n-th file write into `out` (write_text, write_bytes or torch.save) stops half way, and
    the process dies there, as a SIGKILL would leave it."""
    import torch
    real_bytes, real_save, count = Path.write_bytes, torch.save, [0]

    def cut(path, data: bytes) -> None:
        if Path(path).resolve().is_relative_to(out.resolve()):
            if count[0] == n:
                real_bytes(Path(path), data[:len(data) // 2])
                raise KeyboardInterrupt
            count[0] += 1
        real_bytes(Path(path), data)

    def save(obj, f, *a, **k):
        if not isinstance(f, (str, os.PathLike)):
            return real_save(obj, f, *a, **k)
        import io
        buf = io.BytesIO()
        real_save(obj, buf, *a, **k)
        cut(f, buf.getvalue())

    monkeypatch.setattr(Path, "write_text", lambda self, text, *a, **k: cut(self, text.encode()))
    monkeypatch.setattr(Path, "write_bytes", lambda self, data: cut(self, bytes(data)))
    monkeypatch.setattr(torch, "save", save)


def test_a_dfr_run_killed_at_any_moment_finishes_on_rerun_and_records_once(six_groups, tmp_path, monkeypatch):
    """Killed while writing model.pt, head.json or config.json, or while recording: the rerun (another
    process) finishes, leaves only the run's own files, writes the model an unkilled run writes, and
    the store holds one finished training run of it."""
    clean = tmp_path / "clean"
    assert _dfr(six_groups, clean, tmp_path / "clean.db", "none", "--quiet").returncode == 0
    for kill in ("model.pt", "head.json", "config.json", "recording"):
        out, db = tmp_path / kill, tmp_path / f"{kill}.db"
        with monkeypatch.context() as m:
            if kill == "recording":  # the run is opened in the store, and dies before it is finished
                from bgbench.store import Store
                m.setattr(Store, "finish_run", lambda *a, **k: (_ for _ in ()).throw(KeyboardInterrupt))
            else:
                _die_at_write(m, out, ["model.pt", "head.json", "config.json"].index(kill))
            assert _dfr(six_groups, out, db, "none", "--quiet").returncode == 130, kill
        with monkeypatch.context() as m:
            m.setattr(os, "getpid", lambda: 4242)  # the rerun is another process
            res = _dfr(six_groups, out, db, "none", "--quiet")
        assert res.returncode == 0, (kill, res.stderr)
        assert sorted(p.name for p in out.iterdir()) == ["config.json", "head.json", "model.pt"], kill
        model = (out / "model.pt").read_bytes()
        assert model == (clean / "model.pt").read_bytes(), kill  # the very model an unkilled run writes
        done = [r for r in _train_runs(db) if r[0] == "done"]
        assert done == [("done", str(out / "model.pt"), hashlib.sha256(model).hexdigest())], kill
        assert json.loads((out / "head.json").read_text())["images"] == 36


# -- output folders: bgbench deletes or overwrites only what it wrote --------------------------------

def _build(root: Path, out: Path, preset: str = "in9", *extra):
    return run_cli("build", "--imagenet", root, "--preset", preset, "--split", "val", "--out", out, "--no-resize",
                   "--quiet", "--db", out.parent / "r.db", *extra)


def _no_stage_left(parent: Path) -> bool:
    """No staging folder of a job (`.<out>.bgbench-<job>.partial`) is left beside the outputs."""
    return not list(parent.glob(".*.bgbench-*.partial"))


def _plant(out: Path, files: Dict[str, bytes]) -> None:
    for rel, data in files.items():
        (out / rel).parent.mkdir(parents=True, exist_ok=True)
        (out / rel).write_bytes(data)


def test_an_overwrite_that_builds_nothing_keeps_the_previous_build(tmp_path):
    from test_imagenet_build import MAPPED
    good, spoilt, out = tmp_path / "good", tmp_path / "spoilt", tmp_path / "out"
    ilsvrc_val(good)
    ilsvrc_val(spoilt, 2, {(w, k): "nan" for w in (MAPPED[0][0], MAPPED[1][0]) for k in range(2)})
    assert _build(good, out).returncode == 0
    before = snapshot(out)
    assert_one_line_error(_build(spoilt, out, "in9", "--overwrite"), "nothing could be built", "kept")
    assert snapshot(out) == before and _no_stage_left(tmp_path)


def test_an_overwrite_with_another_preset_leaves_no_stale_file_and_keeps_the_users(tmp_path):
    root, out, fresh = tmp_path / "ilsvrc", tmp_path / "out", tmp_path / "fresh"
    ilsvrc_val(root)
    assert _build(root, out, "in9").returncode == 0
    assert (out / "mixed_rand").is_dir() and (out / "fg_mask").is_dir()
    mine = {"notes.txt": b"my notes", "original/val/00_dog/README": b"mine"}
    _plant(out, mine)
    assert _build(root, out, "in9l", "--overwrite").returncode == 0
    assert _build(root, fresh, "in9l").returncode == 0
    got = snapshot(out)
    assert {k: v for k, v in got.items() if k not in mine} == snapshot(fresh)  # in9l's files, none of in9's
    assert all((out / rel).read_bytes() == data for rel, data in mine.items())
    assert not (out / "mixed_rand").exists() and not (out / "fg_mask").exists() and _no_stage_left(tmp_path)


def test_a_build_that_wrote_nothing_does_not_block_its_retry(tmp_path):
    from test_imagenet_build import UNMAPPED, draw
    nothing, good, out = tmp_path / "tv", tmp_path / "good", tmp_path / "out"
    (nothing / "val" / UNMAPPED[0]).mkdir(parents=True)  # no image of any IN-9 synset
    draw(np.random.default_rng(0))[0].save(nothing / "val" / UNMAPPED[0] / "x.JPEG", "JPEG")
    ilsvrc_val(good)
    _plant(out, {"notes.txt": b"mine"})
    assert_one_line_error(_build(nothing, out, "in9l"), "nothing could be built", "no files")
    res = _build(good, out, "in9")  # the retry, without --overwrite: the folder holds no image
    assert res.returncode == 0, res.stderr
    assert (out / "notes.txt").read_bytes() == b"mine"
    assert len([r for r in read_rows(out / "manifest.csv") if r["folder"] == "original"]) == 4


def test_an_overwrite_never_replaces_a_file_bgbench_did_not_write(tmp_path):
    out = tmp_path / "s9"
    theirs = {"original/val/00_circle/synth_val_00000.png": b"the user's own picture", "notes.txt": b"mine"}
    _plant(out, theirs)
    args = ["synth", "--out", out, "--per-class", 1, "--size", 16, "--quiet"]
    assert_one_line_error(run_cli(*args), "--overwrite")
    assert_one_line_error(run_cli(*args, "--overwrite"), "synth_val_00000.png", "not written by bgbench")
    assert snapshot(out) == {k: hashlib.sha256(v).hexdigest() for k, v in theirs.items()}
    assert _no_stage_left(tmp_path)
    table = tmp_path / "table"
    _plant(table, {"manifest.csv": b"name,amount\nrent,900\n"})  # the user's, where a dataset's table goes
    assert_one_line_error(run_cli("synth", "--out", table, "--per-class", 1, "--size", 16, "--quiet"),
                          "manifest.csv", "not a table bgbench wrote")
    assert snapshot(table) == {"manifest.csv": hashlib.sha256(b"name,amount\nrent,900\n").hexdigest()}
    afile = tmp_path / "afile"
    afile.write_bytes(b"mine")
    assert_one_line_error(run_cli("synth", "--out", afile, "--per-class", 1, "--size", 16, "--quiet"),
                          str(afile), "not a folder")
    assert afile.read_bytes() == b"mine"


@pytest.fixture(scope="module")
def two_subjects(synth_root, tmp_path_factory):
    """A store with eval runs of two models (two report subjects): (store, run ids)."""
    db, ids = tmp_path_factory.mktemp("two_subjects") / "r.db", []
    for model in (ARCH, "timm:test_efficientnet"):
        res = run_cli("eval", "--model", model, "--data", synth_root, "--variants", "original", "mixed_rand",
                      "mixed_same", "--db", db, "--json", "--quiet")
        assert res.returncode == 0, res.stderr
        ids.append(json.loads(res.stdout)["run_id"])
    return db, ids


def test_a_report_rewrite_removes_its_own_old_files_and_no_other(two_subjects, tmp_path):
    db, (first, _) = two_subjects
    out = tmp_path / "report"
    Image.fromarray(np.full((8, 8, 3), 99, np.uint8)).save(tmp_path / "mine.png")
    picture = (tmp_path / "mine.png").read_bytes()
    mine = {"fig1.png": picture, "figures/fig1.png": picture, "figures/thumbs/t.png": picture,
            "figures/full/u.png": picture, "notes.txt": b"mine"}
    _plant(out, mine)
    assert run_cli("report", "--db", db, "--out", out, "--quiet").returncode == 0
    whole = set(snapshot(out))
    assert run_cli("report", "--db", db, "--out", out, "--runs", first, "--quiet").returncode == 0
    assert all((out / rel).read_bytes() == data for rel, data in mine.items() if (out / rel).is_file())
    assert all((out / rel).is_file() for rel in mine)
    listed = {ln for ln in (out / "REPORT_FILES.txt").read_text().splitlines()
              if ln and not ln.startswith("#") and not ln.endswith("/")}  # its files (folders end in /)
    assert set(snapshot(out)) == set(mine) | listed | {"REPORT_FILES.txt"}  # its own files and the user's
    assert whole - set(snapshot(out)), "the second report has fewer figures: the first one's others are gone"
    html = (out / "index.html").read_text()
    import re
    assert all((out / link).is_file() for link in re.findall(r'(?:src|href)="(figures/[^"#?]+)"', html))
    assert _no_stage_left(tmp_path)


def test_a_report_out_that_is_no_folder_of_its_own_is_refused_before_any_work(two_subjects, tmp_path, monkeypatch):
    db, _ = two_subjects
    home = tmp_path / "home"
    home.mkdir()
    monkeypatch.setenv("HOME", str(home))
    assert_one_line_error(run_cli("report", "--db", db, "--out", home, "--quiet"), "home folder")
    assert list(home.iterdir()) == []
    page = tmp_path / "page.html"
    page.write_text("mine")
    assert_one_line_error(run_cli("report", "--db", db, "--out", page, "--quiet"), "not a folder")
    site = tmp_path / "site"
    _plant(site, {"index.html": b"<html>my own site</html>", "about.html": b"mine"})
    before = snapshot(site)
    assert_one_line_error(run_cli("report", "--db", db, "--out", site, "--quiet"), "index.html", "no bgbench report")
    assert page.read_text() == "mine" and snapshot(site) == before and _no_stage_left(tmp_path)


def test_a_report_into_the_filesystem_root_is_refused(two_subjects):
    """Checked by reading the old code, not by running it there: it wrote into / (as root)."""
    db, _ = two_subjects
    before = sorted(os.listdir("/"))
    assert_one_line_error(run_cli("report", "--db", db, "--out", "/", "--quiet"), "root")
    assert sorted(os.listdir("/")) == before
