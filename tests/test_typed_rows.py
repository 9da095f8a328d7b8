"""Typed rows: a measure's row dataclass gives its table the very columns the tuples had, and the
rows stored before rows were typed (the tuple path, the previous main's store) read back into it."""
import sqlite3
from dataclasses import dataclass, field
from pathlib import Path
from typing import Optional

import pytest

from bgbench.measures.registry import list_measures
from bgbench.store import Store
from bgbench.store.schema import TableRow, sql

#: The measure tables as main declared them by hand before rows were typed: (columns, key, order).
#: A store written then must open and read back, so a row class must give exactly these.
TUPLE_TABLES = {
    "probe_noise": ((("image_id", "TEXT NOT NULL"), ("label", "INTEGER NOT NULL"), ("region", "TEXT NOT NULL"),
                     ("level", "REAL NOT NULL"), ("trial", "INTEGER NOT NULL"), ("correct", "INTEGER NOT NULL"),
                     ("pred", "INTEGER")),
                    ("image_id", "region", "level", "trial"), ("image_id",)),
    "probe_saliency": ((("image_id", "TEXT NOT NULL"), ("label", "INTEGER NOT NULL"), ("pred", "INTEGER NOT NULL"),
                        ("precision", "REAL"), ("iou", "REAL"), ("dice", "REAL"), ("density_diff", "REAL"),
                        ("coverage_25", "REAL"), ("coverage_50", "REAL"), ("coverage_75", "REAL"), ("ap", "REAL")),
                       ("image_id",), ()),
    "probe_features": ((("class_index", "INTEGER NOT NULL"), ("rank", "INTEGER NOT NULL"),
                        ("feature", "INTEGER NOT NULL"), ("contribution", "REAL NOT NULL"),
                        ("weight", "REAL NOT NULL"), ("mean_activation", "REAL NOT NULL"),
                        ("images", "INTEGER NOT NULL"), ("bg_share", "REAL"), ("bg_area", "REAL NOT NULL"),
                        ("spurious", "INTEGER NOT NULL"), ("top_images", "TEXT NOT NULL"),
                        ("top_activations", "TEXT NOT NULL"), ("top_bg_shares", "TEXT NOT NULL")),
                       ("class_index", "rank"), ()),
    "probe_ablate": ((("image_id", "TEXT NOT NULL"), ("label", "INTEGER NOT NULL"), ("region", "TEXT NOT NULL"),
                      ("pred", "INTEGER NOT NULL"), ("correct", "INTEGER NOT NULL"), ("true_prob", "REAL NOT NULL")),
                     ("image_id", "region"), ("image_id",)),
    "probe_attribution": ((("image_id", "TEXT NOT NULL"), ("label", "INTEGER NOT NULL"),
                           ("attribute", "TEXT NOT NULL"), ("feature", "INTEGER NOT NULL"), ("iou", "REAL NOT NULL")),
                          ("image_id", "attribute", "feature"), ("image_id",)),
    **{f"probe_{name}": ((("arm", "TEXT NOT NULL"), ("image_id", "TEXT NOT NULL"), ("label", "INTEGER NOT NULL"),
                          ("pred", "INTEGER NOT NULL")), ("arm", "image_id"), ())
       for name in ("watermark", "texture", "renditions", "imagenet_x")},
}


def typed_measures():
    return [m for m in list_measures() if m.row is not None]


def test_every_table_main_declared_by_hand_now_follows_from_a_row_class_unchanged():
    by_table = {m.table.name: m for m in typed_measures()}
    assert set(TUPLE_TABLES) <= set(by_table)
    for name, (columns, key, order) in TUPLE_TABLES.items():
        table = by_table[name].table
        assert (table.columns, table.key, table.order) == (columns, key, order), name


def _example(column_type: str, k: int):
    """A value of a column's type (None for a nullable column on odd rows)."""
    if "NOT NULL" not in column_type and k % 2:
        return None
    return {"TEXT": f"c{k % 3}/img{k}", "INTEGER": k, "REAL": k / 4}[column_type.split()[0]]


@pytest.mark.parametrize("measure", typed_measures(), ids=lambda m: m.name)
def test_rows_written_as_tuples_read_back_into_the_row_class(measure, tmp_path):
    """The tuple path (main's `store.insert` of plain tuples) and the typed path write the same
    table, and both read back as the measure's rows, field by field."""
    tuples = [tuple(_example(t, k) for _, t in measure.columns) for k in range(4)]
    dumps = []
    for path, rows in (("tuples", tuples), ("typed", [measure.row(*t) for t in tuples])):
        db = tmp_path / f"{path}.db"
        with Store(db) as store:
            run_id = store.start_run(measure.kind, {})
            store.insert(measure.table.name, run_id, rows)
            back = measure.stored_rows(store, run_id)
        assert all(type(r) is measure.row for r in back)
        assert {tuple(getattr(r, n) for n, _ in measure.columns) for r in back} == set(tuples)
        with sqlite3.connect(db) as con:
            dumps.append(list(con.execute(f"SELECT * FROM {measure.table.name} ORDER BY rowid")))
    assert dumps[0] == dumps[1] and len(dumps[0]) == 4


def test_a_written_store_reads_back_into_typed_rows(tmp_path):
    """tests/data/store_main.sql: every probe's rows come back as its row class, each field the
    stored column of its name."""
    db = tmp_path / "main.db"
    con = sqlite3.connect(db)
    con.executescript((Path(__file__).with_name("data") / "store_main.sql").read_text(encoding="utf-8"))
    con.close()
    seen = set()
    with Store(db, create=False) as store:
        for m in typed_measures():
            for run in store.runs(m.kind):
                raw = store.probe_rows(m.table.name, run["id"])
                rows = m.stored_rows(store, run["id"])
                assert rows and [type(r) for r in rows] == [m.row] * len(raw)
                assert [{n: getattr(r, n) for n in m.row.names()} for r in rows] == [
                    {k: v for k, v in dict(r).items() if k != "run_id"} for r in raw]
                seen.add(m.name)
    assert {"noise", "saliency", "features", "ablate", "attribution"} <= seen


def test_a_row_class_gives_sql_types_from_its_annotations():
    @dataclass(frozen=True, slots=True)
    class Row(TableRow):
        name: str
        count: int
        flag: bool
        share: float
        maybe: Optional[float]
        note: str = field(default="", metadata=sql("TEXT NOT NULL DEFAULT ''"))

    assert Row.columns() == (("name", "TEXT NOT NULL"), ("count", "INTEGER NOT NULL"), ("flag", "INTEGER NOT NULL"),
                             ("share", "REAL NOT NULL"), ("maybe", "REAL"), ("note", "TEXT NOT NULL DEFAULT ''"))
    assert tuple(Row("a", 1, True, 0.5, None)) == ("a", 1, True, 0.5, None, "")
    assert Row.of({"name": "a", "count": 1, "flag": 1, "share": 0.5, "maybe": None, "note": "x"}).note == "x"

    @dataclass(frozen=True, slots=True)
    class Bad(TableRow):
        values: list

    with pytest.raises(TypeError, match="Bad.values"):
        Bad.columns()
