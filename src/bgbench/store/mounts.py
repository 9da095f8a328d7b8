"""Whether a store's file is on a network file system, from the type of the mount that holds it.

Why: SQLite's locking is unreliable over NFS (and other network file systems: SQLite's own FAQ says
so), and WAL mode does not work there at all, so a store written from two machines gets corrupted.
The study command says so once when its store is on one (`studies.jobs.warn_if_network_store`).
"""
from __future__ import annotations

import re
from pathlib import Path
from typing import List, Optional, Tuple

#: The kernel's table of mounts (device, mount point, type, ...), one per line.
MOUNTS = Path("/proc/mounts")
#: Mount types that are network (or cluster) file systems.
NETWORK_TYPES = ("nfs", "nfs4", "cifs", "smb3", "smbfs", "lustre", "gpfs", "beegfs", "glusterfs", "fuse.glusterfs",
                 "ceph", "fuse.ceph", "fuse.sshfs", "afs", "panfs", "wekafs", "9p", "fuse.s3fs", "fuse.gcsfuse",
                 "davfs", "fuse.juicefs", "orangefs", "ocfs2", "gfs2")


def _unescape(field: str) -> str:
    """/proc/mounts writes a space in a path as \\040 (and tab, newline, backslash likewise, in octal)."""
    return re.sub(r"\\([0-7]{3})", lambda m: chr(int(m.group(1), 8)), field)


def mounts() -> List[Tuple[str, str]]:
    """(mount point, type) of every mount (none where the table cannot be read: not Linux)."""
    try:
        text = MOUNTS.read_text()
    except OSError:
        return []
    return [(_unescape(parts[1]), parts[2]) for parts in map(str.split, text.splitlines()) if len(parts) >= 3]


def network_filesystem(path: Path) -> Optional[str]:
    """The network file system's type when `path` is on one, else None. The mount holding `path`
    (or, for a file not yet made, its nearest existing folder) is the longest mount point it lies
    under."""
    path = Path(path).expanduser().absolute()
    while not path.exists() and path != path.parent:
        path = path.parent
    path = path.resolve()
    holding = [(len(Path(point).parts), fstype) for point, fstype in mounts()
               if path == Path(point) or Path(point) in path.parents]
    kind = max(holding, key=lambda h: h[0])[1] if holding else None
    return kind if kind is not None and (kind in NETWORK_TYPES or kind.startswith("nfs")) else None
