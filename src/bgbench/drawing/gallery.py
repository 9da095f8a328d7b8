"""What every gallery hands its template: groups of items, each item a row of shots (thumbnails).

One shape for all galleries, so one template macro (`_gallery.html.j2`) draws them all:

    {"title", "note", "folder", "missing", "shots", "groups": [{"class", "entries": [
        {"id", "class", "label", "score", "lines": [[{"thumb": Thumb, "caption", "pred", "ok"}, ...], ...]}]}]}

`class` (a group's and an item's) is what the class filter matches; `ok` marks a prediction
right (True), wrong (False) or not judged (None). A gallery's thumbnails are one sheet
(`thumbs.Thumbnails.sheet`), written when the gallery is handed over (`to_dict`).
"""
from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Dict, List, Optional, Sequence, Union

import numpy as np

from .thumbs import Cell, Thumbnails

@dataclass
class Gallery:
    """A gallery being filled: items are added per class; files that are gone are counted."""

    title: str
    thumbs: Thumbnails
    note: str = ""
    folder: str = ""
    groups: Dict[str, List[dict]] = field(default_factory=dict)
    missing: int = 0

    def shot(self, source: Union[Path, np.ndarray, None], caption: str, pred: str = "", ok: Optional[bool] = None
             ) -> Optional[dict]:
        """The shot of an image file or of (H, W, 3) uint8 pixels made for the report (None, counted as
        missing, when it is gone)."""
        if source is None:
            self.missing += 1
            return None
        cell = self.thumbs.of_array(source) if isinstance(source, np.ndarray) else self.thumbs.of_file(source)
        return {"thumb": cell, "caption": caption, "pred": pred, "ok": ok}

    def add(self, cls: str, image_id: str, label: str, score: str, *lines: Sequence[Optional[dict]]) -> None:
        """One item: an image (`label` its true class), the score that chose it, and its shots in
        one or more lines. Shots whose files are gone are dropped, and so is an item left with none."""
        kept = [line for line in ([s for s in line if s is not None] for line in lines) if line]
        if kept:
            self.groups.setdefault(cls, []).append({"id": image_id, "class": cls, "label": label, "score": score,
                                                    "lines": kept})

    def to_dict(self) -> dict:
        """The template's data; the first call writes the gallery's sheet and puts each shot's
        `Thumb` in place of its pixels."""
        shots = [s for items in self.groups.values() for it in items for line in it["lines"] for s in line]
        pending = [s for s in shots if isinstance(s["thumb"], Cell)]
        for shot, thumb in zip(pending, self.thumbs.sheet([s["thumb"] for s in pending])):
            shot["thumb"] = thumb
        return {"title": self.title, "note": self.note, "folder": self.folder, "missing": self.missing,
                "groups": [{"class": c, "entries": items} for c, items in self.groups.items()], "shots": len(shots)}
