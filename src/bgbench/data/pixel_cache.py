"""Decode once: the decoded pixels of a list of images, kept memory-mapped under the cache folder.

Why: a study evaluates the same images for every model, and IN-9's test set is 4,050 images a
variant; decoding them (about 1,500 JPEGs/s on one core with PIL) is what kept a GPU waiting, not
the forward. So the first pass decodes every image once, in worker processes that write straight
into one uint8 file, and every later pass (the next model, the next measure, another torchrun
process) maps that file and slices batches out of it at memory speed.

An entry is the exact arrays `data.images.decode_item` returns, for one ordered list of items. Its
key hashes each file's resolved path, size and mtime (in nanoseconds) with the item's
preprocessing (reader size, evaluation crop, the interpolation and the decoder's version): a
changed file, or another preprocessing, is another key, decoded again. Layout on disk:

    $BGBENCH_CACHE/pixels/<key>/pixels.npy   every image's bytes, one after another (uint8, 1-D)
    $BGBENCH_CACHE/pixels/<key>/index.npz    offsets (N,) and shapes (N, 3)
    $BGBENCH_CACHE/pixels/<key>/meta.json    what it holds (count, bytes, first path, preprocessing),
                                             its key and a checksum of its pixels

An entry serves only what its key promises: its meta.json names its key (an entry copied into
another key's folder is not that key's) and holds a CRC-32 of its index, of every image's middle
row and of the map's first and last 64 KiB, checked when the entry is opened (about 6 ms for IN-9's 4,050 224-px
images, benchmarks/README.md). A mismatch is one status line; the entry is decoded again.
`clear` (`data.cache_entries`) and eviction remove only folders named by a key that hold only an
entry's files, whatever their meta.json holds (a damaged entry is listed and removed too: a marker
in meta.json could not tell an entry whose meta.json is damaged), and never the folder of a first
pass that may still be writing (`remove_stale`).

An entry is written in a private folder and renamed into place whole, so a run killed halfway
leaves a `.tmp-*` folder that is never served (a later write or `clear` removes it an hour later,
once no process holds its key's lock); a lock file per key makes the processes of one machine
(torchrun's ranks) decode an entry once while the others wait for it. The folder is kept under a
size budget by evicting the least recently used entries. A cache that cannot be written (read-only
folder, full disk) costs one status line and the run goes on decoding as before.
"""
from __future__ import annotations

import atexit
import contextlib
import functools
import hashlib
import json
import os
import re
import shutil
import tempfile
import threading
import time
from concurrent.futures import ProcessPoolExecutor, ThreadPoolExecutor, as_completed
from concurrent.futures.process import BrokenProcessPool
from dataclasses import dataclass
from pathlib import Path
from typing import List, NamedTuple, Optional, Sequence, Tuple

import numpy as np

from ..console import status
from ..errors import DataError
from .attributes import packed_masks, planes_count
from .images import decode_item, image_shape, image_size, mask_shape, read_mask


@dataclass(frozen=True)
class MaskFile:
    """A mask file as an item of the cache: kept as (H, W, 1) uint8 of 0 and 1 (`images.read_mask`,
    nonzero), so that the probes read their masks from the map too."""

    path: Path


@dataclass(frozen=True, eq=False)
class AttributeMasks:
    """An image's attribute masks as an item of the cache: (H, W, P) uint8 bit planes, one bit an
    attribute in the order of `source.names` (`attributes.packed_masks`), H x W the image's size
    (`hw`), so that a probe reads a batch's masks as one slice of the map instead of a file (an
    .npz, a RIVAL10 dict) an image. Keyed by the source's files for the image, present or not."""

    source: object  # an `attributes.AttributeSource`, sent to the decoding processes whole
    item: object
    hw: Tuple[int, int]

    @property
    def path(self) -> Path:
        return Path(self.source.files(self.item)[0])


def _decode(item) -> np.ndarray:
    """What the cache keeps of an item: its image as `decode_item` gives it, a mask file's 0/1, or
    an image's attribute masks packed into bits."""
    if isinstance(item, MaskFile):
        return read_mask(item.path).astype(np.uint8)[..., None]
    if isinstance(item, AttributeMasks):
        return packed_masks(item.source.masks(item.item, item.hw), item.source.names, item.hw)
    return decode_item(item)


def _shape(item) -> Tuple[int, int, int]:
    """The shape `_decode(item)` will have, from the file's header."""
    if isinstance(item, AttributeMasks):
        return int(item.hw[0]), int(item.hw[1]), planes_count(item.source.names)
    if isinstance(item, MaskFile):
        shape = mask_shape(item.path) if str(item.path).lower().endswith(".npy") else image_size(item.path)
        if len(shape) < 2:
            read_mask(item.path)  # raises its one line (BadMask: no H x W shape)
        return int(shape[0]), int(shape[1]), 1
    return image_shape(item)


class _Job(NamedTuple):
    """An image as a decoding process is sent it: its path and its reader's preprocessing, which is
    all `decode_item` and `image_shape` read of an item (a `layout.Item` also carries a Path, whose
    unpickling cost a worker about 7 us an image, a fifth of reading the header)."""

    path: str
    size: Optional[Tuple[int, int]]
    crop: Optional[Tuple[int, int]]


def _job(item):
    return item if isinstance(item, (MaskFile, AttributeMasks)) else _Job(
        os.fspath(item.path), getattr(item, "size", None), getattr(item, "crop", None))


def _needs_header(item) -> bool:
    """Whether `_shape(item)` opens the file: a mask, or an image fed at its stored size."""
    return not isinstance(item, AttributeMasks) and (isinstance(item, MaskFile) or (
        getattr(item, "size", None) is None and getattr(item, "crop", None) is None))


#: Bumped when decoding changes in a way that changes pixels, or an entry's files change: entries
#: of another format then stop matching and are decoded again.
FORMAT = 3
#: What meta.json's "written_by" says: bgbench wrote the entry.
WRITTEN_BY = "bgbench pixel cache"
#: The files of an entry: a folder named by a key that holds anything else is not the cache's.
ENTRY_FILES = frozenset({"pixels.npy", "index.npz", "meta.json"})
#: An entry's key, as `entry_key` writes it: its folder's name, and its first pass's `.tmp-<key>-*`.
KEY = re.compile(r"[0-9a-f]{32}")
PRIVATE = re.compile(rf"\.tmp-({KEY.pattern})-")
#: Default size budget of the pixel cache (GiB); `$BGBENCH_CACHE_GB` overrides it.
DEFAULT_BUDGET_GB = 20.0
#: Lists shorter than this decode in threads in this process: a pool's start costs more than they do.
POOL_MIN_IMAGES = 64
#: Never leave less than this free on the cache's disk.
KEEP_FREE_BYTES = 1 << 30


def cache_root() -> Path:
    """`$BGBENCH_CACHE`, else `~/.cache/bgbench` (XDG's place for what can be deleted and remade)."""
    base = os.environ.get("BGBENCH_CACHE")
    if base:
        return Path(base).expanduser()
    xdg = os.environ.get("XDG_CACHE_HOME")
    return (Path(xdg).expanduser() if xdg else Path.home() / ".cache") / "bgbench"


def pixels_folder() -> Path:
    return cache_root() / "pixels"


def enabled() -> bool:
    """False under `--no-cache` (which sets `$BGBENCH_NO_CACHE=1`, so torchrun's processes see it too)."""
    return os.environ.get("BGBENCH_NO_CACHE", "").strip().lower() not in ("1", "true", "yes", "on")


def budget_bytes() -> int:
    """The cache folder's size budget: `$BGBENCH_CACHE_GB` gibibytes, default 20."""
    raw = os.environ.get("BGBENCH_CACHE_GB", "").strip()
    try:
        gb = float(raw) if raw else DEFAULT_BUDGET_GB
    except ValueError:
        raise DataError(f"BGBENCH_CACHE_GB={raw!r} is not a number of gibibytes") from None
    return gib_bytes("BGBENCH_CACHE_GB", gb)


def gib_bytes(name: str, gb: float) -> int:
    """`gb` gibibytes as bytes; one line for a value that is not a finite number at least 0."""
    import math
    if not math.isfinite(gb) or gb < 0:
        raise DataError(f"{name} must be a finite number of gibibytes, at least 0, not {gb}")
    return int(gb * (1 << 30))


# -- keys ------------------------------------------------------------------------------------------

def preprocessing_of(item) -> dict:
    """What, besides the file, decides an item's pixels."""
    if isinstance(item, MaskFile):
        return {"mask": True}
    if isinstance(item, AttributeMasks):
        return {"attributes": list(item.source.names)}
    size, crop = getattr(item, "size", None), getattr(item, "crop", None)
    return {"size": list(size) if size else None, "crop": list(crop) if crop else None,
            "interpolation": "bilinear" if size or crop else None}


def entry_key(items: Sequence) -> str:
    """The key of `items`' pixels: each file's resolved path, size and mtime, and its preprocessing.

    Fast enough to compute on every run (3,600 files in tens of milliseconds): one `lstat` per file,
    the folder's real path resolved once per folder (a file that is itself a link is resolved on
    its own). A file that cannot be stat'ed raises OSError: decoding it then says which, in one line.
    An image's attribute files may be absent (an image without attributes): that is keyed too."""
    import stat as stat_module

    from PIL import __version__ as pil_version
    h = hashlib.sha256(json.dumps({"format": FORMAT, "pil": pil_version}).encode())
    lines = []
    resolved = functools.lru_cache(maxsize=None)(os.path.realpath)  # each folder resolved once

    def line(path, absent_ok: bool = False) -> str:
        path = os.fspath(path)
        try:
            st = os.lstat(path)
        except FileNotFoundError:
            if not absent_ok:
                raise
            st = None
        if st is not None and stat_module.S_ISLNK(st.st_mode):
            real, st = os.path.realpath(path), os.stat(path)
        else:
            folder, name = os.path.split(path)
            real = os.path.join(resolved(folder or "."), name)
        return f"{real}\0absent" if st is None else f"{real}\0{st.st_size}\0{st.st_mtime_ns}"
    # attribute names -> their hash, once a list
    named = functools.lru_cache(maxsize=None)(lambda names: hashlib.sha256("\0".join(names).encode()).hexdigest()[:16])
    for it in items:
        if isinstance(it, AttributeMasks):  # its files, each present or not, the names' order and the size
            files = chr(1).join(line(f, absent_ok=True) for f in it.source.files(it.item))
            lines.append(f"{files}\0{tuple(it.hw)}\0attributes {named(tuple(it.source.names))}\n")
            continue
        size, crop = getattr(it, "size", None), getattr(it, "crop", None)
        kind = "mask" if isinstance(it, MaskFile) else "image"
        lines.append(f"{line(it.path)}\0{size}\0{crop}\0{kind}\n")
    h.update("".join(lines).encode("utf-8", "surrogateescape"))
    return h.hexdigest()[:32]


# -- reading ---------------------------------------------------------------------------------------

class Pixels:
    """Decoded images of a list of items, by position: slices of one memory map (an entry of the
    cache), or decoded on demand (no cache). `from_cache` counts the images served without a decode."""

    def __init__(self, items: Sequence, flat: Optional[np.ndarray] = None, offsets: Optional[np.ndarray] = None,
                 shapes: Optional[np.ndarray] = None, from_cache: bool = False, key: Optional[str] = None,
                 filling: Optional["_Filling"] = None):
        self.items = items
        self.flat, self.offsets, self.shapes = flat, offsets, shapes
        self.key = key
        self.from_cache = len(items) if (from_cache and flat is not None) else 0
        #: the first pass still writing this map: reads wait for the images they need
        self.filling = filling

    @property
    def mapped(self) -> bool:
        return self.flat is not None

    def __len__(self) -> int:
        return len(self.items)

    def image(self, k: int) -> np.ndarray:
        """Image k as decode_item gives it: a read-only view of the map, or a fresh decode."""
        if self.flat is None:
            return _decode(self.items[k])
        if self.filling is not None:
            self.filling.wait([k])
        start = int(self.offsets[k])
        shape = tuple(int(s) for s in self.shapes[k])
        return self.flat[start:start + int(np.prod(shape))].reshape(shape)

    def batch(self, positions: Sequence[int]) -> np.ndarray:
        """(n, H, W, 3) uint8 of images of one shape: one slice of the map (no copy) when they lie
        one after another in it, else stacked."""
        positions = list(positions)
        if self.filling is not None and positions:
            self.filling.wait(positions)
        a, b = (positions[0], positions[-1]) if positions else (0, -1)
        if self.flat is not None and positions and positions == list(range(a, b + 1)) and bool(
                (self.shapes[a:b + 1] == self.shapes[a]).all()):
            shape = tuple(int(s) for s in self.shapes[a])
            start, stop = int(self.offsets[a]), int(self.offsets[b]) + int(np.prod(shape))
            return self.flat[start:stop].reshape((len(positions), *shape))
        return np.stack([self.image(k) for k in positions])

    def shape(self, k: int) -> Tuple[int, ...]:
        if self.shapes is not None:
            return tuple(int(s) for s in self.shapes[k])
        return self.image(k).shape


def checksum(flat: np.ndarray, offsets: np.ndarray, shapes: np.ndarray) -> int:
    """CRC-32 of the index (offsets and shapes), every image's middle row and the map's first and
    last 64 KiB: pixels overwritten in any image, a map from other images of the same size, or an
    index that cuts the map otherwise change it, at a cost of one row an image (reading every byte
    would cost as much as the decode the cache saves). The rows are cut from one memoryview of the
    map: a slice of the array itself costs a new memmap object an image, twice the time of the CRC
    (benchmarks/README.md)."""
    import zlib
    view, crc = memoryview(flat), 0
    for part in (np.ascontiguousarray(offsets, dtype=np.int64).tobytes(),
                 np.ascontiguousarray(shapes, dtype=np.int64).tobytes(), view[:1 << 16], view[-(1 << 16):]):
        crc = zlib.crc32(part, crc)
    for off, (h, w, c) in zip(offsets.tolist(), shapes.tolist()):
        start = off + (h // 2) * w * c
        crc = zlib.crc32(view[start:start + w * c], crc)
    return crc


#: Entries found not to hold what their key promises, said once a process.
_REPORTED: set = set()


def read_meta(path: Path) -> dict:
    """An entry's meta.json; ValueError when it is not an entry's (one nested deeper than the JSON
    parser recurses too: its RecursionError is no ValueError, and broke `cache list` and `clear`)."""
    try:
        meta = json.loads(path.read_text())
    except RecursionError:
        raise ValueError("its meta.json nests too deep") from None
    if not isinstance(meta, dict):
        raise ValueError("its meta.json is not an entry's")
    return meta


def meta_unlike(key: str, meta: dict) -> Optional[str]:
    """Why an entry's meta.json is not that of this version's entry of `key`, or None: what the
    listing can tell without opening the entry's arrays."""
    if meta.get("format") != FORMAT:
        return f"format {str(meta.get('format'))[:12]}, not {FORMAT}"
    if meta.get("key") != key:
        return "its meta.json names another key"
    return None


def _unlike_its_key(key: str, n: int, meta: dict, flat: np.ndarray, offsets: np.ndarray,
                    shapes: np.ndarray) -> Optional[str]:
    """Why an entry's files are not the `n` images its key promises, or None when they are."""
    why = meta_unlike(key, meta)
    if why is not None:
        return why
    if (offsets.shape != (n,) or shapes.shape != (n, 3) or offsets.dtype.kind not in "iu"
            or shapes.dtype.kind not in "iu" or flat.ndim != 1 or flat.dtype != np.uint8):
        return f"its index is not one of {n:,} images"
    if flat.shape[0] != int(offsets[-1]) + int(np.prod(shapes[-1])):
        return "its pixels are not the size its index says"
    if meta.get("crc32") != checksum(flat, offsets, shapes):
        return "its pixels' checksum differs"
    return None


def _open_entry(folder: Path, n: int) -> Optional[Tuple[np.ndarray, np.ndarray, np.ndarray]]:
    """An entry's (flat map, offsets, shapes), or None when it is absent or not what its key
    promises (`_unlike_its_key`; said in one status line)."""
    try:
        meta = read_meta(folder / "meta.json")
        with np.load(folder / "index.npz", allow_pickle=False) as z:
            offsets, shapes = z["offsets"], z["shapes"]
        flat = np.load(folder / "pixels.npy", mmap_mode="r", allow_pickle=False)
    except OSError:
        return None  # absent, or a file missing (`cache list` says which): decoded again
    except (ValueError, KeyError, EOFError) as e:
        why = str(e) if "meta.json" in str(e) else "its files cannot be read"
    else:
        why = _unlike_its_key(folder.name, n, meta, flat, offsets, shapes)
    if why is not None:
        if folder.name not in _REPORTED:
            _REPORTED.add(folder.name)
            status(f"pixel cache entry {folder} does not hold what its key promises ({why}): "
                   f"decoding its {n:,} images again")
        return None
    with contextlib.suppress(OSError):
        os.utime(folder / "meta.json")  # last used: what eviction orders by
    return flat, offsets, shapes


# -- writing ---------------------------------------------------------------------------------------

def _plain_errors(fn):
    """A worker's DataError crosses back to the parent as a plain DataError with its one line:
    subclasses with their own constructors (BadMask) cannot be unpickled there."""
    @functools.wraps(fn)
    def wrapped(*args, **kwargs):
        try:
            return fn(*args, **kwargs)
        except DataError as e:
            if type(e) is DataError:
                raise
            raise DataError(str(e)) from None
    return wrapped


@_plain_errors
def _decode_into(path: str, items: Sequence, offsets: Sequence[int], shapes: Sequence[Tuple[int, ...]]) -> None:
    """Worker: decode `items` into the map's file at `path`, each at its offset.

    Each image goes into the file with `pwrite`, not through a map of the worker's own: a store into
    a fresh page of a shared map faults once a page, which cost 336 us a 224-px image here against
    29 us for the write (benchmarks/README.md), and two processes faulting into one file share its
    lock. The page cache is one: the readers' map of the file sees each image once it is written.
    No fsync either: the entry is renamed into place only once every worker is done."""
    if not hasattr(os, "pwrite"):  # no pwrite (Windows): through a map
        return _store_into(path, items, offsets, shapes)
    start = np.load(path, mmap_mode="r", allow_pickle=False).offset  # the .npy header's length
    fd = os.open(path, os.O_WRONLY)
    try:
        for it, off, shape in zip(items, offsets, shapes):
            data = memoryview(_decoded_as(it, shape)).cast("B")
            done = 0
            while done < len(data):
                done += os.pwrite(fd, data[done:], start + off + done)
    finally:
        os.close(fd)


def _store_into(path: str, items: Sequence, offsets: Sequence[int], shapes: Sequence[Tuple[int, ...]]) -> None:
    """`_decode_into` through a map of the file (where there is no `pwrite`)."""
    flat = np.load(path, mmap_mode="r+", allow_pickle=False)
    for it, off, shape in zip(items, offsets, shapes):
        arr = _decoded_as(it, shape)
        flat[off:off + arr.size] = arr.reshape(-1)
    del flat


def _decoded_as(item, shape: Sequence[int]) -> np.ndarray:
    """The item decoded, C-contiguous uint8, of the shape its header gave (else a one-line error)."""
    arr = _decode(item)
    if arr.shape != tuple(shape):  # the header said another size: a file that changed under us
        raise DataError(f"image {item.path} changed while it was read (its header says {shape[1]}x{shape[0]}, "
                        f"it decodes to {arr.shape[1]}x{arr.shape[0]}); run again")
    return np.ascontiguousarray(arr, dtype=np.uint8)


def decode_processes(n_images: int) -> int:
    """Processes for a first pass: one per core (at most 16), fewer for short lists (a process
    decodes about 1,500 224-px JPEGs/s, so a pool starts paying off at a few dozen images each)."""
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)
    return max(1, min(16, cores, n_images // 32 or 1))


@_plain_errors
def _shapes_of(items: Sequence) -> List[Tuple[int, int, int]]:
    """Worker: each item's decoded shape, from its header (`images.image_shape`)."""
    return [_shape(it) for it in items]


#: Images per decoding task of a first pass: small enough that the first batches are ready early
#: (the forward starts on them while the rest decode), large enough that a task's overhead is noise.
TASK_IMAGES = 64


class _Filling:
    """Which images of a first pass are written so far; readers wait for theirs (or its error)."""

    def __init__(self, n: int):
        self.ready = np.zeros(n, dtype=bool)
        self.error: Optional[BaseException] = None
        self.finished = threading.Event()  # the pass has ended: its entry renamed into place, or removed
        self.cond = threading.Condition()

    def mark(self, a: int, b: int) -> None:
        with self.cond:
            self.ready[a:b] = True
            self.cond.notify_all()

    def fail(self, error: BaseException) -> None:
        with self.cond:
            self.error = error
            self.cond.notify_all()

    def wait(self, positions: Sequence[int]) -> None:
        lo, hi = min(positions), max(positions) + 1
        with self.cond:
            self.cond.wait_for(lambda: self.error is not None or self.ready[lo:hi].all())
            if self.error is not None:
                raise self.error

    def join(self, timeout: Optional[float] = None) -> None:
        """Until the first pass has ended: its entry renamed into place, or its folder removed."""
        self.finished.wait(timeout)


#: First passes still writing in this process: joined at exit, so a run that ends as its last
#: batch is read still leaves its entry renamed into place.
_WRITERS: List[_Filling] = []


@atexit.register
def _join_writers() -> None:
    for filling in list(_WRITERS):
        filling.join(timeout=600)


class _FirstPass:
    """Decode `items` into a private folder of the cache, in a pool, and rename it into place.

    `start` reads every header (in the pool: shapes give offsets), sizes the map and submits the
    decoding; it returns the map, offsets and shapes at once. The decoding finishes in a thread
    of its own, which marks each task's images ready as they land (so the forward can start on the
    first batches while the rest decode), then writes the index and renames the folder whole."""

    def __init__(self, root: Path, key: str, items: Sequence, processes: Optional[int], lock):
        self.root, self.key, self.items, self.lock = root, key, list(items), lock
        self.workers = processes if processes is not None else decode_processes(len(items))
        self.tmp = Path(tempfile.mkdtemp(prefix=f".tmp-{key}-", dir=root))
        self.filling = _Filling(len(items))
        self.bounds = [(a, min(a + TASK_IMAGES, len(items))) for a in range(0, len(items), TASK_IMAGES)]

    def start(self) -> Tuple[np.ndarray, np.ndarray, np.ndarray]:
        use_processes = self.workers > 1 and len(self.items) >= POOL_MIN_IMAGES
        self.leased = _POOLS.lease(self.workers) if use_processes else None
        self.pool = self.leased[1] if use_processes else ThreadPoolExecutor(max_workers=max(1, self.workers))
        # what a task carries: a worker process is sent each image's path and preprocessing alone
        # (an Item's Path costs more to unpickle than the header it names); threads take the items
        jobs = [_job(it) for it in self.items] if use_processes else self.items
        try:
            if any(_needs_header(it) for it in self.items):
                listed = list(self.pool.map(_shapes_of, [jobs[a:b] for a, b in self.bounds]))
            else:  # every shape is the reader's size or crop: nothing to open
                listed = [_shapes_of(self.items)]
            shapes = np.asarray([s for part in listed for s in part], dtype=np.int64).reshape(len(self.items), 3)
            sizes = shapes.prod(axis=1)
            offsets = np.concatenate([[0], np.cumsum(sizes)[:-1]]).astype(np.int64)
            total = int(sizes.sum())
            if total + KEEP_FREE_BYTES > shutil.disk_usage(self.tmp).free:
                raise OSError(28, f"{total / 2**30:.1f} GiB of pixels would leave less than 1 GiB free on its disk")
            flat = np.lib.format.open_memmap(self.tmp / "pixels.npy", mode="w+", dtype=np.uint8, shape=(total,))
            path = str(self.tmp / "pixels.npy")
            _reserve(path)
            self.futures = {self.pool.submit(_decode_into, path, jobs[a:b], offsets[a:b].tolist(),
                                             shapes[a:b].tolist()): (a, b) for a, b in self.bounds}
        except BaseException:
            self.abandon()
            raise
        self.offsets, self.shapes, self.total = offsets, shapes, total
        _WRITERS.append(self.filling)
        threading.Thread(target=self._finish, name="bgbench-first-pass", daemon=True).start()
        return flat, offsets, shapes

    def _finish(self) -> None:
        try:
            for fut in as_completed(self.futures):
                fut.result()
                self.filling.mark(*self.futures[fut])
            np.savez(self.tmp / "index.npz", offsets=self.offsets, shapes=self.shapes)
            written = np.load(self.tmp / "pixels.npy", mmap_mode="r", allow_pickle=False)
            (self.tmp / "meta.json").write_text(json.dumps({
                "format": FORMAT, "written_by": WRITTEN_BY, "key": self.key, "images": len(self.items),
                "bytes": self.total, "first": str(Path(self.items[0].path).absolute()),
                "preprocessing": preprocessing_of(self.items[0]), "created": time.time(),
                "crc32": checksum(written, self.offsets, self.shapes)}))
            del written
            folder = self.root / self.key
            if folder.exists():  # a damaged entry: replaced whole
                shutil.rmtree(folder)
            os.replace(self.tmp, folder)
            # every task is done: the processes go back to wait for the next first pass (a thread pool's end)
            pool, self.pool = self.pool, None
            if self.leased is not None:
                _POOLS.give_back(self.leased)
            else:
                pool.shutdown(wait=False)
        except BaseException as e:  # a bad image (DataError names it), a full disk: readers get it
            self.abandon()
            self.filling.fail(e if isinstance(e, (DataError, KeyboardInterrupt, SystemExit)) else DataError(
                f"the pixel cache's first pass failed ({type(e).__name__}: {' '.join(str(e).split())[:200]}); "
                f"run again, or with --no-cache"))
        finally:
            self.lock.close()
            self.filling.finished.set()
            with contextlib.suppress(ValueError):
                _WRITERS.remove(self.filling)
        with contextlib.suppress(OSError, DataError):  # the budget was checked when the pass began
            evict(stored(), budget_bytes(), keep=self.key)

    def abandon(self) -> None:
        """A failed or interrupted pass: its tasks cancelled, its processes ended (one may be what
        failed), its private folder removed."""
        pool, self.pool = getattr(self, "pool", None), None
        if pool is not None:
            pool.shutdown(wait=True, cancel_futures=True)
        shutil.rmtree(self.tmp, ignore_errors=True)


class _Pools:
    """Decoding processes kept between the first passes of one run.

    Why: eval makes a first pass per variant, and a study one per image set. Starting a pool forks
    every worker from the caller, whose address space (torch, CUDA's pinned buffers) makes each
    fork cost milliseconds, and a fresh worker faults its pages in on its first tasks: on this
    project's 2-core machine that was about 50 ms of an 1,800-image pass of 0.6 s. So a pass that
    ends cleanly gives its pool back, and the next pass takes it (as DataLoader's
    `persistent_workers`) if it wants as many processes and the workers would read what a fresh
    fork would: the same working folder (an item's path may be relative) and the same PIL pixel
    limit. One pool is kept idle, for IDLE_SECONDS; a pass that finds it leased by a pass still
    running, or unfit, starts its own. A failed pass ends its pool instead (a dead worker breaks
    it), the interpreter's exit ends the idle one, and a worker whose parent is gone ends itself
    (`watch_parent`)."""

    def __init__(self):
        self.lock = threading.Lock()
        self.idle: Optional[Tuple[tuple, ProcessPoolExecutor]] = None
        self.returns = 0  # pools given back so far: a timer ends the idle pool only if none came back since

    def lease(self, workers: int) -> Tuple[tuple, ProcessPoolExecutor]:
        """(what its workers were forked with, a pool of `workers` processes): the idle one where
        it fits, else a new one (its workers fork on its first task, in the caller's thread)."""
        from PIL import Image
        state = workers, os.getcwd(), Image.MAX_IMAGE_PIXELS
        with self.lock:
            idle, self.idle = self.idle, None
        if idle is not None:
            # `_broken`: set by the pool's own manager thread when a worker died (an idle one the
            # kernel killed for memory); such a pool refuses every task, so a fresh one is started
            if idle[0] == state and not getattr(idle[1], "_broken", False):
                return idle
            idle[1].shutdown(wait=False)
        # fork where there is one (what torch's DataLoader uses on Linux: the workers need only PIL
        # and numpy, and start in milliseconds); spawn elsewhere
        import multiprocessing
        context = multiprocessing.get_context("fork" if "fork" in multiprocessing.get_all_start_methods() else "spawn")
        return state, ProcessPoolExecutor(max_workers=workers, mp_context=context, initializer=watch_parent,
                                          initargs=(os.getpid(),))

    def give_back(self, leased: Tuple[tuple, ProcessPoolExecutor]) -> None:
        """A leased pool, done with every task, waits for the next pass (for IDLE_SECONDS at most:
        a notebook that ran one eval does not keep a core's worth of processes for the day)."""
        with self.lock:
            old, self.idle = self.idle, leased
            self.returns += 1
            timer = threading.Timer(IDLE_SECONDS, self.close, args=(self.returns,))
        if old is not None:
            old[1].shutdown(wait=False)
        timer.daemon = True
        timer.start()

    def close(self, returned: Optional[int] = None) -> None:
        """The idle pool's processes end: at exit (waited for), or from the timer of the `returned`-th
        give-back if the pool has waited since (a pool taken and given back again starts its wait anew)."""
        with self.lock:
            idle = self.idle if returned in (None, self.returns) else None
            if idle is not None:
                self.idle = None
        if idle is not None:
            idle[1].shutdown(wait=returned is None)


def watch_parent(parent: int) -> None:
    """A worker's first act (a decoding process's, and the dataset writer's, `data.pool`): a thread
    that ends the process once process `parent` is gone.

    Why: a pool's workers wait on a pipe for their next task; where the parent ends without its
    exit handlers (killed, out of memory, `os._exit` in a forked child such as `gpu/run.py`'s
    stages) nobody closes it, and the workers would wait for ever. An orphan is handed to another
    parent (init, a subreaper), so a changed parent id says it; the first look also catches a
    parent that died before the worker got this far."""
    def watch():
        while os.getppid() == parent:
            time.sleep(0.5)  # seconds between two looks
        os._exit(1)
    threading.Thread(target=watch, name="bgbench-parent-watch", daemon=True).start()


#: Seconds a kept pool waits for the next first pass before its processes end.
IDLE_SECONDS = 120.0
_POOLS = _Pools()
atexit.register(_POOLS.close)  # the idle pool; concurrent.futures ends a leased one at exit, once its tasks are done


def _reserve(path: str) -> None:
    """Give the map's file its disk blocks now: a full disk is then an OSError here (one line, and the
    run goes on without the cache), not a SIGBUS in a decoding process writing into a sparse map."""
    if hasattr(os, "posix_fallocate"):
        fd = os.open(path, os.O_RDWR)
        try:
            os.posix_fallocate(fd, 0, os.fstat(fd).st_size)
        except OSError as e:
            if e.errno not in (95, 22):  # EOPNOTSUPP, EINVAL: a file system without it keeps the sparse file
                raise
        finally:
            os.close(fd)


def _lock(path: Path):
    """An exclusive lock on a file among this machine's processes (flock; none where it is missing):
    the open file, whose `close` (by whichever thread finishes the work it guards) drops it."""
    fh = open(path, "a+")
    try:
        import fcntl
        fcntl.flock(fh, fcntl.LOCK_EX)
    except ImportError:  # pragma: no cover - not on Linux or macOS
        pass
    return fh


def pixels_of(items: Sequence, *, processes: Optional[int] = None, use_cache: Optional[bool] = None,
              wait: bool = False) -> Pixels:
    """The decoded pixels of `items`: mapped from the cache; when missing, decoded into it, each
    image served as soon as it is written (`wait=True`: returns once all are); with the cache off
    or unwritable, decoded on demand (`Pixels.image`)."""
    items = list(items)
    if not items or not (enabled() if use_cache is None else use_cache):
        return Pixels(items)
    budget_bytes()  # a bad $BGBENCH_CACHE_GB is one line here, not in the first pass's thread
    try:
        key = entry_key(items)
    except OSError:
        return Pixels(items)  # a file that cannot be stat'ed: decoding it says which, in one line
    root = pixels_folder()
    folder = root / key
    found = _open_entry(folder, len(items))
    if found is not None:
        return Pixels(items, *found, from_cache=True, key=key)
    lock = None
    try:
        root.mkdir(parents=True, exist_ok=True)
        lock = _lock(root / f"{key}.lock")
        found = _open_entry(folder, len(items))  # another process wrote it while we waited
        if found is not None:
            lock.close()
            return Pixels(items, *found, from_cache=True, key=key)
        remove_stale(root)
        first = _FirstPass(root, key, items, processes, lock)
        flat, offsets, shapes = first.start()  # the lock is now the writer's, released when it ends
    except BaseException as e:
        if lock is not None:
            lock.close()
        if not isinstance(e, (OSError, BrokenProcessPool)):  # BrokenProcessPool: a worker could not start (memory) or was killed
            raise
        status(f"the pixel cache's decoding processes stopped ({' '.join(str(e).split())[:160]}): "
               f"decoding without the cache" if isinstance(e, BrokenProcessPool) else
               f"pixel cache {root} cannot be written ({e.strerror or e}): decoding without it "
               f"(set BGBENCH_CACHE to a writable folder, or --no-cache to say so)")
        return Pixels(items)
    pixels = Pixels(items, flat, offsets, shapes, from_cache=False, key=key, filling=first.filling)
    if wait:
        first.filling.join()
        if first.filling.error is not None:
            raise first.filling.error
    return pixels


#: A private folder is a killed writer's leftover only once this old (and its key's lock is free).
STALE_SECONDS = 3600.0


def remove_stale(root: Path) -> None:
    """Private folders left by killed writers: STALE_SECONDS old, and never one whose key's lock is
    held (a live first pass holds it until its folder is renamed into place or removed). Both: a
    lock is no proof alone (a lock file removed between a writer's open and its flock leaves the
    writer holding a lock no other process can see), and a first pass longer than an hour is only
    told by its lock."""
    now = time.time()
    for tmp in root.glob(".tmp-*"):
        key = PRIVATE.match(tmp.name)
        with contextlib.suppress(OSError):
            if key and now - tmp.stat().st_mtime > STALE_SECONDS and not lock_held(root / f"{key.group(1)}.lock"):
                shutil.rmtree(tmp, ignore_errors=True)


def lock_held(lock: Path) -> bool:
    """Whether a process holds the flock of `lock` (a first pass writing that key)."""
    try:
        import fcntl
        with open(lock, "r") as fh:
            fcntl.flock(fh, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except (ImportError, BlockingIOError):  # held; or no flock (not on Linux or macOS): assumed live
        return True
    except FileNotFoundError:  # no lock file: nobody holds it
        pass
    return False


# -- eviction --------------------------------------------------------------------------------------

@dataclass(frozen=True)
class StoredEntry:
    """An entry's folder as eviction sees it: its size and when it was last used (its meta.json's
    mtime), whatever its files hold (`cache_entries.entries` reads those)."""

    key: str
    folder: Path
    bytes: int
    last_used: float


def _is_entry_folder(folder: Path) -> bool:
    """A folder this cache wrote: named by a key, holding only an entry's files (a user's folder put
    under pixels/, whatever it holds, is not one)."""
    if not KEY.fullmatch(folder.name) or folder.is_symlink() or not folder.is_dir():
        return False
    return all(p.name in ENTRY_FILES and p.is_file() and not p.is_symlink() for p in folder.iterdir())


def stored() -> List[StoredEntry]:
    """Every entry folder of the pixel cache (a damaged entry's too), least recently used first."""
    root = pixels_folder()
    found = []
    for folder in sorted(root.iterdir()) if root.is_dir() else ():
        try:
            if not _is_entry_folder(folder):
                continue
            size = sum(p.stat().st_size for p in folder.iterdir())
            meta_path = folder / "meta.json"
            used = (meta_path if meta_path.exists() else folder).stat().st_mtime
        except OSError:
            continue
        found.append(StoredEntry(folder.name, folder, size, used))
    return sorted(found, key=lambda e: e.last_used)


def remove(entry: StoredEntry) -> bool:
    """Delete one entry (only a folder this cache wrote, `_is_entry_folder`); whether it was. A
    process that maps it keeps reading its pages (the file goes when the last map does)."""
    root = pixels_folder()
    if entry.folder.parent.resolve() != root.resolve() or not _is_entry_folder(entry.folder):
        return False
    shutil.rmtree(entry.folder, ignore_errors=True)
    lock = root / f"{entry.key}.lock"
    with contextlib.suppress(OSError):
        if not lock_held(lock):  # a first pass rewriting this key keeps its lock file
            lock.unlink()
    return True


def evict(current: Sequence[StoredEntry], budget: int, keep: Optional[str] = None) -> List[StoredEntry]:
    """Remove least recently used entries of `current` (least recently used first, as `stored`
    lists them) until the cache fits `budget` bytes, never the entry of key `keep`; the removed ones."""
    total = sum(e.bytes for e in current)
    removed = []
    for e in current:
        if total <= budget:
            break
        if e.key == keep or not remove(e):
            continue
        removed.append(e)
        total -= e.bytes
    return removed
