"""The Python API: one plain function per job, exported by `bgbench/__init__.py`.

Each function converts its arguments once, on entry (a model string becomes a model; keyword
options become the job's config dataclass, which checks them), calls the module that does the
work and returns its result, with `provenance`. One style for every job: a function's keyword
options are its config's fields (and `ModelOptions`' for a model string), and its signature is
generated from them (`options.signed`), so each default is declared once, in the config, and
`help()`, IDEs and the CLI read it there; an option left out is not passed, and the config applies
its own default. Every probe is also a function of its own, generated from the registry
(`probe_function`, `bgbench.api.noise`), and `analyze` reaches every analysis by name.

Nothing is recorded: `bgbench.record(result, store)` is the separate step. The one exception is
`challenge`, which commits its verdict rows to `store` as they come, so that a killed run resumes;
`record` then finishes that run.

The analyses take a per-image table (an evaluation result, or a mapping variant -> predictions)
or a stored run (a results store and a run id). Heavy modules (torch, timm) load inside the
functions, so `import bgbench` stays light.
"""
from __future__ import annotations

import dataclasses
import functools
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Dict, Iterator, List, Optional, Sequence

from .errors import BgbenchError
from .measures.challenge.config import ChallengeConfig
from .comparing import compare_tables
from .measures.eval.config import EvalConfig, PredictionFileConfig
from .measures.registry import Command, get_measure, list_measures
from .models.options import ModelOptions
from .options import TOP, config_parameters, default_of, keyword_parameters, signed
from .recording import opened
from .reporting.leaderboard import leaderboard as leaderboard_rows
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


# ------------------------------------------------------------------------------------------------
# jobs that run a model


@signed(config_parameters(EvalConfig), MODEL_PARAMETERS)
def evaluate(model: ModelLike, data: str | Path, *, progress: bool = True, **options):
    """Evaluate a model on IN-9-layout variants: per-variant accuracy and the BG-Gap; where the data
    names each image's group, the accuracy per group and the worst group.

    Args:
        model: a `BgModel` or a model string (with `checkpoint` for timm:ARCH weights).
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
    from .measures.eval.runner import run_eval
    if "variants" in options:
        options["variants"] = list(options["variants"]) if options["variants"] else None
    how = _model_keys(options)
    cfg = _config(EvalConfig, "evaluate", options, MODEL_KEYS)
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
    unknown = sorted(set(options) - set(MODEL_KEYS))
    if unknown:
        raise BgbenchError(f"predict: unknown option {', '.join(unknown)}; the options are top, device, "
                           f"{', '.join(MODEL_KEYS)}")
    return predict_images(_model(model, device=device, **options), paths, top=top, device=device)


@signed(config_parameters(PredictionFileConfig))
def evaluate_predictions(predictions: str | Path, data: str | Path, **options):
    """An eval run from a predictions file (a model known only by its predictions, e.g. behind an API).

    Args:
        predictions: a CSV file of `image_id, variant, pred` rows (optional confidence, top5,
            top5_probs, superclass_probs, probs; see `bgbench.measures.eval.prediction_file`).
        options: the fields of `PredictionFileConfig`, with its defaults (see the signature):
        label_space: 'dataset' (pred is a dataset class) or 'imagenet1k' (an ImageNet class, mapped).
        name: the model's name (the run's model string is 'predictions:NAME'; default: the file's stem).
        class_map: an 'imagenet1k' file on a dataset other than IN-9, RIVAL10 and Full-IN: a JSON file
            {ImageNet index: class folder}, as for a model.

    Returns:
        An `EvalReport`, exactly as `evaluate` returns one, with the file's sha256 as provenance.
    """
    from .measures.eval.prediction_file import predictions_report
    if "class_map" in options:
        options["class_map"] = str(options["class_map"]) if options["class_map"] else None
    return predictions_report(predictions, data, _config(PredictionFileConfig, "evaluate_predictions", options))


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
    from .measures.challenge.runner import run_challenge
    from .drawing.figures import challenge_figures
    how = _model_keys(options)
    cfg = _config(ChallengeConfig, "challenge", options, MODEL_KEYS)
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
    - or one a user registered (`measures.registry`); `bgbench probe NAME --help` lists a probe's options.

    Each probe is also a function of its own, generated from the registry, whose signature lists its
    config's fields with their defaults: `bgbench.api.noise(model, data, levels=..., ...)` is
    `probe("noise", model, data, levels=..., ...)` (`help(bgbench.api.noise)`, `probe_function`).

    Args:
        options: the fields of the measure's config dataclass (batch_size, device and workers too;
            an unknown one is a one-line error), and how a model string is built (`ModelOptions`:
            checkpoint, pretrained, class_map, norm, resize, labels, templates, ...), as the CLI's flags.
        out_dir: where a measure that draws pictures writes them (None: no picture).

    Returns:
        A `measures.result.MeasureResult` (its rows, config, summary, `text()`, `to_dict()`). Under
        torchrun the ranks share the images; rank 0 returns the one-process result, the others None.

    A model whose format cannot give what the measure needs (`Measure.needs`: 'layers' for Grad-CAM
    and penultimate features) is refused here, in one line, before anything runs: this is where every
    probe's model meets its measure (`bgbench probe` and studies come through here too).
    """
    return probe_function(name)(model, data, out_dir=out_dir, progress=progress, **options)


@functools.lru_cache(maxsize=None)
def probe_function(name: str):
    """The plain function of probe `name`, generated from the registry: `(model, data, *, out_dir,
    progress, **its config's fields and the model options)`, its signature listing the fields with
    the config's own defaults. `probe(name, ...)` calls it; `bgbench.api.<name>` is it."""
    try:
        measure = get_measure(name)
    except KeyError as e:
        raise BgbenchError(str(e.args[0])) from None
    if measure.command != Command.PROBE:
        raise BgbenchError(f"{name} is not a probe: it is run by `bgbench {measure.command}`")

    def run(model: ModelLike, data: str | Path, *, out_dir: Optional[str | Path] = None, progress: bool = True,
            **options):
        how = _model_keys(options)
        cfg = _config(measure.config, f"probe {name}", options, MODEL_KEYS)
        built = _model(model, data=data, device=getattr(cfg, "device", None), **how)
        from .models.formats import check_needs
        check_needs(built, measure.needs, f"probe {name}")
        return measure.compute(built, data, cfg, progress=progress, out_dir=out_dir)

    run.__name__ = run.__qualname__ = name
    run.__doc__ = (f"The {measure.title or name} probe (`bgbench probe {name}`): {measure.help}\n\n"
                   f"Its options are the fields of `{measure.config.__name__}` and how a model string is built "
                   f"(`ModelOptions`); `out_dir`: where its pictures go (None: none). Returns a `MeasureResult`.")
    return signed(config_parameters(measure.config), MODEL_PARAMETERS)(run)


def __getattr__(name: str):
    """`bgbench.api.<probe>`: each registered probe's generated function (`probe_function`)."""
    if not name.startswith("_") and any(m.name == name for m in list_measures(Command.PROBE)):
        return probe_function(name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


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
# jobs that write datasets


@signed(config_parameters(SynthConfig, drop=("out",)))
def synth(out: str | Path, *, progress: bool = True, **options):
    """Write Synthetic-9 (offline, exact masks and boxes) in the IN-9 layout under `out`.

    Args:
        options: `SynthConfig` fields (per_class, size, seed, split, bg_correlation, correlation,
            watermark_correlation, watermark_class, workers, shard, overwrite).

    Returns:
        A `SynthResult` with provenance (None for a shard: it is recorded once merged).
    """
    from .variants.synth import synth as run_synth
    options = _shard_option(options)
    return run_synth(_config(SynthConfig, "synth", {**options, "out": Path(out)}), progress=progress)


@signed(config_parameters(BuildConfig, drop=("images", "boxes", "out")))
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
    from .variants.build import build as run_build
    if options.get("masks") is not None:
        options["masks"] = Path(options["masks"])
    options = _shard_option(options)
    cfg = _config(BuildConfig, "build", {**options, "images": Path(images),
                                         "boxes": Path(boxes) if boxes is not None else None, "out": Path(out)})
    return run_build(cfg, progress=progress)


@signed(config_parameters(EditConfig, drop=("data", "out")), MODEL_PARAMETERS)
def edit(data: str | Path, out: str | Path, *, model: Optional[ModelLike] = None, progress: bool = True, **options):
    """ImageNet-E attribute edits of a masked dataset: one IN-9-layout folder per attribute level.

    Args:
        model: the classifier of the adversarial complexity level (skipped without one).
        options: `EditConfig` fields (attributes, levels, angles, split, seed, workers, inpainter,
            complexity_editor, adv_eps, adv_steps, batch_size, overwrite, shard), with its defaults
            (see the signature); and how the model string is built (`ModelOptions`: checkpoint, norm, ...).

    Returns:
        An `EditResult` (rows, rejects, per-level GLCM means) with provenance. Under torchrun the
        ranks share the images and rank 0 returns the one-process result, the others None.
    """
    from .edits.pipeline import edit_dataset
    for key in ("attributes", "levels", "angles"):  # the frozen config holds tuples
        if options.get(key) is not None:
            options[key] = tuple(dict.fromkeys(options[key]))
    options = _shard_option(options)
    how = _model_keys(options)
    cfg = _config(EditConfig, "edit", {**options, "data": Path(data), "out": Path(out)}, MODEL_KEYS)
    built = _model(model, data=data, **how) if model is not None else None
    return edit_dataset(cfg, model=built, progress=progress)


# ------------------------------------------------------------------------------------------------
# analyses: a per-image table, or a stored run (store, run_id)


def _options_of(name: str, method: str = "of_run") -> list:
    """The options of analysis `name` as parameters: those of its measure's `of_run` (or `method`)
    that have a default, with the defaults the measure declares."""
    return keyword_parameters(getattr(get_measure(name), method))


@signed(_options_of("categories"))
def prediction_categories(source: Any, run_id: Optional[int] = None, **options):
    """The paper's Table 3 (BG Irrelevant / Required / Fools ...), overall and per class.

    Args:
        source: an evaluation result, a mapping variant -> per-image predictions, or a results store
            (a `Store` or a path) holding eval run `run_id`.
        mapping: re-decide 1000-class predictions from their raw outputs ('argmax' or 'superclass').
    """
    return _analyse(prediction_categories, "categories", source, run_id, options)


@signed(_options_of("boxsize"))
def box_size(source: Any, run_id: Optional[int] = None, **options):
    """Accuracy per variant in quantile bins of the box's share of the image (paper Fig. 14).

    Boxes come from the dataset (`data`, else the one the predictions were made on).
    """
    return _analyse(box_size, "boxsize", source, run_id, options)


@signed(_options_of("leakage"))
def leakage(source: Any, run_id: Optional[int] = None, **options):
    """Background-only accuracy above chance (paper §5), for MIXED-RAND or ONLY-FG-trained models."""
    return _analyse(leakage, "leakage", source, run_id, options)


@signed(_options_of("edits"))
def edit_drops(source: Any, run_ids: Optional[Sequence[int]] = None, **options):
    """ImageNet-E's metric: the drop in accuracy from `original` per edit level, paired over images.

    Args:
        source: an evaluation result of a `bgbench edit` folder (or its table), or a results store
            holding the eval runs `run_ids` of one model.
    """
    ids = [run_ids] if isinstance(run_ids, int) else run_ids
    return _analyse(edit_drops, "edits", source, ids, options)


@signed(_options_of("groups"))
def worst_group(store: Store | str | Path, run_id: int, **options):
    """Accuracy per group of a stored eval run, its worst group (the lowest of the groups of at least
    `min_images` images, when two or more have that many) and the mean over groups. A group is
    (object class, background class) of a mixed variant (default mixed_rand), each image's
    background class from the dataset's manifest (`data`: default the run's own), or a group
    dataset's own groups (variant original)."""
    return _analyse(worst_group, "groups", store, run_id, options)


@signed(_options_of("shortcuts", "of_subjects"))
def shortcut_table(store: Store | str | Path, *, run_ids: Optional[Sequence[int]] = None,
                   models: Optional[Sequence[str]] = None, labels: Optional[Dict[int, str]] = None,
                   data_labels: Optional[Dict[str, str]] = None, **options):
    """The shortcut table of a results store's runs (Whac-A-Mole's IN-1k accuracy and IN-W, Carton,
    SIN, IN-R and IN-9 gaps beside BG-Gap, challenge accuracy and ImageNet-X's background error
    ratio, one block per dataset), and each shortcut's paired change from a base model to a model
    derived from it (a DFR head on its backbone ...). `run_ids`, `models`: as the report's;
    `labels`/`data_labels`: names for runs' models (run id -> label) and dataset folders (a study's)."""
    from .reporting.context import name_subjects, select_subjects
    _check_options(shortcut_table, "shortcut_table", options)
    with _reading(store) as s:
        subjects = name_subjects(select_subjects(s, run_ids, models), labels, data_labels)
        return get_measure("shortcuts").of_subjects(s, subjects, **options)


#: The named function of each analysis (`analyze(name, ...)` calls it); one registered without
#: an entry here is reached through its measure's `of_run` and `of_table` (`analysis_function`).
ANALYSES = {"categories": prediction_categories, "boxsize": box_size, "leakage": leakage, "edits": edit_drops,
            "groups": worst_group, "shortcuts": shortcut_table}


def analyze(name: str, source: Any, run_id: Any = None, **options):
    """Any registered analysis by name, as `bgbench analyze NAME` (categories, boxsize, leakage,
    edits, groups, shortcuts, or one a user registered), of a table or of a stored run.

    Args:
        source: an evaluation result (or a mapping variant -> per-image predictions), or a results
            store holding the run `run_id` (for 'edits', a list of run ids; 'shortcuts' takes a store
            and selects its runs with `run_ids`/`models`).
        options: the analysis's own (`help(analysis_function(name))` lists them with their
            defaults: `box_size`'s bins and variants ...); an unknown one is a one-line error.

    Returns:
        The analysis's result (`.text()`, `.to_dict()`), as its named function returns it.
    """
    function = analysis_function(name)
    return function(source, **options) if run_id is None else function(source, run_id, **options)


def analysis_function(name: str):
    """The plain function of analysis `name`: its named function (`ANALYSES`), or, for one a user
    registered, a function generated from its measure (`of_run`'s options and defaults)."""
    if name in ANALYSES:
        return ANALYSES[name]
    try:
        measure = get_measure(name)
    except KeyError as e:
        raise BgbenchError(str(e.args[0])) from None
    if measure.command != Command.ANALYZE:
        raise BgbenchError(f"{name} is not an analysis: it is run by `bgbench {measure.command}`"
                           f"{'' if measure.command == Command.OWN else f' {name}'}")

    @signed(keyword_parameters(measure.of_run))
    def run(source: Any, run_id: Any = None, **options):
        return _analyse(run, name, source, run_id, options)

    run.__name__ = run.__qualname__ = name
    run.__doc__ = f"The {measure.title or name} analysis (`bgbench analyze {name}`): {measure.help}"
    return run


@signed(keyword_parameters(compare_tables))
def compare(a: Any, b: Any, *, store: Optional[Store | str | Path] = None, **options):
    """Two models on the same images, pairwise (A minus B): McNemar per variant, the BG-Gap difference.

    Args:
        a, b: two evaluation results (or tables); or, with `store`, two run ids (eval or challenge runs).
        options: n_boot (bootstrap replicates) and seed of the paired bootstrap (see the signature).
    """
    from .comparing import compare_runs
    from .probing.tables import as_table
    _check_options(compare, "compare", options)
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


@signed(keyword_parameters(leaderboard_rows))
def leaderboard(store: Optional[Store | str | Path] = None, **options) -> List[dict]:
    """The leaderboard's rows: models ranked within each dataset, beside the published rows
    (`include_reported`, see the signature).

    `store` None gives the published rows alone.
    """
    _check_options(leaderboard, "leaderboard", options)
    if store is None:
        return leaderboard_rows(None, **options)
    with _reading(store) as s:
        return leaderboard_rows(s, **options)


# ------------------------------------------------------------------------------------------------
# argument conversion


#: The build options' declared defaults (`models.options.ModelOptions`): a built model refuses any other value.
_BUILD_DEFAULTS = {f.name: f.default for f in dataclasses.fields(ModelOptions)}


def _model(model: ModelLike, *, data: Any = None, device: Optional[str] = None, protocol: Optional[str] = None,
           **how):
    """A model string becomes a `BgModel` once, on entry, through the one door the CLI uses too
    (`models.options.build`); a built model is used as it is.

    `how`: the other `ModelOptions` fields given (checkpoint, norm, trust_checkpoint, resize, labels,
    templates ...; those not given keep `ModelOptions`'s defaults). A zero-shot head over the
    dataset's own classes reads their names from `data`; under a protocol, what the protocol fixes
    is filled in or checked. `device` None: `ModelOptions`'s.
    """
    if "class_map" in how and how["class_map"] is not None:
        how["class_map"] = str(how["class_map"])
    if isinstance(model, (str, Path)):
        from .models.options import build
        where = {} if device is None else {"device": device}
        return build(ModelOptions(model=str(model), data=data, protocol=protocol, **where, **how))
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


def _model_keys(options: dict) -> dict:
    """Take the `ModelOptions` keywords (how a model string is built) out of a job's options."""
    return {k: options.pop(k) for k in MODEL_KEYS if k in options}


def _shard_option(options: dict) -> dict:
    """`shard` may be given as 'K/N' (as on the command line) or as a `Shard`."""
    if isinstance(options.get("shard"), str):
        from .data.shards import Shard
        options = {**options, "shard": Shard.parse(options["shard"])}
    return options


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


def _check_options(function, job: str, options: dict) -> None:
    """Refuse, in one line, a keyword that `function`'s signature does not list."""
    import inspect
    _refuse_unknown(job, options, [p.name for p in inspect.signature(function).parameters.values()
                                   if p.kind is p.KEYWORD_ONLY])


def _analyse(function, name: str, source: Any, run_ref: Any, options: dict):
    """Analysis `name` of a stored run (`source` a store, `run_ref` its run id(s)) through the
    measure's `of_run`, or of a table held in memory through its `of_table` (an analysis that reads
    stored runs only says so there: `measures.analysis.AnalysisMeasure`); `function` is the API
    function called, whose signature lists the options."""
    _check_options(function, function.__name__, options)
    mapping = options.pop("mapping", None)
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
