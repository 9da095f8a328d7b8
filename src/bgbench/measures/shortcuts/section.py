"""What the report shows of the shortcuts: the table per dataset and each derived model's changes."""
from __future__ import annotations

from typing import Optional

from ..registry import SectionContext


def shortcuts_section(ctx: SectionContext) -> Optional[dict]:
    from . import MEASURE
    from .table import show
    table = MEASURE.of_subjects(ctx.store, ctx.subjects)
    if not table.blocks:
        return None
    doc = table.to_dict()
    for block in doc["datasets"]:
        for row in block["rows"]:
            row["shown"] = [show(row["cells"].get(c["key"]), c) for c in block["columns"]]
    for ch in doc["changes"]:
        for item in ch["items"]:
            item["shown"] = show(item, item["column"], signed=True)
    return doc
