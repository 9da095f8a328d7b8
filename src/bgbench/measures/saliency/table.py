"""The saliency probe's per-image table: RIVAL10's alignment measures of each image's Grad-CAM map."""
from ...store.schema import TableSchema, declare_table

TABLE = declare_table(TableSchema("probe_saliency", (
    ("image_id", "TEXT NOT NULL"), ("label", "INTEGER NOT NULL"), ("pred", "INTEGER NOT NULL"),
    ("precision", "REAL"), ("iou", "REAL"), ("dice", "REAL"), ("density_diff", "REAL"), ("coverage_25", "REAL"),
    ("coverage_50", "REAL"), ("coverage_75", "REAL"), ("ap", "REAL")), key=("image_id",)))
