"""Every file a dataset layout reads lies inside the dataset's root, once symbolic links are resolved.

A tree handed over by someone else can hold a link, `val/ILSVRC2012_val_00000001.JPEG ->
../../../outside/secret.jpg`, or a class folder that links elsewhere; bgbench would read that file,
run the model on it and store its prediction under the dataset's name. Group files already refuse
rows that name such files (`data.groups`); `RootGuard` is the same rule for the layouts that list
their images from folders (IN-9, RIVAL10, ImageNet's release layouts, folders of ImageNet classes).

Cheap on large trees: each folder's real path is resolved once, and a file is resolved only when it
is itself a link (one `lstat`), so listing ImageNet's 1.2M training images costs no extra `realpath`
per image.
"""
from __future__ import annotations

from pathlib import Path
from typing import Optional, Set

from ..errors import DataError


class RootGuard:
    """Checks that files lie inside `root` (see the module docstring)."""

    def __init__(self, root: Path):
        self.root = Path(root)
        self.real = self.root.resolve()
        self._folders: Set[Path] = set()

    def check(self, path: Path, link: Optional[bool] = None) -> Path:
        """`path`, or a one-line DataError naming it when its real path leaves the root. `link`:
        whether the path is a symbolic link, where the caller knows (a directory listing's entry
        does without a system call); else one `lstat` finds out."""
        folder = path.parent
        if folder not in self._folders:
            if not folder.resolve().is_relative_to(self.real):
                self._refuse(path, folder.resolve() / path.name)
            self._folders.add(folder)
        if path.is_symlink() if link is None else link:
            real = path.resolve()
            if not real.is_relative_to(self.real):
                self._refuse(path, real)
        return path

    def _refuse(self, path: Path, real: Path) -> None:
        raise DataError(f"{path} leads outside the dataset root {self.root} (a symbolic link to {real}); bgbench "
                        f"reads only files inside the root: copy the file in, or give a root that holds it")
