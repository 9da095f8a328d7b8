"""Studies: `bgbench study FILE` and `bgbench profile` run every (model, dataset, measure) step the
store lacks, resume after a SIGKILL without recomputing finished steps (counted in the store with
sqlite3), skip what the data cannot support, refuse bad study files before any step, and end with a
report that opens with a scorecard whose cells are the stored runs' metrics."""
import json
import os
import re
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pytest

from bgbench.variants.synth import write_dataset
from conftest import assert_one_line_error, run_cli
from test_report import _severe, browser  # noqa: F401 (the module's headless Chromium fixture)

SRC = Path(__file__).resolve().parents[1] / "src"
MODELS = ("timm:test_resnet", "timm:test_efficientnet")
STUDY = """
models = ["timm:test_resnet", {{model = "timm:test_efficientnet", label = "effnet"}}]
datasets = ["{a}", {{path = "{b}", label = "small"}}]
[measures.eval]
[measures.challenge]
sample = 4
[measures.noise]
levels = ["60/255"]
trials = 1
[measures.categories]
[report]
out = "{out}"
"""


@pytest.fixture(scope="module")
def second(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("synth-small")
    write_dataset(root, per_class=2, size=32, seed=3, split="val", progress=False)
    return root


def _study(folder: Path, a: Path, b: Path) -> Path:
    path = folder / "study.toml"
    path.write_text(STUDY.format(a=a, b=b, out=folder / "report"))
    return path


def _finished(db: Path):
    """(id, kind, model, data fingerprint) of the finished runs, read with sqlite3 (none while the
    store is being created)."""
    with sqlite3.connect(db) as conn:
        try:
            return conn.execute("SELECT id, kind, model, data_fingerprint FROM runs WHERE status IN "
                                "('done', 'sampled') ORDER BY id").fetchall()
        except sqlite3.OperationalError:
            return []


def test_a_killed_study_resumes_without_recomputing_finished_steps(synth_root, second, tmp_path):
    study, db = _study(tmp_path, synth_root, second), tmp_path / "r.db"
    env = {**os.environ, "PYTHONPATH": str(SRC), "OMP_NUM_THREADS": "1"}
    proc = subprocess.Popen([sys.executable, "-m", "bgbench", "study", study, "--db", db, "--quiet"], env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    deadline = time.time() + 300
    while time.time() < deadline and proc.poll() is None:
        if db.exists() and len(_finished(db)) >= 4:
            break
        time.sleep(0.1)
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    assert proc.returncode == -signal.SIGKILL  # killed midway, not finished
    before = _finished(db)
    assert 4 <= len(before) < 12
    done = run_cli("study", study, "--db", db, "--quiet", "--json")
    assert done.returncode == 0, done.stderr
    doc = json.loads(done.stdout)
    after = _finished(db)
    assert after[:len(before)] == before  # the finished runs are kept, none is recomputed
    assert len(after) == 12 and doc["ran"] == 12 - len(before)  # 2 models x 2 datasets x 3 measures
    assert len({(k, m, d) for _, k, m, d in after}) == 12  # one run of each step
    assert all(s["status"].startswith("done (run") for s in doc["steps"])
    again = run_cli("study", study, "--db", db, "--quiet", "--json")
    assert json.loads(again.stdout)["ran"] == 0 and len(_finished(db)) == 12  # a finished study is a no-op
    assert f"[{len(before) + 1}/12]" in done.stderr and "done (run" in done.stderr


def test_the_scorecard_cells_are_the_stored_metrics(synth_root, second, tmp_path):
    study, db = _study(tmp_path, synth_root, second), tmp_path / "r.db"
    assert run_cli("study", study, "--db", db, "--quiet").returncode == 0
    from bgbench.reporting.context import ReportContext, select_subjects
    from bgbench.reporting.scorecard import scorecard
    from bgbench.store import Store
    with Store(db) as store:
        subjects = select_subjects(store)
        for s in subjects:
            s.label = {"timm:test_efficientnet": "effnet"}.get(s.model, s.model)
        data = scorecard(ReportContext(store=store, out=tmp_path / "sc", subjects=subjects))
    # both are random inits, which the rows say whatever the study calls them
    assert [r["label"] for r in data["rows"]] == ["timm:test_resnet [random init, seed 0]",
                                                  "effnet [random init, seed 0]"]
    assert len(data["groups"]) == 2  # one column group per dataset
    conn = sqlite3.connect(db)
    checked, bg_required = 0, []
    for row in data["rows"]:
        base = row["label"].split(" [random init")[0]
        model = "timm:test_efficientnet" if base == "effnet" else base
        for g, cells in zip(data["groups"], row["cells"]):
            for column, c in zip(g["columns"], cells):
                if column["key"] == "categories:bg_required":  # an analysis: checked below against the store
                    bg_required.append((model, g["key"], c))
                    continue
                kind = {"eval": "eval", "challenge": "challenge"}.get(column["key"].split(":")[0], "probe_noise")
                metric, variant = column["key"].split(":")[1:]
                run = conn.execute("SELECT max(id) FROM runs WHERE kind=? AND model=? AND data_fingerprint=? AND "
                                   "status IN ('done','sampled')", (kind, model, g["key"])).fetchone()[0]
                value = conn.execute("SELECT value, lo, hi FROM metrics WHERE run_id=? AND name=? AND variant=?",
                                     (run, metric, variant)).fetchone()
                if c is None:
                    assert value is None or value[0] is None
                    continue
                assert (c["value"], c["lo"], c["hi"]) == tuple(value) and c["run"] == run
                checked += 1
    assert checked >= 2 * 2 * 4  # BG-Gap, ORIGINAL accuracy, challenge accuracy, RFS for each model and dataset
    assert len(bg_required) == 2 * 2
    for model, fingerprint, c in bg_required:  # right on ORIGINAL and ONLY-BG-T, wrong on MIXED-RAND
        run = conn.execute("SELECT max(id) FROM runs WHERE kind='eval' AND model=? AND data_fingerprint=?",
                           (model, fingerprint)).fetchone()[0]
        right = {}
        for variant, image, ok in conn.execute("SELECT variant, image_id, pred = label FROM predictions WHERE "
                                               "run_id=?", (run,)):
            right.setdefault(variant, {})[image] = ok
        ids = right["original"]
        expected = sum(right["original"][i] and right["only_bg_t"][i] and not right["mixed_rand"][i] for i in ids)
        assert c["value"] == pytest.approx(expected / len(ids)) and c["lo"] <= c["value"] <= c["hi"]
    html = (tmp_path / "report" / "index.html").read_text()
    assert html.index('id="scorecard"') < html.index('id="overview"')  # the page opens with it
    # below it, one section per model, with each dataset it was measured on as a subsection
    assert html.count('class="model"') == 2 and html.count('class="dataset-title"') == 4
    assert "<h3 class=\"dataset-title\">on small</h3>" in html  # the study's label for the second dataset
    board = (tmp_path / "report" / "leaderboard.html").read_text()
    assert "effnet (timm:test_efficientnet [random init" in board  # the leaderboard names it as the scorecard does


def test_a_scorecard_cell_links_to_its_section(browser, synth_root, second, tmp_path):  # noqa: F811
    study, db = _study(tmp_path, synth_root, second), tmp_path / "r.db"
    assert run_cli("study", study, "--db", db, "--quiet").returncode == 0
    browser.get((tmp_path / "report" / "index.html").resolve().as_uri())
    assert _severe(browser) == []
    links = browser.find_elements("css selector", "#scorecard td a")
    assert len(links) >= 8
    challenge = [a for a in links if a.get_attribute("href").endswith("-challenge")][0]
    target = challenge.get_attribute("href").split("#")[1]
    challenge.click()
    assert browser.execute_script("return location.hash") == f"#{target}"
    top = browser.execute_script(f"return document.getElementById('{target}').getBoundingClientRect().top")
    assert -1 <= top < 50  # the section is scrolled to the top of the window (sub-pixel rounding)
    assert browser.execute_script(f"return document.getElementById('{target}').className") == "section-challenge"


def test_dry_run_prints_the_plan_and_runs_nothing(synth_root, second, tmp_path):
    study, db = _study(tmp_path, synth_root, second), tmp_path / "r.db"
    proc = run_cli("study", study, "--db", db, "--dry-run")
    assert proc.returncode == 0, proc.stderr
    lines = [ln for ln in proc.stdout.splitlines() if re.match(r"\s*\[\d+/12\]", ln)]
    assert len(lines) == 12 and all("to run" in ln for ln in lines)
    assert "eval timm:test_resnet on " + synth_root.name in proc.stdout  # labels: the model string, or the study's own
    n = len(list((synth_root / "original" / "val").glob("*/*.png")))
    assert f"{n * 8:,} forwards" in lines[0]  # eval: every image of the 8 variants
    assert not db.exists() or _finished(db) == []


def test_profile_skips_what_the_data_cannot_support(synth_root, tmp_path):
    import shutil
    plain = tmp_path / "plain"  # the images without their masks
    for v in ("original", "mixed_same", "mixed_rand"):
        shutil.copytree(synth_root / v, plain / v)
    proc = run_cli("profile", "--model", "timm:test_resnet", "--data", plain, "--db", tmp_path / "r.db", "--out",
                   tmp_path / "p", "--quiet", "--json")
    assert proc.returncode == 0, proc.stderr
    steps = {s["measure"]: s for s in json.loads(proc.stdout)["steps"]}
    assert list(steps) == ["eval", "challenge", "noise", "saliency", "ablate", "features"]
    for name in ("challenge", "noise", "saliency", "ablate", "features"):  # they need the object mask
        assert steps[name]["skip"] == "the dataset has no foreground masks (fg_mask/)"
        assert f"{name} timm:test_resnet on plain: skipped: the dataset has no foreground masks" in proc.stderr
    assert steps["eval"]["run"] is not None and _finished(tmp_path / "r.db")
    assert (tmp_path / "p" / "index.html").is_file()


def test_bad_study_files_are_one_line_errors_before_any_step(synth_root, tmp_path):
    cases = {
        "models = [\"timm:test_resnet\"]\ndatasets = [\"{d}\"]\n[measures.nosuch]\n": "measures.nosuch",
        "models = [\"timm:test_resnet\"]\ndatasets = [\"/no/such/data\"]\n[measures.eval]\n": "datasets[0]",
        "models = [\"timm:no_such_arch\"]\ndatasets = [\"{d}\"]\n[measures.eval]\n": "models[0].model",
        "models = [\"nosuch:x\"]\ndatasets = [\"{d}\"]\n[measures.eval]\n": "models[0].model",
        "models = [\"timm:test_resnet\"\ndatasets = [\"{d}\"]\n": "TOML syntax error",
        "models = [\"timm:test_resnet\"]\ndatasets = [\"{d}\"]\n[measures.noise]\nlevel = 1\n": "measures.noise.level",
        "models = [\"file:/no/model.pt\"]\ndatasets = [\"{d}\"]\n[measures.eval]\n": "models[0].model",
    }
    db = tmp_path / "r.db"
    for i, (text, needle) in enumerate(cases.items()):
        path = tmp_path / f"bad{i}.toml"
        path.write_text(text.format(d=synth_root))
        assert_one_line_error(run_cli("study", path, "--db", db), str(path), needle)
    assert not db.exists() or _finished(db) == []


def test_the_python_api_takes_the_same_structure(synth_root, tmp_path):
    import bgbench
    doc = {"models": ["timm:test_resnet"], "datasets": [str(synth_root)], "measures": {"eval": {}}}
    result = bgbench.study(doc, tmp_path / "r.db", out=tmp_path / "rep", progress=False)
    assert [s.status() for s in result.steps] == [f"done (run {result.ran[0]})"]
    assert (tmp_path / "rep" / "index.html").is_file()
    again = bgbench.study(doc, tmp_path / "r.db", out=tmp_path / "rep", progress=False)
    assert again.ran == [] and again.steps[0].done_run == result.ran[0]


def test_a_probes_pictures_stay_beside_the_store_and_the_report_shows_them(synth_root, tmp_path):
    """The report's folder is the one to share: a probe's own pictures (the features measure's
    heatmap sheets) go beside the store, and the report holds its compressed copies of them."""
    import bgbench
    doc = {"models": ["timm:test_resnet"], "datasets": [str(synth_root)],
           "measures": {"features": {"top_features": 1, "top_images": 2}}}
    (tmp_path / "store").mkdir()
    bgbench.study(doc, tmp_path / "store" / "r.db", out=tmp_path / "rep", progress=False)
    drawn = sorted((tmp_path / "store" / "pictures").rglob("features_class*.png"))
    assert drawn and not (tmp_path / "rep" / "pictures").exists()
    page = (tmp_path / "rep" / "index.html").read_text()
    shown = re.findall(r'src="(figures/[^"]*features-[0-9]+[^"]*)"', page)
    assert len(shown) == len(drawn) and all((tmp_path / "rep" / f).is_file() for f in shown)


def test_edits_are_written_once_per_dataset_and_every_model_is_evaluated_on_them(synth_root, tmp_path):
    study = tmp_path / "edits.toml"
    study.write_text(f'models = ["timm:test_resnet", "timm:test_efficientnet"]\ndatasets = ["{synth_root}"]\n'
                     '[measures.edits]\nlevels = ["remove", "size_0.05"]\n')
    db = tmp_path / "r.db"
    proc = run_cli("study", study, "--db", db, "--quiet", "--json")
    assert proc.returncode == 0, proc.stderr
    steps = json.loads(proc.stdout)["steps"]
    assert [(s["measure"], s["model"], s["dataset"]) for s in steps] == [
        ("edits", None, synth_root.name), ("eval", "timm:test_resnet", f"{synth_root.name} edits"),
        ("eval", "timm:test_efficientnet", f"{synth_root.name} edits")]
    edited = tmp_path / "edits-report" / "edits" / synth_root.name
    assert sorted(p.name for p in edited.iterdir() if p.is_dir()) == ["fg_mask", "original", "remove", "size_0.05"]
    with sqlite3.connect(db) as conn:  # each level's drop, from the stored predictions, paired by image
        runs = conn.execute("SELECT id, model FROM runs WHERE kind='eval' AND status='done' ORDER BY id").fetchall()
        drops = {}
        for run_id, model in runs:
            right = {}
            for variant, image, ok in conn.execute("SELECT variant, image_id, pred = label FROM predictions WHERE "
                                                   "run_id=?", (run_id,)):
                right.setdefault(variant, {})[image] = ok
            drops[model] = {}
            for v in ("remove", "size_0.05"):  # a level may reject an image (too small to shrink): pairs only
                both = sorted(set(right[v]) & set(right["original"]))
                drops[model][v] = sum(right["original"][i] - right[v][i] for i in both) / len(both)
    html = (tmp_path / "edits-report" / "index.html").read_text()
    card = html[html.index('id="scorecard"'):html.index('id="overview"')]
    # two models: the scorecard reads down; the edits' block has a row per level, a column per model
    block = next(b for b in card.split('<table class="scorecard-block"')[1:] if "remove drop" in b)
    models = re.findall(r'<th class="num model">([^<]+?) <span', block)
    for model in ("timm:test_resnet", "timm:test_efficientnet"):
        column = models.index(f"{model} [random init, seed 0]")
        shown = [re.findall(r'-edits">(-?[0-9.]+)%</a>', block.split(f"{v} drop")[1].split("</tr>")[0])[column]
                 for v in ("remove", "size_0.05")]
        assert shown == [f"{100 * drops[model][v]:.1f}" for v in ("remove", "size_0.05")]
    again = run_cli("study", study, "--db", db, "--quiet", "--json")
    assert json.loads(again.stdout)["ran"] == 0  # the edits and both evals are found in the store


def test_an_edit_level_against_one_model_is_refused_in_a_study(synth_root, tmp_path):
    study = tmp_path / "adv.toml"
    study.write_text(f'models = ["timm:test_resnet"]\ndatasets = ["{synth_root}"]\n[measures.edits]\n'
                     'levels = ["complexity_adv"]\n')
    assert_one_line_error(run_cli("study", study, "--db", tmp_path / "r.db"), "measures.edits.levels",
                          "complexity_adv")


def test_every_relative_path_in_a_study_file_is_read_from_its_folder(synth_root, model_ckpt, tmp_path, monkeypatch):
    """A `file:` model beside the study file is found from any working folder, as its datasets are."""
    import shutil
    project = tmp_path / "project"
    (project / "runs").mkdir(parents=True)
    shutil.copy(model_ckpt, project / "runs" / "model.pt")
    study = project / "study.toml"
    study.write_text(f'models = [{{model = "file:runs/model.pt", label = "mine"}}]\n'
                     f'datasets = ["{os.path.relpath(synth_root, project)}"]\n[measures.eval]\n')
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    monkeypatch.chdir(elsewhere)
    proc = run_cli("study", study, "--db", tmp_path / "r.db", "--quiet", "--json")
    assert proc.returncode == 0, proc.stderr
    with sqlite3.connect(tmp_path / "r.db") as conn:
        (model,) = conn.execute("SELECT model FROM runs WHERE kind = 'eval'").fetchone()
    assert Path(model.partition(":")[2]).resolve() == (project / "runs" / "model.pt").resolve()


def test_a_measures_imagenet_and_annotations_are_read_from_the_study_files_folder(synth_root, tmp_path,
                                                                                  monkeypatch):
    """`imagenet` (Spurious and Salient ImageNet's) and `annotations` (Salient ImageNet's Mechanical
    Turk table), relative in a study file, name what lies beside the file, as its datasets do, from
    any working folder; an absolute or `~` path is kept as written."""
    from bgbench.studies import load_study
    project = tmp_path / "project"
    (project / "data" / "imagenet").mkdir(parents=True)
    (project / "data" / "mturk.csv").write_text("WorkerId\n")
    study = project / "study.toml"
    study.write_text(f'models = ["timm:test_resnet"]\ndatasets = ["{synth_root}"]\n'
                     '[measures.spurious_imagenet]\nimagenet = "data/imagenet"\n'
                     '[measures.salient_imagenet]\nimagenet = "~/imagenet"\nannotations = "data/mturk.csv"\n'
                     f'[report]\nout = "{tmp_path / "report"}"\n')
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    monkeypatch.chdir(elsewhere)
    options = {m.name: m.options for m in load_study(study).measures}
    assert Path(options["spurious_imagenet"]["imagenet"]) == project / "data" / "imagenet"
    assert Path(options["salient_imagenet"]["annotations"]) == project / "data" / "mturk.csv"
    assert options["salient_imagenet"]["imagenet"] == "~/imagenet"


def test_the_edits_of_a_dataset_whose_label_is_no_folder_name_keep_its_label(synth_root, tmp_path):
    """A label such as 'my in9' makes a safe folder for its edits; the report still names them by it."""
    study = tmp_path / "named.toml"
    study.write_text(f'models = ["timm:test_resnet"]\ndatasets = [{{path = "{synth_root}", label = "my in9"}}]\n'
                     '[measures.edits]\nlevels = ["remove"]\n')
    proc = run_cli("study", study, "--db", tmp_path / "r.db", "--quiet")
    assert proc.returncode == 0, proc.stderr
    page = (tmp_path / "named-report" / "index.html").read_text()
    assert "my in9 edits" in page and not (tmp_path / "named-report" / "edits" / "my in9").exists()


def test_dry_run_counts_the_noise_grid_of_each_dataset(synth_root, tmp_path, monkeypatch):
    """A study that names no noise levels counts each dataset's own grid: RIVAL10's 7 σ levels on
    Synthetic-9, Hard ImageNet's 6 (`rfs.py`) on Hard ImageNet's data."""
    from bgbench.data.hardimagenet import IMAGENET_ENV
    from helpers.hardimagenet_tree import write_tree
    hard, imagenet, made = write_tree(tmp_path / "hin", per_class=1)
    monkeypatch.setenv(IMAGENET_ENV, str(imagenet))
    study = tmp_path / "study.toml"
    study.write_text(f'models = ["timm:test_resnet"]\ndatasets = ["{synth_root}", "{hard}"]\n'
                     f'[measures.noise]\ntrials = 1\n[report]\nout = "{tmp_path / "report"}"\n')
    proc = run_cli("study", study, "--db", tmp_path / "r.db", "--dry-run")
    assert proc.returncode == 0, proc.stderr
    lines = [ln for ln in proc.stdout.splitlines() if re.match(r"\s*\[\d+/2\]", ln)]
    synth = len(list((synth_root / "original" / "val").glob("*/*.png")))
    assert len(lines) == 2 and f"{synth * 2 * 7:,} forwards" in lines[0]
    assert f"{len(made) * 2 * 6:,} forwards" in lines[1]
