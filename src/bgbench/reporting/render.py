"""Rendering the report and the leaderboard pages with Jinja2 (autoescape on: names are user strings)."""
from __future__ import annotations

import dataclasses
import functools
import time
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Dict, List, Optional, Sequence, Tuple

import jinja2

from ..result import Result
from .. import console
from ..data.owned import StagedOutput, refuse_unsafe_out
from ..errors import BgbenchError
from ..store import Store
from ..version import __version__
from .context import ReportContext, Subject, name_subjects, select_subjects
from .sections import list_sections, measure_sections


def environment() -> jinja2.Environment:
    """Templates from the package data (src/bgbench/reporting/templates) and, for a measure's
    sections, from its declaration or its package's templates/ folder; every value escaped."""
    loader = jinja2.ChoiceLoader([jinja2.PackageLoader("bgbench.reporting", "templates"),
                                  jinja2.FunctionLoader(_measure_template)])
    env = jinja2.Environment(loader=loader, autoescape=True,
                             undefined=jinja2.StrictUndefined, trim_blocks=True, lstrip_blocks=True)
    env.filters.update(pct=_pct, short=lambda s, n=12: "-" if not s else str(s)[:n],
                       pvalue=lambda p: "-" if p is None else (f"{p:.2g}" if p < 0.001 else f"{p:.3f}"))
    return env


def _measure_template(name: str) -> Optional[str]:
    """`sections/<name>.html.j2` of a measure's section: its inline source, else the file in its
    measure's package (`measures/<measure>/templates/<name>.html.j2`); None for other names."""
    import importlib.resources
    section = name.removeprefix("sections/").removesuffix(".html.j2")
    found = next((s for s in measure_sections() if s.name == section), None)
    if found is None or found.source is not None:
        return found and found.source
    files = importlib.resources.files(found.measure.package) / "templates" / f"{section}.html.j2"
    return files.read_text(encoding="utf-8") if files.is_file() else None


def _pct(value: Optional[float], digits: int = 1, signed: bool = False) -> str:
    return "-" if value is None else f"{100 * value:{'+' if signed else ''}.{digits}f}%"


@dataclass
class ReportResult(Result):
    """What `bgbench report` wrote."""

    index: Path
    leaderboard: Path
    figures: List[Path] = field(default_factory=list)
    models: List[str] = field(default_factory=list)
    sections: List[str] = field(default_factory=list)
    seconds: float = 0.0
    thumbnails: List[Path] = field(default_factory=list)  # the galleries' sheets and full-size copies
    scorecard: Optional[dict] = None  # the scorecard's data (`reporting.scorecard`), which a study also prints
    gallery_images: int = 0  # the shots the galleries show
    pages: List[Path] = field(default_factory=list)  # the models' own pages (a report of many models)

    def to_dict(self) -> dict:
        return {"index": str(self.index), "leaderboard": str(self.leaderboard),
                "figures": [str(p) for p in self.figures], "models": self.models, "sections": self.sections,
                "pages": [str(p) for p in self.pages], "gallery_images": self.gallery_images,
                "gallery_files": len(self.thumbnails), "seconds": self.seconds}

    def table(self) -> List[dict]:
        """One row per file written: its path and what it is."""
        return [{"kind": kind, "path": str(path)} for kind, paths in
                (("index", [self.index]), ("leaderboard", [self.leaderboard]), ("page", self.pages),
                 ("figure", self.figures)) for path in paths]

    def text(self) -> str:
        pages = f", a page per model under {self.pages[0].parent}" if self.pages else ""
        from ..console import plural
        return (f"report: {self.index} ({plural(len(self.models), 'model')}, {plural(len(self.figures), 'figure')}, "
                f"{plural(self.gallery_images, 'gallery image')} in {plural(len(self.thumbnails), 'file')}{pages}, "
                f"{self.seconds:.1f}s)\n"
                f"leaderboard: {self.leaderboard}")


#: The list of the files a report wrote, in its folder: a rewrite removes those, and no other.
REPORT_RECORD = "REPORT_FILES.txt"
#: The pages a report writes at the top of its folder.
PAGES = ("index.html", "leaderboard.html")


def report_output(out: str | Path) -> StagedOutput:
    """Where a report goes, checked before any work: one line for a filesystem root, the home
    folder, an existing file, or a folder whose index.html or leaderboard.html another program
    wrote (they would be overwritten). The report is staged beside the folder and moved in whole;
    its previous files (REPORT_FILES.txt's list) are the only ones a rewrite removes."""
    out = refuse_unsafe_out(Path(out))
    staged = StagedOutput(out, REPORT_RECORD, "report")
    for page in PAGES:
        if (out / page).exists() and page not in staged.previous:
            raise BgbenchError(f"--out {out} holds a {page} that no bgbench report wrote; choose another folder "
                               f"(nothing is written into it)")
    return staged


def render_report(store: Store, out: str | Path, run_ids: Optional[Sequence[int]] = None,
                  models: Optional[Sequence[str]] = None, progress: bool = True,
                  labels: Optional[Dict[int, str]] = None,
                  data_labels: Optional[Dict[str, str]] = None,
                  skipped: Optional[Dict[Tuple[str, str], Dict[str, str]]] = None) -> ReportResult:
    """Write OUT/index.html (figures in OUT/figures/) and OUT/leaderboard.html from the store alone.

    `labels`: run id -> the name the page gives its model (a study's labels), instead of the
    model string and its weights; `data_labels`: dataset folder -> its name (default: the
    folder's name); `skipped`: (model string, data folder) -> {measure: why a study skipped it},
    shown as n/a with the reason in the scorecard."""
    t0 = time.time()
    staged = report_output(out)
    subjects = name_subjects(select_subjects(store, run_ids, models), labels, data_labels)
    shared = {s.label for s in subjects if sum(t.label == s.label for t in subjects) > 1}
    for s in subjects:
        s.heading = f"{s.label} on {s.data_label}" if s.label in shared and s.data_label else s.label
    (staged.open() / "figures").mkdir()
    try:
        result = _render(store, staged.stage, subjects, progress, labels, t0, skipped or {})
        staged.commit()
    finally:
        staged.discard()  # what was not committed: an error, an interrupt
    return _moved(result, staged.stage, staged.out)


def _moved(result: ReportResult, stage: Path, out: Path) -> ReportResult:
    """`result` with its files where the commit moved them: from the stage into the report's folder."""
    def at(path: Path) -> Path:
        return out / Path(path).relative_to(stage)
    return dataclasses.replace(result, index=at(result.index), leaderboard=at(result.leaderboard),
                               figures=[at(p) for p in result.figures], thumbnails=[at(p) for p in result.thumbnails],
                               pages=[at(p) for p in result.pages])


#: Up to this many models the report is one page; with more, each model's sections are a page of
#: their own (`models/<key>.html`), and the first page keeps the scorecard, the overview and the
#: comparisons: one page of fifty models' galleries would take seconds for a browser to parse.
ONE_PAGE_UP_TO = 12
#: Where the pages of the models go, in the report's folder.
MODEL_PAGES = "models"


def _render(store: Store, out: Path, subjects: List[Subject], progress: bool, labels: Optional[Dict[int, str]],
            t0: float, skipped: Optional[Dict[Tuple[str, str], Dict[str, str]]] = None) -> ReportResult:
    """The pages, their figures and the leaderboard, written into `out` (the report's stage).

    Each page is written section by section: Jinja2 streams the template, and each model's sections
    are drawn when the template reaches that model, so only one model's data (and no figure's
    pixels) is held at a time, whatever the number of models."""
    groups = _by_model(subjects)
    split = len(groups) > ONE_PAGE_UP_TO
    pages = {e["subject"].key: f"{MODEL_PAGES}/{g['entries'][0]['subject'].key}.html" for g in groups
             for e in g["entries"]} if split else {}
    ctx = ReportContext(store=store, out=out, subjects=subjects, progress=progress, pages=pages,
                        skipped={(m, str(Path(d).resolve())): v for (m, d), v in (skipped or {}).items()})
    used: set = set()  # the names of the sections drawn
    bar = console.progress(total=len(subjects), enabled=progress, desc="report", unit="model")

    def drawn(scope: str, *subject: Subject) -> List[dict]:
        """The drawn sections of `scope` (a "model" section's function also takes the subject); a
        section with nothing recorded is left out."""
        found = [{"name": s.name, "title": s.title, "template": s.template, "data": data}
                 for s in list_sections(scope) for data in [s.fn(ctx, *subject)] if data is not None]
        used.update(s["name"] for s in found)
        if subject:
            bar.update(1)
        return found

    summary = drawn("summary")
    env = environment()
    common = {"version": __version__, "generated": datetime.now(timezone.utc).isoformat(timespec="seconds"),
              "db": str(store.path), "page": ctx.page_of, "sections_of": functools.partial(drawn, "model")}
    index = ctx.out / "index.html"
    try:
        env.get_template("index.html.j2").stream(
            summary=summary, model_groups=groups, page_sections=functools.partial(drawn, "page"), split=split,
            filters=_filters(subjects, galleries=not split), **common).dump(str(index), encoding="utf-8")
        for g in groups if split else []:
            page = ctx.out / ctx.page_of(g["entries"][0]["subject"])
            page.parent.mkdir(exist_ok=True)
            env.get_template("model.html.j2").stream(g=g, filters=_filters([e["subject"] for e in g["entries"]]),
                                                     **common).dump(str(page), encoding="utf-8")
    finally:
        bar.close()
    board = write_leaderboard(store, ctx.out / "leaderboard.html", labels=labels)
    return ReportResult(index=index, leaderboard=board, figures=list(ctx.figures), models=list(dict.fromkeys(
                            s.label for s in subjects)),
                        sections=sorted(used), seconds=round(time.time() - t0, 2), thumbnails=ctx.thumbs.paths,
                        scorecard=next((s["data"] for s in summary if s["name"] == "scorecard"), None),
                        gallery_images=ctx.thumbs.shots, pages=[ctx.out / p for p in dict.fromkeys(pages.values())])


def _by_model(subjects: List[Subject]) -> List[dict]:
    """One entry per model (its label), holding its datasets' subjects in page order: the page
    shows a model once, with each dataset it was measured on as a subsection."""
    groups: Dict[str, dict] = {}
    for s in subjects:
        groups.setdefault(s.label, {"label": s.label, "model_label": s.model_label, "entries": []})["entries"].append(
            {"subject": s})
    return list(groups.values())


def _filters(subjects: Sequence[Subject], galleries: bool = True) -> dict:
    """What a page's filters offer: every class of its subjects (first seen first; none on a page
    without galleries) and every model (its weights, whatever the data)."""
    return {"classes": list(dict.fromkeys(c for s in subjects for c in s.classes)) if galleries else [],
            "models": list(dict.fromkeys(s.model_label for s in subjects))}


def leaderboard_html(rows: List[dict]) -> str:
    """The leaderboard as one page: per dataset, a sortable table per ranking key, reported rows marked."""
    from .leaderboard import KEY_NAMES, RANK_COLUMNS, SHOWN, TITLES, blocks
    datasets: dict = {}
    for dataset, key, block in blocks(rows):
        datasets.setdefault(dataset, []).append({
            "title": TITLES[key], "rank_column": RANK_COLUMNS.get(key),
            "rank_header": f"rank by {KEY_NAMES[key]}" if key else None, "shown": SHOWN[key], "rows": block})
    generated = datetime.now(timezone.utc).isoformat(timespec="seconds")
    return environment().get_template("leaderboard.html.j2").render(
        tables=list(datasets.items()), version=__version__, generated=generated)


def write_leaderboard(store: Store, path: Path, labels: Optional[Dict[int, str]] = None) -> Path:
    """The leaderboard page; `labels` (run id -> its model's name, a study's) name the measured rows
    as the report's scorecard does, the model and its weights kept in brackets."""
    from .leaderboard import leaderboard
    rows = leaderboard(store)
    for r in rows:
        given = [labels[i] for i in r.get("run_ids", ()) if labels and i in labels]
        if given:
            r["model_label"] = f"{given[-1]} ({r.get('model_label') or r['model']})"
    path.write_text(leaderboard_html(rows), encoding="utf-8")
    return path
