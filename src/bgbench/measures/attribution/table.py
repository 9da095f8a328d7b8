"""The attribution probe's per-image table: the IoU of each kept feature's map with each attribute's mask."""
from ...store.schema import TableSchema, declare_table

TABLE = declare_table(TableSchema("probe_attribution", (
    ("image_id", "TEXT NOT NULL"), ("label", "INTEGER NOT NULL"), ("attribute", "TEXT NOT NULL"),
    ("feature", "INTEGER NOT NULL"), ("iou", "REAL NOT NULL")), key=("image_id", "attribute", "feature"),
    order=("image_id",)))
