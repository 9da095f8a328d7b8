"""The features probe's table: one row per class and rank of its top penultimate features."""
from ...store.schema import TableSchema, declare_table

TABLE = declare_table(TableSchema("probe_features", (
    ("class_index", "INTEGER NOT NULL"), ("rank", "INTEGER NOT NULL"), ("feature", "INTEGER NOT NULL"),
    ("contribution", "REAL NOT NULL"), ("weight", "REAL NOT NULL"), ("mean_activation", "REAL NOT NULL"),
    ("images", "INTEGER NOT NULL"), ("bg_share", "REAL"), ("bg_area", "REAL NOT NULL"), ("spurious", "INTEGER NOT NULL"),
    ("top_images", "TEXT NOT NULL"), ("top_activations", "TEXT NOT NULL"), ("top_bg_shares", "TEXT NOT NULL")),
    key=("class_index", "rank")))
