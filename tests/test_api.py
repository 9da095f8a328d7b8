"""The public API as a user meets it: plain functions that compute and return results with their
provenance, one separate `record`, analyses of a table or of a stored run, the README's example."""
import os
import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from scipy.stats import binomtest

import bgbench
from bgbench.errors import BgbenchError
from bgbench.store import Store
from conftest import mask_boxes

README = Path(__file__).resolve().parents[1] / "README.md"
PUBLIC = list(bgbench.__all__)
WANTED = {"load_model", "evaluate", "probe", "analyze", "compare", "challenge", "predict", "train", "build",
          "report", "study", "record"}
#: Names a user might try, and that resolve nowhere as `bgbench.NAME`: each job has one door.
NOT_PUBLIC = {"create_model", "list_models", "synth", "edit", "prediction_categories", "box_size", "leakage",
              "edit_drops", "worst_group", "shortcut_table", "evaluate_predictions", "export_predictions",
              "export_scorecard", "leaderboard", "list_variants", "noise"}

#: Calls every public function twice on tiny data, as a user would, checking after every call and
#: after importing every module that each public name is still the function (the defect: calling
#: `bgbench.evaluate` once imported the `bgbench.evaluate` subpackage over it).
EVERY_NAME_STAYS_A_FUNCTION = """
import importlib, json, pkgutil, shutil, sys, types
from pathlib import Path
import bgbench
from bgbench.variants.preprocess import Preprocess  # for build's preprocess option
public = list(bgbench.__all__)
names = public
tmp = Path(sys.argv[1])

def check(when):
    for name in names:
        value = getattr(bgbench, name)
        assert isinstance(value, types.FunctionType), (when, name, type(value))

def voc(box):
    x0, y0, x1, y1 = box
    return (f"<annotation><object><name>x</name><bndbox><xmin>{x0}</xmin><ymin>{y0}</ymin><xmax>{x1}</xmax>"
            f"<ymax>{y1}</ymax></bndbox></object></annotation>")

def mask_boxes(root):  # the box of each Synthetic-9 mask (end-exclusive), worked out from fg_mask alone
    import numpy as np
    out = {}
    for path in sorted((root / "fg_mask" / "val").rglob("*.npy")):
        ys, xs = np.nonzero(np.load(path))
        out[path.relative_to(root / "fg_mask" / "val").with_suffix("").as_posix()] = (
            xs.min(), ys.min(), xs.max() + 1, ys.max() + 1)
    return out

def build_inputs(root):
    for stem, box in mask_boxes(root).items():
        for folder, name, text in (("images", stem + ".png", None), ("boxes", stem + ".xml", voc(box))):
            (tmp / folder / stem).parent.mkdir(parents=True, exist_ok=True)
            if text is None:
                shutil.copy(root / "original" / "val" / name, tmp / folder / name)
            else:
                (tmp / folder / name).write_text(text)

def call(step, k):
    name = step.partition(":")[0]
    f, d, db = getattr(bgbench, name), tmp / "s9", tmp / "r.db"
    quiet = {"progress": False}
    calls = {
        "build:synthetic-9": lambda: f(d, preset="synthetic-9", per_class=1, size=32, split=("train", "val")[k],
                                       **quiet),
        "train": lambda: f(d, tmp / f"t{k}", model="timm:test_resnet", epochs=1, batch_size=3, **quiet),
        "evaluate": lambda: f("timm:test_resnet", d, variants=["original", "mixed_rand", "only_bg_t"], **quiet),
        "challenge": lambda: f("timm:test_resnet", d, db, sample=2, **quiet),
        "probe": lambda: [f(name, "timm:test_resnet", d, **opts, **quiet) for name, opts in (
            ("noise", {"levels": [0.5], "trials": 1}), ("saliency", {"examples": 0}),
            ("features", {"top_features": 1, "top_images": 1}), ("ablate", {}), ("attribution", {"top": 1}),
            ("watermark", {}))],
        "build:imagenet-e": lambda: f(tmp / "e", preset="imagenet-e", data=d, levels=["remove"], overwrite=True,
                                      **quiet),
        "build": lambda: f(tmp / f"b{k}", data=tmp / "images", boxes=tmp / "boxes", masks=d / "fg_mask" / "val",
                           preprocess=Preprocess(resize=None, crop=None), **quiet),
        "analyze": lambda: [f("categories", report), f("leakage", db, report.run_id), f("shortcuts", db),
                            f("boxsize", report, bins=1),
                            f("edits", {"original": [("a/1", 0, 0)], "remove": [("a/1", 0, 1)]}, n_boot=10)],
        "analyze:groups": lambda: f("groups", db, report.run_id, min_images=1),
        "compare": lambda: f(report, report),
        "record": lambda: f(report, db),
        "predict": lambda: f("timm:test_resnet", [d / "original" / "val"], top=2),
        "report": lambda: f(db, tmp / "site", **quiet),
        "study": lambda: f({"models": ["timm:test_resnet"], "datasets": [str(d)], "measures": {"eval": {}}}, db,
                           out=tmp / "study", **quiet),
        "load_model": lambda: f("timm:test_resnet", norm="imagenet"),
    }
    assert {c.partition(":")[0] for c in calls} == set(names), set(names) ^ set(calls)
    result = calls[step]()
    if name == "challenge":
        bgbench.record(result, db)
    return result

order = ["build:synthetic-9", "load_model", "evaluate", "record", "analyze", "analyze:groups", "predict",
         "compare", "challenge", "probe", "build:imagenet-e", "train", "build", "report", "study"]
check("import")
for step in order:
    for k in range(2):
        value = call(step, k)
        if step == "build:synthetic-9" and k == 1:
            build_inputs(tmp / "s9")
        if step == "evaluate":
            report = value
        check(f"call {k + 1} of {step}")
modules = [m.name for m in pkgutil.walk_packages(bgbench.__path__, "bgbench.") if m.name != "bgbench.__main__"]
for module in modules:
    importlib.import_module(module)
    check("after importing " + module)
from bgbench import evaluate
assert evaluate is bgbench.evaluate and set(public) <= set(dir(bgbench))
print(len(modules))
"""


def _python(code: str, *args, cwd=None) -> str:
    proc = subprocess.run([sys.executable, "-c", code, *map(str, args)], capture_output=True, text=True, cwd=cwd,
                          timeout=900)
    assert proc.returncode == 0, proc.stderr
    return proc.stdout


def test_twelve_names_one_per_job_and_nothing_beside_them():
    assert set(PUBLIC) == WANTED and len(PUBLIC) == len(WANTED) == 12
    for name in NOT_PUBLIC:
        assert not hasattr(bgbench, name), name
    import importlib
    assert not hasattr(importlib.import_module("bgbench.api"), "noise")  # a probe is run by `probe(name, ...)`, not a function of its own


def test_every_public_name_stays_a_function_when_called_twice_and_after_importing_every_module(tmp_path):
    assert int(_python(EVERY_NAME_STAYS_A_FUNCTION, tmp_path)) > 50  # the walk did import the whole package


def test_import_bgbench_and_its_light_names_load_no_torch():
    code = ("import sys, bgbench\n"
            "[getattr(bgbench, n) for n in bgbench.__all__]\n"
            "print([m for m in ('torch', 'timm', 'torchvision') if m in sys.modules])")
    assert _python(code).strip() == "[]"


def test_the_readme_example_runs(tmp_path, monkeypatch):
    section = (README.parent / "docs" / "reference" / "python.md").read_text()  # the manual's API guide
    code = re.search(r"```python\n(.*?)```", section, re.S).group(1)
    assert len([line for line in code.splitlines() if line.strip()]) <= 11
    out = _python(code, cwd=tmp_path)
    assert "BG-Gap" in out and "prediction categories of the table" in out and "leakage of run 2" in out
    with Store(tmp_path / "results.db") as store:
        assert [(r["kind"], r["status"]) for r in store.runs()] == [("train", "done"), ("eval", "done")]


# ------------------------------------------------------------------------------------------------
# compute, then record


def test_jobs_record_nothing_and_record_writes_the_run(synth_root, tmp_path):
    default_store = Path(os.environ["BGBENCH_DB"])
    report = bgbench.evaluate("timm:test_resnet", synth_root, variants=["original"], progress=False)
    noise = bgbench.probe("noise", "timm:test_resnet", synth_root, levels=[0.5], trials=1, progress=False)
    made = bgbench.build(tmp_path / "s", preset="synthetic-9", per_class=1, size=16, split="val", progress=False)
    assert not default_store.exists() and report.run_id is None
    assert (report.provenance.kind, noise.provenance.kind, made.provenance.kind) == ("eval", "probe_noise", "synth")
    db = tmp_path / "r.db"
    rid = bgbench.record(report, db)
    assert rid == report.run_id
    with Store(db) as store:
        run = store.get_run(rid)
        stored = {(r["image_id"], r["label"], r["pred"]) for r in store.predictions(rid, "original")}
        assert bgbench.record(noise, store) == rid + 1  # a Store works as well as a path
    p = report.predictions["original"]
    assert stored == set(zip(p.image_ids, p.labels.tolist(), p.preds.tolist())) and len(stored) == 36
    assert (run["kind"], run["status"], run["model"], run["data_root"]) == ("eval", "done", "timm:test_resnet",
                                                                           str(synth_root))


def test_record_refuses_what_is_not_a_run(tmp_path):
    table = {v: [("a/1", 0, 0)] for v in ("original", "mixed_rand", "only_bg_t")}
    with pytest.raises(BgbenchError, match="no provenance"):
        bgbench.record(bgbench.analyze("categories", table), tmp_path / "r.db")
    assert not (tmp_path / "r.db").exists()


def test_the_challenge_commits_verdicts_and_record_finishes_its_run(synth_root, tmp_path):
    db = tmp_path / "r.db"
    report = bgbench.challenge("timm:test_resnet", synth_root, db, sample=9, batch_size=36, progress=False)
    with Store(db) as store:
        assert store.get_run(report.run_id)["status"] == "running" and not store.metrics(report.run_id)
        verdicts = store.challenge_results(report.run_id)
    with pytest.raises(BgbenchError, match="record it there"):
        bgbench.record(report, tmp_path / "other.db")
    assert not (tmp_path / "other.db").exists()
    assert bgbench.record(report, db) == report.run_id
    with Store(db) as store:
        assert store.get_run(report.run_id)["status"] == "sampled"  # an estimate: it can be extended
        metrics = {(m["name"], m["variant"]): m for m in store.metrics(report.run_id)}
    assert len(verdicts) >= 9 and report.total == 9
    held = metrics[("challenge_accuracy", "")]
    assert held["n"] == report.total and held["value"] == pytest.approx(1 - report.fooled / report.total)


def test_options_are_the_config_fields_and_bad_ones_are_one_line(synth_root, tmp_path):
    with pytest.raises(BgbenchError, match="trails") as e:
        bgbench.probe("noise", "timm:test_resnet", synth_root, trails=3)
    assert "trials" in str(e.value) and "\n" not in str(e.value)
    with pytest.raises(BgbenchError, match="--batch-size"):
        bgbench.evaluate("timm:test_resnet", synth_root, batch_size=0)
    with pytest.raises(BgbenchError, match="--epochs"):
        bgbench.train(synth_root, tmp_path / "t", model="timm:test_resnet", epochs=0)
    assert not (tmp_path / "t").exists()


def test_reading_a_store_never_creates_one(tmp_path):
    with pytest.raises(BgbenchError, match="no results store"):
        bgbench.analyze("categories", tmp_path / "none.db", 1)
    with pytest.raises(BgbenchError, match="no results store"):
        bgbench.analyze("shortcuts", tmp_path / "none.db")
    assert not (tmp_path / "none.db").exists()
    with Store(tmp_path / "r.db"):
        pass
    with pytest.raises(BgbenchError, match="run_id"):
        bgbench.analyze("leakage", tmp_path / "r.db")


# ------------------------------------------------------------------------------------------------
# analyses of a table, or of a stored run: the same numbers, worked by hand


# (image, label, ORIGINAL, MIXED-RAND, ONLY-BG-T) -> the category, worked out by hand
CATEGORY_CASES = [
    ("a/0", 0, 0, 0, 1),  # full right, foreground right: BG Irrelevant
    ("a/1", 0, 0, 1, 0),  # full right, foreground wrong, background right: BG Required
    ("b/2", 1, 1, 0, 0),  # full right, foreground wrong, background wrong: BG+FG Required
    ("b/3", 1, 0, 1, 0),  # full wrong, foreground right, background the same wrong class: BG Fools
    ("b/4", 1, 0, 1, 1),  # full wrong, foreground right, background another class: Other
]


def _category_table():
    return {v: [(i, y, row[k]) for i, y, *row in CATEGORY_CASES]
            for k, v in enumerate(("original", "mixed_rand", "only_bg_t"))}


def _stored(store, table, classes=("a", "b"), model="m"):
    rid = store.start_run("eval", {"classes": list(classes), "split": "val"}, model=model)
    store.insert("predictions", rid, [(v, i, y, p, 0.9, None, None, None) for v, rows in table.items()
                                      for i, y, p in rows])
    store.finish_run(rid)
    return rid


def test_prediction_categories_of_a_table_and_of_a_stored_run(tmp_path):
    overall = {"BG Irrelevant": 0.2, "BG Required": 0.2, "BG+FG Required": 0.2, "BG Fools": 0.2, "Other": 0.2}
    from_table = bgbench.analyze("categories", _category_table())
    with Store(tmp_path / "r.db") as store:
        rid = _stored(store, _category_table())
    from_run = bgbench.analyze("categories", tmp_path / "r.db", rid)
    for result in (from_table, from_run):
        assert result.n == 5 and result.overall == pytest.approx(overall)
    assert from_run.per_class["a"] == pytest.approx({**{k: 0.0 for k in overall}, "BG Irrelevant": 0.5,
                                                     "BG Required": 0.5})
    assert from_table.per_class["1"] == pytest.approx({**{k: 0.0 for k in overall}, "BG+FG Required": 1 / 3,
                                                       "BG Fools": 1 / 3, "Other": 1 / 3})
    assert from_table.run_id is None and from_run.run_id == rid


def _wilson(k, n):
    ci = binomtest(k, n).proportion_ci(0.95, method="wilson")
    return ci.low, ci.high


def test_leakage_of_a_table_and_of_a_stored_run(tmp_path):
    labels = [0, 0, 1, 1, 1, 1]
    table = {"only_bg_b": [(f"c/{k}", y, p) for k, (y, p) in enumerate(zip(labels, [0, 1, 1, 0, 1, 1]))],
             "only_bg_t": [(f"c/{k}", y, p) for k, (y, p) in enumerate(zip(labels, [0, 1, 1, 0, 0, 1]))]}
    with Store(tmp_path / "r.db") as store:
        rid = _stored(store, table)
    for result in (bgbench.analyze("leakage", table), bgbench.analyze("leakage", tmp_path / "r.db", rid)):
        above = result.excess()
        assert result.chance == 0.5
        assert above["only_bg_b"].value == pytest.approx(4 / 6 - 0.5)
        assert above["only_bg_t"].value == pytest.approx(3 / 6 - 0.5)
        lo, hi = _wilson(4, 6)
        assert (above["only_bg_b"].lo, above["only_bg_b"].hi) == pytest.approx((lo - 0.5, hi - 0.5), abs=1e-9)


def test_edit_drops_of_a_table_worked_by_hand(tmp_path):
    """original right on c/1, c/2, c/3; size_0.05 lost c/3 (rejected) and is right on c/2 only: over the
    shared c/1, c/2, c/4 the drop is 2/3 - 1/3. complexity_20 right on all four: 3/4 - 1 = -1/4."""
    right = {"original": {"c/1": 1, "c/2": 1, "c/3": 1, "c/4": 0}, "size_0.05": {"c/1": 0, "c/2": 1, "c/4": 0},
             "complexity_20": {"c/1": 1, "c/2": 1, "c/3": 1, "c/4": 1}}
    table = {v: [(i, 0, 0 if ok else 1) for i, ok in rows.items()] for v, rows in right.items()}
    with Store(tmp_path / "r.db") as store:
        rid = _stored(store, table)
    for drops in (bgbench.analyze("edits", table, n_boot=200),
                  bgbench.analyze("edits", tmp_path / "r.db", [rid], n_boot=200)):
        level = {lv.variant: lv for lv in drops.levels}
        assert drops.original.value == 0.75 and [lv.variant for lv in drops.levels] == ["size_0.05", "complexity_20"]
        assert level["size_0.05"].drop.value == pytest.approx(1 / 3) and level["size_0.05"].drop.n == 3
        assert level["complexity_20"].drop.value == pytest.approx(-0.25)


def test_box_size_of_an_evaluation_result(synth_root):
    report = bgbench.evaluate("timm:test_resnet", synth_root, variants=["only_bg_t"], progress=False)
    boxes = mask_boxes(synth_root)
    shares = [(x1 - x0) * (y1 - y0) / 32 ** 2 for x0, y0, x1, y1 in boxes.values()]
    curve = bgbench.analyze("boxsize", report, bins=1).curves["only_bg_t"]
    p = report.predictions["only_bg_t"]
    assert len(curve) == 1 and curve[0]["n"] == 36 == len(boxes)
    assert curve[0]["acc"] == pytest.approx(float(np.mean(p.preds == p.labels)))
    assert (curve[0]["lo"], curve[0]["hi"]) == pytest.approx((min(shares), max(shares)))


def test_compare_two_results_and_the_same_two_stored_runs(synth_root, tmp_path):
    model_b = bgbench.load_model("timm:test_resnet", norm="imagenet")  # the same net fed other inputs
    a = bgbench.evaluate("timm:test_resnet", synth_root, variants=["original", "only_bg_t"], progress=False)
    b = bgbench.evaluate(model_b, synth_root, variants=["original", "only_bg_t"], progress=False)
    from_tables = bgbench.compare(a, b)
    db = tmp_path / "r.db"
    from_runs = bgbench.compare(bgbench.record(a, db), bgbench.record(b, db), store=db)
    disagreements = 0
    for v in ("original", "only_bg_t"):
        ca = a.predictions[v].preds == a.predictions[v].labels
        cb = b.predictions[v].preds == b.predictions[v].labels
        a_only, b_only = int((ca & ~cb).sum()), int((~ca & cb).sum())
        p = binomtest(a_only, a_only + b_only, 0.5).pvalue if a_only + b_only else 1.0
        for result in (from_tables, from_runs):
            test = result.variants[v].test
            assert (test["a_only"], test["b_only"]) == (a_only, b_only)
            assert test["p_value"] == pytest.approx(p)
        disagreements += a_only + b_only
    assert disagreements > 0  # the two models differ, so the counts are not trivially zero


def test_a_built_model_refuses_build_options_but_not_their_defaults(synth_root):
    """A built model is used as it is: asking it for another normalization (or prompt templates, or
    a resize rule) is refused in one line, since nothing would apply it; the options' own defaults,
    passed explicitly, are not a request and run."""
    model = bgbench.load_model("timm:test_resnet")
    for other in ({"norm": "in9"}, {"templates": "simple"}, {"resize": "none"}, {"trust_checkpoint": True}):
        with pytest.raises(BgbenchError, match="this model is already built"):
            bgbench.evaluate(model, synth_root, variants=["original"], progress=False, **other)
    report = bgbench.evaluate(model, synth_root, variants=["original"], progress=False, norm="auto",
                              templates="openai", resize="auto", labels="auto")
    assert report.accuracy["original"].n == len(list((synth_root / "original" / "val").rglob("*.*")))


# ------------------------------------------------------------------------------------------------
# one style: every function's options are its config's fields, with the config's defaults


def _configs():
    """(public function, the config dataclass whose fields it takes, fields it takes as arguments)."""
    from bgbench.edits.pipeline import EditConfig
    from bgbench.measures.challenge.config import ChallengeConfig
    from bgbench.measures.eval.config import EvalConfig
    from bgbench.models.options import ModelOptions
    from bgbench.training.config import TrainConfig
    from bgbench.variants.build import BuildConfig
    from bgbench.variants.synth import SynthConfig
    model = ("model", "device", "data", "split", "protocol")  # arguments, or the job config's own fields
    return [(bgbench.evaluate, EvalConfig, ()), (bgbench.evaluate, ModelOptions, model),
            (bgbench.challenge, ChallengeConfig, ()), (bgbench.challenge, ModelOptions, model),
            (bgbench.predict, ModelOptions, ("model", "data", "split", "protocol")),
            (bgbench.train, TrainConfig, ("data", "out", "model")), (bgbench.build, SynthConfig, ("out",)),
            (bgbench.build, BuildConfig, ("images", "boxes", "out", "preset")),
            (bgbench.build, EditConfig, ("data", "out")), (bgbench.build, ModelOptions, model),
            (bgbench.load_model, ModelOptions, ("model",))]


def _defaults_match(function, cls, arguments=()):
    """Each field of `cls` is a keyword of `function`'s signature with the field's own default."""
    import dataclasses
    import inspect
    from bgbench.signatures import default_of
    params = inspect.signature(function).parameters
    fields = [f for f in dataclasses.fields(cls) if f.init and f.name not in arguments]
    assert fields
    for f in fields:
        assert f.name in params, (function.__name__, f.name)
        assert params[f.name].kind is inspect.Parameter.KEYWORD_ONLY, (function.__name__, f.name)
        assert params[f.name].default == default_of(cls, f.name), (function.__name__, f.name)


@pytest.mark.parametrize("function, cls, arguments", _configs(), ids=lambda x: getattr(x, "__name__", ""))
def test_each_function_lists_its_config_fields_with_the_config_defaults(function, cls, arguments):
    _defaults_match(function, cls, arguments)


def test_probe_and_analyze_take_the_options_their_measures_declare(synth_root):
    """`probe(name, ...)` builds the measure's config from the keywords, so each field's default is the
    config's; `analyze(name, ...)` passes its keywords to the measure's own methods, whose keyword
    parameters are its options: both read the registry, nothing lists a measure here."""
    import dataclasses
    from bgbench.measures.registry import list_measures
    for measure in list_measures("probe"):
        with pytest.raises(BgbenchError, match=f"probe {measure.name}: unknown option not_an_option") as e:
            bgbench.probe(measure.name, "timm:test_resnet", synth_root, not_an_option=1)
        named = str(e.value).partition("the options are ")[2].split(", ")
        assert [f.name for f in dataclasses.fields(measure.config)] == named[:len(dataclasses.fields(measure.config))]
    for measure in list_measures("analyze"):
        with pytest.raises(BgbenchError, match=f"analyze {measure.name}: unknown option not_an_option"):
            bgbench.analyze(measure.name, {"original": [("a/1", 0, 0)]}, not_an_option=1)


def test_a_changed_config_default_changes_the_signature():
    """The signature is read from the config when the function is declared: a default changed in
    the config is the default the API shows (and applies: the option left out is not passed)."""
    import dataclasses
    import inspect
    from bgbench.signatures import config_parameters, signed

    def declare(trials):
        Toy = dataclasses.make_dataclass("Toy", [("trials", int, dataclasses.field(default=trials)),
                                                 ("kind", str, dataclasses.field(default="sigma"))])

        @signed(config_parameters(Toy))
        def run(data, **options):
            return Toy(**options)
        return run

    for trials in (3, 5):
        run = declare(trials)
        assert inspect.signature(run).parameters["trials"].default == trials == run("d").trials
        assert str(inspect.signature(run)) == f"(data, *, trials: int = {trials}, kind: str = 'sigma')"


def test_the_cli_reads_the_api_defaults_that_the_measures_declare():
    from bgbench.cli.arguments import param_default
    from bgbench.measures.registry import get_measure
    from bgbench.evaluation.metrics import REPLICATES
    import inspect
    of_run = inspect.signature(get_measure("boxsize").of_run).parameters
    assert get_measure("boxsize").config().bins == of_run["bins"].default
    assert get_measure("edits").config().n_boot == REPLICATES == \
        inspect.signature(get_measure("edits").of_run).parameters["n_boot"].default
    from bgbench.comparing import compare_tables
    assert param_default(bgbench.compare, "seed") == inspect.signature(compare_tables).parameters["seed"].default


def test_every_result_has_provenance_a_document_and_a_plain_table(synth_root, tmp_path):
    from bgbench.result import Result
    report = bgbench.evaluate("timm:test_resnet", synth_root, variants=["original", "mixed_rand", "only_bg_t"],
                              mapping="argmax", batch_size=12, device="cpu", seed=0, checkpoint=None, norm="auto",
                              progress=False)
    db = tmp_path / "r.db"
    rid = bgbench.record(report, db)
    noise = bgbench.probe("noise", "timm:test_resnet", synth_root, levels=[0.5], trials=1, progress=False)
    results = [report, noise, bgbench.analyze("boxsize", report, bins=1), bgbench.analyze("leakage", db, rid),
               bgbench.analyze("categories", db, rid), bgbench.compare(rid, rid, store=db, n_boot=50, seed=1),
               bgbench.predict("timm:test_resnet", [synth_root / "original" / "val"], top=2)]
    for result in results:
        assert isinstance(result, Result) and isinstance(result.to_dict(), dict), type(result)
        rows = result.table()
        assert rows and all(isinstance(r, dict) and r.keys() == rows[0].keys() for r in rows), type(result)
    assert report.provenance.kind == "eval" and results[2].provenance is None
    assert {(r["metric"], r["variant"]): r["value"] for r in report.table()}[("accuracy", "original")] == \
        report.accuracy["original"].value
    assert {r["variant"] for r in results[5].table()} == {"original", "mixed_rand", "only_bg_t"}
    assert len(results[6].table()) == 2 * 36  # two top classes of each image


def test_bad_calls_are_one_line(synth_root):
    report = bgbench.evaluate("timm:test_resnet", synth_root, variants=["only_bg_t"], progress=False)
    with pytest.raises(BgbenchError, match="bins") as e:
        bgbench.analyze("boxsize", report, bin=3)
    assert "\n" not in str(e.value)
    with pytest.raises(BgbenchError, match="unknown option color; the options are variants, mapping"):
        bgbench.evaluate("timm:test_resnet", synth_root, color="red")
    with pytest.raises(TypeError):
        bgbench.evaluate("timm:test_resnet", synth_root, ["original"])  # options are keywords
    with pytest.raises(BgbenchError, match="load_model: unknown option color; the options are checkpoint"):
        bgbench.load_model("timm:test_resnet", color="red")
    with pytest.raises(BgbenchError, match="not a probe"):
        bgbench.probe("leakage", "timm:test_resnet", synth_root)
    with pytest.raises(BgbenchError, match="not an analysis"):
        bgbench.analyze("noise", report)
    with pytest.raises(BgbenchError, match="unknown measure"):
        bgbench.analyze("leakgae", report)
    with pytest.raises(BgbenchError, match="Synthetic-9 is drawn"):
        bgbench.build(synth_root / "x", preset="synthetic-9", data=synth_root)
