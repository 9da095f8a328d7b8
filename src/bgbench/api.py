"""The Python API: the public functions of `bgbench.__all__`, one per job.

One calling style: `fn(model, data, **options) -> Result` (a registry's name first where the job
is one of many: `probe(name, ...)`, `analyze(name, ...)`). Each function converts its arguments
once, on entry (a model string becomes a model through `load_model`, the one door; keyword
options become the job's config dataclass, which checks them and refuses an unknown one in one
line), calls the module that does the work and returns a `result.Result` (`.provenance`,
`.to_dict()`, `.table()`, `.text()`). A function's keyword options are its config's fields (and
`ModelOptions`' for a model string), and its signature is generated from them (`signatures.signed`),
so each default is declared once, in the config, and `help()`, IDEs and the CLI read it there; an
option left out is not passed, and the config applies its own default.

Nothing is recorded: `bgbench.record(result, store)` is the separate step. The one exception is
`challenge`, which commits its verdict rows to `store` as they come, so that a killed run resumes;
`record` then finishes that run.

`analyze` reaches every registered analysis by its name (`measures.analysis.AnalysisMeasure`), of a
per-image table (an evaluation result, or a mapping variant -> predictions) or of a stored run (a
results store and a run id). Heavy modules (torch, timm) load inside the functions, so `import
bgbench` stays light.
"""
from __future__ import annotations

import dataclasses
import inspect
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Iterator, Optional, Sequence

from .errors import BgbenchError
from .measures.analysis import AnalysisMeasure, Reads
from .measures.challenge.config import ChallengeConfig
from .comparing import compare_tables
from .measures.eval.config import EvalConfig
from .measures.registry import Command, get_measure
from .models.options import ModelOptions, load_model
from .options import TOP
from .signatures import config_parameters, default_of, keyword_parameters, signed
from .recording import opened
from .store import Store
from .training.config import LastLayerConfig, TrainConfig
from .variants.build import BuildConfig
from .variants.synth import SynthConfig
from .edits.pipeline import EditConfig

ModelLike = Any  # a model string ('timm:resnet18', 'file:model.pt', 'openclip:ViT-B-32@openai', 'hf:...') or a BgModel

#: The API's keywords for how a model string is built: `ModelOptions`'s fields, as the CLI's model
#: flags (the model, device, data, split and protocol are arguments or config fields of their own).
MODEL_KEYS = tuple(f.name for f in dataclasses.fields(ModelOptions)
                   if f.name not in ("model", "device", "data", "split", "protocol"))
#: Those keywords as parameters, with `ModelOptions`'s defaults: every function that builds a model shows them.
MODEL_PARAMETERS = config_parameters(ModelOptions, only=MODEL_KEYS)
#: `build`'s presets that write another kind of dataset than IN-9 variants from images and boxes.
SYNTHETIC, IMAGENET_E = "synthetic-9", "imagenet-e"
#: The options of an analysis that reads the store's runs (`Reads.STORE`): which runs, and the names
#: a study gives their models and datasets.
STORE_PICKS = ("run_ids", "models", "labels", "data_labels")


# ------------------------------------------------------------------------------------------------
# jobs that run a model


@signed(config_parameters(EvalConfig), MODEL_PARAMETERS)
def evaluate(model: ModelLike, data: str | Path, *, progress: bool = True, **options):
    """Evaluate a model on IN-9-layout variants: per-variant accuracy and the BG-Gap; where the data
    names each image's group, the accuracy per group and the worst group.

    Args:
        model: a model string (with `checkpoint` for timm:ARCH weights) or a model from `load_model`.
        data: dataset root (or a discovered `Layout`).
        options: the fields of `measures.eval.config.EvalConfig`, with its defaults (see the
            signature), and how a model string is built (`models.options.ModelOptions`, as the CLI's
            flags); an unknown one is a one-line error. Among them:
        variants: which variant folders to use; default: the IN-9 variants present. bg_blurred is
            computed on the fly when its folder is absent.
        mapping: decision rule for 1000-class models ('argmax' is the paper's).
        seed: seed of the BG-Gap's bootstrap.
        ten_crop: Resize(256), TenCrop(224), logits averaged over the ten crops (seed 003).
        protocol: a reference protocol ('in9-v1'), which fixes the mapping, ten-crop, the resize
            policy and a zero-shot head's labels and templates, and is recorded with the run.
        resize, labels, templates, norm, mean, std, input_size, trust_checkpoint, channels_last, compile,
        pretrained, class_map:
            how a model is built (`models.options.ModelOptions`, as the CLI's flags); a zero-shot head
            over the dataset's own classes reads them from `data`. class_map: for a 1000-class model on
            a dataset other than IN-9, RIVAL10 and Full-IN, a JSON file {ImageNet index: class folder}
            (recorded in the run).
        split: the split to read (default: val for IN-9, test for Waterbirds).
        workers: threads decoding batches ahead of the model (default: 1 on the CPU, more on a GPU;
            `options.default_workers`).
        precision: 'fp32' (exact: TF32 off, so a GPU predicts what the CPU does), or 'bf16'/'fp16'
            autocast around the forward (faster on GPUs, not exact).
        rerun: accepted for the command line's sake: this function always predicts (it reads no
            store; `bgbench eval` shows a finished run of the same job again unless --rerun).

    Images are decoded once into the pixel cache (`data.pixel_cache`; `$BGBENCH_CACHE`, off with
    `$BGBENCH_NO_CACHE=1`) and read from it by every later run on the same files.

    Returns:
        An `EvalReport`: accuracies, BG-Gap, per-image predictions and provenance. Under torchrun
        the ranks share the images; rank 0 returns the report of one process, the others None.
    """
    from .variants.blurred import blurred_renderer
    from .runs import run_eval
    if "variants" in options:
        options["variants"] = list(options["variants"]) if options["variants"] else None
    cfg, how = _model_config(EvalConfig, "evaluate", options)
    built = _model(model, data=data, device=cfg.device, protocol=cfg.protocol, **how)
    return run_eval(built, data, cfg, progress=progress, renderers={"bg_blurred": blurred_renderer})


@signed(config_parameters(ModelOptions, only=("device",)), MODEL_PARAMETERS)
def predict(model: ModelLike, paths: Sequence[str | Path], *, top: int = TOP, **options):
    """What a model sees in your own images: each image's `top` classes by name with their
    probabilities, and the IN-9 class (or `class_map` folder) each maps to. Nothing is recorded.

    Args:
        paths: image files, or folders searched recursively for images.
        options: the device, and how a model string is built (`ModelOptions`: checkpoint,
            pretrained, class_map, resize, norm, ...).

    Returns:
        `evaluation.photos.PhotoPredictions` (`.text()`, `.to_dict()`).
    """
    from .evaluation.photos import predict_images
    device = options.pop("device", default_of(ModelOptions, "device"))
    _refuse_unknown("predict", options, MODEL_KEYS, shown=["top", "device", *MODEL_KEYS])
    return predict_images(_model(model, device=device, **options), paths, top=top, device=device)


@signed(config_parameters(ChallengeConfig), MODEL_PARAMETERS)
def challenge(model: ModelLike, data: str | Path, store: Store | str | Path, *,
              out_dir: Optional[str | Path] = None, progress: bool = True, **options):
    """The Backgrounds Challenge: run, resume or extend it; verdict rows go to `store` as they come.

    Args:
        store: the results store (a `Store` or a path) that holds the verdicts; a rerun of the
            same job continues its unfinished run there.
        out_dir: where --full figures go (default: beside the store).
        options: `ChallengeConfig` fields (batch_size, mapping, precision, full, save_every,
            device, sample, halfwidth, seed, verify_safety, protocol, rerun), with its defaults (see
            the signature); and how a model string is built (`ModelOptions`: checkpoint, pretrained,
            class_map, norm, trust_checkpoint, resize, labels, templates, ...).

    Returns:
        A `ChallengeReport` (None on torchrun ranks other than 0). Its run stays open until
        `bgbench.record(report, store)` finishes it.
    """
    from .runs import run_challenge
    from .drawing.figures import challenge_figures
    cfg, how = _model_config(ChallengeConfig, "challenge", options)
    built = _model(model, data=data, device=cfg.device, protocol=cfg.protocol, **how)
    with opened(store) as s:
        return run_challenge(built, data, s, cfg, out_dir=out_dir, progress=progress, figures=challenge_figures)


@signed(MODEL_PARAMETERS, open=True)
def probe(name: str, model: ModelLike, data: str | Path, *, out_dir: Optional[str | Path] = None,
          progress: bool = True, **options):
    """Any registered measure that runs a model, by name (`bgbench probe NAME`), with its options:

    - 'noise' (RIVAL10's noise sensitivity: accuracy under foreground-only and background-only noise,
      and RFS; `NoiseConfig`: levels, kind, trials, seed, mapping, region),
    - 'saliency' (Grad-CAM's alignment with the object mask; `SaliencyConfig`: layer, examples, seed),
    - 'features' (spurious-feature discovery, RIVAL10 §5; `FeaturesConfig`: top_features,
      top_images, group_by, threshold, galleries),
    - 'ablate' (RIVAL10's ablation: regions grayed; `AblateConfig`: seed, mapping),
    - 'attribution' (RIVAL10 §6: the features that best overlap each attribute; `AttributionConfig`: top, seed),
    - or one a user registered (`measures.registry`); `bgbench probe NAME --help` lists a probe's
      options, and its page in the manual lists them with their defaults.

    Args:
        options: the fields of the measure's config dataclass (batch_size, device and workers too;
            an unknown one is a one-line error), and how a model string is built (`ModelOptions`:
            checkpoint, pretrained, class_map, norm, resize, labels, templates, ...), as the CLI's flags.
        out_dir: where a measure that draws pictures writes them (None: no picture).

    Returns:
        A `measures.result.MeasureResult` (its rows, config, summary, `text()`, `to_dict()`,
        `table()`). Under torchrun the ranks share the images; rank 0 returns the one-process
        result, the others None.

    A model whose format cannot give what the measure needs (`Measure.needs`: 'layers' for Grad-CAM
    and penultimate features) is refused here, in one line, before anything runs: this is where every
    probe's model meets its measure (`bgbench probe` and studies come through here too).
    """
    from .models.checkpoint import check_needs
    from .runs import run_measure
    measure = _registered(name, Command.PROBE)
    cfg, how = _model_config(measure.config, f"probe {name}", options)
    built = _model(model, data=data, device=getattr(cfg, "device", None), **how)
    check_needs(built, measure.needs, f"probe {name}")
    return run_measure(measure, built, data, cfg, progress=progress, out_dir=out_dir)


@signed(config_parameters(TrainConfig, drop=("data", "out")),
        config_parameters(LastLayerConfig, drop=("data", "out", "device", "split", "protocol")))
def train(data: str | Path, out: str | Path, *, model: Optional[str] = None, progress: bool = True, **options):
    """Train (or fine-tune, or resume) a timm architecture on one variant folder with a recipe; or,
    with recipe 'dfr' or 'linear-probe', fit only the last layer of any runnable model. The recipe
    decides which (here, once); an option of the other kind is a one-line error.

    Args:
        out: the run folder: model.pt, config.json, log.jsonl, last.pt (a rerun resumes from it).
        model: 'timm:ARCH' (default timm:resnet10t); for the last-layer recipes, any runnable model
            string (required).
        options: `TrainConfig` fields (variant, epochs, recipe, lr, swa, init, freeze, seed, ...); for
            the last-layer recipes `LastLayerConfig` fields (variant, split, c_grid, penalty,
            held_out, retrains, feature_cache, and the model options: checkpoint, pretrained, norm,
            resize, ...).

    Returns:
        `recording.Outputs`: the checkpoint and its sha256, the last epoch's loss and accuracy (the
        head's held-out score and fit accuracy for the last-layer recipes), provenance. Under
        torchrun, rank 0 returns it and the other ranks None. `record` records a run once: the
        same model.pt at the same path again gives its run's id.
    """
    from .training.recipes import last_layer_recipes
    recipe = options.get("recipe", default_of(TrainConfig, "recipe"))
    last = recipe in last_layer_recipes()
    cls, other = (LastLayerConfig, TrainConfig) if last else (TrainConfig, LastLayerConfig)
    mine = {f.name for f in dataclasses.fields(cls)}
    wrong = sorted(k for k in options if k not in mine and k in {f.name for f in dataclasses.fields(other)})
    if wrong:
        kind = f"--recipe {recipe} fits the last layer only" if last else f"--recipe {recipe} trains the whole network"
        flags = ", ".join(f"--{k.replace('_', '-')}" for k in wrong)
        raise BgbenchError(f"{kind}: {flags} {'does' if len(wrong) == 1 else 'do'} not apply")
    if last and model is None:
        raise BgbenchError(f"--recipe {recipe} refits the last layer of a trained model: name it with --model")
    options = {**options, "data": str(data), "out": str(out), **({"model": model} if model is not None else {})}
    if last:
        from .training.last_layer import fit_last_layer, last_layer_record
        cfg = _config(LastLayerConfig, "train", options)
        return last_layer_record(cfg.out) if fit_last_layer(cfg, progress=progress) is not None else None
    from .training.loop import train as run_training, training_record
    cfg = _config(TrainConfig, "train", options)
    path = run_training(cfg, progress=progress)
    return training_record(cfg.out) if path is not None else None


# ------------------------------------------------------------------------------------------------
# the job that writes datasets


@signed(config_parameters(BuildConfig, drop=("images", "boxes", "out", "preset")),
        config_parameters(SynthConfig, drop=("out",)), config_parameters(EditConfig, drop=("data", "out")),
        MODEL_PARAMETERS)
def build(out: str | Path, *, preset: Optional[str] = None, data: Optional[str | Path] = None,
          boxes: Optional[str | Path] = None, model: Optional[ModelLike] = None, progress: bool = True, **options):
    """Write a dataset in the IN-9 layout under `out`; `preset` says which:

    - 'synthetic-9': Synthetic-9, drawn offline with exact masks and boxes (`bgbench synth`;
      `SynthConfig`: per_class, size, seed, split, bg_correlation, correlation,
      watermark_correlation, watermark_class, workers, shard, overwrite);
    - 'imagenet-e': ImageNet-E's attribute edits of the masked dataset `data`, one folder per
      attribute level (`bgbench edit`; `EditConfig`: attributes, levels, angles, split, seed,
      workers, inpainter, complexity_editor, adv_eps, adv_steps, batch_size, overwrite, shard, and
      for backend='diffusion' (ImageNet-E's blended guided diffusion) weights, respacing, skip,
      diffusion_size, head_channels, range_lambda, l2_lambda, lpips_lambda, coarse_to_fine,
      classifier_scale);
      `model`: the classifier of the adversarial complexity level (skipped without one), with how a
      model string is built (`ModelOptions`: checkpoint, norm, ...);
    - 'in9', 'in9l', 'full-in': the IN-9 variants from the ImageNet 2012 root `data` (ILSVRC or
      torchvision layout; `boxes` optional), as Appendix A does (`bgbench build --imagenet`);
    - None: the IN-9 variants from class folders of images `data` plus `boxes` (a VOC/ImageNet XML
      folder or a COCO file) and optional `masks` (`bgbench build --images`; `BuildConfig`: masks,
      split, seed, workers, preprocess, balance, tries, overwrite, shard).

    Returns:
        A `SynthResult`, `EditResult` or `BuildResult` with provenance (None for a shard: it is
        recorded once merged; under torchrun, an edit's rank 0 returns the one-process result).
    """
    if isinstance(options.get("shard"), str):  # 'K/N', as on the command line, or a `Shard`
        from .data.shards import Shard
        options = {**options, "shard": Shard.parse(options["shard"])}
    job = f"build --preset {preset}" if preset else "build"
    if preset == SYNTHETIC:
        from .variants.synth import synth
        if data is not None or boxes is not None or model is not None:
            raise BgbenchError("build: Synthetic-9 is drawn, not built from images: it takes no data, boxes or model")
        return synth(_config(SynthConfig, job, {**options, "out": Path(out)}), progress=progress)
    if data is None:
        raise BgbenchError(f"{job}: name the images it reads with data=")
    if preset == IMAGENET_E:
        from .edits.pipeline import edit_dataset
        if boxes is not None:
            raise BgbenchError(f"{job}: the edits read the boxes and masks of data; boxes= does not apply")
        tuples = {key: tuple(dict.fromkeys(options[key])) for key in ("attributes", "levels", "angles")
                  if options.get(key) is not None}  # the frozen config holds tuples
        cfg, how = _model_config(EditConfig, job, {**options, **tuples, "data": Path(data), "out": Path(out)})
        built = _model(model, data=data, **how) if model is not None else None
        return edit_dataset(cfg, model=built, progress=progress)
    from .variants.build import build as run_build
    if model is not None:
        raise BgbenchError(f"{job}: a model belongs to the edits (preset='{IMAGENET_E}'); building variants takes none")
    if options.get("masks") is not None:
        options["masks"] = Path(options["masks"])
    cfg = _config(BuildConfig, job, {**options, "images": Path(data), "preset": preset,
                                     "boxes": Path(boxes) if boxes is not None else None, "out": Path(out)})
    return run_build(cfg, progress=progress)


# ------------------------------------------------------------------------------------------------
# analyses and comparisons: a per-image table, or a stored run (store, run_id)


def analyze(name: str, source: Any, run_id: Any = None, **options):
    """Any registered analysis by name, as `bgbench analyze NAME` (categories, boxsize, leakage,
    edits, groups, shortcuts, or one a user registered): a pure function of a per-image table held
    in memory or of stored runs.

    Args:
        source: an evaluation result (or a mapping variant -> per-image predictions), or a results
            store (a `Store` or a path) holding the run `run_id` (for an analysis of several runs of
            one model, 'edits', a list of run ids; one of the store's runs, 'shortcuts', takes the
            store alone and picks its runs with `run_ids`/`models`).
        options: the analysis's own, with its defaults (its page in the manual lists them: boxsize's
            `bins` and `variants`, `mapping` for a 1000-class run, `min_images`, `n_boot`, `seed` ...);
            an unknown one is a one-line error naming them.

    Returns:
        The analysis's result (`.text()`, `.to_dict()`, `.table()`).
    """
    measure: AnalysisMeasure = _registered(name, Command.ANALYZE)
    job = f"analyze {name}"
    if measure.reads is Reads.STORE:
        from .reporting.context import name_subjects, select_subjects
        if run_id is not None:
            raise BgbenchError(f"{job} reads the store's finished runs: pick them with run_ids= or models=")
        _refuse_unknown(job, options, [*STORE_PICKS, *_keywords(measure.of_subjects)])
        picks = {k: options.pop(k, None) for k in STORE_PICKS}
        with _reading(source) as s:
            subjects = name_subjects(select_subjects(s, picks["run_ids"], picks["models"]), picks["labels"],
                                     picks["data_labels"])
            return measure.of_subjects(s, subjects, **options)
    if run_id is not None:
        _refuse_unknown(job, options, _keywords(measure.of_run))
        ids = [run_id] if measure.reads is Reads.RUNS and isinstance(run_id, int) else run_id
        with _reading(source) as s:
            return measure.of_run(s, ids, **options)
    if isinstance(source, (Store, str, Path)):
        raise BgbenchError("a results store needs the id of the run to analyse: pass run_id (see `bgbench runs`)")
    from .probing.tables import as_table
    _refuse_unknown(job, options, [*_keywords(measure.of_table), "mapping"])
    mapping = options.pop("mapping", None)
    return measure.of_table(as_table(source, mapping=mapping), **options)


@signed(keyword_parameters(compare_tables))
def compare(a: Any, b: Any, *, store: Optional[Store | str | Path] = None, **options):
    """Two models on the same images, pairwise (A minus B): McNemar per variant, the BG-Gap difference.

    Args:
        a, b: two evaluation results (or tables); or, with `store`, two run ids (eval or challenge runs).
        options: n_boot (bootstrap replicates) and seed of the paired bootstrap (see the signature).
    """
    from .comparing import compare_runs
    from .probing.tables import as_table
    _refuse_unknown("compare", options, _keywords(compare_tables))
    if store is not None:
        with _reading(store) as s:
            return compare_runs(s, int(a), int(b), **options)
    return compare_tables(as_table(a), as_table(b), **options)


# ------------------------------------------------------------------------------------------------
# views of a results store


def report(store: Store | str | Path, out: str | Path = "bgbench-report", *, run_ids: Optional[Sequence[int]] = None,
           models: Optional[Sequence[str]] = None, progress: bool = True):
    """Write the HTML report (OUT/index.html, OUT/leaderboard.html, figures) of a results store.

    Returns a `ReportResult` (the pages and figures written); the store is only read.
    """
    from .reporting.render import render_report
    with _reading(store) as s:
        return render_report(s, out, run_ids=run_ids, models=models, progress=progress)


# ------------------------------------------------------------------------------------------------
# argument conversion


#: The build options' declared defaults (`models.options.ModelOptions`): a built model refuses any other value.
_BUILD_DEFAULTS = {f.name: f.default for f in dataclasses.fields(ModelOptions)}


def _model(model: ModelLike, *, data: Any = None, device: Optional[str] = None, protocol: Optional[str] = None,
           **how):
    """A model string becomes a `BgModel` once, on entry, through the one door (`load_model`); a
    built model is used as it is.

    `how`: the other `ModelOptions` fields given (checkpoint, norm, trust_checkpoint, resize, labels,
    templates ...; those not given keep `ModelOptions`'s defaults). A zero-shot head over the
    dataset's own classes reads their names from `data`; under a protocol, what the protocol fixes
    is filled in or checked. `device` None: `ModelOptions`'s.
    """
    if isinstance(model, (str, Path)):
        return load_model(model, data=data, protocol=protocol, **({} if device is None else {"device": device}),
                          **how)
    speed = {k: how.pop(k) for k in ("channels_last", "compile") if k in how}
    class_map = how.pop("class_map", None)
    if any(v != _BUILD_DEFAULTS[k] and v not in (None, False) for k, v in how.items()):  # None: not given
        raise BgbenchError("checkpoint= and the model's build options go with a model string such as "
                           "'timm:resnet18'; this model is already built")
    if class_map is not None:  # how a built 1000-class model reads this dataset: the job resolves it
        model.class_map_file = str(class_map)
    if any(speed.values()):
        from .models.options import speed_up
        return speed_up(model, **speed)
    return model


def _registered(name: str, command: Command):
    """The registered measure `name`, which `command` runs: anything else is a one-line error."""
    try:
        measure = get_measure(name)
    except KeyError as e:
        raise BgbenchError(str(e.args[0])) from None
    if measure.command != command:
        raise BgbenchError(f"{name} is not {'a probe' if command is Command.PROBE else 'an analysis'}: it is run by "
                           f"`bgbench {measure.command}`{'' if measure.command == Command.OWN else f' {name}'}")
    return measure


def _keywords(method) -> list:
    """The options of an analysis's method: its parameters that have a default."""
    return [p.name for p in inspect.signature(method).parameters.values() if p.default is not p.empty]


def _model_config(cls, job: str, options: dict):
    """The config of a job that builds a model, and the `ModelOptions` keywords (how a model string is
    built), taken out of `options` first: (config, those keywords)."""
    how = {k: options.pop(k) for k in MODEL_KEYS if k in options}
    return _config(cls, job, options, MODEL_KEYS), how


def _config(cls, job: str, options: dict, also: Sequence[str] = ()):
    """The job's config dataclass from keyword options; an unknown option is a one-line error
    naming the options (the config's fields, and `also`: the model's, taken out before)."""
    known = [f.name for f in dataclasses.fields(cls)]
    _refuse_unknown(job, options, known, shown=[*known, *also])
    return cls(**options)


def _refuse_unknown(job: str, options: dict, known: Sequence[str], shown: Sequence[str] = ()) -> None:
    """A one-line error for keywords outside `known`, naming the options (`shown`, else `known`)."""
    unknown = sorted(set(options) - set(known))
    if unknown:
        raise BgbenchError(f"{job}: unknown option {', '.join(unknown)}; the options are "
                           f"{', '.join(dict.fromkeys(shown or known))}")


@contextmanager
def _reading(store: Store | str | Path) -> Iterator[Store]:
    """An existing results store, for reading: a path that holds none is an error, never a new file."""
    if not isinstance(store, (Store, str, Path)):
        raise BgbenchError(f"a run id goes with a results store (a Store or a path), not a {type(store).__name__}")
    if not isinstance(store, Store) and not Path(store).expanduser().is_file():
        raise BgbenchError(f"no results store at {store}")
    with opened(store) as s:
        yield s
