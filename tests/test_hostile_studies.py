"""Hostile and careless study files: every value is checked by type and range before any step runs
(with the command line's rules), a dry run writes nothing, and a study writes only inside its own
folders. Each test asserts what is on disk afterwards, not only the exit status."""
import json
from pathlib import Path

import pytest

from conftest import assert_one_line_error, run_cli


def _study(tmp_path, synth_root, body: str, models='models = ["timm:test_resnet"]', datasets=None,
           out=None) -> Path:
    datasets = datasets or f'datasets = ["{synth_root}"]'
    out = out if out is not None else f'\n[report]\nout = "{tmp_path / "report"}"\n'
    path = tmp_path / "study.toml"
    path.write_text(f"{models}\n{datasets}\n{body}{out}")
    return path


def _nothing_ran(tmp_path):
    """No run was recorded and no report folder was made."""
    db = tmp_path / "r.db"
    if db.exists():
        from bgbench.store import Store
        with Store(db) as store:
            assert store.runs() == []
    assert not (tmp_path / "report").exists()


@pytest.mark.parametrize("body, needles", [
    ("[measures.eval]\n[measures.challenge]\nsample = -5\n", ["measures.challenge", "--sample must be at least 1"]),
    ("[measures.eval]\n[measures.challenge]\nsample = \"ten\"\n", ["measures.challenge.sample", "a whole number"]),
    ("[measures.eval]\n[measures.challenge]\nsample = nan\n", ["measures.challenge.sample", "nan"]),
    ("[measures.eval]\n[measures.challenge]\nverify_safety = inf\n", ["measures.challenge.verify_safety",
                                                                      "a finite number"]),
    ("[measures.noise]\nlevels = [inf]\n", ["measures.noise.levels", "inf"]),
    ("[measures.noise]\ntrials = \"3\"\n", ["measures.noise.trials", "a whole number"]),
    ("[measures.noise]\ntrials = 0\n", ["measures.noise", "--trials must be at least 1"]),
    ("[measures.eval]\nmapping = 3\n", ["measures.eval.mapping", "a string"]),
    ("[measures.eval]\nmapping = \"majority\"\n", ["measures.eval", "mapping must be one of"]),
    ("[measures.eval]\nvariants = \"original\"\n", ["measures.eval.variants", "a list"]),
    ("[measures.eval]\nbatch_size = 1e9\n", ["measures.eval.batch_size", "a whole number"]),
])
def test_a_bad_measure_value_stops_the_study_before_any_step(body, needles, synth_root, tmp_path):
    proc = run_cli("study", _study(tmp_path, synth_root, body), "--db", tmp_path / "r.db")
    assert_one_line_error(proc, "study.toml", *needles)
    _nothing_ran(tmp_path)


@pytest.mark.parametrize("models, needles", [
    ('models = [{model = "timm:test_resnet", label = 5}]', ["models[0].label", "a string"]),
    ('models = [{model = "timm:test_resnet", norm = ["in9"]}]', ["models[0].norm", "a string"]),
    ('models = [{model = "timm:test_resnet", resize = "huge"}]', ["models[0].resize must be one of"]),
    ('models = [{model = "timm:test_resnet", pretrained = "yes"}]', ["models[0].pretrained", "true or false"]),
    ('models = [{model = "timm:test_resnet", class_map = "nowhere.json"}]', ["models[0].class_map", "not a file"]),
    ('models = [{model = 7}]', ["models[0]", "a model string"]),
])
def test_a_bad_model_value_stops_the_study_before_any_step(models, needles, synth_root, tmp_path):
    proc = run_cli("study", _study(tmp_path, synth_root, "[measures.eval]\n", models=models), "--db", tmp_path / "r.db")
    assert_one_line_error(proc, *needles)
    _nothing_ran(tmp_path)


def test_report_out_must_be_a_folder_of_its_own(synth_root, tmp_path):
    target = tmp_path / "a-file.txt"
    target.write_text("keep me")
    proc = run_cli("study", _study(tmp_path, synth_root, "[measures.eval]\n", out=f'\n[report]\nout = "{target}"\n'),
                   "--db", tmp_path / "r.db")
    assert_one_line_error(proc, "report.out", "is a file")
    assert target.read_text() == "keep me"
    proc = run_cli("study", _study(tmp_path, synth_root, "[measures.eval]\n", out='\n[report]\nout = "/"\n'),
                   "--db", tmp_path / "r.db")
    assert_one_line_error(proc, "report.out", "a root")
    proc = run_cli("study", _study(tmp_path, synth_root, "[measures.eval]\n", out="\n[report]\nout = 5\n"),
                   "--db", tmp_path / "r.db")
    assert_one_line_error(proc, "report.out", "a folder's path")
    _nothing_ran(tmp_path)


def test_a_report_folder_holding_another_programs_page_is_refused_before_any_step(synth_root, tmp_path):
    report = tmp_path / "report"
    report.mkdir()
    (report / "index.html").write_text("<h1>my site</h1>")
    proc = run_cli("study", _study(tmp_path, synth_root, "[measures.eval]\n"), "--db", tmp_path / "r.db")
    assert_one_line_error(proc, "index.html", "no bgbench report wrote")
    assert (report / "index.html").read_text() == "<h1>my site</h1>" and sorted(p.name for p in report.iterdir()) == \
        ["index.html"]
    from bgbench.store import Store
    if (tmp_path / "r.db").exists():
        with Store(tmp_path / "r.db") as store:
            assert store.runs() == []


def test_profile_out_naming_a_file_is_refused_before_any_run(synth_root, tmp_path):
    target = tmp_path / "report.html"
    target.write_text("<p>mine</p>")
    proc = run_cli("profile", "--model", "timm:test_resnet", "--data", synth_root, "--out", target,
                   "--db", tmp_path / "r.db")
    assert_one_line_error(proc, "--out", "is a file")
    assert target.read_text() == "<p>mine</p>"
    _nothing_ran(tmp_path)


def test_a_dry_run_writes_nothing(synth_root, tmp_path):
    db = tmp_path / "deep" / "store" / "r.db"
    proc = run_cli("study", _study(tmp_path, synth_root, "[measures.eval]\n[measures.edits]\nlevels = [\"remove\"]\n"),
                   "--db", db, "--dry-run", "--json")
    assert proc.returncode == 0, proc.stderr
    assert [s["status"] for s in json.loads(proc.stdout)["steps"]] == ["to run"] * 3
    assert not (tmp_path / "deep").exists() and not (tmp_path / "report").exists()


def test_a_dataset_label_never_becomes_a_path_outside_the_study(synth_root, tmp_path):
    """A label such as '../../victim' names the dataset in the report; its edits still go under
    OUT/edits/, and a folder it points at is left as it was."""
    victim = tmp_path / "victim"
    victim.mkdir()
    (victim / "manifest.csv").write_text("precious\n")
    (victim / "notes.txt").write_text("mine\n")
    out = tmp_path / "out" / "report"
    datasets = f'datasets = [{{path = "{synth_root}", label = "../../victim"}}]'
    study = _study(tmp_path, synth_root, '[measures.edits]\nlevels = ["remove"]\n', datasets=datasets,
                   out=f'\n[report]\nout = "{out}"\n')
    doc = json.loads(run_cli("study", study, "--db", tmp_path / "r.db", "--json", "--quiet").stdout)
    assert (victim / "manifest.csv").read_text() == "precious\n" and (victim / "notes.txt").read_text() == "mine\n"
    edited = [Path(s["data"]) for s in doc["steps"] if s["measure"] == "eval"]
    assert edited and all(p.resolve().is_relative_to((out / "edits").resolve()) for p in edited)
    assert (edited[0] / "manifest.csv").is_file()
    assert any(s["dataset"] == "../../victim edits" for s in doc["steps"])  # the label itself is kept for people


def test_two_labels_that_make_the_same_folder_name_get_two_folders():
    from bgbench.data.owned import safe_name
    assert safe_name("in9") == "in9"
    names = {safe_name(x) for x in ("a/b", "a b", "a-b", "..", ".")}
    assert len(names) == 5 and all("/" not in n and n not in (".", "..") for n in names)


def test_two_datasets_with_the_same_images_are_refused_before_any_step(synth_root, tmp_path):
    """A copy of a dataset under another folder would share the original's runs and its column."""
    import shutil
    copy = tmp_path / "copy"
    shutil.copytree(synth_root, copy)
    datasets = f'datasets = ["{synth_root}", {{path = "{copy}", label = "mine"}}]'
    proc = run_cli("study", _study(tmp_path, synth_root, "[measures.eval]\n", datasets=datasets),
                   "--db", tmp_path / "r.db")
    assert_one_line_error(proc, "the same images", "mine")
    _nothing_ran(tmp_path)


def test_a_missing_second_dataset_is_named_when_its_step_is_skipped(synth_root, tmp_path):
    """A shortcut measure's folder option that does not exist is the reason given, before any other."""
    body = '[measures.eval]\n[measures.texture]\nstylized = "no-such-folder"\n'
    proc = run_cli("study", _study(tmp_path, synth_root, body), "--db", tmp_path / "r.db", "--dry-run")
    assert proc.returncode == 0, proc.stderr
    assert "no Stylized-ImageNet" in proc.stdout + proc.stderr and "no-such-folder" in proc.stdout + proc.stderr


def test_two_checkpoints_of_one_architecture_are_two_scorecard_rows(synth_root, model_ckpt, tmp_path):
    """Labels `a` and `a2` on two checkpoints of `timm:test_resnet` (one model string): each label its
    own scorecard row with its own checkpoint's accuracy, in the study's JSON, the report and the
    leaderboard."""
    import torch
    other = tmp_path / "other.pt"
    saved = torch.load(model_ckpt, weights_only=True)
    saved["state_dict"] = {k: (v.flip(0) if v.is_floating_point() and v.ndim else v)
                           for k, v in saved["state_dict"].items()}  # other weights, the same architecture
    torch.save(saved, other)
    models = (f'models = [{{model = "timm:test_resnet", checkpoint = "{model_ckpt}", label = "a"}}, '
              f'{{model = "timm:test_resnet", checkpoint = "{other}", label = "a2"}}]')
    study = _study(tmp_path, synth_root, "[measures.eval]\n", models=models)
    proc = run_cli("study", study, "--db", tmp_path / "r.db", "--quiet", "--json")
    assert proc.returncode == 0, proc.stderr
    doc = json.loads(proc.stdout)
    from bgbench.store import Store
    with Store(tmp_path / "r.db") as store:
        by_sha = {r["checkpoint_sha256"]: r["id"] for r in store.runs("eval")}
        clean = {sha: next(m["value"] for m in store.metrics(i) if (m["name"], m["variant"]) == ("accuracy", "original"))
                 for sha, i in by_sha.items()}
    import hashlib
    want = {"a": clean[hashlib.sha256(model_ckpt.read_bytes()).hexdigest()],
            "a2": clean[hashlib.sha256(other.read_bytes()).hexdigest()]}
    got = {r["model"]: r["value"] for r in doc["scorecard"] if r["measure"] == "eval:accuracy:original"}
    assert got == pytest.approx(want), sorted({(r["model"], r["measure"]) for r in doc["scorecard"]})
    page = (tmp_path / "report" / "index.html").read_text()
    board = (tmp_path / "report" / "leaderboard.html").read_text()
    for label in ("a", "a2"):
        assert f">{label}<" in page or f">{label} " in page, label
        assert f"{label} (" in board, label


def test_a_300_character_label_runs_and_reports(synth_root, tmp_path):
    """A label longer than a file name may be: every file named after it (the job's, the pictures',
    the report's model page, an export) is cut short with a hash, and the label is shown whole."""
    label = "resnet-" + "x" * 293
    study = _study(tmp_path, synth_root, "[measures.eval]\n[measures.noise]\ntrials = 1\nlevels = [0.5]\n",
                   models=f'models = [{{model = "timm:test_resnet", label = "{label}"}}]')
    proc = run_cli("study", study, "--db", tmp_path / "r.db", "--quiet", "--json")
    assert proc.returncode == 0 and "Traceback" not in proc.stderr, proc.stderr
    assert {r["model"] for r in json.loads(proc.stdout)["scorecard"]} == {f"{label} [random init, seed 0]"}
    assert label in (tmp_path / "report" / "index.html").read_text()
    proc = run_cli("export", "--scorecard", "--db", tmp_path / "r.db", "--out", tmp_path / "export")
    assert proc.returncode == 0, proc.stderr
    names = [p.name for p in tmp_path.rglob("*")]
    assert max(len(n) for n in names) <= 100, max(names, key=len)
