"""Running a study: each step the store does not hold yet, through the same API calls as the single
commands (so each is sharded under torchrun as they are), recorded as it ends; then the report.

Progress names the step (`[7/24] challenge timm:resnet50.a1_in1k on in9`) on stderr, and the step's own bar
follows. A killed study loses at most its current step (a challenge keeps its verdicts as they
come and continues inside its run).
"""
from __future__ import annotations

import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Dict, List, Optional, Set, Tuple

from ..console import status
from ..errors import BgbenchError
from ..distributed import setup
from ..recording import record
from ..store import Store
from .plan import Step, edited_dataset, plan, refresh
from ..data.owned import safe_name
from .spec import Study
from ..result import Result


@dataclass
class StudyResult(Result):
    """What a study did: its steps (with the run each produced or found), and the report."""

    study: Study
    steps: List[Step]
    ran: List[int] = field(default_factory=list)
    report: Optional[Path] = None
    scorecard: Optional[dict] = None  # the report's scorecard data (`reporting.scorecard`)
    shortcuts: Any = None  # the shortcut table (`measures.shortcuts`), where a step measured a shortcut
    seconds: float = 0.0
    #: steps that executor jobs ran for this invocation and it merged into the store (`cluster`)
    ran_by_jobs: int = 0
    results: Dict[Tuple[Optional[str], str, str], Any] = field(default_factory=dict, repr=False)

    def result(self, model: Optional[str], dataset: str, measure: str) -> Any:
        """The in-memory result of a step this invocation ran: (model label, dataset label, measure)."""
        return self.results[(model, dataset, measure)]

    def run_id(self, model: Optional[str], dataset: str, measure: str) -> Optional[int]:
        """The stored run of a step (run now or found in the store)."""
        for s in self.steps:
            if (s.model.label if s.model else None, s.dataset.label, s.measure.name) == (model, dataset, measure):
                return s.done_run
        raise KeyError((model, dataset, measure))

    def to_dict(self) -> dict:
        from ..reporting.scorecard import scorecard_records
        return {"source": self.study.source, "report": str(self.report) if self.report else None,
                "seconds": round(self.seconds, 1), "ran": len(self.ran), "ran_by_jobs": self.ran_by_jobs,
                "steps": [_step_dict(s) for s in self.steps],
                "scorecard": scorecard_records(self.scorecard) if self.scorecard else [],
                "shortcuts": self.shortcuts.to_dict() if self.shortcuts is not None else None}

    @property
    def missing(self) -> List[str]:
        """The titles of the steps the store does not hold yet (a skipped step aside)."""
        return [s.title for s in self.steps if s.done_run is None and s.skip is None]

    def table(self) -> List[dict]:
        """One row per step: its measure, model, dataset, state and run."""
        return [_step_dict(s) for s in self.steps]

    def text(self) -> str:
        """The steps, what ran, and then the numbers: the scorecard as a table, the report's path last."""
        lines = [plan_table(self.steps)]
        done = sum(s.done_run is not None for s in self.steps)
        by_jobs = f", {self.ran_by_jobs} ran in jobs and were merged into the store" if self.ran_by_jobs else ""
        lines.append(f"{len(self.ran)} steps ran{' here' if by_jobs else ''}{by_jobs}, "
                     f"{done - len(self.ran) - self.ran_by_jobs} were already in the store, "
                     f"{sum(s.skip is not None for s in self.steps)} skipped ({self.seconds:.0f}s)")
        missing = [s for s in self.steps if s.done_run is None and s.skip is None and s.problem is None]
        if missing:
            lines.append(f"{len(missing)} steps are not in the store yet (`bgbench study` runs them)")
        if self.scorecard:
            from ..reporting.scorecard import scorecard_text
            lines += ["", scorecard_text(self.scorecard)]
        if self.shortcuts is not None:
            lines += ["", self.shortcuts.text()]
        if self.report:
            lines.append(f"report: {self.report / 'index.html'}")
        return "\n".join(lines)


def _step_dict(s: Step) -> dict:
    return {"measure": s.measure.name, "model": s.model.label if s.model else None,
            "model_string": s.model.model if s.model else None,
            "dataset": s.dataset.label, "data": str(s.dataset.path), "status": s.status(), "run": s.done_run,
            "skip": s.skip, "problem": s.problem, "forwards": s.forwards, "forwards_is_ceiling": s.forwards_bound}


def plan_table(steps: List[Step]) -> str:
    """One line per step: number, measure, model, dataset, state and cost; a problem that stops steps
    from running, or the reason steps are skipped, is written once, under the table, and each such
    step points to it."""
    problems: List[str] = list(dict.fromkeys(s.problem or s.skip for s in steps if s.problem or s.skip))
    w = max([len(s.title) for s in steps] + [4])
    lines = [f"{'step':>7}  {'what':<{w}}  {'state':<22}  cost"]
    for i, s in enumerate(steps, 1):
        state = (f"cannot run: see ({problems.index(s.problem) + 1})" if s.problem else
                 f"skipped: see ({problems.index(s.skip) + 1})" if s.skip else s.status())
        lines.append(f"{f'[{i}/{len(steps)}]':>7}  {s.title:<{w}}  {state:<22}  {s.cost()}")
    lines += [f"({k}) {text}" for k, text in enumerate(problems, 1)]
    return "\n".join(lines)


def run_study(study: Study, db: Optional[str | Path] = None, *, dry_run: bool = False, device: str = "cpu",
              progress: bool = True, report: bool = True, rerun: bool = False, only: Optional[Set[str]] = None,
              execute: bool = True, pictures: Optional[Path] = None) -> Optional[StudyResult]:
    """Plan `study` against the results store at `db` and run what it lacks (nothing with
    `dry_run`; every step with `rerun`, which measures anew); returns the result on rank 0 (None on
    other torchrun ranks), with the result objects of the steps it ran.

    For a study spread over jobs (`studies.jobs`): `only`, the titles of the steps this process may
    run (the others are planned and left); `execute=False` runs no step, only the report of what
    the store holds (the steps it lacks stay 'to run'); `pictures`, where a probe's pictures go
    (default: beside the store; a job's store is on its node's local disk, its pictures are not)."""
    t0 = time.time()
    ranks = setup(device)
    from ..store.core import default_db_path
    path = Path(db).expanduser() if db else default_db_path()
    # a dry run plans against the store without creating it (or its folder) when it does not exist yet
    with Store(":memory:" if dry_run and not path.exists() else path) as store:
        steps = plan(study, store)
        if rerun:
            for step in steps:
                step.done_run = None
        result = StudyResult(study, steps)
        if report:  # a report folder it may not write (another program's index.html ...): said before any step
            from ..reporting.render import report_output
            report_output(study.out)
        if dry_run:
            return result if ranks.main else None
        refuse_problems(study, steps)
        for i, step in enumerate(steps, 1):
            if not execute or (only is not None and step.title not in only):
                continue
            if step.after_edits and step.done_run is None and not rerun:
                refresh(step, store)  # its folder is written now: is its eval stored?
            if step.skip or step.done_run is not None:
                if ranks.main:
                    status(f"[{i}/{len(steps)}] {step.title}: {step.status()}")
                continue
            if ranks.main:
                status(f"[{i}/{len(steps)}] {step.title} ({step.cost()})")
            run_id, value = _run_step(step, study, store, device, progress and ranks.main, pictures)
            if ranks.main:
                step.done_run = run_id
                result.ran.append(run_id)
                result.results[(step.model.label if step.model else None, step.dataset.label,
                                step.measure.name)] = value
        if not ranks.main:
            return None
        runs = [s.done_run for s in steps if s.done_run is not None and s.model is not None]
        if report and (runs or execute):  # jobs that all failed leave nothing to report
            from ..api import analyze
            from ..reporting.render import render_report
            # run id -> the label the study gave its model: the identity the report names a model by (two
            # models of one model string, with other checkpoints, are two columns)
            labels = {s.done_run: s.model.label for s in steps if s.done_run is not None and s.model is not None}
            data_labels = study.data_labels({s.dataset.label: s.data_root for s in steps if s.data_root})
            page = render_report(store, study.out, run_ids=runs, labels=labels, data_labels=data_labels,
                                 progress=False, skipped=skipped_steps(steps))
            result.report, result.scorecard = page.index.parent, page.scorecard
            if labels:  # the shortcut table of the study's runs, where a step measured a shortcut
                table = analyze("shortcuts", store, run_ids=list(labels), labels=labels, data_labels=data_labels)
                result.shortcuts = table if table.blocks else None
    result.seconds = time.time() - t0
    return result


def skipped_steps(steps: List[Step]) -> Dict[Tuple[str, str], Dict[str, str]]:
    """(model string, data folder) -> {measure: why it was skipped}, for the scorecard's n/a cells."""
    out: Dict[Tuple[str, str], Dict[str, str]] = {}
    for s in steps:
        if s.skip and s.model is not None:
            out.setdefault((s.model.model, s.data_root or str(s.dataset.path)), {})[s.measure.name] = s.skip
    return out


def refuse_problems(study: Study, steps: List[Step]) -> None:
    """Stop before the first step when any step cannot run (a 1000-class model on a dataset it has no
    class map for ...): one line naming the first such step, the problem, and how many there are."""
    bad = [(i, s) for i, s in enumerate(steps, 1) if s.problem]
    if not bad:
        return
    i, step = bad[0]
    more = f" ({len(bad) - 1} more steps cannot run; `--dry-run` lists them)" if len(bad) > 1 else ""
    raise BgbenchError(f"{study.source}: step [{i}/{len(steps)}] {step.title} cannot run: {step.problem}{more}; "
                       f"nothing was run")


def _run_step(step: Step, study: Study, store: Store, device: str, progress: bool,
              pictures: Optional[Path] = None) -> Tuple[Optional[int], Any]:
    """One step through the API (the single commands' path); rank 0 records it: (run id, result)."""
    from .. import api
    if step.model is None:  # a dataset's edits, written once for every model
        out = edited_dataset(study, step.dataset).path
        result = api.build(out, preset=api.IMAGENET_E, data=str(step.dataset.path), progress=progress,
                           overwrite=True, **step.options)
        return (None, None) if result is None else (record(result, store), result)
    model, data = step.model, str(step.dataset.path)
    options = {**model.options, **step.options}
    options.setdefault("device", device)
    # the pictures a probe draws go beside the store, as a single command's do: the report copies
    # what it shows (compressed), so its folder stays one to share
    pictures = (pictures or store.path.parent / "pictures") / safe_name(
        f"{model.label}-{step.dataset.label}-{step.measure.name}")
    if step.measure.name == "eval":
        result = api.evaluate(model.model, data, progress=progress, **options)
    elif step.measure.name == "challenge":
        result = api.challenge(model.model, data, store, out_dir=pictures, progress=progress, **options)
    else:
        result = api.probe(step.measure.name, model.model, data, out_dir=pictures, progress=progress, **options)
    return (None, None) if result is None else (record(result, store), result)
