"""Output folders that are not bgbench's alone: write a job's files aside, then move them in, and
remove on a rewrite only what bgbench wrote.

A user points `--out` at a folder that may hold their own files, or a previous output of the same
command. So a job never writes into that folder as it goes:

- it writes into `stage`, a sibling of the folder (same filesystem: moving a file in is a
  rename), named after the folder and the job, so a killed job's leftovers are found and removed
  by the next one;
- `commit()` moves the staged files in once the job is complete, and then removes the files the
  previous output listed that the new one does not have; a job that fails before it (or calls
  `discard()`) leaves the folder as it was;
- `out/<record>` lists, one relative path a line, the files the last commit moved in and the
  folders it made (those end in `/`). A rewrite removes exactly those files, and those folders
  once empty; a file bgbench did not list is never removed, and a new file that would replace one
  is refused (one line) before anything is moved.

`shared` names files that several jobs rewrite in turn, keeping each other's part (the dataset
tables, whose rows carry a split): they are replaced, never listed, never removed.

Users run jobs side by side into one folder (two reports, two exports, two splits of a dataset),
so each job stages in a folder of its own (named with the process id and a random token; a dead
process's is removed by the next run), and commits take turns under a lock on `out`, each reading
the record as the previous commit left it: the second report replaces the first's files as
bgbench's own instead of calling them someone else's, and no job ever removes another's stage.
"""
from __future__ import annotations

import contextlib
import hashlib
import os
import re
import shutil
import uuid
from pathlib import Path
from typing import Dict, List, Optional, Sequence, Set

from ..errors import BgbenchError

RECORD_HEADER = "# the files bgbench wrote here; a rewrite removes exactly these, and nothing else"
#: The longest name `safe_name` makes: filesystems allow 255 bytes, and a name gets suffixes
#: (`--<dataset>`, `.partial.db`, `.json`) before it is a file.
NAME_CHARS = 80


def safe_name(label: str, empty: str = "model") -> str:
    """A label as one file or folder name: letters, digits, '.', '_' and '-' only, at most
    NAME_CHARS of them, never '.' or '..' (`empty` for a label with none of them); a label that had
    to change keeps a short hash of itself, so two labels never share a name."""
    name = re.sub(r"[^A-Za-z0-9._-]+", "-", label).strip(".-") or empty
    if name == label and len(name) <= NAME_CHARS:
        return name
    return f"{name[:NAME_CHARS - 9].rstrip('.-')}-{hashlib.sha256(label.encode()).hexdigest()[:8]}"


def refuse_unsafe_out(out: Path, flag: str = "--out") -> Path:
    """`out`, expanded; one line, before any work, when it is a filesystem root, the home folder or
    an existing file: a folder of its own is the only place bgbench writes an output into."""
    out = Path(out).expanduser()
    resolved = out.resolve()
    if resolved == Path(resolved.anchor):
        raise BgbenchError(f"{flag} {out} is the filesystem's root; name a folder of its own")
    if resolved == Path.home().resolve():
        raise BgbenchError(f"{flag} {out} is your home folder; name a folder of its own")
    if out.exists() and not out.is_dir():
        raise BgbenchError(f"{flag} {out} exists and is not a folder")
    return out


class StagedOutput:
    """One job's output in `out`: staged aside, committed whole, recorded in `out/<record>`.

    `shared`: files replaced by every commit, but never listed or removed."""

    def __init__(self, out: Path, record: str, job: str, shared: Sequence[str] = ()):
        self.out = Path(out)
        self.record = record
        self.shared = set(shared)
        self.job = job
        self.stage = _stage_for(self.out, f"{job}.{os.getpid()}-{uuid.uuid4().hex[:8]}")
        self.previous: Set[str] = set(_read_record(self.out / record) or ())

    def has_previous(self) -> bool:
        """Whether a previous output of this job is on disk (any of its listed files)."""
        return any((self.out / f).is_file() for f in self.previous if not f.endswith("/"))

    def open(self) -> Path:
        """An empty stage (a killed job's leftovers removed); returns it."""
        self.discard()
        _remove_dead_stages(self.stage.parent, self.out, self.job)
        try:
            self.stage.mkdir(parents=True)
        except OSError as e:
            raise BgbenchError(f"cannot write {self.out}: {e}") from None
        return self.stage

    def discard(self) -> None:
        """Forget what was staged: the output folder stays as it was."""
        shutil.rmtree(self.stage, ignore_errors=True)

    def commit(self, folders: bool = True, only_shared: bool = False) -> List[str]:
        """Move the staged files into `out` and remove the previous output's files that the new one
        does not have; returns the new output's files. `folders`: make the staged folders too, empty
        ones included (a dataset's class folder without images still gives its label);
        `only_shared`: move the shared files alone (a job that produced nothing but its tables)."""
        self.out.mkdir(parents=True, exist_ok=True)
        with _locked(self.out):
            return self._commit(folders, only_shared)

    def _commit(self, folders: bool, only_shared: bool) -> List[str]:
        listed = _read_record(self.out / self.record)  # as the last commit left it: a job beside this one may
        if listed is not None:                         # have committed since this one began
            self.previous = set(listed)
        files = self._staged(files=True)
        if only_shared:
            files = [f for f in files if f in self.shared]
        own = [f for f in files if f not in self.shared]
        self._refuse_clashes(own)
        dirs = {f"{d}/" for d in self._staged(files=False)} if folders else set()
        dirs |= {f"{p.as_posix()}/" for f in own for p in Path(f).parents if p.name}  # made for the files
        made = set(own) | dirs
        self._write_record(self.previous | made)  # a kill from here on leaves everything listed
        self._move_in(files, dirs)
        stale = self.previous - made
        for f in sorted(f for f in stale if not f.endswith("/")):
            self._remove(f, dirs)
        for d in sorted((d for d in stale if d.endswith("/")), key=lambda d: -d.count("/")):  # deepest first
            if _inside(self.out / d, self.out) and (self.out / d).is_dir() and not any((self.out / d).iterdir()):
                (self.out / d).rmdir()
        self._write_record(made)
        self.previous = made
        self.discard()
        return own

    def _staged(self, files: bool) -> List[str]:
        """The staged files (or folders), as sorted paths relative to the stage."""
        return sorted(p.relative_to(self.stage).as_posix() for p in self.stage.rglob("*")
                      if (p.is_file() if files else p.is_dir()))

    def _move_in(self, files: Sequence[str], dirs: Set[str]) -> None:
        """Move the staged files in: a staged folder that `out` lacks in one rename (a new dataset
        is a handful of renames, not one per image), the rest file by file."""
        whole: List[str] = []
        for d in sorted(dirs):  # parents before their children
            if not any(d.startswith(w) for w in whole) and not (self.out / d).exists():
                whole.append(d)
        for d in whole:
            (self.out / d).parent.mkdir(parents=True, exist_ok=True)
            os.replace(self.stage / d, self.out / d)
        for d in sorted(dirs):
            (self.out / d).mkdir(parents=True, exist_ok=True)
        for f in files:
            if not any(f.startswith(w) for w in whole):
                os.replace(self.stage / f, self.out / f)

    def _refuse_clashes(self, own: Sequence[str]) -> None:
        """One line, with nothing moved, when a new file would replace a file bgbench did not list,
        or would land outside `out` through a symlinked folder. Checked per folder: a folder that
        `out` lacks holds no file to clash with."""
        by_folder: Dict[str, List[str]] = {}
        for f in own:
            by_folder.setdefault(f.rpartition("/")[0], []).append(f)
        for rel, names in by_folder.items():
            folder = self.out / rel
            if not _inside(folder / "-", self.out):
                self.discard()
                raise BgbenchError(f"{folder} leads outside {self.out} (a symbolic link); nothing was written")
            clash = [f for f in names if f not in self.previous and ((self.out / f).exists()
                                                                      or (self.out / f).is_symlink())] \
                if folder.is_dir() else []
            if clash:
                self.discard()
                raise BgbenchError(f"{self.out / clash[0]} was not written by bgbench, and the new output has a file "
                                   f"of that name; it is kept and nothing was written: move it, or choose another "
                                   f"output folder")

    def _remove(self, rel: str, kept_dirs: Set[str]) -> None:
        """Remove a listed file of the previous output, then the folders it leaves empty (up to
        `out`, and none the new output has)."""
        path = self.out / rel
        if not _inside(path, self.out):
            return
        path.unlink(missing_ok=True)
        folder = path.parent
        while folder != self.out and _inside(folder, self.out) and folder.is_dir() and \
                f"{folder.relative_to(self.out).as_posix()}/" not in kept_dirs and not any(folder.iterdir()):
            folder.rmdir()
            folder = folder.parent

    def _write_record(self, files: Set[str]) -> None:
        """`out/<record>`, whole or not at all."""
        path = self.out / self.record
        tmp = path.with_name(f".{path.name}.tmp")
        tmp.write_text("\n".join([RECORD_HEADER, *sorted(files)]) + "\n", encoding="utf-8")
        os.replace(tmp, path)


def _stage_for(out: Path, job: str) -> Path:
    """Where a job stages its output: beside `out`, so nothing of it is in `out` before it is
    complete; inside `out`, hidden, where its parent cannot be written. Either is on `out`'s
    filesystem (moving a file in is a rename), and named after the job, so the next run of the
    same job finds and removes a killed one's leftovers."""
    if os.access(out.parent if str(out.parent) else ".", os.W_OK):
        return out.parent / f".{out.name}.bgbench-{job}.partial"
    return out / f".bgbench-{job}.partial"


@contextlib.contextmanager
def _locked(folder: Path):
    """An exclusive lock on `folder` (flock on the folder itself: no lock file is left), where the
    platform has one; commits into one folder then take turns."""
    try:
        import fcntl
    except ImportError:  # no flock (Windows): commits run as they come
        yield
        return
    fd = os.open(folder, os.O_RDONLY)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        os.close(fd)  # closing releases the lock


def _remove_dead_stages(parent: Path, out: Path, job: str) -> None:
    """Stages of `job` for `out` left by processes that are gone (a killed run); a live process's
    stage is its own."""
    prefix = f".{out.name}.bgbench-{job}." if parent != out else f".bgbench-{job}."
    for stage in parent.glob(f"{prefix}*.partial"):
        pid = stage.name[len(prefix):-len(".partial")].split("-", 1)[0]
        if pid.isdigit() and not _alive(int(pid)):  # else another job's, whose name starts like this one's
            shutil.rmtree(stage, ignore_errors=True)


def _alive(pid: int) -> bool:
    if pid == os.getpid():
        return True
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except (PermissionError, OSError):
        return True
    return True


def _read_record(path: Path) -> Optional[List[str]]:
    """The relative paths a record lists (None when there is no record). Lines that are not plain
    relative paths inside the folder (absolute, with `..`) are ignored: a record is no way to make
    bgbench remove a file elsewhere."""
    if not path.is_file():
        return None
    out = []
    for line in path.read_text(encoding="utf-8", errors="replace").splitlines():
        rel = line.strip()
        if rel and not rel.startswith("#") and not Path(rel).is_absolute() and ".." not in Path(rel).parts:
            out.append(Path(rel).as_posix() + ("/" if rel.endswith("/") else ""))
    return out


def _inside(path: Path, root: Path) -> bool:
    """Whether `path`, once its folders' symlinks are resolved, lies inside `root`."""
    return path.parent.resolve().joinpath(path.name).is_relative_to(root.resolve())
