"""The Measure registry: what bgbench measures, each declared once as a `Measure` subclass, and read
by the store, the recording, the CLI, `bgbench runs`, the report and studies.

A measure is one package under `measures/` whose `__init__.py` registers its class
(`register_measure`); `load_all` (the catalog, below) finds the packages by scanning the folder, so a new
measure needs no line anywhere else, and its `position` says where listings put it. Its `name` is
its one identity: its run kind, its per-image table, its command (`bgbench probe NAME` or `bgbench
analyze NAME`) and its API entry (`bgbench.probe(NAME, ...)`) follow from it (`Measure.kind`). A
class imports no torch when it is declared, so reading the registry (`bgbench --help`, `bgbench
runs`) stays light; its methods import what they run.

What a measure class supplies, each where it has a use for it:
- `config`: the options dataclass; fields that carry `options.flag(...)` metadata become flags of
  the generated command;
- `compute(model, layout, cfg, *, progress, out_dir)`: the run on --data's layout, read as the measure
  declares (`RunningMeasure.reads`, by `runs.run_measure`) (`running.RunningMeasure` owns it for
  every measure that runs a model: eval, the challenge, the arms and, through `base.ModelMeasure`,
  the probes, which supply only their per-batch rows);
- `columns`, `key`, `order`: its per-image table (declared in the store's schema under its kind);
- `summarize(rows, config)`: the pure summary of its rows, which `read` recomputes from a stored run;
- `headlines`: the numbers that say how a run came out (the first the run has is shown), with
  their direction;
- `sections`: the report sections that show it;
- `gap_arms`, `shortcut_columns`, `benchmark_headlines`, `profile`, `report_only`: its part in the
  shared tables (the shortcut table, the scorecard on a benchmark's data, `bgbench profile`'s
  battery, a study's analyses), declared here and read from the registry by each
  (the declarations, below: `GapArms`, `ShortcutColumn`, `BenchmarkHeadlines`, `InProfile`);
- `source`, `checked_against`: the definition it follows and the test that checks it (its page in
  the manual, generated from the registry, says both).
"""
from __future__ import annotations

import functools
import importlib
import json
import pkgutil
from dataclasses import dataclass, field, asdict
from enum import StrEnum
from typing import Any, ClassVar, Dict, List, Optional, Protocol, Sequence, Tuple


#: What a measure can need of its input; the generated command and the docs say it in these words.
NEEDS = {
    "model": "a model that runs",
    "masks": "foreground masks (fg_mask/)",
    "backgrounds": "the only_bg_t backgrounds of an IN-9 layout (only_bg_t/)",
    "mixed": "the mixed_same and mixed_rand variants of an IN-9 layout (mixed_same/, mixed_rand/)",
    "attributes": "attribute masks (attr_mask/, or a RIVAL10 release)",
    "boxes": "the foreground boxes of the dataset",
    "eval run": "a stored eval run",
    "layers": "a network whose layers can be hooked and differentiated (not ONNX, torch.export or TorchScript)",
    "imagenet": "ImageNet's own images (its val, in the ILSVRC archive's or torchvision's layout)",
    "imagenet model": "a 1000-class ImageNet model (its outputs ImageNet's classes, not the dataset's own)",
    "spurious_imagenet": "the Spurious ImageNet release (images/timestamp.txt and its feature folders)",
    "salient_imagenet": "the Salient ImageNet release (wordnet_dict.py and its masks per class and feature)",
}
#: Needs that are a dataset's layout kind (`data.resolve`): the measure reads that benchmark's release only.
LAYOUT_NEEDS = ("spurious_imagenet", "salient_imagenet")


class Command(StrEnum):
    """Where a measure's command lives: `bgbench probe NAME` (runs a model on a dataset), `bgbench
    analyze NAME` (reads stored runs), or its own top-level command (eval, challenge)."""

    PROBE = "probe"
    ANALYZE = "analyze"
    OWN = "own"


def declared(enum: type, value: Any, what: str, measure: str):
    """`value` as a member of `enum`, checked when a measure is declared: a misspelt kind is refused
    there, naming the choices, instead of silently meaning something else at run time."""
    try:
        return enum(value)
    except ValueError:
        raise ValueError(f"measure {measure!r}: {what} {value!r} is not one of "
                         f"{', '.join(m.value for m in enum)}") from None

#: A probe's run kind (and its per-image table) is its name after this.
PROBE_PREFIX = "probe_"


@dataclass(frozen=True)
class Headline:
    """One number that says how a run came out: metric `metric` at `variant` ('' for overall).

    `higher_is_better` gives its direction (a scorecard marks the better end); `percent` shows a
    share as a percentage."""

    metric: str
    variant: str = ""
    label: str = ""
    higher_is_better: bool = True
    percent: bool = False
    short: str = ""  # a column title of a word or two (the scorecard's); the label by default
    #: (metric, what it is): a stored number of the same run that the headline reads against, shown
    #: beside it (features on bg beside the background's area share, which an evenly spread map gets)
    reference: Optional[tuple] = None

    def show(self, value: Optional[float]) -> str:
        """`rfs=-0.781`, `bg_gap=78.0%`, or `rfs=–` for a run recorded with no value."""
        name = f"{self.metric}{f'[{self.variant}]' if self.variant else ''}"
        if value is None:
            return f"{name}=–"
        return f"{name}={100 * value:.1f}%" if self.percent else f"{name}={value:.3g}"


@dataclass(frozen=True)
class SectionSpec:
    """A report section a measure supplies: the function 'module:attribute' turns the report's
    context (and the model, for scope 'model') into the template's data, or None when nothing it
    needs is recorded. `template`: the template's source inline; by default the file
    `sections/<name>.html.j2` among the report's templates or in the measure's package folder."""

    name: str
    title: str
    function: str
    scope: str = "model"
    after: Optional[str] = None
    template: Optional[str] = None


class Measure:
    """One measure, declared as a subclass whose class attributes say what it is (see the module
    docstring); `register_measure` adds an instance to the registry."""

    name: ClassVar[str] = ""
    command: ClassVar[Command] = Command.ANALYZE
    help: ClassVar[str] = ""
    description: ClassVar[str] = ""
    title: ClassVar[str] = ""  # a few words, for listings ('noise sensitivity (RFS)'); the name by default
    #: Where commands, reports and listings put it among the measures (lower first); None: after those
    #: that declare one, in the order their packages are found.
    position: ClassVar[Optional[int]] = None
    needs: ClassVar[Tuple[str, ...]] = ()
    headlines: ClassVar[Tuple[Headline, ...]] = ()
    sections: ClassVar[Tuple[SectionSpec, ...]] = ()
    data_help: ClassVar[str] = "original/ and fg_mask/"
    config: ClassVar[Optional[type]] = None  # the options dataclass
    pictures: ClassVar[Optional[str]] = None  # the config field that, when > 0, makes the run write pictures
    pictures_help: ClassVar[str] = ""  # --out's help for a measure that writes pictures
    #: The per-image row, a frozen dataclass of `store.schema.TableRow` that its `rows()` make, its
    #: summary reads by field name and a stored run reads back into; its table's columns follow from it.
    row: ClassVar[Optional[type]] = None
    #: The per-image table: its columns (name, SQL type; from `row` where it declares one), key and
    #: order; its name is the kind.
    columns: ClassVar[Tuple[Tuple[str, str], ...]] = ()
    key: ClassVar[Tuple[str, ...]] = ()
    order: ClassVar[Tuple[str, ...]] = ()
    #: A table of its own with another name (eval's `predictions`, the challenge's `challenge_fg`).
    table_name: ClassVar[Optional[str]] = None
    #: Forwards a run makes per image, whatever its options (`forwards`); None: not known before it.
    forwards_per_image: ClassVar[Optional[int]] = None
    #: The published definition it follows (paper, section, upstream code), in a sentence: its page in
    #: the manual names it, so a user knows which number of which paper this one equals.
    source: ClassVar[str] = ""
    #: How the tests check that it equals that source (the test file and its oracle), in a sentence.
    checked_against: ClassVar[str] = ""
    #: Its gap as two stored arms, which the shortcut table's paired changes read; None: not a gap.
    gap_arms: ClassVar[Optional["GapArms"]] = None
    #: Its columns of the shortcut table.
    shortcut_columns: ClassVar[Tuple["ShortcutColumn", ...]] = ()
    #: Its headlines on benchmarks' own data (the scorecard's columns there).
    benchmark_headlines: ClassVar[Tuple["BenchmarkHeadlines", ...]] = ()
    #: Its place and options in `bgbench profile`'s standard battery; None: not in it.
    profile: ClassVar[Optional["InProfile"]] = None
    #: An analysis a study accepts with no options and runs no step for: the report computes it
    #: from the study's eval runs.
    report_only: ClassVar[bool] = False

    def __init__(self):
        unknown = sorted(set(self.needs) - set(NEEDS))
        if unknown:
            raise ValueError(f"measure {self.name!r}: unknown needs {unknown}; known: {sorted(NEEDS)}")
        self.command = declared(Command, type(self).command, "command", self.name)
        if self.command is Command.PROBE and self.config is None:
            raise ValueError(f"measure {self.name!r}: a probe declares its config")
        self.package = _package_of(type(self))
        if self.row is not None:
            if type(self).columns:
                raise ValueError(f"measure {self.name!r}: its columns follow from its row; declare one, not both")
            self.columns = self.row.columns()
        self.table = self._declare_table()

    # -- identity: everything follows from the name ------------------------------------------------
    @property
    def kind(self) -> Optional[str]:
        """The run kind it records: 'probe_<name>' for a probe, its name for its own command, None for
        an analysis of stored runs (recorded nowhere)."""
        if self.command is Command.PROBE:
            return PROBE_PREFIX + self.name
        return self.name if self.command is Command.OWN else None

    def _declare_table(self):
        """Its per-image table in the store's schema, named after its kind (or `table_name`)."""
        from ..store.schema import TableSchema, declare_table, declared
        name = self.table_name or (self.kind if self.columns else None)
        if name is None:
            return None
        if not self.columns:
            return declared(name)
        return declare_table(TableSchema(name, self.columns, key=self.key, order=self.order))

    # -- what a run computes and reads back -------------------------------------------------------
    def forwards(self, images: int, variants: Sequence[str], options: Dict[str, Any],
                 attributes: int = 0, classes: Sequence[str] = ()) -> Tuple[Optional[int], bool]:
        """The forwards a run makes on a dataset of `images` images (in each of `variants`, with
        `attributes` kinds of attribute mask, of `classes` where the plan knows them) under `options`
        (a study's keys; defaults where absent): (count, whether it is a ceiling), or (None, False)
        where it is not known before the run. The study's plan and the manual's measure pages show it; tests/measures/
        test_forwards.py counts a run's forwards against it. By default `forwards_per_image`
        forwards per image; a measure whose count depends on its options says so itself."""
        if self.forwards_per_image is None:
            return None, False
        return self.forwards_per_image * images, False

    def on_data(self, options: Dict[str, Any], data_kind: str) -> Dict[str, Any]:
        """A study's `options` as a run on data of layout kind `data_kind` takes them (what the plan
        counts and matches stored runs by): the options as given by default; a measure whose
        default depends on the data fills it in."""
        return options

    def compute(self, model, layout, cfg, *, progress: bool = True, out_dir=None):
        """Run the measure; the result on rank 0 (None on other torchrun ranks)."""
        raise NotImplementedError(f"measure {self.name!r} runs through its own command")

    def run_config(self, cfg, layout, ranks, *, own: Optional[Dict[str, Any]] = None, images: Optional[int] = None,
                   after: Optional[Dict[str, Any]] = None) -> Dict[str, Any]:
        """What a run records of how it ran, in this order: its options (`asdict(cfg)`), keys of its
        own (`own`: a layer, a rule, the variants it read), the data's split, with `images` the
        images it measured and the data's classes, the keys that follow them (`after`), and the
        world it ran in (`distributed.world_record`). A key of `own` or the data's overrides the
        option of the same name in its place."""
        from ..distributed import world_record
        measured = {} if images is None else {"images": images, "classes": list(layout.classes)}
        return {**asdict(cfg), **(own or {}), "split": layout.split, **measured, **(after or {}),
                **world_record(ranks)}

    def provenance(self, config: Dict[str, Any], *, model, layout, seed: Optional[int] = None):
        """The provenance of one of its runs, under its run kind: the one place a measure's run builds
        it (`recording` adds what the model and the data say of themselves)."""
        from ..provenance import Provenance
        return Provenance.of(self.kind, config, model=model, layout=layout, seed=seed)

    def summarize(self, rows: Sequence[tuple], config: dict) -> Any:
        """The pure summary of a run's per-image rows under its recorded config."""
        raise NotImplementedError

    def read(self, store, run_id: int) -> Any:
        """The summary of a stored run, recomputed from its rows by `summarize` under the run's own
        config: a stored run summarises exactly as the fresh result did."""
        from ..errors import BgbenchError
        run = store.run_row(run_id, kinds=(self.kind,))
        rows = self.stored_rows(store, run_id)
        if not rows:
            raise BgbenchError(f"{self.kind} run {run_id} has no per-image results stored")
        s = self.summarize(rows, json.loads(run["config"]))
        s.run_id = int(run_id)
        return s

    def stored_rows(self, store, run_id: int) -> List[Any]:
        """A stored run's per-image rows, in the table's read order: typed (`row`) where the measure
        declares its row, else tuples in column order."""
        stored = store.probe_rows(self.table.name, int(run_id))
        if self.row is not None:
            return [self.row.of(r) for r in stored]
        return [tuple(r[c] for c in self.table.column_names) for r in stored]

    def stored(self, ctx: "SectionContext", subject: "SectionSubject") -> Optional[Tuple[Any, Any]]:
        """(the subject's newest run of this measure, its summary), or None when it has none: what a
        section starts from."""
        run = subject.latest(self.kind)
        return None if run is None else (run, self.read(ctx.store, run["id"]))

    def headline(self, metrics: Dict[Tuple[str, str], Optional[float]]) -> Optional[str]:
        """The first of its headlines the run has, shown; a run recorded with none of their values
        says so (`name=–`); None for a measure that declares no headline."""
        for h in self.headlines:
            if metrics.get((h.metric, h.variant)) is not None:
                return h.show(metrics[(h.metric, h.variant)])
        return self.headlines[0].show(None) if self.headlines else None

    def headlines_on(self, benchmark: "BenchmarkHeadlines", config: Optional[Dict[str, Any]]) -> Tuple[Headline, ...]:
        """Its headlines on a benchmark's data, given the config of its newest run there (None: no
        run): the declared ones; a measure whose headlines there follow from its run says so itself."""
        return tuple(benchmark.headlines)

    def __repr__(self) -> str:
        return f"<measure {self.name}>"


def _package_of(cls: type) -> str:
    """The package a measure class belongs to (its folder holds its own templates): the module it is
    declared in when that is a package (its `__init__.py`), else the module's package."""
    import sys
    name = cls.__module__
    return name if hasattr(sys.modules.get(name), "__path__") else name.rpartition(".")[0] or name


_MEASURES: Dict[str, Measure] = {}


def register_measure(measure) -> Measure:
    """Add a measure (its class, or an instance) to the registry; returns the registered instance.

    Registering the same class again is a no-op (a module imported twice); another measure under a
    taken name or kind is an error."""
    instance = measure() if isinstance(measure, type) else measure
    old = _MEASURES.get(instance.name)
    if old is not None:
        if type(old) is type(instance):
            return old
        raise ValueError(f"measure {instance.name!r} is already registered")
    if instance.kind is not None and any(m.kind == instance.kind for m in _MEASURES.values()):
        raise ValueError(f"run kind {instance.kind!r} is already a registered measure's")
    _MEASURES[instance.name] = instance
    return instance


def unregister_measure(name: str) -> None:
    """Remove a measure (tests that register a toy measure clean up with this)."""
    _MEASURES.pop(name, None)


def list_measures(command: Optional[str] = None) -> List[Measure]:
    """Every registered measure (every package under `measures/` imported first), in the order of their
    `position`; or those of one command."""
    load_all()
    ranked = sorted(_MEASURES.values(), key=lambda m: (m.position is None, m.position or 0))  # stable: others last
    return [m for m in ranked if command is None or m.command == command]


def get_measure(name: str) -> Measure:
    """A measure by name; an unknown name raises KeyError listing the known ones."""
    for m in list_measures():
        if m.name == name:
            return m
    raise KeyError(f"unknown measure {name!r}; known: {', '.join(m.name for m in list_measures())}")


def measure_of_kind(kind: str) -> Optional[Measure]:
    """The measure whose runs are of `kind` (such as a probe's), or None."""
    return next((m for m in list_measures() if m.kind == kind), None)


def resolve(ref: str) -> Any:
    """What a 'module:attribute' string of a declaration names (a section's function, a shortcut
    column's change), imported when first called; the attribute may be dotted, a registered
    instance's method ('package:MEASURE.gap_section')."""
    module, _, attr = ref.partition(":")
    return functools.reduce(getattr, attr.split("."), importlib.import_module(module))


def stored_section(fn):
    """A report section drawn from the subject's newest run of its measure (the measure whose package
    defines `fn`) and that run's summary, `fn(ctx, subject, run, summary)`; None where it has no run."""
    @functools.wraps(fn)
    def section(ctx, subject):
        measure = next(m for m in list_measures() if fn.__module__.startswith(m.package + "."))
        found = measure.stored(ctx, subject)
        return None if found is None else fn(ctx, subject, *found)
    return section


class SectionSubject(Protocol):
    """What a section reads of one model on one dataset (the report's `Subject` provides it)."""

    key: str
    label: str
    classes: List[str]
    runs: List[Any]

    def latest(self, kind: str) -> Optional[Any]:
        """The newest finished run of `kind` for this model and dataset, or None."""


class SectionContext(Protocol):
    """What a section reads of the report being written (the report's `ReportContext` provides it):
    the store, where its figures go and how the page links them, the report's drawing (its plots,
    galleries and a run's image files), and the chosen subjects. Declared here so that the
    measures draw their sections without importing the report or its drawing, which sit above
    them and below them: a measure's section says what to show, the report how."""

    store: Any
    thumbs: Any
    subjects: List[Any]
    #: The report's plots (`drawing.figures`: `accuracy_bars`, `binned_curves`, ...).
    plots: Any

    def gallery(self, title: str, folder: Any = None) -> Any:
        """An empty gallery of thumbnails titled `title` (`drawing.gallery.Gallery`), its images
        from `folder`."""

    def files(self, run: Any) -> Any:
        """The image and mask files of a stored run's data (`drawing.dataset_files.DatasetFiles`)."""

    def figure_path(self, subject: Any, name: str) -> Any:
        """Where a figure of `subject` named `name` is written."""

    def href(self, path: Any) -> str:
        """The link to a written file, relative to the page."""

    def metrics(self, run_id: int) -> Dict[Tuple[str, str], Any]:
        """The stored metrics of a run by (name, variant)."""


# -- a stored metric as a section shows it -----------------------------------------------------------
# A stored metric as the report's sections show it: its value, 95% interval and count.
#
# Eval's accuracies and the challenge's rates both come from `runs`' metrics table (`ctx.metrics`).


def estimate(row) -> Optional[dict]:
    """{value, lo, hi, n} of a stored metric row; None for a metric not stored or stored without a value."""
    if row is None or row["value"] is None:
        return None
    return {"value": row["value"], "lo": row["lo"], "hi": row["hi"], "n": row["n"]}


# -- the declarations: a measure's part in the shared tables --------------------------------------
# What a measure declares of its part in the package's shared tables, beside its own run: its arms
# as a gap, its columns of the shortcut table, its headlines on a benchmark's own data, its place in
# `bgbench profile`'s battery. Each reader (the shortcut table and its changes, the scorecard,
# studies, the manual) collects these from the registry, so a measure added to its folder shows up
# in every one of them without a line anywhere else.
#
# A `place` orders one kind of declaration across the measures (lower first): a table's columns
# interleave the measures (the shortcut table reads eval's IN-1k accuracy first and its BG-Gap after
# the gaps), so each declaration says where it goes instead of following the measures' `position`.

#: How a shortcut column's images reached the model (before its own normalization and resize policy).
CROP = "Resize(256), CenterCrop(224)"
AS_HELD = "as the dataset holds them"


@dataclass(frozen=True)
class GapArms:
    """A two-arm measure's gap, as the shortcut table's paired changes read its stored rows: the
    reference arm, the shifted arm, and what pairs an image across them ('id': the image id; 'stem':
    the file name without its extension, a stylized copy's)."""

    reference: str
    shifted: str
    key: str = "id"


@dataclass(frozen=True)
class ShortcutColumn:
    """One column of the shortcut table (`measures/shortcuts/table.py`) that a measure's runs fill:
    its key and title, the metric (variant) it reads, whether it is a share (a percentage), its
    direction, the data it is read on ('imagenet': ImageNet's own images only; 'other': every other
    dataset; 'any'), and its preprocessing where it is its own whatever the data (None: the
    dataset's).

    `other_title`: its title on a dataset other than ImageNet's val, where the number is not the
    benchmark's (the watermark gap off ImageNet-W). `shortcut`: False for a number shown beside the
    shortcuts (an accuracy, BG-Gap), which alone makes no block of the table. `class_of`: a key of
    the run's config naming the one class (its 'label') whose images the gap is read on (the Carton
    gap), else every image."""

    place: int
    key: str
    title: str
    metric: str
    variant: str = ""
    percent: bool = True
    higher_is_better: bool = True
    data: str = "any"
    preprocessing: Optional[str] = None
    other_title: Optional[str] = None
    shortcut: bool = True
    class_of: Optional[str] = None
    #: The paired change of this column from a base model's run to a derived model's, as
    #: 'module:function' called with (store, column, base_run, derived_run, seed); None: the gap of
    #: the measure's `gap_arms`, paired over images.
    change: Optional[str] = None


@dataclass(frozen=True)
class BenchmarkHeadlines:
    """A measure's headlines on one benchmark's own data (the runs on it record its `data_kind`,
    `data.hardimagenet.KIND`), which the scorecard shows there, in `place` order among every
    measure's on that data.
    `replaces`: in place of the measure's own headlines on that data (Hard ImageNet's figures are
    not RIVAL10's); else beside them. A measure whose headlines there follow from its run (noise's
    RFS per level of its grid) returns them from `Measure.headlines_on`."""

    data_kind: str
    place: int
    headlines: Tuple[Any, ...] = ()  # registry.Headline
    replaces: bool = False


@dataclass(frozen=True)
class InProfile:
    """A measure's part in `bgbench profile`'s standard battery: its place among the battery's
    measures, and the options it runs with there (its defaults for any other)."""

    place: int
    options: Dict[str, Any] = field(default_factory=dict)


# -- the catalog ----------------------------------------------------------------------------------
# The catalog: the measure packages, found by scanning `measures/` (no list to edit).
#
# A measure is its package under `measures/` alone: every package on `bgbench.measures`'s path is
# imported when the registry is first read, and importing one runs its declaration (light: no
# torch), which registers it. A package that declares no measure (`common/`) registers nothing. The
# order commands and reports list the measures in is each measure's own `position`
# (`registry.list_measures`), never the order of this scan.

def packages() -> Tuple[str, ...]:
    """The packages under `measures/` by name, sorted (`bgbench.measures.__path__` read afresh, so a
    folder added to it, as a test adds a toy measure's, is found; each path is listed once)."""
    from . import __path__ as roots
    return _scanned(tuple(roots))


@functools.lru_cache(maxsize=None)
def _scanned(roots: Tuple[str, ...]) -> Tuple[str, ...]:
    return tuple(sorted(info.name for info in pkgutil.iter_modules(list(roots))
                        if info.ispkg and not info.name.startswith("_")))


def load_all() -> None:
    """Import every measure package (each registers itself once; an imported one costs nothing)."""
    for name in packages():
        importlib.import_module(f"{__package__}.{name}")
