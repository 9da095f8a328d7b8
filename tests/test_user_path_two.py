"""The user's path, part two (issue 46): a hub name fails at once when the hub cannot be reached,
and the protocol (class map, normalization, input size) travels with an exported result.

The hub is made unreachable by pointing huggingface_hub at a closed local port (nothing leaves
the machine); its retry loop is caught by its own sleep, which must never run.
"""
import csv
import hashlib
import json
import time

import pytest

from conftest import run_cli
from helpers.hub_cache import TAG, use_offline_hub, write_timm_weights

MODEL = f"timm:{TAG}"


@pytest.fixture
def unreachable_hub(tmp_path, monkeypatch):
    """An empty cache, HF_HUB_OFFLINE unset, the endpoint a closed port; a retry is a failure."""
    import huggingface_hub.constants as constants
    import huggingface_hub.utils._http as http
    monkeypatch.delenv("HF_HUB_OFFLINE", raising=False)
    monkeypatch.setattr(constants, "HF_HUB_OFFLINE", False)
    monkeypatch.setattr(constants, "HF_HOME", str(tmp_path / "hf"))
    monkeypatch.setattr(constants, "HF_HUB_CACHE", str(tmp_path / "hf" / "hub"))
    monkeypatch.setattr(constants, "ENDPOINT", "http://127.0.0.1:9")
    monkeypatch.setattr(http.time, "sleep", lambda s: pytest.fail(f"the hub client retried (sleep {s}s)"))
    return constants


@pytest.mark.parametrize("model", [MODEL, "hf:facebook/convnext-tiny-224"])
def test_a_hub_name_fails_at_once_when_the_hub_cannot_be_reached(model, unreachable_hub):
    from bgbench.errors import BgbenchError
    from bgbench.models.options import create_model
    import transformers  # noqa: F401 - imported before the clock starts: the bound is the failure's, not imports'
    t0 = time.perf_counter()
    with pytest.raises(BgbenchError) as e:
        create_model(model)
    assert time.perf_counter() - t0 < 5  # the bound; the retry loop took over a minute
    assert "127.0.0.1 cannot be reached" in str(e.value) and "\n" not in str(e.value)


def test_hf_hub_offline_fails_at_once_too(unreachable_hub, monkeypatch):
    from bgbench.errors import BgbenchError
    from bgbench.models.options import create_model
    monkeypatch.setattr(unreachable_hub, "HF_HUB_OFFLINE", True)
    with pytest.raises(BgbenchError, match="HF_HUB_OFFLINE is set"):
        create_model(MODEL)


# ------------------------------------------------------------------------------------------------ exports


def _canonical_sha256(class_map: dict, classes) -> str:
    """The sha256 of a class map's table as canonical JSON: label -> sorted ImageNet indices."""
    table = {str(k): [] for k in range(len(classes))}
    for index, folder in class_map.items():
        table[str(classes.index(folder))].append(int(index))
    return hashlib.sha256(json.dumps({k: sorted(v) for k, v in table.items()}, sort_keys=True).encode()).hexdigest()


def test_exports_carry_the_class_map_normalization_and_input_size(synth_root, tmp_path, monkeypatch):
    """Two evals of one 1000-class model under two class maps are two rows that say which map each
    used (name and sha256), with the normalization (and where it came from) and the input size."""
    use_offline_hub(monkeypatch, tmp_path / "hf")
    write_timm_weights(tmp_path / "hf")
    classes = sorted(p.name for p in (synth_root / "original" / "val").iterdir())
    maps = {"a.json": {str(100 + 7 * k): c for k, c in enumerate(classes)},
            "b.json": {str(200 + 3 * k): c for k, c in enumerate(classes)}}
    db = tmp_path / "r.db"
    for name, table in maps.items():
        (tmp_path / name).write_text(json.dumps(table))
        proc = run_cli("eval", "--model", MODEL, "--class-map", tmp_path / name, "--data", synth_root, "--variants",
                       "original", "mixed_rand", "mixed_same", "--db", db, "--quiet")
        assert proc.returncode == 0, proc.stderr
    proc = run_cli("export", "--scorecard", "--out", tmp_path / "pub", "--db", db, "--json")
    assert proc.returncode == 0, proc.stderr
    doc = json.loads(proc.stdout)
    with open(doc["csv"], newline="") as f:
        rows = {r["class_map"]: r for r in csv.DictReader(f)}
    assert sorted(rows) == ["a.json", "b.json"]
    for name, row in rows.items():
        assert row["class_map_sha256"] == _canonical_sha256(maps[name], classes)
        # the tag's pretrained config: mean = std = 0.5, 160 px (helpers.hub_cache)
        assert (row["norm_mean"], row["norm_std"], row["norm_source"]) == ("0.5 0.5 0.5", "0.5 0.5 0.5", "model")
        assert (row["input_size"], row["resize"]) == ("160x160", "native")
    infos = [json.loads(open(p).read()) for p in doc["model_info"]]
    assert sorted((i["class_map"], i["class_map_sha256"]) for i in infos) == sorted(
        (n, _canonical_sha256(t, classes)) for n, t in maps.items())
    assert all(i["norm_mean"] == [0.5, 0.5, 0.5] and i["input_size"] == "160x160" for i in infos)


# ------------------------------------------------------------------------------------------------ reuse


@pytest.mark.parametrize("command", [["eval", "--variants", "original", "mixed_same", "mixed_rand"],
                                     ["challenge"]])
def test_eval_and_challenge_show_a_finished_run_again_and_rerun_measures_anew(command, synth_root, tmp_path):
    """The same model, weights, options and data: the finished run is shown again (the same output),
    nothing new is stored; `--rerun` makes a new run; another option is another run."""
    from bgbench.store import Store
    args = [command[0], "--model", "timm:test_resnet", "--data", synth_root, *command[1:], "--db", tmp_path / "r.db",
            "--quiet"]
    first = run_cli(*args)
    assert first.returncode == 0, first.stderr
    again = run_cli(*args)
    assert again.returncode == 0, again.stderr
    assert f"reusing {command[0]} run 1: it is finished" in again.stderr and "--rerun" in again.stderr
    assert again.stdout == first.stdout
    with Store(tmp_path / "r.db") as store:
        assert [r["id"] for r in store.runs(command[0])] == [1]
    forced = run_cli(*args, "--rerun")
    assert forced.returncode == 0 and "reusing" not in forced.stderr
    other = run_cli(*args, "--seed", 1)
    assert other.returncode == 0 and "reusing" not in other.stderr
    with Store(tmp_path / "r.db") as store:
        assert [r["id"] for r in store.runs(command[0])] == [1, 2, 3]


# ------------------------------------------------------------------------------------------------ threads


@pytest.mark.parametrize("environ, cores, load, threads", [
    ({}, 2, 5.2, 1),  # a 2-core machine with four other jobs: one thread
    ({}, 16, 15.0, 1),  # fewer than two idle cores
    ({}, 16, 0.3, None),  # idle: torch's own choice
    ({"OMP_NUM_THREADS": "4"}, 2, 5.2, None),  # the user (or torchrun) said it
    ({"BGBENCH_THREADS": "3"}, 16, 0.0, 3)])
def test_a_busy_machine_gets_one_torch_thread_per_process(environ, cores, load, threads):
    from bgbench.distributed import cpu_threads
    assert cpu_threads(environ, cores=cores, load=load) == threads


def test_a_bad_bgbench_threads_is_one_line():
    from bgbench.distributed import cpu_threads
    from bgbench.errors import BgbenchError
    with pytest.raises(BgbenchError, match="BGBENCH_THREADS must be a whole number"):
        cpu_threads({"BGBENCH_THREADS": "many"})


# ------------------------------------------------------------------------------------------------ hints


def test_counts_and_rounded_zeros_read_as_words_and_numbers():
    from bgbench.console import plural
    from bgbench.evaluation.metrics import interval
    assert (plural(1, "model"), plural(2, "model"), plural(0, "image")) == ("1 model", "2 models", "0 images")
    pct = lambda v: f"{100 * v:.1f}%"  # noqa: E731
    assert interval(-0.0001, 0.05, 7, pct) == "[0.0%, 5.0%]"
    assert interval(-0.0004, 0.2, 7, lambda v: f"{v:+.3f}") == "[+0.000, +0.200]"
    assert interval(-0.02, 0.05, 7, pct) == "[-2.0%, 5.0%]"


def test_an_empty_shortcut_table_names_the_commands_that_fill_it(tmp_path):
    from bgbench.measures.shortcuts.table import ShortcutTable
    text = ShortcutTable(blocks=[]).text()
    assert "no stored run measures a shortcut" in text and "bgbench probe watermark" in text


def test_dfr_says_what_a_tie_at_zero_means_and_what_to_do():
    import numpy as np
    from bgbench.training.dfr import HeadFit, head_fit_summary
    tie = HeadFit(np.zeros((2, 2)), np.zeros(2), 1.0, {1.0: 0.0, 0.3: 0.0}, 8, 1, 8, True,
                  extra={"held_out_mean_accuracy": {"1.0": 0.5, "0.3": 0.5}})
    line = head_fit_summary(tie)
    assert "the choice of C is a guess" in line and "--held-out" in line


def test_the_eval_group_table_stays_aligned_with_long_group_names(tmp_path):
    from bgbench.evaluation.metrics import Estimate
    from bgbench.measures.eval.results import EvalReport

    class Groups:
        groups = [{"group": "a very long group name indeed (water, land)", "acc": 0.5, "lo": 0.1, "hi": 0.9, "n": 4},
                  {"group": "short", "acc": 0.25, "lo": 0.05, "hi": 0.7, "n": 4}]

        def headline(self):
            return "worst group: short"

    report = EvalReport("m", "d", {}, accuracy={"original": Estimate(0.5, 0.2, 0.8, 8)}, groups={"original": Groups()})
    rows = [ln for ln in report.text().splitlines() if ln.startswith("  ")]
    assert len(rows) == 2 and len({ln.index("%") for ln in rows}) == 1


def test_saliency_and_feature_sections_name_an_imagenet_models_classes():
    """A 1000-class model's predicted classes are named as `bgbench predict` names them (timm's
    ImageNet descriptions, read here from timm's own file), not 'class 450'."""
    from pathlib import Path
    import timm
    from bgbench.measures.common.names import prediction_namer
    synsets = (Path(timm.__file__).parent / "data" / "_info" / "imagenet_synsets.txt").read_text().split()
    words = dict(line.split("\t", 1) for line in
                 (Path(timm.__file__).parent / "data" / "_info" / "imagenet_synset_to_lemma.txt").read_text()
                 .splitlines())
    name = prediction_namer(["a", "b"], dataset_labels=False)
    assert name(450) == f"{words[synsets[450]]} (450)"
    assert prediction_namer(["a", "b"], dataset_labels=True)(1) == "b"


def test_galleries_name_a_miss_of_a_custom_class_map_without_calling_it_in9s():
    from bgbench.measures.examples import class_namer
    name = class_namer(["cat", "cup", "person"])
    assert (name(1), name(-1), name(255)) == ("cup", "none of its classes", "none of its classes")


def test_a_studys_default_label_keeps_the_models_scheme(tmp_path):
    """`profile --model zoo:efficientnet_lite0` named it 'efficientnet_lite0' in the plan, the scorecard
    and the report; a model file keeps its short name (its folder's, for a model.pt)."""
    from bgbench.studies.spec import profile_study
    (tmp_path / "runs" / "erm").mkdir(parents=True)
    (tmp_path / "runs" / "erm" / "model.pt").write_bytes(b"")
    study = profile_study(["zoo:efficientnet_lite0", "timm:resnet50.a1_in1k", f"file:{tmp_path}/runs/erm/model.pt"],
                          [str(tmp_path)], measures=["eval"])
    assert [m.label for m in study.models] == ["zoo:efficientnet_lite0", "timm:resnet50.a1_in1k", "erm"]
