"""Stored eval runs written by hand, for the analyses' tests: a store, and an eval run from a table."""
import pytest

from bgbench import recording
from bgbench.store import Store

CLASSES = ["a", "b", "c"]


def eval_run(store, table, classes=CLASSES, data_root=None):
    """An eval run from {variant: [(image_id, label, pred)]}."""
    rid = recording.start(store, recording.Provenance(kind="eval", config={"classes": classes, "split": "val"},
                                                      data_root=data_root))
    rows = [(v, i, y, p, 0.5, None, None, None) for v, rs in table.items() for i, y, p in rs]
    store.insert("predictions", rid, rows)
    store.finish_run(rid)
    return rid


@pytest.fixture
def store(tmp_path):
    with Store(tmp_path / "r.db") as s:
        yield s
