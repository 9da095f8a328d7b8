"""A study's plan: its (model, dataset, measure) steps in order, which of them the results store
already holds, which the data cannot support, which cannot run at all (and why), and what each
costs in forwards.

A step is identified by everything that changes a number, derived from the configs rather than
listed here: the model string, its weights (the sha256 of the file they are read from: a `file:`
model, a checkpoint, a cached timm download, a zoo package's file, read now, so a retrained file is
a new step), every model option (`models.options.identity`: resize, norm, class map, labels,
templates, speed-ups ...), the data fingerprint, and every option of the measure's job config but
those that only say how it runs (`options.identity_fields`: batch size, device, threads). A step is
done when the store holds a finished run that agrees on all of it. A killed study therefore resumes
at its first unfinished step (and a challenge inside its own run, which keeps its verdicts as they
come).
"""
from __future__ import annotations

import dataclasses
import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Dict, List, Optional

from ..errors import BgbenchError
from ..measures.registry import LAYOUT_NEEDS, NEEDS, get_measure
from ..reporting.context import FINISHED
from .spec import EDITS, FOLDER_OPTIONS, Study, StudyDataset, StudyMeasure, StudyModel, job_config

#: Why a step that needs the object's mask is skipped.
NO_MASKS = "the dataset has no foreground masks (fg_mask/)"


@dataclass
class Step:
    model: Optional[StudyModel]  # None: the edit step, which runs no model
    dataset: StudyDataset
    measure: StudyMeasure
    kind: str
    done_run: Optional[int] = None  # the stored run that already holds it
    skip: Optional[str] = None  # why the data or the model's format cannot support it (the rest runs)
    forwards: Optional[int] = None
    forwards_bound: bool = False  # the challenge's count is a ceiling (it stops at the first fooling background)
    options: Dict = field(default_factory=dict)
    weights: Optional[str] = None  # the sha256 of the model's weights file, read once at planning
    after_edits: bool = False  # an eval of an edited folder, which its edit step writes first
    edit_levels: int = 0  # an edit step: levels written (its cost is image work, not forwards)
    problem: Optional[str] = None  # why the step cannot run (a 1000-class model without a class map ...)
    model_identity: Optional[dict] = None  # `models.options.identity` of its model
    identity: Dict = field(default_factory=dict)  # its job's options that change numbers (`measure_identity`)
    # the folder its runs record as their data's root: the layout's, which a reader may take above the
    # folder the study names (WILDS' root_dir for `waterbirds_v1.0/`, the folder holding `spawrious224/`)
    data_root: Optional[str] = None

    @property
    def title(self) -> str:
        if self.model is None:
            return f"{self.measure.name} of {self.dataset.label}"
        return f"{self.measure.name} {self.model.label} on {self.dataset.label}"

    def status(self) -> str:
        if self.problem:
            return f"cannot run: {self.problem}"
        if self.skip:
            return f"skipped: {self.skip}"
        if self.done_run is not None:
            return f"done (run {self.done_run})"
        return "to run"

    def cost(self) -> str:
        if self.model is None:
            return f"no forwards ({self.edit_levels} levels of {self.forwards:,} images)"
        if self.forwards is None:
            return "? forwards (after its edits)" if self.after_edits else "? forwards"
        return f"{'<= ' if self.forwards_bound else ''}{self.forwards:,} forwards"


@dataclass
class DatasetFacts:
    """What the plan needs to know of a dataset: its fingerprint, images, variants, masks, attributes."""

    fingerprint: str
    images: int
    variants: List[str]
    masks: bool
    attributes: bool
    classes: tuple = ()
    kind: str = "in9"  # the layout's kind: 'in9', 'rival10', 'groups', 'imagenet' (`data.resolve`)
    imagenet: bool = False  # ImageNet's own images (a release layout, every class)
    attribute_kinds: int = 0  # the attribute masks' names (ablation grays each; a measure's forwards count them)
    root: str = ""  # the layout's root, resolved: what its runs record as their data's root


def dataset_facts(dataset: StudyDataset, source: str) -> DatasetFacts:
    from ..data.resolve import resolve_layout
    try:
        layout = resolve_layout(dataset.path)
    except BgbenchError as e:
        raise BgbenchError(f"{source}: dataset {dataset.label}: {e}") from None
    from ..data.imagenet_folders import TREE
    attributes = layout.attribute_source
    return DatasetFacts(layout.fingerprint(), len(layout.items(layout.variants[0])), list(layout.variants),
                        bool(layout.has_masks), attributes is not None, tuple(layout.classes),
                        layout.kind, getattr(layout, "source", None) == TREE,
                        len(attributes.names) if attributes is not None else 0, str(Path(layout.root).resolve()))


def _refuse_same_images(study: Study, facts: Dict[str, DatasetFacts]) -> None:
    """Two datasets of a study with the same images (the same fingerprint, under two folders or
    labels) would share their runs, and the scorecard one column: one line, before any step."""
    seen: Dict[str, str] = {}
    for d in study.datasets:
        fingerprint = facts[d.label].fingerprint
        if fingerprint in seen:
            raise BgbenchError(f"{study.source}: datasets {seen[fingerprint]!r} and {d.label!r} hold the same images "
                               f"(fingerprint {fingerprint[:12]}); list one of them; nothing was run")
        seen[fingerprint] = d.label


def plan(study: Study, store) -> List[Step]:
    """Every step of `study`, in order (dataset, then model, then measure), with its state. With
    `edits`, a dataset's edit step comes first and each model's eval of the edited folder last."""
    facts = {d.label: dataset_facts(d, study.source) for d in study.datasets}
    _refuse_same_images(study, facts)
    models = {m.label: _ModelFacts(m) for m in study.models}
    edits = next((m for m in study.runnable if m.name == EDITS), None)
    steps = []
    for d in study.datasets:
        f = facts[d.label]
        edited = None
        if edits is not None and edits.runs_on(d):
            steps.append(edit_step(study, d, edits, f, store))
            edited = edited_dataset(study, d)
        for m in study.models:
            mf = models[m.label]
            problem = mf.problem(f.classes)
            for measure in study.runnable:
                if measure.name == EDITS or not measure.runs_on(d):
                    continue
                registered = get_measure(measure.name)
                on_data = registered.on_data(dict(measure.options), f.kind)
                # what the data or the model's format cannot give is skipped with its reason, and the
                # rest runs; a model that cannot read the dataset at all stops the study (`problem`)
                skip = _unsupported(measure.name, f, measure.options) or mf.format_problem(measure.name) \
                    or mf.label_problem(measure.name)
                forwards, bound = registered.forwards(f.images, f.variants, on_data, f.attribute_kinds,
                                                      classes=f.classes)
                step = Step(m, d, measure, registered.kind, skip=skip, forwards=forwards, forwards_bound=bound,
                            options=dict(measure.options), weights=mf.weights, model_identity=mf.identity,
                            identity=measure_identity(measure.name, on_data), data_root=f.root,
                            problem=problem if skip is None else None)
                if step.skip is None and step.problem is None:
                    step.done_run = _done(store, step, f.fingerprint)
                steps.append(step)
            if edited is not None:
                step = edits_eval_step(edited, m, store, mf.weights, mf.identity)
                step.problem = problem
                steps.append(step)
    return _skip_unreadable(steps)


def _skip_unreadable(steps: List[Step]) -> List[Step]:
    """A model that reads some of the study's datasets but not another (a Synthetic-9 model beside
    ImageNet-D, a 1000-class model beside a dataset it has no class map for) runs on those it reads:
    its steps on the others are skipped with the reason, as a measure the data cannot support is. A
    model that reads none of them keeps its problems, which stop the study before any step."""
    reads = {s.model.label for s in steps if s.model is not None and s.problem is None}
    for step in steps:
        if step.problem and step.model is not None and step.model.label in reads:
            step.skip, step.problem = f"{step.model.label} cannot read {step.dataset.label}: {step.problem}", None
    return steps


class _ModelFacts:
    """What the plan knows of a study model without building it: its identity, the sha256 of its
    weight file (read once), and whether it can read a dataset's classes (`problem`)."""

    def __init__(self, model: StudyModel):
        from ..models.checkpoint import sha256_file
        from ..models.options import ModelOptions, identity
        self.model = model
        self.identity = identity(ModelOptions(model=model.model, **model.options))
        self._peeks: Dict[tuple, object] = {}
        path = getattr(self._peek(()), "weights", None)  # the one file its weights are read from
        self.weights = sha256_file(Path(path).expanduser()) if path else None

    def _peek(self, classes: tuple):
        """The scheme's peek for a dataset of `classes` (a BgbenchError, kept, when it cannot tell)."""
        if classes not in self._peeks:
            from ..models.options import peek_model
            o = self.model.options
            try:
                self._peeks[classes] = peek_model(self.model.model, checkpoint=o.get("checkpoint"),
                                                  pretrained=bool(o.get("pretrained")),
                                                  trust_checkpoint=bool(o.get("trust_checkpoint")),
                                                  labels=o.get("labels", "auto"), classes=classes or None)
            except BgbenchError as e:
                self._peeks[classes] = e
        return self._peeks[classes]

    def format_problem(self, measure: str) -> Optional[str]:
        """Why this model's file format cannot give what `measure` needs (layers: `models.checkpoint`)."""
        from ..models.checkpoint import FORMATS, needs_problem
        peeked = self._peek(())
        if isinstance(peeked, BgbenchError) or peeked.format not in FORMATS:
            return None
        return needs_problem(FORMATS[peeked.format], get_measure(measure).needs, measure, self.model.label)

    def label_problem(self, measure: str) -> Optional[str]:
        """Why this model's outputs are not what `measure` reads (`imagenet model`: ImageNet's 1000
        classes), where its peek tells: a model with as many outputs of its own classes as a release
        has ImageNet classes would pass `problem` and be refused once its step had started."""
        from ..models.spec import IMAGENET1K
        if "imagenet model" not in get_measure(measure).needs:
            return None
        peeked = self._peek(())
        if isinstance(peeked, BgbenchError) or peeked.label_space in (None, IMAGENET1K):
            return None
        return f"{self.model.label} is not {NEEDS['imagenet model']}"

    def problem(self, classes: tuple) -> Optional[str]:
        """Why this model cannot run on a dataset of `classes` (None: it can, or only building it would tell)."""
        from ..models.spec import compatibility_problem
        peeked = self._peek(classes)
        if isinstance(peeked, BgbenchError):
            return str(peeked)
        if peeked.label_space is None or peeked.num_classes is None:
            return None
        return compatibility_problem(self.model.label, peeked.label_space, peeked.num_classes, classes,
                                     self.model.options.get("class_map"))


def measure_identity(name: str, options: dict) -> dict:
    """The options of a measure's job that change its numbers, as its run records them: its config
    built from the study's options (so defaults and normalizations, such as noise levels '60/255'
    stored as numbers, are the job's own), less the runtime fields; or the config's own
    `identity()` where it declares one (the challenge: a larger sample extends a run)."""
    from ..options import identity_fields
    cls = job_config(name)
    names = {f.name for f in dataclasses.fields(cls)}
    cfg = cls(**{k: v for k, v in options.items() if k in names})
    if hasattr(cfg, "identity"):
        return cfg.identity()
    values = dataclasses.asdict(cfg)
    return {k: values[k] for k in identity_fields(cls)}


def edited_dataset(study: Study, dataset: StudyDataset) -> StudyDataset:
    """Where a study writes a dataset's edits: OUT/edits/<dataset label, made a safe folder name>/,
    a dataset of its own (a label such as '../../x' never becomes a path outside OUT/edits)."""
    return StudyDataset(study.edits_folder(dataset), f"{dataset.label} edits")


def edit_step(study: Study, dataset: StudyDataset, measure: StudyMeasure, facts: DatasetFacts, store) -> Step:
    from ..edits.registry import ATTRIBUTES, edits_for
    step = Step(None, dataset, measure, "edit", options=dict(measure.options))  # bgbench edit's own run kind
    levels = measure.options.get("levels")
    chosen = edits_for(measure.options.get("attributes") or ATTRIBUTES, angles=measure.options.get("angles"),
                       levels=levels)
    step.edit_levels, step.forwards = len([e for e in chosen if not e.needs_model]), facts.images
    if not facts.masks:
        step.skip = NO_MASKS
        return step
    out = str(edited_dataset(study, dataset).path)
    for run in reversed(store.runs("edit")):
        config = json.loads(run["config"] or "{}")
        if run["status"] in FINISHED and run["data_fingerprint"] == facts.fingerprint and config.get("out") == out \
                and (levels is None or _same(config.get("levels"), list(levels))) \
                and (Path(out) / "manifest.csv").is_file():
            step.done_run = int(run["id"])
            break
    return step


def edits_eval_step(edited: StudyDataset, model: StudyModel, store, weights: Optional[str],
                    model_identity: Optional[dict] = None) -> Step:
    """A model's eval of the edited folder: done when the store holds it (known once the folder is
    written; `refresh` checks again before it runs)."""
    step = Step(model, edited, StudyMeasure("eval"), "eval", weights=weights, after_edits=True,
                model_identity=model_identity, identity=measure_identity("eval", {}))
    refresh(step, store)
    return step


def refresh(step: Step, store) -> None:
    """The state and cost of an eval of an edited folder, from the folder as it is now."""
    if not (step.dataset.path / "manifest.csv").is_file():
        return
    f = dataset_facts(step.dataset, "study")
    step.forwards = f.images * len(f.variants)
    step.done_run = _done(store, step, f.fingerprint)


def _unsupported(name: str, facts: DatasetFacts, options: Optional[dict] = None) -> Optional[str]:
    """Why the data cannot support a measure (the step is skipped with this line: every reason, a
    missing second dataset first), or None."""
    reasons = [f"no {FOLDER_OPTIONS[key]} at {value} ({name}.{key})" for key, value in (options or {}).items()
               if key in FOLDER_OPTIONS and value is not None and not Path(str(value)).expanduser().is_dir()]
    needs = get_measure(name).needs
    lacks = {  # need -> (whether the data lacks it, why the step is skipped)
        "masks": (not facts.masks, NO_MASKS),
        # masks but no backgrounds (Hard ImageNet, RIVAL10); without masks, that reason says enough
        "backgrounds": (facts.masks and "only_bg_t" not in facts.variants,
                        "the dataset has no only_bg_t backgrounds (only_bg_t/)"),
        # IN-9's two mixed variants (Whac-A-Mole's IN-9 gap)
        "mixed": (not {"mixed_same", "mixed_rand"} <= set(facts.variants),
                  "the dataset has no mixed_same and mixed_rand variants (mixed_same/, mixed_rand/)"),
        "attributes": (not facts.attributes, "the dataset has no attribute masks (attr_mask/, or a RIVAL10 release)"),
        "imagenet": (not facts.imagenet, "the dataset is not ImageNet's own images (its val, in a release layout)")}
    reasons += [why for need, (lacking, why) in lacks.items() if need in needs and lacking]
    reasons += [f"the dataset is not {NEEDS[n]}" for n in needs if n in LAYOUT_NEEDS and facts.kind != n]
    return "; ".join(reasons) or None


def _done(store, step: Step, fingerprint: str) -> Optional[int]:
    """The newest finished run that agrees with the step on everything that changes a number."""
    return finished_run(store, step.kind, step.model.model, step.weights, step.model_identity, step.identity,
                        fingerprint)


def finished_run(store, kind: str, model: str, weights: Optional[str], model_identity: Optional[dict],
                 identity: dict, fingerprint: str, statuses=FINISHED) -> Optional[int]:
    """The newest run of `kind` in `statuses` (finished) with this model string, weights sha256 (None:
    not compared), model options (`models.options.identity`), job options (`measure_identity`) and
    data fingerprint: what a study takes as its step, and `bgbench eval` shows again."""
    for run in reversed(store.runs(kind)):
        if run["status"] not in statuses or run["data_fingerprint"] != fingerprint or run["model"] != model:
            continue
        if weights is not None and run["checkpoint_sha256"] != weights:
            continue
        config = json.loads(run["config"] or "{}")
        if not _same(config.get("model_options"), model_identity):
            continue
        asked = config.get("requested") or {}
        missing = object()
        if all(_same(asked.get(k, config.get(k, missing)), v) for k, v in identity.items()):
            return int(run["id"])
    return None


def _same(stored, wanted) -> bool:
    """Option values equal once both are plain JSON (tuples and lists alike)."""
    return json.loads(json.dumps(stored, default=str)) == json.loads(json.dumps(wanted, default=str))
