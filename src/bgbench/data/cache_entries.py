"""What the pixel cache holds, as `bgbench cache` lists it, and clearing it (`bgbench cache clear`).

An entry is listed from its files alone (its meta.json, the files present), without opening its
arrays: a damaged entry is listed with why, and `clear` removes it too (`data.pixel_cache` says
which folders are the cache's, and evicts after a first pass).
"""
from __future__ import annotations

import contextlib
from dataclasses import dataclass
from typing import List, Optional

from .pixel_cache import (ENTRY_FILES, StoredEntry, lock_held, meta_unlike, pixels_folder, read_meta, remove,
                          remove_stale, stored)


@dataclass(frozen=True)
class CacheEntry(StoredEntry):
    images: int
    first: Optional[str]
    preprocessing: Optional[dict]
    damaged: Optional[str] = None  # why it cannot be read (it is listed, and `clear` removes it)


def entries() -> List[CacheEntry]:
    """Every entry of the pixel cache, least recently used first; a damaged one says why."""
    return [_described(e) for e in stored()]


def _described(entry: StoredEntry) -> CacheEntry:
    """An entry with what its meta.json says of it, or why it cannot say."""
    try:
        info = read_meta(entry.folder / "meta.json")
        if type(info.get("images")) is not int:
            raise ValueError("its meta.json is not an entry's")
        damaged = meta_unlike(entry.key, info)
    except (OSError, ValueError) as e:
        info, damaged = {}, (str(e) if isinstance(e, ValueError) and "meta.json" in str(e)
                             else "its meta.json cannot be read")
    missing = sorted(name for name in ENTRY_FILES if not (entry.folder / name).is_file())
    if missing:  # a folder of a key lacking a file: never served, and `clear` removes it
        damaged = f"no {', '.join(missing)}"
    first = info.get("first") if isinstance(info.get("first"), str) else None
    return CacheEntry(entry.key, entry.folder, entry.bytes, entry.last_used, int(info.get("images") or 0), first,
                      info.get("preprocessing") if isinstance(info.get("preprocessing"), dict) else None, damaged)


def clear() -> List[CacheEntry]:
    """Remove every entry (damaged ones too) and the private folders of killed writers, never a
    first pass's that may still be writing (`pixel_cache.remove_stale`); the removed entries."""
    gone = [e for e in entries() if remove(e)]
    root = pixels_folder()
    if root.is_dir():
        remove_stale(root)
        for lock in root.glob("*.lock"):
            with contextlib.suppress(OSError):
                if not lock_held(lock) and not any(root.glob(f".tmp-{lock.stem}-*")):
                    lock.unlink()
    return gone
