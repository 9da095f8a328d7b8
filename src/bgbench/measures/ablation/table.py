"""The ablation probe's per-image table: one row per image and region grayed ('none': the clean image)."""
from ...store.schema import TableSchema, declare_table

TABLE = declare_table(TableSchema("probe_ablate", (
    ("image_id", "TEXT NOT NULL"), ("label", "INTEGER NOT NULL"), ("region", "TEXT NOT NULL"),
    ("pred", "INTEGER NOT NULL"), ("correct", "INTEGER NOT NULL"), ("true_prob", "REAL NOT NULL")),
    key=("image_id", "region"), order=("image_id",)))
