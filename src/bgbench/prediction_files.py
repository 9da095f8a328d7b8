"""Prediction files: an eval run of a model known only by its predictions (a closed model behind an API).

A CSV file with a header row and one row per image and variant:

| column | required | what |
|---|---|---|
| `image_id` | yes | bgbench's id of the image: `<class folder>/<file stem>` (`00_dog/n02085620_10074`) |
| `variant` | yes | the variant folder (`original`, `mixed_rand`, ...) |
| `pred` | yes | the predicted class: an index or a name in the file's label space; -1 for no class (wrong) |
| `confidence` | no | the probability of `pred`, in [0, 1] |
| `top5` | no | (imagenet1k) up to 5 ImageNet classes, best first, space-separated; the first is `pred` |
| `top5_probs` | no | (imagenet1k, with `top5`) their probabilities |
| `superclass_probs` | no | (imagenet1k) the 9 IN-9 classes' probability sums (lets `--mapping superclass` decide) |
| `probs` | no | every class's probability, space-separated (C for the dataset, 1000 for ImageNet); `pred` must be the most probable |
| `pred_name`, `top5_names` | no | the classes' names, for people (`export` writes them; ignored when read) |

Label spaces: `dataset` (default; an index 0..C-1 of the sorted class folders, the folder name, or
the folder name without its `NN_` prefix, case-insensitive) or `imagenet1k` (an ImageNet index
0..999 or an open_clip ImageNet class name; mapped to IN-9 like any 1000-class model). A row
without `confidence` or `probs` is a hard decision: its stored confidence is 1, as for a one-hot
output. Every image of every variant in the file must be there exactly once; the first bad row is
named in a one-line error. `export_predictions` writes a stored eval run in this format.
"""
from __future__ import annotations

import csv
import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Dict, List, Optional, Sequence, Tuple

import numpy as np

from . import protocols
from .class_maps import IN9, ClassMap, resolve_class_map
from .classes import IMAGENET1K, NO_CLASS, Mapping
from .data.csv_fields import allow_long_fields
from .data.in9 import discover
from .data.layout import IN9_VARIANTS, Layout
from .errors import BgbenchError, DataError
from .measures.eval.config import LABEL_SPACES, PredictionFileConfig  # noqa: F401 (re-exported)
from .measures.eval import MEASURE
from .store import Store
from .measures.common.groups import group_results
from .evaluation.predict import Predictions
from .measures.eval.results import EvalReport

REQUIRED = ("image_id", "variant", "pred")
#: The optional columns; the last two are what `export_predictions` writes for people beside the indices,
#: the predicted class's name and the top-5's ('|' between names, which may hold spaces): a reader ignores them.
OPTIONAL = ("confidence", "top5", "top5_probs", "superclass_probs", "probs", "pred_name", "top5_names")
SCHEME = "predictions"


@dataclass
class _Row:
    """One validated row: the class in the file's label space and what else it gave."""

    pred: int
    conf: Optional[float] = None
    top5: Optional[List[int]] = None
    top5_probs: Optional[List[float]] = None
    sums: Optional[List[float]] = None


@dataclass
class _Reader:
    """Parses and checks rows against the dataset's layout, naming the first bad one."""

    path: Path
    layout: Layout
    label_space: str
    class_map: Optional[ClassMap] = None  # how ImageNet classes map to the dataset's (imagenet1k files)
    columns: List[str] = field(default_factory=list)
    ids: Dict[str, Dict[str, int]] = field(default_factory=dict)  # variant -> image id -> label
    seen: Dict[Tuple[str, str], int] = field(default_factory=dict)  # (variant, id) -> line
    top5_width: int = 0

    def fail(self, line: int, message: str) -> None:
        raise DataError(f"{self.path} line {line}: {message}")

    @property
    def width(self) -> int:
        return 1000 if self.label_space == IMAGENET1K else len(self.layout.classes)

    def read(self) -> Dict[str, Dict[str, _Row]]:
        out: Dict[str, Dict[str, _Row]] = {}
        allow_long_fields()  # a cell of any length is read, and then judged as a cell
        try:
            with open(self.path, newline="", encoding="utf-8-sig") as f:
                reader = csv.DictReader(f)
                self._header(reader.fieldnames)
                for record in reader:
                    variant, image_id, row = self._row(reader.line_num, record)
                    out.setdefault(variant, {})[image_id] = row
        except (csv.Error, UnicodeDecodeError) as e:
            raise DataError(f"cannot read {self.path}: {e}") from None
        if not out:
            raise DataError(f"{self.path} holds no prediction rows")
        return out

    def _header(self, names: Optional[Sequence[str]]) -> None:
        names = [n.strip() for n in names or []]
        missing = [c for c in REQUIRED if c not in names]
        if missing:
            raise DataError(f"{self.path} line 1: the header lacks {', '.join(missing)} (columns: "
                            f"{', '.join(REQUIRED)}, optional {', '.join(OPTIONAL)})")
        unknown = [c for c in names if c not in REQUIRED + OPTIONAL]
        if unknown:
            raise DataError(f"{self.path} line 1: unknown column {unknown[0]!r} (columns: {', '.join(REQUIRED)}, "
                            f"optional {', '.join(OPTIONAL)})")
        if self.label_space == "dataset" and {"top5", "top5_probs", "superclass_probs"} & set(names):
            raise DataError(f"{self.path} line 1: top5, top5_probs and superclass_probs hold ImageNet outputs; "
                            f"pass --label-space imagenet1k")
        if "top5_probs" in names and "top5" not in names:
            raise DataError(f"{self.path} line 1: top5_probs needs a top5 column")
        self.columns = names

    def _row(self, line: int, record: dict) -> Tuple[str, str, _Row]:
        cells = {k.strip(): (v or "").strip() for k, v in record.items() if k is not None}
        if None in record:
            self.fail(line, f"more cells than the header's {len(self.columns)} columns")
        for column in self.columns:
            if not cells.get(column):
                self.fail(line, f"empty {column} (the column is in the header, so every row needs it)")
        variant, image_id = cells["variant"], cells["image_id"]
        self._check_image(line, variant, image_id)
        row = _Row(pred=self._class(line, "pred", cells["pred"]))
        self._optional(line, cells, row)
        return variant, image_id, row

    def _check_image(self, line: int, variant: str, image_id: str) -> None:
        if len(image_id) > 200 or len(variant) > 200:  # a cell of any size is read; its error line stays one line
            self.fail(line, f"an image id or variant of {max(len(image_id), len(variant)):,} characters is not "
                            f"an image of {self.layout.root} (ids look like <class folder>/<file stem>)")
        if variant not in self.layout.variants:
            self.fail(line, f"variant {variant!r} is not a folder of {self.layout.root} "
                            f"(present: {', '.join(self.layout.variants)})")
        if variant not in self.ids:
            self.ids[variant] = {it.image_id: it.label for it in self.layout.items(variant)}
        if image_id not in self.ids[variant]:
            self.fail(line, f"image {image_id!r} is not an image of {variant}/{self.layout.split} "
                            f"(ids look like <class folder>/<file stem>)")
        first = self.seen.setdefault((variant, image_id), line)
        if first != line:
            self.fail(line, f"image {image_id!r} of {variant} appears twice (first on line {first})")

    def _class(self, line: int, column: str, text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            value = self._class_by_name(line, column, text)
            if value is None:
                self.fail(line, f"{column} {text!r} is neither a class index nor a class name of the "
                                f"{self.label_space} label space")
        if not (value == NO_CLASS or 0 <= value < self.width):
            self.fail(line, f"{column} {value} is outside the {self.label_space} classes 0..{self.width - 1} "
                            f"(or -1 for none)" + ("; for ImageNet indices pass --label-space imagenet1k"
                                                   if self.label_space == "dataset" and value < 1000 else ""))
        return value

    def _class_by_name(self, line: int, column: str, text: str) -> Optional[int]:
        key = text.lower()
        if self.label_space == IMAGENET1K:
            from open_clip.zero_shot_metadata import IMAGENET_CLASSNAMES
            found = [i for i, n in enumerate(IMAGENET_CLASSNAMES) if n.lower() == key]
            if len(found) > 1:
                self.fail(line, f"{column} {text!r} names ImageNet classes {' and '.join(map(str, found))}; "
                                f"give the index")
            return found[0] if found else None
        from .models.zero_shot import prompt_name
        return next((i for i, folder in enumerate(self.layout.classes)
                     if key in (folder.lower(), prompt_name(folder).lower())), None)

    def _optional(self, line: int, cells: dict, row: _Row) -> None:
        if "confidence" in cells:
            row.conf = self._probs(line, "confidence", cells["confidence"], 1)[0]
        if "top5" in cells:
            row.top5 = [self._class(line, "top5", t) for t in cells["top5"].split()]
            if not 1 <= len(row.top5) <= 5 or row.top5[0] != row.pred:
                self.fail(line, "top5 holds 1 to 5 classes, best first, and the first is pred")
            self.top5_width = self.top5_width or len(row.top5)
            if len(row.top5) != self.top5_width:
                self.fail(line, f"top5 holds {len(row.top5)} classes; earlier rows hold {self.top5_width}")
        if "top5_probs" in cells:
            row.top5_probs = self._probs(line, "top5_probs", cells["top5_probs"], len(row.top5))
        if "superclass_probs" in cells:
            row.sums = self._probs(line, "superclass_probs", cells["superclass_probs"], self.class_map.num_classes)
        if "probs" in cells:
            self._from_probs(line, row, np.asarray(self._probs(line, "probs", cells["probs"], self.width)))

    def _probs(self, line: int, column: str, text: str, count: int) -> List[float]:
        try:
            values = [float(v) for v in text.split()]
        except ValueError:
            self.fail(line, f"{column} must hold numbers: {text[:40]!r}")
        if len(values) != count:
            self.fail(line, f"{column} holds {len(values)} numbers, not {count}")
        if any(not 0 <= v <= 1 for v in values):  # NaN fails this too
            self.fail(line, f"{column} holds a value outside [0, 1]")
        return values

    def _from_probs(self, line: int, row: _Row, probs: np.ndarray) -> None:
        if row.pred != NO_CLASS and probs[row.pred] < probs.max():
            self.fail(line, f"pred {row.pred} is not the most probable class of probs")
        if row.conf is None and row.pred != NO_CLASS:
            row.conf = float(probs[row.pred])
        if self.label_space == IMAGENET1K:
            order = np.argsort(-probs, kind="stable")[:5]
            row.top5 = row.top5 or [int(c) for c in order]
            row.top5_probs = row.top5_probs or [float(probs[c]) for c in row.top5]
            table = self.class_map.array()
            row.sums = row.sums or [float(probs[table == c].sum()) for c in range(self.class_map.num_classes)]


def _variant_predictions(rows: Dict[str, _Row], labels: Dict[str, int], label_space: str, mapping: str,
                         path: Path, class_map: Optional[ClassMap]) -> Predictions:
    """One variant's `Predictions`, decided in the dataset's label space (1000-class rows mapped by `class_map`)."""
    ids = sorted(labels)
    got = [rows[i] for i in ids]
    truth = np.array([labels[i] for i in ids], np.int64)
    preds = np.array([r.pred for r in got], dtype=np.int64)
    conf = np.array([1.0 if r.conf is None else r.conf for r in got], dtype=np.float64)
    if label_space == "dataset":
        return Predictions(ids, truth, preds, conf)
    extra = {"top5_classes": np.array([r.top5 or [r.pred] for r in got], dtype=np.int64)}
    if all(r.top5_probs is not None for r in got):
        extra["top5_probs"] = np.array([r.top5_probs for r in got], dtype=np.float64)
    elif all(r.conf is not None for r in got):
        extra["top5_probs"] = conf[:, None].copy()
    if all(r.sums is not None for r in got):
        extra["superclass_probs"] = np.array([r.sums for r in got], dtype=np.float64)
    if Mapping(mapping) is Mapping.SUPERCLASS:
        if "superclass_probs" not in extra:
            raise BgbenchError(f"{path}: --mapping superclass needs superclass_probs or probs in every row")
        preds, conf = extra["superclass_probs"].argmax(axis=1), extra["superclass_probs"].max(axis=1)
    else:
        preds = np.where(preds == NO_CLASS, NO_CLASS, class_map.array()[np.clip(preds, 0, 999)])
    return Predictions(ids, truth, preds.astype(np.int64), conf, **extra)


def predictions_report(path: str | Path, data: str | Path | Layout, cfg: PredictionFileConfig) -> EvalReport:
    """The eval report of a predictions file on `data`: accuracies, BG-Gap, provenance (recorded by `record`)."""
    from .models.checkpoint import sha256_file
    path = Path(path).expanduser()
    if not path.is_file():
        raise BgbenchError(f"predictions file not found: {path}")
    layout = data if isinstance(data, Layout) else discover(data, split=cfg.split)
    class_map = _class_map(layout, cfg, path)
    reader = _Reader(path, layout, cfg.label_space, class_map)
    rows = reader.read()
    predictions = {}
    known = [v for v in IN9_VARIANTS if v in rows]  # the paper's order, then any other folder (edit levels)
    for variant in known + sorted(v for v in rows if v not in known):
        labels = reader.ids[variant]
        missing = sorted(set(labels) - set(rows[variant]))
        if missing:
            raise DataError(f"{path}: variant {variant} lacks {len(missing)} of its {len(labels)} images "
                            f"(first: {missing[0]}); every image of a variant in the file needs a row")
        predictions[variant] = _variant_predictions(rows[variant], labels, cfg.label_space, cfg.mapping, path,
                                                    class_map)
    name = f"{SCHEME}:{cfg.name or path.stem}"
    report = EvalReport.from_predictions(name, str(layout.root), predictions, seed=cfg.seed)
    report.groups = group_results(layout, predictions)
    spec = {"name": name, "arch": SCHEME, "label_space": cfg.label_space,
            "num_classes": 1000 if cfg.label_space == IMAGENET1K else len(layout.classes),
            "checkpoint": str(path), "checkpoint_sha256": sha256_file(path),
            "extra": {"scheme": SCHEME, "columns": reader.columns}}
    config = {"variants": list(predictions), "split": layout.split, "mapping": cfg.mapping, "seed": cfg.seed,
              "label_space": cfg.label_space, "predictions": str(path), "protocol": cfg.protocol,
              "protocol_settings": protocols.settings_of(cfg.protocol)}
    if class_map is not None and class_map.name != IN9:  # recorded as a model's run records it
        config["class_map"] = class_map.to_config()
    report.provenance = MEASURE.provenance(config, model=spec, layout=layout, seed=cfg.seed)
    return report


def _class_map(layout: Layout, cfg: PredictionFileConfig, path: Path) -> Optional[ClassMap]:
    """How an ImageNet-class file maps to this dataset (IN-9's table, RIVAL10's, Full-IN's, or
    `class_map`), as for a model; refused in one line when the dataset has none (None: dataset classes)."""
    if cfg.label_space != IMAGENET1K:
        if cfg.class_map is not None:
            raise BgbenchError("--class-map maps ImageNet classes: it goes with --label-space imagenet1k")
        return None
    resolved = resolve_class_map(layout.classes, cfg.class_map)
    if resolved is None:
        raise BgbenchError(f"{path} holds ImageNet classes, which map by themselves only to IN-9's, RIVAL10's or "
                           f"Full-IN's class folders; for this dataset's {len(layout.classes)} classes give "
                           f"--class-map FILE.json ({{\"<ImageNet index>\": \"<class folder>\"}})")
    return resolved


def export_predictions(store: Store, run_id: int, out: str | Path) -> dict:
    """Write eval run `run_id` as a predictions file at `out`; returns what was written.

    A 1000-class run's `pred` is its raw ImageNet top-1, with its top5, top5_probs and IN-9
    superclass sums where stored, so that reading the file back (`--label-space imagenet1k`)
    decides under either mapping as the run did. Confidences are written at full precision.
    """
    run = store.get_run(int(run_id))
    if run is None:
        raise BgbenchError(f"run {run_id} not found in {store.path} (see `bgbench runs`)")
    if run["kind"] != "eval":
        raise BgbenchError(f"run {run_id} is a {run['kind']} run; only eval runs have per-image predictions")
    rows = store.predictions(int(run_id))
    if not rows:
        raise BgbenchError(f"run {run_id} has no stored predictions")
    label_space = json.loads(run["spec"] or "{}").get("label_space", "dataset")
    kept = [c for c in ("top5_classes", "top5_probs", "superclass_probs") if label_space == IMAGENET1K and all(r[c] is not None for r in rows)]
    if label_space == IMAGENET1K and "top5_classes" not in kept:
        raise BgbenchError(f"run {run_id} kept no raw ImageNet classes, so its predictions cannot be written "
                           f"in the ImageNet label space")
    name_of = _class_namer(label_space, json.loads(run["config"] or "{}").get("classes") or [])
    columns = [*REQUIRED, "confidence", *({"top5_classes": "top5"}.get(c, c) for c in kept), "pred_name",
               *(["top5_names"] if "top5_classes" in kept else [])]
    out = Path(out).expanduser()
    out.parent.mkdir(parents=True, exist_ok=True)
    with open(out, "w", newline="", encoding="utf-8") as f:
        writer = csv.writer(f)
        writer.writerow(columns)
        for r in rows:
            cells = {c: json.loads(r[c]) for c in kept}
            pred = cells["top5_classes"][0] if kept else r["pred"]
            top5 = ["|".join(name_of(int(c)) for c in cells["top5_classes"])] if "top5_classes" in kept else []
            writer.writerow([r["image_id"], r["variant"], pred, repr(float(r["confidence"])),
                             *(" ".join(str(v) for v in cells[c]) for c in kept), name_of(int(pred)), *top5])
    return {"path": str(out), "run_id": int(run_id), "rows": len(rows), "label_space": label_space,
            "variants": store.run_variants(int(run_id)), "columns": columns}


def _class_namer(label_space: str, classes: Sequence[str]):
    """index -> name: ImageNet's class descriptions (timm's `ImageNetInfo`) for a 1000-class run, the
    dataset's class folders for the others; -1 (no class) is 'none'."""
    if label_space == IMAGENET1K:
        from timm.data import ImageNetInfo
        info = ImageNetInfo()
        return lambda i: info.index_to_description(i) if 0 <= i < 1000 else "none"
    return lambda i: classes[i] if 0 <= i < len(classes) else "none"
