"""`bgbench cache`: what the decoded-pixel cache holds, and clearing it.

    bgbench cache                 # list entries, least recently used first, and the budget
    bgbench cache clear           # remove every entry
    bgbench cache clear --keep-gb 10   # evict least recently used entries down to 10 GiB
"""
from __future__ import annotations

import argparse
import time

from .arguments import add_json_arg
from .output import emit


def register(sub) -> None:
    p = sub.add_parser("cache", help="list or clear the decoded-pixel cache ($BGBENCH_CACHE, ~/.cache/bgbench)",
                       description="Images are decoded once into a memory-mapped cache and read from it by every "
                                   "later run on the same files and preprocessing (`--no-cache` on a model command "
                                   "skips it; $BGBENCH_CACHE_GB sets its budget, default 20).")
    p.add_argument("action", nargs="?", choices=("list", "clear"), default="list",
                   help="list (default) or clear the entries")
    p.add_argument("--keep-gb", type=float, default=None,
                   help="clear: evict the least recently used entries until the cache holds at most this many GiB "
                        "(default: remove them all)")
    add_json_arg(p, help="print the entries (or the removed ones) as one JSON document")


def _row(e) -> dict:
    return {"key": e.key, "images": e.images, "bytes": e.bytes, "last_used": round(e.last_used, 3),
            "first_image": e.first, "preprocessing": e.preprocessing, "damaged": e.damaged}


def _age(seconds: float) -> str:
    return next((f"{seconds / size:.0f} {unit} ago" for unit, size in (("d", 86400), ("h", 3600), ("min", 60))
                 if seconds >= size), "just now")


def run(args: argparse.Namespace) -> int:
    from ..data import cache_entries, pixel_cache
    from ..errors import BgbenchError
    if args.keep_gb is not None and args.action != "clear":
        raise BgbenchError("--keep-gb goes with `bgbench cache clear`")
    keep = None if args.keep_gb is None else pixel_cache.gib_bytes("--keep-gb", args.keep_gb)
    folder = pixel_cache.pixels_folder().absolute()
    if args.action == "clear":
        removed = cache_entries.clear() if keep is None else pixel_cache.evict(cache_entries.entries(), keep)
        freed = sum(e.bytes for e in removed)
        return emit(args, {"folder": str(folder), "removed": [_row(e) for e in removed], "freed_bytes": freed},
                    f"removed {len(removed)} entr{'y' if len(removed) == 1 else 'ies'} ({freed / 2**30:.2f} GiB) "
                    f"from {folder}")
    found = cache_entries.entries()
    total = sum(e.bytes for e in found)
    budget = pixel_cache.budget_bytes()
    now = time.time()
    lines = [f"{folder}: {len(found)} entr{'y' if len(found) == 1 else 'ies'}, {total / 2**30:.2f} GiB of a "
             f"{budget / 2**30:.0f} GiB budget" + ("" if pixel_cache.enabled() else " (off: BGBENCH_NO_CACHE is set)")]
    for e in found:
        lines.append(f"  {e.key[:12]}  {e.images:>7,} images  {e.bytes / 2**20:>9,.1f} MiB  used {_age(now - e.last_used):<12}"
                     f"  {e.first or ''}" + (f"  [damaged: {e.damaged}; `bgbench cache clear` removes it]"
                                             if e.damaged else ""))
    return emit(args, {"folder": str(folder), "enabled": pixel_cache.enabled(), "budget_bytes": budget,
                       "total_bytes": total, "entries": [_row(e) for e in found]}, "\n".join(lines))
