"""The pixel cache's checksum: milliseconds `pixel_cache.checksum` takes on an entry of IN-9's size
(4,050 images of 224 x 224 x 3, a 610 MB map), the cost every opening of an entry pays, beside a
CRC-32 of every byte of the same map (what checking all of it would cost).

The map is a real `.npy` file, read once before timing so that it lies in the page cache (as an
entry a run has just used does), and mapped anew for every timing as an opening maps it (its pages'
first touches are part of the cost). Median and best of `--repeats`:

    PYTHONPATH=src python benchmarks/cache_checksum.py [--images 4050] [--size 224] [--repeats 7]
"""
from __future__ import annotations

import argparse
import statistics
import tempfile
import time
import zlib
from pathlib import Path

import numpy as np

from bgbench.data.pixel_cache import checksum


def timed(fn, path: Path, repeats: int) -> list:
    """Seconds of `fn(map)`, each on a fresh read-only map of `path` (the mapping itself not timed)."""
    seconds = []
    for _ in range(repeats):
        mapped = np.load(path, mmap_mode="r", allow_pickle=False)
        t0 = time.perf_counter()
        fn(mapped)
        seconds.append(time.perf_counter() - t0)
        del mapped
    return seconds


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--images", type=int, default=4050)
    parser.add_argument("--size", type=int, default=224)
    parser.add_argument("--repeats", type=int, default=7)
    args = parser.parse_args()
    n, side = args.images, args.size
    shapes = np.tile(np.array([side, side, 3], dtype=np.int64), (n, 1))
    offsets = np.arange(n, dtype=np.int64) * (side * side * 3)
    with tempfile.TemporaryDirectory(prefix="bgbench-crc-") as work:
        path = Path(work) / "pixels.npy"
        flat = np.lib.format.open_memmap(path, mode="w+", dtype=np.uint8, shape=(n * side * side * 3,))
        rng = np.random.default_rng(0)
        for k in range(n):  # an image at a time: the whole map need not sit in memory twice
            flat[offsets[k]:offsets[k] + side * side * 3] = rng.integers(0, 256, side * side * 3, dtype=np.uint8)
        flat.flush()
        del flat
        timed(lambda m: zlib.crc32(memoryview(m)), path, 1)  # every page read: in the page cache, as a used entry's
        sampled = timed(lambda m: checksum(m, offsets, shapes), path, args.repeats)
        whole = timed(lambda m: zlib.crc32(memoryview(m)), path, max(3, args.repeats // 2))
    mb = n * side * side * 3 / 1e6
    print(f"{n:,} images of {side}x{side}x3 ({mb:,.0f} MB map), median (best) of {args.repeats}:")
    print(f"  checksum (the index, middle row of each image, first and last 64 KiB): "
          f"{statistics.median(sampled) * 1e3:.1f} ms ({min(sampled) * 1e3:.1f} ms)")
    print(f"  CRC-32 of every byte: {statistics.median(whole) * 1e3:.0f} ms ({min(whole) * 1e3:.0f} ms)")


if __name__ == "__main__":
    main()
