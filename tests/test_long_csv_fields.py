"""A CSV field of any length is read (csv's own limit is 131,072 characters): ImageNet's
LOC_val_solution.csv holds all of an image's boxes in one field (issue 61)."""
import numpy as np
from PIL import Image

from bgbench.data.resolve import resolve_layout


def test_a_val_solution_row_longer_than_csvs_field_limit_is_read(tmp_path):
    val = tmp_path / "ILSVRC" / "Data" / "CLS-LOC" / "val"
    val.mkdir(parents=True)
    Image.fromarray(np.full((20, 20, 3), 90, np.uint8)).save(val / "x.JPEG", format="JPEG")
    boxes = " ".join(["n01440764 1 1 9 9"] * 12_000)  # 216,000 characters in one field
    assert len(boxes) > 131_072
    (tmp_path / "LOC_val_solution.csv").write_text(f"ImageId,PredictionString\nx,{boxes}\n")
    items = resolve_layout(tmp_path).items("original")
    assert [(it.image_id, it.label) for it in items] == [("x.JPEG", 0)]
