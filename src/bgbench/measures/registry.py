"""The Measure registry: what bgbench measures, declared once and read by the store, the recording,
the CLI, `bgbench runs`, the report and studies.

A measure is one package under `measures/` whose `__init__.py` declares a `Measure` and registers
it; `measures.catalog` lists the packages (the one registry line of a new measure). A declaration
names its pieces by import path ('module:attribute') rather than importing them, so that reading
the registry (`bgbench --help`, `bgbench runs`) imports no torch; `Measure.load(...)` imports a
piece when it is used.

The pieces, each optional where the measure has no use for it:
- `config`: the options dataclass; fields that carry `options.flag(...)` metadata become flags of
  the generated command;
- `compute(model, data, cfg, *, progress, [out_dir]) -> MeasureResult | None`: the engine (None on
  a torchrun rank other than 0, which computes its share);
- `table`: the per-image table its rows go to (its schema is declared in the store's schema);
- `read(store, run_id) -> summary`: the summary of a stored run, recomputed from that table (a
  pure `summarize` function of the rows under the run's config);
- `headlines`: the numbers that say how a run came out (the first the run has is shown), with
  their direction;
- `sections`: the report sections that show it.
"""
from __future__ import annotations

import importlib
from dataclasses import dataclass
from typing import Any, Dict, List, Optional, Protocol, Tuple

#: What a measure can need of its input; the generated command and the docs say it in these words.
NEEDS = {
    "model": "a model that runs",
    "masks": "foreground masks (fg_mask/)",
    "attributes": "attribute masks (attr_mask/, or a RIVAL10 release)",
    "boxes": "the foreground boxes of the dataset",
    "eval run": "a stored eval run",
}
#: Where a measure's command lives: `bgbench probe NAME` (runs a model on a dataset), `bgbench
#: analyze NAME` (reads stored runs), or its own top-level command (eval, challenge).
COMMANDS = ("probe", "analyze", "own")


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


@dataclass(frozen=True)
class Measure:
    """The declaration of one measure (see the module docstring for each piece)."""

    name: str
    kind: Optional[str]  # the run kind it records (None: an analysis of stored runs, recorded nowhere)
    help: str
    command: str = "probe"
    needs: Tuple[str, ...] = ()
    config: Optional[str] = None
    compute: Optional[str] = None
    read: Optional[str] = None
    table: Optional[str] = None
    headlines: Tuple[Headline, ...] = ()
    sections: Tuple[SectionSpec, ...] = ()
    description: str = ""
    title: str = ""  # a few words, for listings ('noise sensitivity (RFS)'); the name by default
    data_help: str = "original/ and fg_mask/"
    pictures: Optional[str] = None  # the config field that, when > 0, makes the run write pictures
    pictures_help: str = ""  # --out's help for a measure that writes pictures
    package: str = ""  # the measure's package (its folder holds its own templates); set on registration

    def __post_init__(self):
        unknown = sorted(set(self.needs) - set(NEEDS))
        if unknown:
            raise ValueError(f"measure {self.name!r}: unknown needs {unknown}; known: {sorted(NEEDS)}")
        if self.command not in COMMANDS:
            raise ValueError(f"measure {self.name!r}: command must be one of {COMMANDS}")
        if self.command == "probe" and (self.config is None or self.compute is None):
            raise ValueError(f"measure {self.name!r}: a probe declares its config and compute")

    def load(self, piece: str) -> Any:
        """The object a piece names ('config', 'compute', 'read', or a 'module:attribute' string)."""
        ref = getattr(self, piece) if piece in ("config", "compute", "read") else piece
        if ref is None:
            raise LookupError(f"measure {self.name!r} declares no {piece}")
        module, _, attr = ref.partition(":")
        return getattr(importlib.import_module(module), attr)

    def headline(self, metrics: Dict[Tuple[str, str], Optional[float]]) -> Optional[str]:
        """The first of its headlines the run has, shown; a run recorded with none of their values
        says so (`name=–`); None for a measure that declares no headline."""
        for h in self.headlines:
            if metrics.get((h.metric, h.variant)) is not None:
                return h.show(metrics[(h.metric, h.variant)])
        return self.headlines[0].show(None) if self.headlines else None


_MEASURES: Dict[str, Measure] = {}


def register_measure(measure: Measure, package: Optional[str] = None) -> Measure:
    """Add `measure` to the registry (its package: the caller's `__name__`, for its templates).

    Registering the same declaration again is a no-op (a module imported twice); another
    measure under a taken name or kind is an error."""
    if package is not None and not measure.package:
        measure = Measure(**{**measure.__dict__, "package": package})
    old = _MEASURES.get(measure.name)
    if old is not None:
        if old == measure:
            return old
        raise ValueError(f"measure {measure.name!r} is already registered")
    if measure.kind is not None and any(m.kind == measure.kind for m in _MEASURES.values()):
        raise ValueError(f"run kind {measure.kind!r} is already a registered measure's")
    _MEASURES[measure.name] = measure
    return measure


def unregister_measure(name: str) -> None:
    """Remove a measure (tests that register a toy measure clean up with this)."""
    _MEASURES.pop(name, None)


def list_measures(command: Optional[str] = None) -> List[Measure]:
    """Every registered measure (the catalog loaded first), in catalog order; or those of one command."""
    from .catalog import PACKAGES, load_all
    load_all()
    order = {f"{__package__}.{name}": k for k, name in enumerate(PACKAGES)}
    ranked = sorted(_MEASURES.values(), key=lambda m: order.get(m.package, len(order)))  # stable: others last
    return [m for m in ranked if command is None or m.command == command]


def get_measure(name: str) -> Measure:
    """A measure by name; an unknown name raises KeyError listing the known ones."""
    for m in list_measures():
        if m.name == name:
            return m
    raise KeyError(f"unknown measure {name!r}; known: {', '.join(m.name for m in list_measures())}")


def measure_of_kind(kind: str) -> Optional[Measure]:
    """The measure whose runs are of `kind` (such as 'probe_noise'), or None."""
    return next((m for m in list_measures() if m.kind == kind), None)


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
    the store, where its figures go and how the page links them, the thumbnail writer, and the
    chosen subjects. Declared here so that the measures draw their sections without importing the
    report, which sits above them."""

    store: Any
    thumbs: Any
    subjects: List[Any]

    def figure_path(self, subject: Any, name: str) -> Any:
        """Where a figure of `subject` named `name` is written."""

    def href(self, path: Any) -> str:
        """The link to a written file, relative to the page."""

    def metrics(self, run_id: int) -> Dict[Tuple[str, str], Any]:
        """The stored metrics of a run by (name, variant)."""
