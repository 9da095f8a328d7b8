"""Whether a store's file is on a network file system, from the type of the mount that holds it.

Why: SQLite's locking is unreliable over NFS (and other network file systems: SQLite's own FAQ says
so), and WAL mode does not work there at all, so a store written from two machines gets corrupted.
The study command says so once when its store is on one (`studies.jobs.warn_if_network_store`).
"""
from __future__ import annotations

from pathlib import Path
from typing import List, Optional, Tuple

#: The kernel's table of mounts (device, mount point, type, ...), one per line.
MOUNTS = Path("/proc/mounts")
#: Mount types that are network (or cluster) file systems.
NETWORK_TYPES = ("nfs", "nfs4", "cifs", "smb3", "smbfs", "lustre", "gpfs", "beegfs", "glusterfs", "fuse.glusterfs",
                 "ceph", "fuse.ceph", "fuse.sshfs", "afs", "panfs", "wekafs", "9p", "fuse.s3fs", "fuse.gcsfuse",
                 "davfs", "fuse.juicefs", "orangefs", "ocfs2", "gfs2")


def _unescape(field: str) -> str:
    """/proc/mounts writes a space in a path as \\040 (and tab, newline, backslash likewise)."""
    for code, char in (("\\040", " "), ("\\011", "\t"), ("\\012", "\n"), ("\\134", "\\")):
        field = field.replace(code, char)
    return field


def mounts() -> List[Tuple[str, str]]:
    """(mount point, type) of every mount (none where the table cannot be read: not Linux)."""
    try:
        text = MOUNTS.read_text()
    except OSError:
        return []
    out = []
    for line in text.splitlines():
        parts = line.split()
        if len(parts) >= 3:
            out.append((_unescape(parts[1]), parts[2]))
    return out


def network_filesystem(path: Path) -> Optional[str]:
    """The network file system's type when `path` is on one, else None. The mount holding `path`
    (or, for a file not yet made, its nearest existing folder) is the longest mount point it lies
    under."""
    path = Path(path).expanduser().absolute()
    while not path.exists() and path != path.parent:
        path = path.parent
    path = path.resolve()
    best, kind = -1, None
    for point, fstype in mounts():
        mount = Path(point)
        if (path == mount or mount in path.parents) and len(mount.parts) > best:
            best, kind = len(mount.parts), fstype
    return kind if kind is not None and (kind in NETWORK_TYPES or kind.startswith("nfs")) else None
