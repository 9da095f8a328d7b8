"""The decoded-pixel cache (`data.pixel_cache`): every pixel is what decoding gives, a changed file is
decoded again, a killed write is never served, processes share one entry, and the runs that read it
store the same numbers as without it."""
from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import numpy as np
import pytest
from PIL import Image

from bgbench.data import cache_entries, pixel_cache
from bgbench.data.images import decode_item
from bgbench.data.in9 import discover
from bgbench.errors import DataError

from conftest import run_cli

REPO = Path(__file__).resolve().parents[1]


@pytest.fixture(autouse=True)
def private_cache(tmp_path, monkeypatch) -> Path:
    """Each test's own cache folder: what it finds there is what it wrote."""
    folder = tmp_path / "cache"
    monkeypatch.setenv("BGBENCH_CACHE", str(folder))
    return folder


def _items(root: Path, variant: str = "original"):
    return discover(root, variants=[variant]).items(variant)


def test_every_image_is_what_decoding_gives_and_the_second_read_decodes_nothing(synth_copy, monkeypatch):
    items = _items(synth_copy)
    first = pixel_cache.pixels_of(items, processes=2)
    assert first.mapped and first.from_cache == 0
    for k, it in enumerate(items):  # read while the first pass may still be writing: each waits for its image
        assert np.array_equal(first.image(k), decode_item(it))
    first.filling.join()
    import bgbench.data.pixel_cache as module

    def no_decoding(item):
        raise AssertionError(f"decoded {item.path} although it is cached")
    monkeypatch.setattr(module, "decode_item", no_decoding)
    second = pixel_cache.pixels_of(items)
    assert second.from_cache == len(items) and second.key == first.key
    batch = second.batch(range(3, 9))
    assert np.array_equal(batch, np.stack([decode_item(it) for it in items[3:9]]))
    assert np.array_equal(second.batch([0, 5, 2]), np.stack([decode_item(items[k]) for k in (0, 5, 2)]))


def test_images_of_several_sizes_and_a_preprocessing_are_kept_apart(tmp_path):
    from bgbench.data.layout import Item
    paths = []
    for i, (w, h) in enumerate([(40, 30), (25, 50), (40, 30)]):
        p = tmp_path / f"im{i}.png"
        Image.fromarray(np.random.default_rng(i).integers(0, 255, (h, w, 3), dtype=np.uint8)).save(p)
        paths.append(p)
    plain = [Item(f"c/{i}", 0, p) for i, p in enumerate(paths)]
    resized = [Item(f"c/{i}", 0, p, size=(16, 16)) for i, p in enumerate(paths)]
    a, b = pixel_cache.pixels_of(plain, wait=True), pixel_cache.pixels_of(resized, wait=True)
    assert a.key != b.key
    for k in range(3):
        assert np.array_equal(a.image(k), decode_item(plain[k]))
        assert np.array_equal(b.image(k), decode_item(resized[k]))
    assert b.batch([0, 1, 2]).shape == (3, 16, 16, 3)


def test_a_changed_image_is_decoded_again(synth_copy):
    items = _items(synth_copy)
    before = pixel_cache.pixels_of(items, wait=True)
    path = items[4].path
    changed = 255 - np.asarray(Image.open(path).convert("RGB"))
    Image.fromarray(changed).save(path, format=Image.open(path).format)
    st = path.stat()
    os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns + 10_000_000))
    after = pixel_cache.pixels_of(items)
    assert after.key != before.key and after.from_cache == 0
    assert np.array_equal(after.image(4), decode_item(items[4]))
    assert not np.array_equal(after.image(4), before.image(4))


def test_a_corrupt_image_names_its_file_on_the_first_pass(synth_copy):
    items = _items(synth_copy)
    items[7].path.write_bytes(b"not an image at all")
    with pytest.raises(DataError, match=str(items[7].path)):
        pixel_cache.pixels_of(items, processes=2)
    assert cache_entries.entries() == []


_WRITER = textwrap.dedent("""
    import sys, time
    from pathlib import Path
    import bgbench.data.pixel_cache as pc
    from bgbench.data.in9 import discover
    from bgbench.data.images import decode_item
    marker, root, delay = Path(sys.argv[1]), sys.argv[2], float(sys.argv[3])
    seen = []
    def slow(item):
        seen.append(item)
        marker.write_text(str(len(seen)))
        time.sleep(delay)
        return decode_item(item)
    pc.decode_item = slow
    items = discover(root, variants=["original"]).items("original")
    p = pc.pixels_of(items, processes=1)
    total = int(sum(int(p.image(k).sum()) for k in range(len(items))))
    if p.filling is not None:
        p.filling.join()
    print(len(seen), p.from_cache, p.key, total)
""")


def _writer(marker: Path, root: Path, delay: float) -> subprocess.Popen:
    env = {**os.environ, "PYTHONPATH": str(REPO / "src")}
    return subprocess.Popen([sys.executable, "-c", _WRITER, str(marker), str(root), str(delay)],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)


def _wait_for(marker: Path, at_least: int, proc: subprocess.Popen, limit: float = 120.0) -> None:
    t = time.time()
    while time.time() - t < limit:
        if marker.is_file() and marker.read_text().strip() and int(marker.read_text()) >= at_least:
            return
        assert proc.poll() is None, proc.stderr.read()
        time.sleep(0.05)
    raise AssertionError("the writer never got going")


def test_a_killed_write_is_never_served(synth_copy, tmp_path):
    items = _items(synth_copy)
    marker = tmp_path / "decoded"
    proc = _writer(marker, synth_copy, 0.2)
    _wait_for(marker, 3, proc)
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    root = pixel_cache.pixels_folder()
    assert list(root.glob(".tmp-*")), "the killed writer left its private folder"
    assert cache_entries.entries() == []  # nothing whole, nothing listed
    served = pixel_cache.pixels_of(items)
    assert served.from_cache == 0
    for k, it in enumerate(items):
        assert np.array_equal(served.image(k), decode_item(it))


def test_two_processes_share_one_entry(synth_copy, tmp_path):
    procs = [_writer(tmp_path / f"decoded{i}", synth_copy, 0.02) for i in range(2)]
    outs = [p.communicate(timeout=300) for p in procs]
    assert all(p.returncode == 0 for p in procs), [o[1] for o in outs]
    rows = [o[0].split() for o in outs]
    decoded = sorted(int(r[0]) for r in rows)
    n = len(_items(synth_copy))
    assert decoded == [0, n], rows  # one decoded every image, the other waited and decoded none
    assert rows[0][2] == rows[1][2] and rows[0][3] == rows[1][3]  # the same entry, the same pixels
    assert len(cache_entries.entries()) == 1


def test_an_unwritable_cache_is_one_line_and_the_run_goes_on(synth_copy, tmp_path, monkeypatch, capsys):
    blocker = tmp_path / "not-a-folder"
    blocker.write_text("a file where the cache folder should be")
    monkeypatch.setenv("BGBENCH_CACHE", str(blocker))
    items = _items(synth_copy)
    pixels = pixel_cache.pixels_of(items)
    err = capsys.readouterr().err
    assert len([ln for ln in err.splitlines() if "cannot be written" in ln]) == 1, err
    assert not pixels.mapped and np.array_equal(pixels.image(2), decode_item(items[2]))


def test_eval_stores_the_same_numbers_with_and_without_the_cache(synth_root, model_ckpt):
    runs = []
    for args in (["--no-cache"], [], []):  # no cache; first pass into it; read from it (each measured anew)
        r = run_cli("eval", "--model", f"file:{model_ckpt}", "--data", synth_root, "--json", "--rerun", *args)
        assert r.returncode == 0, r.stderr
        runs.append(json.loads(r.stdout))
    assert "BGBENCH_NO_CACHE" not in os.environ  # --no-cache held for its own command only
    from bgbench.store import Store
    store = Store(os.environ["BGBENCH_DB"])
    tables = [[{k: r[k] for k in r.keys() if k != "run_id"} for r in store.predictions(run["run_id"])]
              for run in runs]
    assert len({run["run_id"] for run in runs}) == 3
    assert tables[0] == tables[1] == tables[2]
    assert [run["accuracy"] for run in runs[1:]] == [runs[0]["accuracy"]] * 2
    fed = [json.loads(store.get_run(run["run_id"])["config"])["pixels"] for run in runs]
    assert fed[0]["from_cache"] == 0 and fed[2]["from_cache"] == fed[2]["images"] > 0


def test_cache_command_lists_evicts_and_clears(synth_copy):
    pixel_cache.pixels_of(_items(synth_copy), wait=True)
    pixel_cache.pixels_of(_items(synth_copy, "mixed_rand"), wait=True)
    listed = json.loads(run_cli("cache", "--json").stdout)
    assert len(listed["entries"]) == 2 and listed["total_bytes"] > 0
    oldest = listed["entries"][0]["key"]
    r = run_cli("cache", "clear", "--keep-gb", str((listed["total_bytes"] - 1) / 2**30), "--json")
    assert [e["key"] for e in json.loads(r.stdout)["removed"]] == [oldest]
    r = run_cli("cache", "clear")
    assert r.returncode == 0 and "removed 1 entry" in r.stdout
    assert cache_entries.entries() == []
    assert shutil.which("true")  # (the folder itself stays: only entries are removed)


def test_a_bad_image_met_while_streaming_names_its_file_to_the_reader(synth_copy):
    """A file whose header reads but whose pixels do not (a truncated PNG) fails in the decoding
    pool, after the reader has its map: the reader that needs it gets the one-line error, and no
    entry is left behind."""
    items = _items(synth_copy)
    data = items[5].path.read_bytes()
    items[5].path.write_bytes(data[: len(data) // 2])
    pixels = pixel_cache.pixels_of(items, processes=1)
    with pytest.raises(DataError, match=str(items[5].path)):
        for k in range(len(items)):
            pixels.image(k)
    pixels.filling.join()
    assert cache_entries.entries() == [] and not list(pixel_cache.pixels_folder().glob(".tmp-*"))


def test_a_full_disk_is_one_line_and_the_run_goes_on(synth_copy, monkeypatch, capsys):
    import collections
    usage = collections.namedtuple("usage", "total used free")
    monkeypatch.setattr(pixel_cache.shutil, "disk_usage", lambda path: usage(1 << 40, 1 << 40, 1 << 20))
    items = _items(synth_copy)
    pixels = pixel_cache.pixels_of(items)
    err = capsys.readouterr().err
    assert len([ln for ln in err.splitlines() if "cannot be written" in ln and "free" in ln]) == 1, err
    assert not pixels.mapped and np.array_equal(pixels.image(3), decode_item(items[3]))
    assert cache_entries.entries() == [] and not list(pixel_cache.pixels_folder().glob(".tmp-*"))


def _many(root: Path, variants=("original", "mixed_rand", "only_fg")):
    """Enough images (over `POOL_MIN_IMAGES`) that a first pass decodes in worker processes."""
    layout = discover(root, variants=list(variants))
    items = [it for v in variants for it in layout.items(v)]
    assert len(items) >= pixel_cache.POOL_MIN_IMAGES
    return items


def test_the_next_first_pass_takes_the_last_ones_decoding_processes(synth_copy):
    first_items, next_items = _many(synth_copy, ("original", "mixed_rand")), _many(synth_copy, ("only_fg", "no_fg"))
    first = pixel_cache.pixels_of(first_items, processes=2, wait=True)
    kept = pixel_cache._POOLS.idle
    assert kept is not None, "a pass that ended cleanly keeps its processes for the next"
    nxt = pixel_cache.pixels_of(next_items, processes=2, wait=True)
    assert pixel_cache._POOLS.idle[1] is kept[1], "the next pass started processes of its own"
    for pixels, items in ((first, first_items), (nxt, next_items)):
        for k in range(0, len(items), 7):
            assert np.array_equal(pixels.image(k), decode_item(items[k]))


def test_processes_forked_in_another_working_folder_are_not_reused(tmp_path, synth_root, monkeypatch):
    """Items may name their files relatively: a worker forked in folder X would read X's file of
    that name. The same relative names under Y (other pixels) must decode as Y's."""
    from bgbench.data.layout import Item
    for name, invert in (("x", False), ("y", True)):
        shutil.copytree(synth_root, tmp_path / name / "data")
        if invert:
            for p in (tmp_path / name / "data").glob("*/val/*/*.png"):
                Image.fromarray(255 - np.asarray(Image.open(p).convert("RGB"))).save(p)
    absolute = _many(tmp_path / "x" / "data")
    relative = [Item(it.image_id, it.label, it.path.relative_to(tmp_path / "x")) for it in absolute]
    monkeypatch.chdir(tmp_path / "x")
    pixel_cache.pixels_of(relative, processes=2, wait=True)
    monkeypatch.chdir(tmp_path / "y")
    in_y = pixel_cache.pixels_of(relative, processes=2, wait=True)
    for k in range(0, len(relative), 5):
        assert np.array_equal(in_y.image(k), decode_item(relative[k]))  # read in y
        assert np.array_equal(in_y.image(k), 255 - decode_item(absolute[k]))


def test_a_failed_first_pass_ends_its_processes_and_the_next_starts_fresh(synth_copy):
    good = _many(synth_copy, ("original", "mixed_rand"))
    pixel_cache.pixels_of(good, processes=2, wait=True)
    bad = _many(synth_copy, ("only_fg", "no_fg"))
    bad[70].path.write_bytes(b"not an image")
    with pytest.raises(DataError, match=str(bad[70].path)):
        pixel_cache.pixels_of(bad, processes=2, wait=True)
    assert pixel_cache._POOLS.idle is None
    again = _many(synth_copy, ("only_bg_b", "only_bg_t"))
    pixels = pixel_cache.pixels_of(again, processes=2, wait=True)
    assert np.array_equal(pixels.image(len(again) - 1), decode_item(again[-1]))
    assert pixel_cache._POOLS.idle is not None


def test_a_kept_process_killed_while_idle_is_not_reused(synth_copy):
    """The kernel may kill an idle decoding process (memory): the next pass starts fresh ones
    rather than fail on the broken pool."""
    first = _many(synth_copy, ("original", "mixed_rand"))
    pixel_cache.pixels_of(first, processes=2, wait=True)
    kept = pixel_cache._POOLS.idle[1]
    victim = next(iter(kept._processes.values()))
    os.kill(victim.pid, signal.SIGKILL)
    victim.join(timeout=30)
    deadline = time.time() + 30
    while not getattr(kept, "_broken", False) and time.time() < deadline:  # its manager thread notices
        time.sleep(0.05)
    nxt = _many(synth_copy, ("only_fg", "no_fg"))
    pixels = pixel_cache.pixels_of(nxt, processes=2, wait=True)
    assert pixels.mapped and pixel_cache._POOLS.idle[1] is not kept
    assert np.array_equal(pixels.image(len(nxt) - 1), decode_item(nxt[-1]))


_ORPHANING = textwrap.dedent("""
    import os, sys
    import bgbench.data.pixel_cache as pc
    from bgbench.data.in9 import discover
    layout = discover(sys.argv[1], variants=["original", "mixed_rand"])
    items = [it for v in ("original", "mixed_rand") for it in layout.items(v)]
    pc.pixels_of(items, processes=2, wait=True)
    print(" ".join(str(pid) for pid in pc._POOLS.idle[1]._processes), flush=True)
    os._exit(0)  # no exit handlers: the kept pool is never shut down
""")


def test_kept_processes_end_when_their_parent_ends_without_its_exit_handlers(synth_copy, tmp_path):
    env = {**os.environ, "PYTHONPATH": str(REPO / "src")}
    listed, errors = tmp_path / "pids.txt", tmp_path / "stderr.txt"
    with open(listed, "w") as out, open(errors, "w") as err:  # files, not pipes: orphans holding a
        done = subprocess.run([sys.executable, "-c", _ORPHANING, str(synth_copy)], stdout=out,  # pipe
                              stderr=err, env=env, timeout=120)  # would keep run() waiting
    assert done.returncode == 0, errors.read_text()
    pids = [int(p) for p in listed.read_text().split()]
    assert len(pids) == 2

    def alive(pid):
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return False
        try:
            with open(f"/proc/{pid}/stat") as f:  # an ended orphan may linger as a zombie until reaped
                return f.read().split(") ")[1][0] != "Z"
        except FileNotFoundError:  # reaped meanwhile
            return False
    deadline = time.time() + 20
    while any(alive(p) for p in pids) and time.time() < deadline:
        time.sleep(0.1)
    left = [p for p in pids if alive(p)]
    for pid in left:  # not left behind by a failing run
        os.kill(pid, signal.SIGKILL)
    assert not left


def test_a_kept_pool_ends_after_it_waited_idle_seconds(synth_copy, monkeypatch):
    monkeypatch.setattr(pixel_cache, "IDLE_SECONDS", 0.2)
    pixel_cache.pixels_of(_many(synth_copy), processes=2, wait=True)
    kept = pixel_cache._POOLS.idle
    assert kept is not None
    deadline = time.time() + 10
    while pixel_cache._POOLS.idle is not None and time.time() < deadline:
        time.sleep(0.05)
    assert pixel_cache._POOLS.idle is None


def test_a_pool_taken_and_given_back_again_waits_its_idle_time_anew(synth_copy, monkeypatch):
    monkeypatch.setattr(pixel_cache, "IDLE_SECONDS", 1.0)
    pixel_cache.pixels_of(_many(synth_copy, ("original", "mixed_rand")), processes=2, wait=True)
    kept = pixel_cache._POOLS.idle
    time.sleep(0.7)
    pixel_cache.pixels_of(_many(synth_copy, ("only_fg", "no_fg")), processes=2, wait=True)  # takes it, gives it back
    assert pixel_cache._POOLS.idle is kept
    time.sleep(0.6)  # past the first give-back's second, not the second's
    assert pixel_cache._POOLS.idle is kept


# -- what a key promises, and what `cache clear` may remove (issue 61) -----------------------------

def _entry(items) -> Path:
    pixels = pixel_cache.pixels_of(items, wait=True)
    return pixel_cache.pixels_folder() / pixels.key


def test_pixels_overwritten_with_noise_are_decoded_again(synth_copy, capsys):
    items = _items(synth_copy)
    folder = _entry(items)
    flat = np.load(folder / "pixels.npy", mmap_mode="r+")
    flat[:] = np.random.default_rng(0).integers(0, 256, flat.shape, dtype=np.uint8)  # same size, other pixels
    flat.flush()
    del flat
    capsys.readouterr()
    served = pixel_cache.pixels_of(items, wait=True)
    assert served.from_cache == 0
    assert all(np.array_equal(served.image(k), decode_item(it)) for k, it in enumerate(items))
    err = capsys.readouterr().err
    assert "does not hold what its key promises (its pixels' checksum differs)" in err
    assert pixel_cache.pixels_of(items).from_cache == len(items)  # rewritten whole: served again


def test_one_datasets_entry_in_anothers_key_folder_is_not_served_as_the_other(synth_copy):
    original, mixed = _items(synth_copy), _items(synth_copy, "mixed_rand")
    source = _entry(original)
    target = pixel_cache.pixels_folder() / pixel_cache.entry_key(mixed)
    shutil.copytree(source, target)
    listed = {e["key"]: e for e in json.loads(run_cli("cache", "--json").stdout)["entries"]}
    assert listed[target.name]["damaged"] == "its meta.json names another key"
    assert listed[source.name]["damaged"] is None
    served = pixel_cache.pixels_of(mixed, wait=True)
    assert served.from_cache == 0
    assert all(np.array_equal(served.image(k), decode_item(it)) for k, it in enumerate(mixed))


def test_clear_removes_only_the_caches_entries(synth_copy):
    _entry(_items(synth_copy))
    root = pixel_cache.pixels_folder()
    photos = root / "photos"
    photos.mkdir()
    (photos / "meta.json").write_text(json.dumps({"images": 3}))
    (photos / "a.jpg").write_bytes(b"a user's photo")
    keyed = root / ("0" * 32)  # a key's name, holding a file no entry has
    keyed.mkdir()
    (keyed / "meta.json").write_text("{}")
    (keyed / "notes.txt").write_text("mine")
    r = run_cli("cache", "clear")
    assert r.returncode == 0 and "removed 1 entry" in r.stdout, r.stdout
    assert (photos / "a.jpg").read_bytes() == b"a user's photo" and (keyed / "notes.txt").exists()
    assert cache_entries.entries() == []


def test_clear_never_removes_a_first_pass_that_may_still_be_writing(synth_copy):
    root = pixel_cache.pixels_folder()
    root.mkdir(parents=True)
    key = pixel_cache.entry_key(_items(synth_copy))
    live = root / f".tmp-{key}-abc"
    live.mkdir()
    (live / "pixels.npy").write_bytes(b"being written")
    lock = pixel_cache._lock(root / f"{key}.lock")  # what a live first pass holds
    hours_ago = time.time() - 2 * 3600  # past the documented hour
    os.utime(live, (hours_ago, hours_ago))  # a pass longer than the documented age: told by its lock
    assert run_cli("cache", "clear").returncode == 0
    assert live.is_dir()
    lock.close()
    os.utime(live)  # younger than the documented age, its lock free (a lock file removed under its writer)
    assert run_cli("cache", "clear").returncode == 0
    assert live.is_dir()
    os.utime(live, (hours_ago, hours_ago))  # old and its lock free: a killed writer's leftover
    assert run_cli("cache", "clear").returncode == 0
    assert not live.exists()


def test_clear_during_a_first_pass_leaves_it_to_finish(synth_copy, monkeypatch):
    import threading

    import bgbench.data.pixel_cache as module
    items = _items(synth_copy)
    go = threading.Event()

    def slow_decode(item):
        go.wait(30)  # the pass is under way, its private folder written, while `cache clear` runs
        return decode_item(item)
    monkeypatch.setattr(module, "decode_item", slow_decode)
    writing = pixel_cache.pixels_of(items, processes=1)
    r = run_cli("cache", "clear")
    go.set()
    writing.filling.join(timeout=60)
    assert r.returncode == 0 and writing.filling.error is None, writing.filling.error
    assert np.array_equal(writing.image(5), decode_item(items[5]))
    assert pixel_cache.pixels_of(items).from_cache == len(items)  # its entry was renamed into place


def test_an_entry_of_an_older_format_is_decoded_again_into_this_ones(synth_copy):
    items = _items(synth_copy)
    folder = _entry(items)
    meta = json.loads((folder / "meta.json").read_text())
    (folder / "meta.json").write_text(json.dumps({**meta, "format": 1}))
    again = pixel_cache.pixels_of(items, wait=True)
    assert again.from_cache == 0
    assert json.loads((folder / "meta.json").read_text())["format"] == pixel_cache.FORMAT
    assert pixel_cache.pixels_of(items).from_cache == len(items)


def test_an_entry_missing_a_file_is_listed_damaged_and_cleared(synth_copy):
    folder = _entry(_items(synth_copy))
    (folder / "index.npz").unlink()
    (entry,) = json.loads(run_cli("cache", "--json").stdout)["entries"]
    assert entry["damaged"] == "no index.npz"
    r = run_cli("cache", "clear")
    assert r.returncode == 0 and "removed 1 entry" in r.stdout and not folder.exists()


def test_eval_after_the_cache_was_tampered_with_equals_no_cache(synth_root, model_ckpt):
    from bgbench.store import Store
    args = ["eval", "--model", f"file:{model_ckpt}", "--data", synth_root, "--variants", "original", "mixed_rand",
            "--json", "--rerun"]
    plain = run_cli(*args, "--no-cache")
    assert plain.returncode == 0, plain.stderr
    assert run_cli(*args).returncode == 0  # the first pass: an entry a variant
    first, second = cache_entries.entries()
    shutil.rmtree(second.folder)
    shutil.copytree(first.folder, second.folder)  # one variant's entry in the other's key folder
    flat = np.load(first.folder / "pixels.npy", mmap_mode="r+")
    flat[:] = np.random.default_rng(0).integers(0, 256, flat.shape, dtype=np.uint8)  # noise of the same size
    flat.flush()
    del flat
    tampered = run_cli(*args)
    assert tampered.returncode == 0, tampered.stderr
    store = Store(os.environ["BGBENCH_DB"])

    def table(run):
        rows = store.predictions(json.loads(run.stdout)["run_id"])
        return [{k: r[k] for k in r.keys() if k != "run_id"} for r in rows]
    assert table(plain) and table(tampered) == table(plain)
    assert tampered.stderr.count("does not hold what its key promises") == 2, tampered.stderr
    assert "from the pixel cache" not in tampered.stderr  # both decoded again
    again = run_cli(*args)
    assert "read 72 of 72 images from the pixel cache" in again.stderr, again.stderr  # rewritten whole
    assert table(again) == table(plain)


def _index_as(folder: Path, change) -> None:
    with np.load(folder / "index.npz") as z:
        offsets, shapes = change(z["offsets"], z["shapes"])
    np.savez(folder / "index.npz", offsets=offsets, shapes=shapes)


DEEP = "[" * 100_000 + "]" * 100_000  # deeper than the JSON parser recurses


@pytest.mark.parametrize("damage", ["meta nested deep", "index of floats", "index with width and channels swapped"])
def test_a_damaged_index_or_meta_is_one_line_and_decoded_again(synth_copy, damage, capsys):
    items = _items(synth_copy)
    folder = _entry(items)
    if damage == "meta nested deep":
        (folder / "meta.json").write_text(DEEP)
    elif damage == "index of floats":
        _index_as(folder, lambda offsets, shapes: (offsets.astype(float), shapes.astype(float)))
    else:  # the same bytes and the same middle rows, cut into (H, 3, W) images
        _index_as(folder, lambda offsets, shapes: (offsets, shapes[:, [0, 2, 1]]))
    capsys.readouterr()
    served = pixel_cache.pixels_of(items, wait=True)
    assert served.from_cache == 0
    assert all(np.array_equal(served.image(k), decode_item(it)) for k, it in enumerate(items))
    assert capsys.readouterr().err.count("does not hold what its key promises") == 1
    assert pixel_cache.pixels_of(items).from_cache == len(items)


@pytest.mark.parametrize("meta", ["[]", '{"images": null}', "not json", '{"format": 1, "images": 3}',
                                  pytest.param(DEEP, id="nested-deep")])
def test_a_damaged_entry_is_listed_and_cleared(synth_copy, meta):
    folder = _entry(_items(synth_copy))
    (folder / "meta.json").write_text(meta)
    listed = run_cli("cache", "--json")
    assert listed.returncode == 0, listed.stderr
    (entry,) = json.loads(listed.stdout)["entries"]
    assert entry["damaged"], entry
    assert "damaged" in run_cli("cache").stdout
    r = run_cli("cache", "clear")
    assert r.returncode == 0 and "removed 1 entry" in r.stdout and not folder.exists()


@pytest.mark.parametrize("value", ["nan", "inf", "-1"])
def test_a_budget_that_is_not_a_finite_size_is_one_line(synth_root, value, monkeypatch):
    from conftest import assert_one_line_error
    assert_one_line_error(run_cli("cache", "clear", "--keep-gb", value), "--keep-gb", "finite")
    monkeypatch.setenv("BGBENCH_CACHE_GB", value)
    proc = run_cli("eval", "--model", "timm:test_resnet", "--data", synth_root, "--variants", "original", "--rerun")
    assert_one_line_error(proc, "BGBENCH_CACHE_GB", "finite")
    assert_one_line_error(run_cli("cache"), "BGBENCH_CACHE_GB", "finite")


def test_cache_list_shows_whole_paths(synth_copy, tmp_path, monkeypatch):
    monkeypatch.chdir(synth_copy.parent)
    _entry(_items(Path(synth_copy.name)))  # items read through a relative root
    doc = json.loads(run_cli("cache", "--json").stdout)
    assert Path(doc["folder"]).is_absolute()
    assert Path(doc["entries"][0]["first_image"]).is_absolute()
