"""The noise probe's per-image table: one row per image, region, level and trial."""
from ...store.schema import TableSchema, declare_table

TABLE = declare_table(TableSchema("probe_noise", (
    ("image_id", "TEXT NOT NULL"), ("label", "INTEGER NOT NULL"), ("region", "TEXT NOT NULL"),
    ("level", "REAL NOT NULL"), ("trial", "INTEGER NOT NULL"), ("correct", "INTEGER NOT NULL"), ("pred", "INTEGER")),
    key=("image_id", "region", "level", "trial"), order=("image_id",)))
