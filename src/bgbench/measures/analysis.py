"""`AnalysisMeasure`: the base of every measure that reads stored runs instead of running a model
(`bgbench analyze NAME`: categories, boxsize, leakage, edits, groups, shortcuts).

An analysis declares, in class attributes, what it reads and how it is asked:

- `reads` (`Reads`): one stored eval run (or a per-image table held in memory), eval runs of one
  model or more (a result per model), or the store's finished runs;
- `config`: its options, a dataclass whose fields declare their flags (`options.flag`) and whose
  `__post_init__` refuses a bad value; the generated command's flags are those fields, in order;

and supplies its pure summary: `of_run(store, run, **options)` of a stored run,
`of_table(table, **options)` of a per-image table where it reads one (by default it reads stored
runs only, and says so), for `Reads.RUNS` `per_model(store, run_ids)`, the runs grouped per
model, and for `Reads.STORE` `of_subjects(store, subjects, **options)`, of the runs picked.
`bgbench.analyze(name, ...)` and the command (which calls it with the config's fields) find it
here by its name, and its methods' keyword parameters are the options they take. `document`, `text` and `notes` say what the command prints where an analysis prints more
than its result's `to_dict()` and `text()`.

An analysis records no run: its kind is None, so it has no per-image table, no provenance and
nothing in `bgbench runs`; its numbers are recomputed from the stored runs each time.
"""
from __future__ import annotations

import dataclasses
import functools
from enum import StrEnum
from typing import Any, ClassVar, Dict, List, Sequence

from ..errors import BgbenchError
from .registry import Command, Measure, declared


class Reads(StrEnum):
    """What an analysis reads, which gives its command's input arguments."""

    #: one stored eval run: RUN, --mapping (re-decide a 1000-class run), --json, --quiet, --db
    RUN = "run"
    #: stored eval runs of one model or more: RUN [RUN ...]; one result per model
    RUNS = "runs"
    #: the store's finished runs, chosen by the config's own filters
    STORE = "store"


@dataclasses.dataclass(frozen=True)
class NoOptions:
    """The config of an analysis with no options of its own."""


class AnalysisMeasure(Measure):
    """One analysis of stored runs, declared by its class attributes (see the module docstring)."""

    command = Command.ANALYZE
    needs: ClassVar[tuple] = ("eval run",)  # every analysis reads stored eval runs (boxsize the boxes too)
    reads: ClassVar[Reads] = Reads.RUN
    config = NoOptions

    def __init__(self):
        super().__init__()
        self.reads = declared(Reads, type(self).reads, "reads", self.name)
        if not dataclasses.is_dataclass(self.config):
            raise ValueError(f"measure {self.name!r}: an analysis declares its config as a dataclass")

    def options(self, cfg) -> Dict[str, Any]:
        """The config's fields as the API function's keywords."""
        return {f.name: getattr(cfg, f.name) for f in dataclasses.fields(cfg)}

    def of_run(self, store, run, **options):
        """The analysis of stored run(s) `run` (an id; a list of ids of one model for `Reads.RUNS`)."""
        raise NotImplementedError(f"measure {self.name!r} reads no stored run by id")

    def of_table(self, table, **options):
        """The analysis of a per-image table held in memory (`probing.tables.as_table`)."""
        raise BgbenchError(f"{self.name} reads stored runs only: pass a results store and a run id")

    def of_subjects(self, store, subjects, **options):
        """`Reads.STORE`: the analysis of the store's runs picked (`reporting.context` subjects)."""
        raise NotImplementedError(f"measure {self.name!r} reads no runs picked from the store")

    def per_model(self, store, run_ids: Sequence[int]) -> List[List[int]]:
        """`Reads.RUNS`: the runs grouped per model, one result each."""
        raise NotImplementedError(f"measure {self.name!r} does not group runs per model")

    # -- what the command prints ------------------------------------------------------------------
    def document(self, result) -> Dict[str, Any]:
        """The `--json` document of one result."""
        return result.to_dict()

    def text(self, result) -> str:
        """The printed table of one result."""
        return result.text()

    def notes(self, result, run) -> List[str]:
        """Status lines (stderr) the command adds about a result of stored run `run`."""
        return []


def eval_section(compute):
    """A report section of an analysis of the subject's newest eval run: `fn(ctx, subject, run,
    result)` with `result = compute(store, run)`; None where the subject has no eval run, or the
    analysis has nothing to show of it (`compute` returns None, or refuses the run with a
    BgbenchError: it lacks the variants or the data the analysis reads)."""
    def wrap(fn):
        @functools.wraps(fn)
        def section(ctx, subject):
            run = subject.latest("eval")
            if run is None:
                return None
            try:
                result = compute(ctx.store, run)
            except BgbenchError:
                return None
            return None if result is None else fn(ctx, subject, run, result)
        return section
    return wrap
