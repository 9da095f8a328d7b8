"""The Python API: one plain function per job, exported by `bgbench/__init__.py`.

Each function converts its arguments once, on entry (a model string becomes a model; keyword
options become the job's config dataclass, which checks them), calls the module that does the
work and returns its result, with `provenance`. Nothing is recorded: `bgbench.record(result,
store)` is the separate step. The one exception is `challenge`, which commits its verdict rows to
`store` as they come, so that a killed run resumes; `record` then finishes that run.

The analyses take a per-image table (an evaluation result, or a mapping variant -> predictions)
or a stored run (a results store and a run id). Heavy modules (torch, timm) load inside the
functions, so `import bgbench` stays light.
"""
from __future__ import annotations

import dataclasses
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Dict, Iterator, List, Optional, Sequence

from .errors import BgbenchError
from .intervals import REPLICATES
from .models.options import ModelOptions
from .options import BATCH_SIZE
from .recording import opened
from .store import Store

ModelLike = Any  # a model string ('timm:resnet18', 'file:model.pt', 'openclip:ViT-B-32@openai', 'hf:...') or a BgModel


# ------------------------------------------------------------------------------------------------
# jobs that run a model


def evaluate(model: ModelLike, data: str | Path, variants: Optional[Sequence[str]] = None,
             mapping: str = "argmax", batch_size: int = BATCH_SIZE, device: str = "cpu", progress: bool = True,
             seed: int = 0, checkpoint: Optional[str] = None, ten_crop: bool = False, protocol: Optional[str] = None,
             resize: str = "auto", labels: str = "auto", templates: str = "openai",
             class_map: Optional[str | Path] = None, norm: str = "auto", trust_checkpoint: bool = False,
             split: Optional[str] = None, workers: Optional[int] = None, channels_last: bool = False,
             compile: bool = False, pretrained: bool = False, mean: Optional[Sequence[float]] = None,
             std: Optional[Sequence[float]] = None, input_size: Any = None, rerun: bool = False,
             precision: str = "fp32"):
    """Evaluate a model on IN-9-layout variants: per-variant accuracy and the BG-Gap; where the data
    names each image's group, the accuracy per group and the worst group.

    Args:
        model: a `BgModel` or a model string (with `checkpoint` for timm:ARCH weights).
        data: dataset root (or a discovered `Layout`).
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
            `data.prefetch.default_workers`).
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
    from .measures.eval.config import EvalConfig
    from .measures.eval.runner import run_eval
    cfg = EvalConfig(variants=list(variants) if variants else None, mapping=getattr(mapping, "value", mapping),
                     batch_size=batch_size, device=device, seed=seed, ten_crop=ten_crop, protocol=protocol,
                     split=split, workers=workers, rerun=rerun, precision=precision)
    built = _model(model, checkpoint, data=data, device=device, protocol=protocol, resize=resize, labels=labels,
                   templates=templates, norm=norm, trust_checkpoint=trust_checkpoint, channels_last=channels_last,
                   compile=compile, pretrained=pretrained, class_map=str(class_map) if class_map is not None else None,
                   mean=mean, std=std, input_size=input_size)
    return run_eval(built, data, cfg, progress=progress, renderers={"bg_blurred": blurred_renderer})


def predict(model: ModelLike, paths: Sequence[str | Path], *, top: int = 5, device: str = "cpu",
            checkpoint: Optional[str] = None, **how):
    """What a model sees in your own images: each image's `top` classes by name with their
    probabilities, and the IN-9 class (or `class_map` folder) each maps to. Nothing is recorded.

    Args:
        paths: image files, or folders searched recursively for images.
        how: how a model string is built (`ModelOptions`: pretrained, class_map, resize, norm, ...).

    Returns:
        `evaluation.photos.PhotoPredictions` (`.text()`, `.to_dict()`).
    """
    from .evaluation.photos import predict_images
    unknown = sorted(set(how) - set(MODEL_KEYS))
    if unknown:
        raise BgbenchError(f"predict: unknown option {', '.join(unknown)}; the options are top, device, checkpoint, "
                           f"{', '.join(MODEL_KEYS)}")
    return predict_images(_model(model, checkpoint, device=device, **how), paths, top=top, device=device)


def evaluate_predictions(predictions: str | Path, data: str | Path, *, label_space: str = "dataset",
                         mapping: str = "argmax", name: Optional[str] = None, seed: int = 0,
                         protocol: Optional[str] = None, class_map: Optional[str | Path] = None):
    """An eval run from a predictions file (a model known only by its predictions, e.g. behind an API).

    Args:
        predictions: a CSV file of `image_id, variant, pred` rows (optional confidence, top5,
            top5_probs, superclass_probs, probs; see `bgbench.measures.eval.prediction_file`).
        label_space: 'dataset' (pred is a dataset class) or 'imagenet1k' (an ImageNet class, mapped).
        name: the model's name (the run's model string is 'predictions:NAME'; default: the file's stem).
        class_map: an 'imagenet1k' file on a dataset other than IN-9, RIVAL10 and Full-IN: a JSON file
            {ImageNet index: class folder}, as for a model.

    Returns:
        An `EvalReport`, exactly as `evaluate` returns one, with the file's sha256 as provenance.
    """
    from .measures.eval.prediction_file import PredictionFileConfig, predictions_report
    cfg = PredictionFileConfig(label_space=label_space, mapping=getattr(mapping, "value", mapping), name=name,
                               seed=seed, protocol=protocol, class_map=str(class_map) if class_map else None)
    return predictions_report(predictions, data, cfg)


def export_predictions(store: Store | str | Path, run_id: int, out: str | Path) -> dict:
    """Write a stored eval run's per-image predictions as a predictions file (what
    `evaluate_predictions` reads back); returns the path, row count, label space and columns."""
    from .measures.eval.prediction_file import export_predictions as export
    with _reading(store) as s:
        return export(s, int(run_id), out)


def export_scorecard(store: Store | str | Path, out: str | Path, *, run_ids: Optional[Sequence[int]] = None,
                     models: Optional[Sequence[str]] = None) -> dict:
    """Write the scorecard of a results store as files to publish, into the folder `out`:
    `scorecard.csv` (one row per model and dataset: the model, its weights' sha256, the data's
    fingerprint, the protocol, the bgbench version, then each headline's value, interval and n) and
    `model_info/<dataset>/<model>.json` (the same, laid out as RobustBench's model_info entries).

    `run_ids` or `models` (names or fnmatch patterns) pick what `report` would show. Returns the
    paths written and the counts of rows, models and datasets."""
    from .reporting.export import export_scorecard as export
    with _reading(store) as s:
        return export(s, out, run_ids=run_ids, models=models)


def challenge(model: ModelLike, data: str | Path, store: Store | str | Path, *, checkpoint: Optional[str] = None,
              out_dir: Optional[str | Path] = None, progress: bool = True, **options):
    """The Backgrounds Challenge: run, resume or extend it; verdict rows go to `store` as they come.

    Args:
        store: the results store (a `Store` or a path) that holds the verdicts; a rerun of the
            same job continues its unfinished run there.
        out_dir: where --full figures go (default: beside the store).
        options: `ChallengeConfig` fields: batch_size, mapping, precision, full, save_every,
            device, sample, halfwidth, seed, verify_safety; and how a model string is built
            (`ModelOptions`: pretrained, class_map, norm, trust_checkpoint, resize, labels, templates, ...).

    Returns:
        A `ChallengeReport` (None on torchrun ranks other than 0). Its run stays open until
        `bgbench.record(report, store)` finishes it.
    """
    from .measures.challenge.config import ChallengeConfig
    from .measures.challenge.runner import run_challenge
    from .drawing.figures import challenge_figures
    how = _model_keys(options)
    cfg = _config(ChallengeConfig, "challenge", options)
    built = _model(model, checkpoint, data=data, device=cfg.device, protocol=cfg.protocol, **how)
    with opened(store) as s:
        return run_challenge(built, data, s, cfg, out_dir=out_dir, progress=progress, figures=challenge_figures)


def probe(name: str, model: ModelLike, data: str | Path, *, checkpoint: Optional[str] = None,
          out_dir: Optional[str | Path] = None, progress: bool = True, **options):
    """Any registered measure that runs a model, by name (`bgbench probe NAME`), with its options:

    - 'noise' (RIVAL10's noise sensitivity: accuracy under foreground-only and background-only noise,
      and RFS; `NoiseConfig`: levels, kind, trials, seed, mapping, region),
    - 'saliency' (Grad-CAM's alignment with the object mask; `SaliencyConfig`: layer, examples, seed),
    - 'features' (spurious-feature discovery, RIVAL10 §5; `FeaturesConfig`: top_features,
      top_images, group_by, threshold, galleries),
    - 'ablate' (RIVAL10's ablation: regions grayed; `AblateConfig`: seed, mapping),
    - 'attribution' (RIVAL10 §6: the features that best overlap each attribute; `AttributionConfig`: top, seed),
    - or one a user registered (`measures.registry`); `bgbench probe NAME --help` lists a probe's options.

    Args:
        options: the fields of the measure's config dataclass (batch_size, device and workers too;
            an unknown one is a one-line error), and how a model string is built (`ModelOptions`:
            pretrained, class_map, norm, resize, labels, templates, ...), as the CLI's flags.
        out_dir: where a measure that draws pictures writes them (None: no picture).

    Returns:
        A `measures.result.MeasureResult` (its rows, config, summary, `text()`, `to_dict()`). Under
        torchrun the ranks share the images; rank 0 returns the one-process result, the others None.

    A model whose format cannot give what the measure needs (`Measure.needs`: 'layers' for Grad-CAM
    and penultimate features) is refused here, in one line, before anything runs: this is where every
    probe's model meets its measure (`bgbench probe` and studies come through here too).
    """
    from .measures.registry import get_measure
    try:
        measure = get_measure(name)
    except KeyError as e:
        raise BgbenchError(str(e.args[0])) from None
    if measure.command != "probe":
        raise BgbenchError(f"{name} is not a probe: it is run by `bgbench {measure.command}`")
    how = _model_keys(options)
    cfg = _config(measure.config, f"probe {name}", options)
    built = _model(model, checkpoint, data=data, device=getattr(cfg, "device", "cpu"), **how)
    from .models.formats import check_needs
    check_needs(built, measure.needs, f"probe {name}")
    return measure.compute(built, data, cfg, progress=progress, out_dir=out_dir)


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
    from .training.config import LastLayerConfig, TrainConfig
    from .training.recipes import last_layer_recipes
    recipe = options.get("recipe", "erm")
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
# jobs that write datasets


def synth(out: str | Path, *, progress: bool = True, **options):
    """Write Synthetic-9 (offline, exact masks and boxes) in the IN-9 layout under `out`.

    Args:
        options: `SynthConfig` fields (per_class, size, seed, split, bg_correlation, correlation,
            watermark_correlation, watermark_class, workers, shard, overwrite).

    Returns:
        A `SynthResult` with provenance (None for a shard: it is recorded once merged).
    """
    from .variants.synth import SynthConfig, synth as run_synth
    options = _shard_option(options)
    return run_synth(_config(SynthConfig, "synth", {**options, "out": Path(out)}), progress=progress)


def build(images: str | Path, boxes: Optional[str | Path], out: str | Path, *, progress: bool = True, **options):
    """Build the IN-9 variants from class folders of images plus boxes (and masks), as Appendix A does.

    Args:
        images: class folders of images; with `preset`, an ImageNet 2012 root (ILSVRC or torchvision layout).
        boxes: VOC/ImageNet XML folder or COCO file; with `preset`, optional (torchvision layout's box XML folder).
        options: `BuildConfig` fields (masks, split, seed, workers, preprocess, balance, tries, overwrite, shard,
            preset: in9 | in9l | full-in).

    Returns:
        A `BuildResult` (built images, rejects and their reasons) with provenance (None for a shard).
    """
    from .variants.build import BuildConfig, build as run_build
    if options.get("masks") is not None:
        options["masks"] = Path(options["masks"])
    options = _shard_option(options)
    cfg = _config(BuildConfig, "build", {**options, "images": Path(images),
                                         "boxes": Path(boxes) if boxes is not None else None, "out": Path(out)})
    return run_build(cfg, progress=progress)


def edit(data: str | Path, out: str | Path, *, model: Optional[ModelLike] = None, checkpoint: Optional[str] = None,
         progress: bool = True, **options):
    """ImageNet-E attribute edits of a masked dataset: one IN-9-layout folder per attribute level.

    Args:
        model: the classifier of the adversarial complexity level (skipped without one).
        options: `EditConfig` fields (attributes, levels, angles, split, seed, workers, inpainter,
            complexity_editor, adv_eps, adv_steps, batch_size, overwrite).

    Returns:
        An `EditResult` (rows, rejects, per-level GLCM means) with provenance. Under torchrun the
        ranks share the images and rank 0 returns the one-process result, the others None.
    """
    from .edits.pipeline import EditConfig, edit_dataset
    for key in ("attributes", "levels", "angles"):  # the frozen config holds tuples
        if options.get(key) is not None:
            options[key] = tuple(dict.fromkeys(options[key]))
    options = _shard_option(options)
    how = _model_keys(options)
    cfg = _config(EditConfig, "edit", {**options, "data": Path(data), "out": Path(out)})
    built = _model(model, checkpoint, data=data, **how) if model is not None else None
    return edit_dataset(cfg, model=built, progress=progress)


# ------------------------------------------------------------------------------------------------
# analyses: a per-image table, or a stored run (store, run_id)


def prediction_categories(source: Any, run_id: Optional[int] = None, *, mapping: Optional[str] = None):
    """The paper's Table 3 (BG Irrelevant / Required / Fools ...), overall and per class.

    Args:
        source: an evaluation result, a mapping variant -> per-image predictions, or a results store
            (a `Store` or a path) holding eval run `run_id`.
        mapping: re-decide 1000-class predictions from their raw outputs ('argmax' or 'superclass').
    """
    return _analyse("categories", source, run_id, mapping)


def box_size(source: Any, run_id: Optional[int] = None, *, variants: Sequence[str] = ("only_bg_t",), bins: int = 5,
             data: Optional[str] = None, mapping: Optional[str] = None):
    """Accuracy per variant in quantile bins of the box's share of the image (paper Fig. 14).

    Boxes come from the dataset (`data`, else the one the predictions were made on).
    """
    return _analyse("boxsize", source, run_id, mapping, variants=variants, bins=bins, data=data)


def leakage(source: Any, run_id: Optional[int] = None, *, mapping: Optional[str] = None):
    """Background-only accuracy above chance (paper §5), for MIXED-RAND or ONLY-FG-trained models."""
    return _analyse("leakage", source, run_id, mapping)


def edit_drops(source: Any, run_ids: Optional[Sequence[int]] = None, *, n_boot: int = REPLICATES, seed: int = 0):
    """ImageNet-E's metric: the drop in accuracy from `original` per edit level, paired over images.

    Args:
        source: an evaluation result of a `bgbench edit` folder (or its table), or a results store
            holding the eval runs `run_ids` of one model.
    """
    ids = [run_ids] if isinstance(run_ids, int) else run_ids
    return _analyse("edits", source, ids, None, n_boot=n_boot, seed=seed)


def worst_group(store: Store | str | Path, run_id: int, *, variant: Optional[str] = None,
                data: Optional[str | Path] = None, mapping: Optional[str] = None, min_images: int = 10):
    """Accuracy per group of a stored eval run, its worst group (the lowest of the groups of at least
    `min_images` images, when two or more have that many) and the mean over groups. A group is
    (object class, background class) of a mixed variant (default mixed_rand), each image's
    background class from the dataset's manifest (`data`: default the run's own), or a group
    dataset's own groups (variant original)."""
    return _analyse("groups", store, run_id, mapping, variant=variant, data=data, min_images=min_images)


def shortcut_table(store: Store | str | Path, *, run_ids: Optional[Sequence[int]] = None,
                   models: Optional[Sequence[str]] = None, labels: Optional[Dict[str, str]] = None,
                   data_labels: Optional[Dict[str, str]] = None, seed: int = 0):
    """The shortcut table of a results store's runs (Whac-A-Mole's IN-1k accuracy and IN-W, Carton,
    SIN, IN-R and IN-9 gaps beside BG-Gap, challenge accuracy and ImageNet-X's background error
    ratio, one block per dataset), and each shortcut's paired change from a base model to a model
    derived from it (a DFR head on its backbone ...). `run_ids`, `models`: as the report's;
    `labels`/`data_labels`: names for model strings and dataset folders (a study's)."""
    from .measures.registry import get_measure
    from .reporting.context import name_subjects, select_subjects
    with _reading(store) as s:
        subjects = name_subjects(select_subjects(s, run_ids, models), labels, data_labels)
        return get_measure("shortcuts").of_subjects(s, subjects, seed=seed)


def compare(a: Any, b: Any, *, store: Optional[Store | str | Path] = None, n_boot: int = REPLICATES, seed: int = 0):
    """Two models on the same images, pairwise (A minus B): McNemar per variant, the BG-Gap difference.

    Args:
        a, b: two evaluation results (or tables); or, with `store`, two run ids (eval or challenge runs).
    """
    from .comparing import compare_runs, compare_tables
    from .probing.tables import as_table
    if store is not None:
        with _reading(store) as s:
            return compare_runs(s, int(a), int(b), n_boot=n_boot, seed=seed)
    return compare_tables(as_table(a), as_table(b), n_boot=n_boot, seed=seed)


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


def leaderboard(store: Optional[Store | str | Path] = None, *, include_reported: bool = True) -> List[dict]:
    """The leaderboard's rows: models ranked within each dataset, beside the published rows.

    `store` None gives the published rows alone.
    """
    from .reporting.leaderboard import leaderboard as rows
    if store is None:
        return rows(None, include_reported=include_reported)
    with _reading(store) as s:
        return rows(s, include_reported=include_reported)


# ------------------------------------------------------------------------------------------------
# argument conversion


#: The build options' defaults (`models.options.ModelOptions`): a built model refuses any other value.
_BUILD_DEFAULTS = {f.name: f.default for f in dataclasses.fields(ModelOptions)}


def _model(model: ModelLike, checkpoint: Optional[str] = None, *, data: Any = None, device: str = "cpu",
           protocol: Optional[str] = None, **how):
    """A model string becomes a `BgModel` once, on entry, through the one door the CLI uses too
    (`models.options.build`); a built model is used as it is.

    `how`: the other `ModelOptions` fields (norm, trust_checkpoint, resize, labels, templates). A
    zero-shot head over the dataset's own classes reads their names from `data`; under a protocol,
    what the protocol fixes is filled in or checked.
    """
    if isinstance(model, (str, Path)):
        from .models.options import ModelOptions, build
        return build(ModelOptions(model=str(model), checkpoint=checkpoint, data=data, device=device,
                                  protocol=protocol, **how))
    speed = {k: how.pop(k) for k in ("channels_last", "compile") if k in how}
    class_map = how.pop("class_map", None)
    if checkpoint is not None or any(v != _BUILD_DEFAULTS.get(k) and v not in (None, False) for k, v in how.items()):
        raise BgbenchError("checkpoint= and the model's build options go with a model string such as "
                           "'timm:resnet18'; this model is already built")
    if class_map is not None:  # how a built 1000-class model reads this dataset: the job resolves it
        model.class_map_file = str(class_map)
    if any(speed.values()):
        from .models.options import speed_up
        return speed_up(model, **speed)
    return model


def _model_keys(options: dict) -> dict:
    """Take the `ModelOptions` keywords (how a model string is built) out of a job's options."""
    return {k: options.pop(k) for k in MODEL_KEYS if k in options}

#: The API's keywords for how a model string is built: `ModelOptions`'s fields, as the CLI's model
#: flags (the model, its checkpoint, device, data and protocol are arguments of their own).
MODEL_KEYS = tuple(f.name for f in dataclasses.fields(ModelOptions)
                   if f.name not in ("model", "checkpoint", "device", "data", "split", "protocol"))


def _shard_option(options: dict) -> dict:
    """`shard` may be given as 'K/N' (as on the command line) or as a `Shard`."""
    if isinstance(options.get("shard"), str):
        from .data.shards import Shard
        options = {**options, "shard": Shard.parse(options["shard"])}
    return options


def _config(cls, job: str, options: dict):
    """The job's config dataclass from keyword options; an unknown option is a one-line error."""
    known = [f.name for f in dataclasses.fields(cls)]
    unknown = sorted(set(options) - set(known))
    if unknown:
        raise BgbenchError(f"{job}: unknown option {', '.join(unknown)}; the options are {', '.join(known)}")
    return cls(**options)


def _analyse(name: str, source: Any, run_ref: Any, mapping: Optional[str], **options):
    """Analysis `name` of a stored run (`source` a store, `run_ref` its run id(s)) through the
    measure's `of_run`, or of a table held in memory through its `of_table` (an analysis that reads
    stored runs only says so there: `measures.analysis.AnalysisMeasure`)."""
    from .measures.registry import get_measure
    measure = get_measure(name)
    if run_ref is not None:
        with _reading(source) as store:
            return measure.of_run(store, run_ref, **options, **({} if mapping is None else {"mapping": mapping}))
    if isinstance(source, (Store, str, Path)):
        raise BgbenchError("a results store needs the id of the run to analyse: pass run_id (see `bgbench runs`)")
    from .probing.tables import as_table
    return measure.of_table(as_table(source, mapping=mapping), **options)


@contextmanager
def _reading(store: Store | str | Path) -> Iterator[Store]:
    """An existing results store, for reading: a path that holds none is an error, never a new file."""
    if not isinstance(store, (Store, str, Path)):
        raise BgbenchError(f"a run id goes with a results store (a Store or a path), not a {type(store).__name__}")
    if not isinstance(store, Store) and not Path(store).expanduser().is_file():
        raise BgbenchError(f"no results store at {store}")
    with opened(store) as s:
        yield s
