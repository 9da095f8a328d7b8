"""What a report is about: the models (subjects) chosen from the store, and where figures go.

A *subject* is one model (name and weights) on one dataset (data fingerprint) under one test
protocol (plain, or ten-crop evaluation), with every finished run recorded for it: eval, challenge, and whatever kinds later analyses add. Its
training run, when bgbench trained it, is the finished "train" run whose checkpoint_sha256
equals the subject's.
"""
from __future__ import annotations

import fnmatch
import functools
import json
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Dict, List, Optional, Sequence, Tuple

from ..errors import BgbenchError, with_article
from ..evaluation.precision_flag import EXACT
from ..models.labels import model_label
from ..store import Row, Store
from ..store.merge import FINISHED  # noqa: F401 (a finished run's statuses, here for the report's readers)
from ..drawing.thumbs import Thumbnails
#: Run kinds that describe where a model or a dataset came from, not how a model behaves.
PROVENANCE_KINDS = ("train", "build")


@dataclass
class Subject:
    """One model on one dataset and its finished runs (oldest first)."""

    key: str  # "m1", "m2", ...: safe for HTML ids and file names (model names are user strings)
    model: str
    weights: Optional[str]  # checkpoint sha256, None for a random init
    data_fingerprint: Optional[str]
    data_root: Optional[str]
    runs: List[Row] = field(default_factory=list)
    train_run: Optional[Row] = None
    protocol: str = ""  # "" or "ten-crop": a different measurement, never mixed with the plain one
    label: str = ""  # display name: `models.labels.model_label` (the model and its weights), the same everywhere
    heading: str = ""  # the label, plus the dataset where one label names several subjects (a study's)
    data_label: str = ""  # the dataset's name: a study's label for it, else its folder's name
    model_label: str = ""  # the model and its weights alone, whatever the data: what the model filter picks

    def latest(self, kind: str) -> Optional[Row]:
        """The newest finished exact (fp32) run of this kind, else the newest run of it: a run at
        reduced precision (bf16, tf32) never replaces an exact one as the number shown, and where it
        is the one shown its cells say its precision. A report of `--runs` that names it shows it."""
        found = [r for r in self.runs if r["kind"] == kind]
        exact = [r for r in found if self.precisions[r["id"]] == EXACT]
        return (exact or found)[-1] if found else None

    @functools.cached_property
    def precisions(self) -> Dict[int, str]:
        """Run id -> `run_precision` of each of this subject's runs, their configs parsed once for every cell."""
        return {r["id"]: run_precision(r) for r in self.runs}

    @property
    def spec(self) -> dict:
        return json.loads(self.runs[-1]["spec"] or "{}")

    @property
    def classes(self) -> List[str]:
        return list(next(filter(None, (json.loads(r["config"]).get("classes") for r in reversed(self.runs))), []))


@dataclass
class ReportContext:
    """The store, the chosen subjects and the output folder, handed to every section."""

    store: Store
    out: Path
    subjects: List[Subject]
    progress: bool = True
    pages: Dict[str, str] = field(default_factory=dict)  # subject key -> its model's page; empty: one page
    #: (model string, data folder) -> {measure name: why a study skipped it}: the scorecard's n/a cells
    skipped: Dict[Tuple[str, str], Dict[str, str]] = field(default_factory=dict)
    figures: Dict[Path, None] = field(default_factory=dict)  # the figures written, in order (a set kept in order)
    thumbs: Thumbnails = field(init=False)

    def __post_init__(self):
        self.thumbs = Thumbnails(self.out / "figures")

    def figure_path(self, subject: Optional[Subject], name: str) -> Path:
        """Where a figure goes: DIR/figures/<subject key>-<name>, without a suffix, so that the
        figure picks its format (`drawing.figures`: the smaller of PNG and SVG, WebP for photographs)."""
        return self.out / "figures" / (f"{subject.key}-{name}" if subject else name)

    def href(self, path: Path) -> str:
        """A written figure's address relative to index.html; the figure joins the page's list."""
        self.figures[Path(path)] = None
        return Path(path).relative_to(self.out).as_posix()

    def page_of(self, subject: Subject) -> str:
        """The page that shows a subject's sections, relative to the report's folder: '' for the
        first page (a report of a few models is one page), else its model's page."""
        return self.pages.get(subject.key, "")

    def metrics(self, run_id: int) -> Dict[Tuple[str, str], Row]:
        return {(m["name"], m["variant"]): m for m in self.store.metrics(run_id)}

    @property
    def plots(self):
        from ..drawing import figures
        return figures

    def gallery(self, title: str, folder=None):
        from ..drawing.gallery import Gallery
        return Gallery(title, self.thumbs, folder=folder)

    def files(self, run: Row):
        """The dataset files of a stored run: its recorded root and split."""
        from ..drawing.dataset_files import DatasetFiles
        return DatasetFiles(run["data_root"], json.loads(run["config"] or "{}").get("split", "val"))


def run_precision(run: Row) -> str:
    """The arithmetic a run's forwards ran under ('fp32', the exact one, for kinds without a choice)."""
    return str(json.loads(run["config"] or "{}").get("precision") or EXACT)


def _identity(run: Row) -> tuple:
    """What makes a run's subject: its model, its weights (a random init is identified by its spec), its
    data and test protocol (ten-crop evals measure something else than plain ones), and how its model
    was read, from what every run records whatever built its model: the class map its outputs went
    through (the resolved table) and its mean and std. A model read through another class map or
    normalized otherwise is another subject, never merged into one row with the first."""
    config = json.loads(run["config"] or "{}")
    spec = json.loads(run["spec"] or "{}")
    table = (config.get("class_map") or {}).get("imagenet_classes")
    return (run["model"], run["checkpoint_sha256"] or run["spec"], run["data_fingerprint"],
            "ten-crop" if run["kind"] == "eval" and config.get("ten_crop") else "",
            json.dumps([table, spec.get("mean"), spec.get("std")], sort_keys=True))


def select_subjects(store: Store, run_ids: Optional[Sequence[int]] = None,
                    models: Optional[Sequence[str]] = None) -> List[Subject]:
    """The subjects of a report: all finished runs with a model, or only `run_ids`, or `models`.

    `models` are names or fnmatch patterns ('timm:resnet*'). Raises BgbenchError naming the flag
    when a run or model is not in the store.
    """
    done = [r for r in store.runs() if r["status"] in FINISHED]
    candidates = [r for r in done if r["model"] and r["kind"] not in PROVENANCE_KINDS]
    if run_ids:
        for i in run_ids:
            run = store.get_run(i)
            if run is None:
                raise BgbenchError(f"--runs: no run {i} in {store.path}")
            if run["status"] not in FINISHED:
                raise BgbenchError(f"--runs: run {i} is {run['status']}, not finished")
            if run["kind"] in PROVENANCE_KINDS or not run["model"]:
                raise BgbenchError(f"--runs: run {i} is {with_article(run['kind'])} run; pass eval or challenge "
                                   "runs (training runs are shown with the model they produced)")
        candidates = [r for r in candidates if r["id"] in run_ids]
    if models:
        names = sorted({r["model"] for r in candidates})
        for pattern in models:
            if not fnmatch.filter(names, pattern):
                raise BgbenchError(f"--models: no finished runs of model {pattern!r} in {store.path} "
                                   f"(models: {', '.join(names) or 'none'})")
        candidates = [r for r in candidates if any(fnmatch.fnmatchcase(r["model"], p) for p in models)]
    if not candidates:
        raise BgbenchError(f"no finished eval or challenge runs in {store.path}; run `bgbench eval` first")
    groups: Dict[tuple, List[Row]] = {}
    for r in candidates:
        groups.setdefault(_identity(r), []).append(r)
    trains = {r["checkpoint_sha256"]: r for r in done if r["kind"] == "train" and r["checkpoint_sha256"]}
    subjects = []
    for i, ((model, weights, fp, protocol, _), rows) in enumerate(sorted(groups.items(), key=lambda kv: (
            Path(kv[1][-1]["data_root"] or "").name, str(kv[0][2]), kv[1][0]["id"])), start=1):  # datasets by name
        sha = rows[-1]["checkpoint_sha256"]
        subjects.append(Subject(key=f"m{i}", model=model, weights=weights, data_fingerprint=fp,
                                data_root=rows[-1]["data_root"], runs=rows, protocol=protocol,
                                train_run=trains.get(sha) if sha else None))
    _label(subjects)
    return subjects


def name_subjects(subjects: List[Subject], labels: Optional[Dict[int, str]] = None,
                  data_labels: Optional[Dict[str, str]] = None) -> List[Subject]:
    """Give subjects the names a study gave: `labels` (run id -> its model's label) and `data_labels`
    (dataset folder -> label; default the folder's name). Labels are keyed by run, not by model
    string: two checkpoints of one architecture share a model string and are two models.

    With a study's names, the subjects come in the study's order (its datasets as `data_labels`
    lists them, its models as `labels` first names them), so that the report of a study is laid out
    alike however its jobs numbered their runs; otherwise datasets by name and models by run."""
    named = {str(Path(k).resolve()): v for k, v in (data_labels or {}).items()}
    for s in subjects:
        given = [labels[r["id"]] for r in s.runs if labels and r["id"] in labels]
        if given:
            s.label = given[-1]
        if s.data_root:
            s.data_label = named.get(str(Path(s.data_root).resolve()), Path(s.data_root).name)
    if labels:
        data_order = {label: i for i, label in enumerate(dict.fromkeys(named.values()))}
        model_order = {label: i for i, label in enumerate(dict.fromkeys(labels.values()))}  # the study's step order
        subjects.sort(key=lambda s: (data_order.get(s.data_label, len(data_order)),
                                     model_order.get(s.label, len(model_order))))
    return subjects


def _label(subjects: List[Subject]) -> None:
    """Display names: `models.labels.model_label` (the model string with its checkpoint's short sha256, or
    its random-init seed), as `bgbench runs` and the leaderboard show it, plus the protocol. A model
    measured on several datasets keeps one name (the page and the scorecard show it once, its
    datasets beside each other); the subject key is added only where one name would stand for two
    models on the same dataset (the same string and seed, built otherwise)."""
    for s in subjects:
        s.model_label = model_label(s.model, s.spec, s.runs[-1]["checkpoint_sha256"])
        s.label = s.model_label + (f" ({s.protocol})" if s.protocol else "")
    seen = Counter((s.label, s.data_fingerprint) for s in subjects)
    clash = {label for (label, _), n in seen.items() if n > 1}
    for s in subjects:
        if s.label in clash:
            s.label += f" [{s.key}]"
