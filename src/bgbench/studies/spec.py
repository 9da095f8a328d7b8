"""A study: many models, many datasets, many measures, declared once (a TOML file or a dict) and
checked whole before any step runs.

    # study.toml
    models = ["timm:resnet50.a1_in1k", {model = "file:runs/erm/model.pt", label = "erm"}]
    datasets = ["/data/in9", {path = "/data/synthetic9", label = "synth"}]
    [measures.eval]
    [measures.challenge]
    sample = 200
    [measures.noise]
    levels = ["60/255", "120/255"]
    [report]
    out = "study-report"

A model is a model string or a table with `model`, an optional `label` (what the scorecard and
every listing of the report call it) and any `ModelOptions` field (checkpoint, norm, resize,
labels, templates, trust_checkpoint). A dataset is a path (relative to the study file) or a table
with `path` and `label`. Each key under `measures` is a measure of the registry that runs a model
(eval, challenge, and the probes), its table the options of its job (the API's keywords, which
are the CLI's flags); `edits` (ImageNet-E levels) edits each dataset once and evaluates every
model on the result; the analyses of stored runs that declare `report_only` (categories, boxsize,
leakage, groups) are accepted and shown by the report from the eval runs. `datasets = ["label", ...]` in a measure's
table runs it on those datasets only. An `[executor]` table says how its jobs are submitted across
machines (`executor`: kind, jobs, Slurm resources). Every problem is one line naming the key and
the file.
"""
from __future__ import annotations

import dataclasses
import tomllib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Dict, List, Optional, Sequence

from ..data.owned import safe_name
from ..errors import BgbenchError
from ..models.options import ModelOptions
from .executor import ExecutorSettings, executor_table
from .value_types import check_types

#: The `ModelOptions` fields a study model does not set: the model string, where and on what it runs
#: (the study decides those), and the protocol (a measure's).
STUDY_SETS = ("model", "device", "data", "split", "protocol")
#: How a model string is built, set per model (not per measure): every other `ModelOptions` field.
MODEL_OPTIONS = tuple(f.name for f in dataclasses.fields(ModelOptions) if f.name not in STUDY_SETS)
#: Keys the study sets itself, never an option of a measure.
RESERVED = ("model", "data", "store", "progress", "out_dir")
#: ImageNet-E edits: the dataset edited once (`bgbench edit`, model-free levels), then every model
#: evaluated on the edited folder; the report and scorecard show the accuracy drop of each level.
EDITS = "edits"
#: Edit options a study sets itself (the edited folder is the study's).
EDIT_RESERVED = ("data", "out", "overwrite", "shard")


def report_only() -> List[str]:
    """The measures a study accepts that run no model (`Measure.report_only`): shown by the report
    from the study's eval runs."""
    from ..measures.registry import list_measures
    return [m.name for m in list_measures() if m.report_only]


def profile_battery() -> Dict[str, Dict[str, Any]]:
    """`bgbench profile`'s battery, measure -> its options there, in the battery's order: each measure
    that declares its part in it (`Measure.profile`: eval, a sampled challenge and the probes the
    data allows)."""
    from ..measures.registry import list_measures
    return {m.name: dict(m.profile.options) for m in sorted((m for m in list_measures() if m.profile is not None),
                                                             key=lambda m: m.profile.place)}


@dataclass(frozen=True)
class StudyModel:
    model: str
    label: str
    options: Dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class StudyDataset:
    path: Path
    label: str


@dataclass(frozen=True)
class StudyMeasure:
    name: str
    options: Dict[str, Any] = field(default_factory=dict)
    datasets: tuple = ()  # the dataset labels it runs on (`datasets = [...]` in its table); () for all

    def runs_on(self, dataset: "StudyDataset") -> bool:
        return not self.datasets or dataset.label in self.datasets


@dataclass
class Study:
    """What to run: every (model, dataset, measure) step; `source` names the file (or 'profile')
    in error messages; `out` is where the report (and the edited datasets) go."""

    models: List[StudyModel]
    datasets: List[StudyDataset]
    measures: List[StudyMeasure]
    source: str = "study"
    out: Path = Path("bgbench-study")
    executor: ExecutorSettings = field(default_factory=ExecutorSettings)  # [executor]: how its jobs are submitted

    @property
    def runnable(self) -> List[StudyMeasure]:
        shown = report_only()
        return [m for m in self.measures if m.name not in shown]

    def edits_folder(self, dataset: "StudyDataset") -> Path:
        """Where the study writes a dataset's edits: OUT/edits/<its label, made a safe folder name>."""
        return self.out / EDITS / safe_name(dataset.label)

    def data_labels(self, roots: Optional[Dict[str, str]] = None) -> Dict[str, str]:
        """Dataset folder -> label, the edited folders included (`plan.edited_dataset`). `roots`:
        dataset label -> the folder its runs record as the data's root (`plan.Step.data_root`), where
        a reader takes one above the folder the study names (WILDS' root_dir for `waterbirds_v1.0/`):
        the runs keep their dataset's label there too."""
        labels = {d.label for d in self.datasets}
        return {**{str(d.path): d.label for d in self.datasets},
                **{root: label for label, root in (roots or {}).items() if label in labels},
                **{str(self.edits_folder(d)): f"{d.label} edits" for d in self.datasets}}


def load_study(path: str | Path, out: Optional[str | Path] = None) -> Study:
    """The study in the TOML file at `path`, checked (see the module docstring)."""
    path = Path(path).expanduser()
    if not path.is_file():
        raise BgbenchError(f"{path}: no such study file")
    try:
        doc = tomllib.loads(path.read_text(encoding="utf-8"))
    except tomllib.TOMLDecodeError as e:
        raise BgbenchError(f"{path}: TOML syntax error: {e}") from None
    except (OSError, UnicodeDecodeError) as e:
        raise BgbenchError(f"{path}: cannot read it: {e}") from None
    return study_from_dict(doc, source=str(path), base=path.parent, out=out)


def study_from_dict(doc: Dict[str, Any], source: str = "study", base: Path = Path("."),
                    out: Optional[str | Path] = None, model_defaults: Optional[dict] = None) -> Study:
    """A `Study` from the structure of a study file (what `bgbench.study` takes), checked whole: every
    value by type and range (the rules of the command line's flags: the job's config decides both),
    before any step runs. `model_defaults`: model options for every model (`profile --class-map`)."""
    if not isinstance(doc, dict):
        raise BgbenchError(f"{source}: a study is a table with models, datasets and measures")
    unknown = sorted(set(doc) - {"models", "datasets", "measures", "report", "executor"})
    if unknown:
        raise BgbenchError(f"{source}: unknown key {unknown[0]!r}; a study has models, datasets, measures, report "
                           f"and executor")
    models = [_model(item, f"models[{i}]", source, base, model_defaults)
              for i, item in enumerate(_list(doc, "models", source))]
    datasets = [_dataset(item, f"datasets[{i}]", source, base)
                for i, item in enumerate(_list(doc, "datasets", source))]
    measures = doc.get("measures")
    if not isinstance(measures, dict) or not measures:
        raise BgbenchError(f"{source}: measures: name at least one measure, e.g. [measures.eval]")
    checked = [_measure(name, opts, source, base) for name, opts in measures.items()]
    _unique([m.label for m in models], "models", source)
    _unique([d.label for d in datasets], "datasets", source)
    labels = [d.label for d in datasets]
    for m in checked:
        unknown = [d for d in m.datasets if d not in labels]
        if unknown:
            raise BgbenchError(f"{source}: measures.{m.name}.datasets: no dataset labelled {unknown[0]!r}; the "
                               f"datasets are {', '.join(labels)}")
    report = doc.get("report", {})
    if not isinstance(report, dict) or set(report) - {"out"}:
        raise BgbenchError(f"{source}: report: its one key is out (the report's folder)")
    if "out" in report and not isinstance(report["out"], str):
        raise BgbenchError(f"{source}: report.out: expected a folder's path, got {report['out']!r}")
    if out is not None:
        where, key = Path(out).expanduser(), "--out"
    elif "out" in report:
        where, key = Path(_path_from_base(report["out"], base)), "report.out"
    else:
        where, key = (base / f"{Path(source).stem}-report" if source not in ("study", "profile")
                      else Path("bgbench-study")), "the report's folder"
    check_out_folder(where, f"{source}: {key}")
    executor = executor_table(doc["executor"], source) if "executor" in doc else ExecutorSettings()
    return Study(models, datasets, checked, source, where, executor)


def check_out_folder(path: Path, what: str) -> None:
    """A folder a study may write its report and edits into, refused before any step runs:
    not an existing file, not the file system's root, the home folder or the working folder itself
    (a report there would mix its files with everything else in it)."""
    resolved = path.expanduser().resolve()
    if resolved.exists() and not resolved.is_dir():
        raise BgbenchError(f"{what}: {path} is a file; the report needs a folder of its own")
    if resolved in {Path(resolved.anchor), Path.home().resolve(), Path.cwd().resolve()}:
        raise BgbenchError(f"{what}: {path} is {'the working folder' if resolved == Path.cwd().resolve() else 'a root'}"
                           f"; give the report a folder of its own (for example {path / 'study-report'})")


def _list(doc: dict, key: str, source: str) -> list:
    items = doc.get(key)
    if isinstance(items, (str, dict)):
        items = [items]
    if not isinstance(items, list) or not items:
        raise BgbenchError(f"{source}: {key}: give at least one ({key} = [...])")
    return items


def _unique(labels: Sequence[str], key: str, source: str) -> None:
    twice = next((label for i, label in enumerate(labels) if label in labels[:i]), None)
    if twice is not None:
        raise BgbenchError(f"{source}: {key}: the label {twice!r} names two entries; give each its own label")


def _model(item: Any, key: str, source: str, base: Path = Path("."), defaults: Optional[dict] = None
           ) -> StudyModel:
    if isinstance(item, str):
        item = {"model": item}
    if not isinstance(item, dict) or not isinstance(item.get("model"), str):
        raise BgbenchError(f"{source}: {key}: a model string, or a table with model = \"SCHEME:NAME\"")
    if "label" in item and not isinstance(item["label"], str):
        raise BgbenchError(f"{source}: {key}.label: expected a string, got {item['label']!r}")
    options = {**(defaults or {}), **{k: v for k, v in item.items() if k not in ("model", "label")}}
    unknown = sorted(set(options) - set(MODEL_OPTIONS))
    if unknown:
        raise BgbenchError(f"{source}: {key}.{unknown[0]}: not a model option; they are label, "
                           f"{', '.join(MODEL_OPTIONS)}")
    check_types(ModelOptions, options, lambda k: f"{source}: {key}.{k}")
    model = _from_base(item["model"], base)
    # checked as the model flags are (choices, files that exist), before any step runs
    from .. import checks
    from ..models.inputs import LABEL_SETS, NORMS, RESIZE_CHOICES
    try:
        for name, choices in (("norm", NORMS), ("resize", RESIZE_CHOICES), ("labels", LABEL_SETS)):
            if name in options:
                checks.one_of(name, options[name], choices)
    except BgbenchError as e:
        raise BgbenchError(f"{source}: {key}.{e}") from None
    for name in ("checkpoint", "class_map", "templates"):  # read from the study file's folder when relative
        value = options.get(name)
        if value is None or (name == "templates" and value in ("openai", "simple")):
            continue
        path = Path(_path_from_base(value, base))
        if name != "checkpoint" and not path.is_file():  # a missing checkpoint: `_check_model_string` says so
            raise BgbenchError(f"{source}: {key}.{name}: {path} is not a file")
        options[name] = str(path) if name == "checkpoint" else str(path.resolve())  # a class map, templates: absolute
    _check_model_string(model, options.get("checkpoint"), f"{key}.model", source)
    return StudyModel(model, str(item.get("label") or _short(model)), options)


#: The model schemes whose argument is a local file.
FILE_SCHEMES = ("file", "onnx")


def _path_from_base(value: str, base: Path) -> str:
    """A path from a study file, read from the study file's folder when relative (as its datasets
    are), whatever the folder the study runs from."""
    path = Path(str(value)).expanduser()
    return str(path if path.is_absolute() else base / path)


def _from_base(model: str, base: Path) -> str:
    """A model string whose file (file:, onnx:) is read from the study file's folder when relative."""
    scheme, sep, arg = model.partition(":")
    return f"{scheme}:{_path_from_base(arg, base)}" if scheme in FILE_SCHEMES and sep and arg else model


def _short(model: str) -> str:
    """A readable default label: a file's name without its folders (or its folder's, for a
    `model.pt`); any other model string whole, its scheme kept (`zoo:efficientnet_lite0`,
    `timm:resnet50.a1_in1k`: the name alone does not say where the weights come from)."""
    scheme, _, name = model.partition(":")
    if scheme in FILE_SCHEMES:
        p = Path(name)
        return p.parent.name if p.name in ("model.pt", "last.pt") and p.parent.name else p.stem
    return model


def _check_model_string(model: str, checkpoint: Optional[str], key: str, source: str) -> None:
    """A model string that names a scheme bgbench has, and a file that exists, without building
    (no weights are loaded or downloaded before the study runs)."""
    from ..models.options import get_scheme, usages
    scheme, _, arg = model.partition(":")
    if not arg:
        raise BgbenchError(f"{source}: {key}: {model!r} must look like {usages()}")
    try:
        get_scheme(scheme, model)
    except BgbenchError as e:
        raise BgbenchError(f"{source}: {key}: {e}") from None
    if scheme == "file" and not Path(arg).expanduser().is_file():
        raise BgbenchError(f"{source}: {key}: {arg} does not exist")
    if scheme == "timm":
        import timm
        arch = arg.split("@")[0]
        if not timm.is_model(arch.split(".")[0]):
            raise BgbenchError(f"{source}: {key}: timm has no architecture {arch!r} (bgbench models 'timm:*')")
    if checkpoint is not None and not Path(checkpoint).expanduser().is_file():
        raise BgbenchError(f"{source}: {key}: checkpoint {checkpoint} does not exist")


def _dataset(item: Any, key: str, source: str, base: Path) -> StudyDataset:
    if isinstance(item, str):
        item = {"path": item}
    if not isinstance(item, dict) or not isinstance(item.get("path"), str) or set(item) - {"path", "label"}:
        raise BgbenchError(f"{source}: {key}: a path, or a table with path (and label)")
    path = Path(_path_from_base(item["path"], base))
    if not path.is_dir():
        raise BgbenchError(f"{source}: {key}: {path} is not a folder")
    return StudyDataset(path, str(item.get("label") or path.name))


def job_config(name: str) -> type:
    """The config dataclass of a study measure's job: what checks its options, for the command line
    and a study alike, and what a run records."""
    if name == EDITS:
        from ..edits.pipeline import EditConfig
        return EditConfig
    if name == "eval":
        from ..measures.eval.config import EvalConfig
        return EvalConfig
    if name == "challenge":
        from ..measures.challenge.config import ChallengeConfig
        return ChallengeConfig
    from ..measures.registry import get_measure
    return get_measure(name).config


def measure_options(name: str) -> List[str]:
    """The options a study may set for measure `name`: its job's config fields, less what the study
    sets itself."""
    reserved = EDIT_RESERVED if name == EDITS else RESERVED
    return [f.name for f in dataclasses.fields(job_config(name)) if f.name not in reserved]


#: Measure options naming a second dataset's folder (what it is), read relative to the study file as
#: datasets are; a step whose folder is missing is skipped with one line (`plan`).
FOLDER_OPTIONS = {"stylized": "Stylized-ImageNet", "renditions": "ImageNet-R"}
#: Measure options naming what a measure reads besides its dataset (the user's ImageNet, Salient
#: ImageNet's Mechanical Turk table), read relative to the study file too: a study file carries its
#: paths with it, whatever the folder it runs from.
PATH_OPTIONS = ("imagenet", "annotations")


def _measure(name: str, options: Any, source: str, base: Path = Path(".")) -> StudyMeasure:
    from ..measures.registry import list_measures
    runnable = [m.name for m in list_measures() if m.command in ("probe", "own") and "model" in m.needs]
    shown = report_only()
    known = runnable + [EDITS] + shown
    if name not in known:
        raise BgbenchError(f"{source}: measures.{name}: unknown measure; a study runs {', '.join(known)}")
    if not isinstance(options, dict):
        raise BgbenchError(f"{source}: measures.{name}: a table of options ([measures.{name}])")
    options = dict(options)
    for key in (*FOLDER_OPTIONS, *PATH_OPTIONS):
        if isinstance(options.get(key), str) and not Path(options[key]).expanduser().is_absolute():
            options[key] = str(base / options[key])
    only = options.pop("datasets", [])
    if isinstance(only, str):
        only = [only]
    if not isinstance(only, list) or not all(isinstance(d, str) for d in only):
        raise BgbenchError(f"{source}: measures.{name}.datasets: a list of dataset labels")
    if name in shown:
        if options:
            raise BgbenchError(f"{source}: measures.{name}: takes no options in a study (the report computes it "
                               f"from the eval runs)")
        return StudyMeasure(name, {}, tuple(only))
    allowed = measure_options(name)
    for key in options:
        if key not in allowed:
            raise BgbenchError(f"{source}: measures.{name}.{key}: not an option of {name}; they are "
                               f"{', '.join(allowed)}")
    check_options(name, options, source)
    if name == EDITS:
        _check_edit_levels(options, source)
    return StudyMeasure(name, options, tuple(only))


def check_options(name: str, options: dict, source: str) -> None:
    """A measure's options checked now, by type and then by the job's own config (its ranges and
    choices, as for the flags), so that a bad value stops the study before its first step."""
    cls = job_config(name)
    check_types(cls, options, lambda k: f"{source}: measures.{name}.{k}")
    given = dict(options)
    if name == EDITS:
        given = {**given, "data": Path("."), "out": Path("."),
                 **{key: tuple(given[key]) for key in ("attributes", "levels", "angles") if given.get(key) is not None}}
    try:
        cls(**given)
    except BgbenchError as e:
        raise BgbenchError(f"{source}: measures.{name}: {e}") from None
    except (TypeError, ValueError, OverflowError) as e:  # a value the config cannot take at all
        raise BgbenchError(f"{source}: measures.{name}: {' '.join(str(e).split())}") from None


def _check_edit_levels(options: dict, source: str) -> None:
    """Model-free levels only: a study edits each dataset once, for every model."""
    import fnmatch
    from ..edits.registry import ATTRIBUTES, edits_for
    levels = options.get("levels")
    if levels is None:
        return
    every = edits_for(ATTRIBUTES, angles=options.get("angles"), with_model=True)
    for pattern in levels:
        chosen = [e for e in every if fnmatch.fnmatch(e.name, str(pattern))]
        if not chosen:
            raise BgbenchError(f"{source}: measures.edits.levels: no level {pattern!r}; e.g. "
                               f"{', '.join(e.name for e in every[:6])}")
        if any(e.needs_model for e in chosen):
            raise BgbenchError(f"{source}: measures.edits.levels: {pattern} edits against one model; a study edits "
                               f"each dataset once for all its models (run `bgbench edit --model` for it)")


def profile_study(models: Sequence[str], datasets: Sequence[str], out: str | Path = "bgbench-profile",
                  model_options: Optional[dict] = None, measures: Optional[Sequence[str]] = None) -> Study:
    """`bgbench profile`'s study: the standard battery (`profile_battery`) on every model and dataset,
    or the `measures` named (each with the battery's options where it has them, else its defaults);
    `model_options` (`ModelOptions` fields: class_map, resize, norm ...) apply to every model."""
    battery = profile_battery()
    chosen = list(dict.fromkeys(measures)) if measures else list(battery)
    return study_from_dict({"models": list(models), "datasets": list(datasets),
                            "measures": {k: dict(battery.get(k, {})) for k in chosen}}, source="profile", out=out,
                           model_defaults=model_options)


