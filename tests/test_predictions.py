"""Closed models: eval runs from prediction files, the export that writes them, the protocol that makes
runs comparable, and the published rows the leaderboard shows beside them."""
import csv
import shutil

import pytest

import bgbench
from bgbench import protocols
from bgbench.classes import IN9_FOLDERS
from bgbench.errors import BgbenchError
from bgbench.store import Store
from bgbench.measures.eval.config import PredictionFileConfig
from bgbench.prediction_files import export_predictions, predictions_report
from bgbench.models.options import create_model
from bgbench.reporting.leaderboard import leaderboard as leaderboard_rows
from conftest import assert_one_line_error, run_cli


def _export(db, run_id, out):
    """`bgbench export`'s step: a stored eval run written as a predictions file."""
    with Store(db) as s:
        return export_predictions(s, run_id, out)


def _read_back(path, data, **options):
    """`bgbench eval --predictions`'s step: the eval report of a predictions file."""
    return predictions_report(path, data, PredictionFileConfig(**options))


def _leaderboard(db, **options):
    if db is None:
        return leaderboard_rows(None, **options)
    with Store(db) as s:
        return leaderboard_rows(s, **options)


@pytest.fixture(scope="module")
def in9_named(synth_root, tmp_path_factory):
    """The tiny Synthetic-9 with IN-9's class folder names, so that 1000-class models may run on it."""
    root = tmp_path_factory.mktemp("in9named")
    for folder in synth_root.iterdir():
        if (folder / "val").is_dir():
            for old, new in zip(sorted(p.name for p in (folder / "val").iterdir()), IN9_FOLDERS):
                shutil.copytree(folder / "val" / old, root / folder.name / "val" / new)
    return root


@pytest.fixture(scope="module")
def stored(synth_root, in9_named, tmp_path_factory):
    """A store with three eval runs: a 9-class model, and a 1000-class model under either mapping."""
    db = tmp_path_factory.mktemp("pred") / "r.db"
    wide = create_model("timm:test_resnet", num_classes=1000)
    runs = {"dataset": bgbench.record(bgbench.evaluate("timm:test_resnet", synth_root, progress=False), db),
            "argmax": bgbench.record(bgbench.evaluate(wide, in9_named, progress=False), db),
            "superclass": bgbench.record(bgbench.evaluate(wide, in9_named, mapping="superclass", progress=False), db)}
    return db, runs


def _metrics(db, run_id):
    with Store(db) as s:
        return {(m["name"], m["variant"]): (m["value"], m["lo"], m["hi"], m["n"]) for m in s.metrics(run_id)}


@pytest.mark.parametrize("which, space", [("dataset", "dataset"), ("argmax", "imagenet1k"),
                                          ("superclass", "imagenet1k")])
def test_an_exported_run_read_back_gives_the_same_accuracies_categories_and_bg_gap(stored, which, space, synth_root,
                                                                                    in9_named, tmp_path):
    db, runs = stored
    data = synth_root if which == "dataset" else in9_named
    written = _export(db, runs[which], tmp_path / "p.csv")
    assert written["label_space"] == ("dataset" if which == "dataset" else "imagenet1k")
    report = _read_back(tmp_path / "p.csv", data, label_space=space,
                        mapping="superclass" if which == "superclass" else "argmax")
    back = bgbench.record(report, db)
    assert _metrics(db, back) == _metrics(db, runs[which])  # every accuracy and the BG-Gap, with intervals
    a, b = bgbench.analyze("categories", db, runs[which]), bgbench.analyze("categories", db, back)
    assert (a.overall, a.per_class, a.n, a.counts) == (b.overall, b.per_class, b.n, b.counts)
    if which != "dataset":  # the raw ImageNet outputs came along: either mapping re-decides alike
        for mapping in ("argmax", "superclass"):
            a, b = (bgbench.analyze("categories", db, r, mapping=mapping) for r in (runs[which], back))
            assert (a.overall, a.counts) == (b.overall, b.counts)
    pair = bgbench.compare(runs[which], back, store=db)
    assert all(c.diff == 0 and c.test["a_only"] == c.test["b_only"] == 0 for c in pair.variants.values())
    assert pair.bg_gap_diff.value == 0


def test_a_file_of_class_names_counts_what_a_reader_of_the_file_counts(synth_root, tmp_path):
    """Accuracy worked out here from the file itself: pred (a class name) against the image's class folder."""
    rows = []
    for k, path in enumerate(sorted((synth_root / "original" / "val").rglob("*.png"))):
        folder = path.parent.name
        guess = folder if k % 3 else "02_triangle"  # right two times in three, unless the class is triangle
        rows.append((f"{folder}/{path.stem}", "original", guess.split("_", 1)[1] if k % 2 else guess))
    with open(tmp_path / "names.csv", "w", newline="") as f:
        csv.writer(f).writerows([("image_id", "variant", "pred"), *rows])
    report = _read_back(tmp_path / "names.csv", synth_root, name="my-api-model")
    right = sum(image_id.split("/")[0].split("_", 1)[1] == pred.split("_")[-1] for image_id, _, pred in rows)
    assert report.accuracy["original"].value == pytest.approx(right / len(rows))
    assert report.model == "predictions:my-api-model" and report.bg_gap is None
    assert report.provenance.spec["arch"] == "predictions" and report.provenance.config["label_space"] == "dataset"


def test_a_predictions_run_is_ranked_compared_and_reported(stored, synth_root, tmp_path):
    db, runs = stored
    _export(db, runs["dataset"], tmp_path / "closed.csv")
    run = run_cli("eval", "--predictions", tmp_path / "closed.csv", "--data", synth_root, "--db", db, "--quiet",
                  "--json")
    assert run.returncode == 0, run.stderr
    rows = [r for r in _leaderboard(db) if r["model"] == "predictions:closed"]
    assert len(rows) == 1 and rows[0]["source"] == "measured"
    assert rows[0]["mixed_rand"] == _metrics(db, runs["dataset"])[("accuracy", "mixed_rand")][0]
    site = bgbench.report(db, tmp_path / "site", progress=False)
    assert "predictions:closed" in site.index.read_text(encoding="utf-8")


def _good_file(stored, tmp_path):
    db, runs = stored
    _export(db, runs["dataset"], tmp_path / "good.csv")
    return (tmp_path / "good.csv").read_text().splitlines()


def _edit_header(lines, old, new):
    return [lines[0].replace(old, new), *lines[1:]]


def _set_cell(lines, line_no, column, value):
    header = lines[0].split(",")
    cells = lines[line_no - 1].split(",")
    cells[header.index(column)] = value
    return [*lines[:line_no - 1], ",".join(cells), *lines[line_no:]]


MALFORMED = {
    "no pred column": (lambda ls: _edit_header(ls, "pred", "guess"), ["line 1", "lacks pred"]),
    "unknown column": (lambda ls: _edit_header(ls, "confidence", "certainty"), ["line 1", "unknown column"]),
    "unknown variant": (lambda ls: _set_cell(ls, 3, "variant", "nope"), ["line 3", "variant 'nope'"]),
    "unknown image": (lambda ls: _set_cell(ls, 2, "image_id", "00_circle/nope"), ["line 2", "not an image"]),
    "duplicate row": (lambda ls: [*ls, ls[1]], ["appears twice (first on line 2)"]),
    "not a class": (lambda ls: _set_cell(ls, 4, "pred", "cat"), ["line 4", "neither a class index nor"]),
    "an ImageNet index": (lambda ls: _set_cell(ls, 4, "pred", "207"), ["line 4", "--label-space imagenet1k"]),
    "missing image": (lambda ls: [ls[0], *ls[2:]], ["lacks 1 of its", "first:"]),
    "empty cell": (lambda ls: _set_cell(ls, 5, "confidence", ""), ["line 5", "empty confidence"]),
    "not a probability": (lambda ls: _set_cell(ls, 5, "confidence", "1.5"), ["line 5", "outside [0, 1]"]),
    "ImageNet columns": (lambda ls: _edit_header(ls, "confidence", "top5"), ["line 1", "--label-space imagenet1k"]),
    "a cell past csv's field limit": (lambda ls: _set_cell(ls, 2, "image_id", "x" * 200_000),
                                      ["line 2", "not an image"]),
}


@pytest.mark.parametrize("case", list(MALFORMED))
def test_a_malformed_predictions_file_is_a_one_line_error_naming_the_first_bad_row(case, stored, synth_root,
                                                                                   tmp_path):
    mutate, needles = MALFORMED[case]
    (tmp_path / "bad.csv").write_text("\n".join(mutate(_good_file(stored, tmp_path))) + "\n")
    proc = run_cli("eval", "--predictions", tmp_path / "bad.csv", "--data", synth_root, "--db", tmp_path / "r.db",
                   "--quiet")
    assert_one_line_error(proc, "bad.csv", *needles)
    assert len(proc.stderr) < 2000  # a 200,000-character cell is read, and not printed whole


def test_a_predictions_file_that_is_not_utf8_is_a_one_line_error(synth_root, tmp_path):
    (tmp_path / "p.csv").write_bytes(b"image_id,variant,pred\n\xff\xfe\xfa,original,3\n")
    proc = run_cli("eval", "--predictions", tmp_path / "p.csv", "--data", synth_root, "--db", tmp_path / "r.db")
    assert_one_line_error(proc, "cannot read", "p.csv", "utf-8")


def test_probabilities_must_agree_with_the_prediction(synth_root, tmp_path):
    path = next((synth_root / "original" / "val").rglob("*.png"))
    probs = " ".join(["0.5"] + ["0.0625"] * 8)
    (tmp_path / "p.csv").write_text(f"image_id,variant,pred,probs\n{path.parent.name}/{path.stem},original,3,{probs}\n")
    proc = run_cli("eval", "--predictions", tmp_path / "p.csv", "--data", synth_root, "--db", tmp_path / "r.db")
    assert_one_line_error(proc, "line 2", "not the most probable")


@pytest.mark.parametrize("argv", [
    ["challenge", "--sample", "2"], ["probe", "noise"], ["probe", "saliency"],
])
def test_a_model_with_only_predictions_cannot_run_the_challenge_or_the_probes(argv, synth_root, tmp_path):
    cut = 2 if argv[0] == "probe" else 1
    proc = run_cli(*argv[:cut], "--model", "predictions:closed", "--data", synth_root, "--db", tmp_path / "r.db",
                   "--quiet", *argv[cut:])
    assert_one_line_error(proc, "predictions:closed is known only by its predictions")
    edit = run_cli("edit", "--data", synth_root, "--out", tmp_path / "e", "--model", "predictions:closed", "--quiet")
    assert_one_line_error(edit, "known only by its predictions")


def test_export_and_the_eval_of_a_file_refuse_what_does_not_fit(stored, synth_root, tmp_path):
    db, runs = stored
    assert_one_line_error(run_cli("export", "999", "--out", tmp_path / "x.csv", "--db", db), "run 999 not found")
    neither = run_cli("eval", "--data", synth_root, "--db", db)  # argparse: exactly one of the two
    assert neither.returncode == 2 and "one of the arguments --model --predictions is required" in neither.stderr
    both = run_cli("eval", "--predictions", tmp_path / "x.csv", "--model", "timm:test_resnet", "--data", synth_root,
                   "--db", db)
    assert both.returncode == 2 and "not allowed with argument" in both.stderr
    variants = run_cli("eval", "--predictions", tmp_path / "x.csv", "--variants", "original", "--data", synth_root,
                       "--db", db)
    assert_one_line_error(variants, "takes no --variants")


# ---------------------------------------------------------------------------------------------- protocol


def test_a_protocol_fills_in_what_is_unset_and_refuses_what_contradicts_it():
    # in9-v1, by hand: mapping argmax, labels imagenet, templates openai, resize native, fp32, no ten-crop
    assert protocols.resolve("in9-v1", mapping="argmax", labels="auto", resize="auto", templates="openai",
                             precision="fp32", ten_crop=False) == {
        "mapping": "argmax", "labels": "imagenet", "resize": "native", "templates": "openai", "precision": "fp32",
        "ten_crop": False}
    assert protocols.resolve(None, mapping="superclass") == {"mapping": "superclass"}
    for flag, value in (("mapping", "superclass"), ("resize", "none"), ("labels", "dataset"), ("templates", "simple"),
                        ("precision", "bf16-verified"), ("ten_crop", True)):
        with pytest.raises(BgbenchError, match=f"fixes --{flag.replace('_', '-')}"):
            protocols.resolve("in9-v1", **{flag: value})


@pytest.mark.parametrize("argv, needle", [
    (["eval", "--mapping", "superclass"], "fixes --mapping argmax"),
    (["eval", "--resize", "none"], "fixes --resize native"),
    (["eval", "--ten-crop"], "fixes --ten-crop off"),
    (["challenge", "--precision", "bf16-verified"], "fixes --precision fp32"),
])
def test_flags_that_contradict_the_protocol_are_one_line_errors(argv, needle, synth_root, tmp_path):
    proc = run_cli(argv[0], "--model", "timm:test_resnet", "--data", synth_root, "--protocol", "in9-v1", "--db",
                   tmp_path / "r.db", "--quiet", *argv[1:])
    assert_one_line_error(proc, needle)


def test_runs_under_a_protocol_record_it_and_rank_apart(synth_root, tmp_path):
    db = tmp_path / "r.db"
    variants = ["original", "mixed_same", "mixed_rand"]
    under = bgbench.evaluate("timm:test_resnet", synth_root, variants=variants, protocol="in9-v1", progress=False)
    plain = bgbench.evaluate("timm:test_resnet", synth_root, variants=variants, progress=False)
    assert under.provenance.config["protocol"] == "in9-v1" and plain.provenance.config["protocol"] is None
    assert under.provenance.config["protocol_settings"]["resize"] == "native"
    assert under.provenance.spec["resize"] == "native" and plain.provenance.spec["resize"] == "none"
    for report in (under, plain):
        bgbench.record(report, db)
    groups = {r["dataset"]: r["model"] for r in _leaderboard(db, include_reported=False)}
    assert len(groups) == 2 and set(groups.values()) == {"timm:test_resnet"}
    assert sorted(name.rsplit(", ", 1)[1] for name in groups) == ["no protocol", "protocol in9-v1"]
    built = bgbench.load_model("timm:test_resnet")  # resize none: not what the protocol fixes
    with pytest.raises(BgbenchError, match="needs resize native"):
        bgbench.evaluate(built, synth_root, protocol="in9-v1", progress=False)


# ---------------------------------------------------------------------------------------------- published rows


def test_published_rows_hold_paul_and_chens_in9_results_and_every_row_names_its_source():
    rows = {r["model"]: r for r in _leaderboard(None)}
    # printed by the authors' notebook (sayakpaul/robustness-vit, imagenet_results/imagenet_9/ImageNet_9.ipynb):
    # (foregrounds fooled of 4050, original %, mixed_same %, mixed_rand %)
    printed = {"ViT-L/16 (timm vit_large_patch16_224)": (3239, 96.67, 88.49, 81.68),
               "BiT-M R101x3 (timm resnetv2_101x3_bitm)": (3897, 94.32, 81.19, 76.62)}
    for model, (fooled, original, same, rand) in printed.items():
        row = rows[model]
        assert row["challenge"] == pytest.approx(1 - fooled / 4050, abs=5e-5)
        assert (row["original"], row["clean"], row["mixed_same"], row["mixed_rand"]) == pytest.approx(
            (original / 100, original / 100, same / 100, rand / 100))
        assert row["bg_gap"] == pytest.approx((same - rand) / 100)
        assert "Paul & Chen" in row["reference"] and row["source"] == "reported"
    assert all(r["reference"] for r in rows.values())
