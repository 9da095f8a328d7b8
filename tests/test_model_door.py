"""One door to a model: `bgbench.load_model` (`ModelOptions` and `models.options.build`), which the
API and the CLI both call, so a zero-shot head, a norm or a trusted checkpoint resolve alike from
`bgbench probe NAME` and `bgbench.probe(NAME, ...)`; and the model flags are written once, in
`ModelOptions`' metadata."""
import dataclasses
import json

import pytest
import torch

import bgbench
from bgbench.errors import CheckpointError
from bgbench.models.inputs import IMAGENET_MEAN
from bgbench.models.options import ModelOptions
from bgbench.options import flagged_fields
from bgbench.store import Store
from conftest import run_cli
from helpers.foundation_models import tiny_clip


@pytest.fixture(scope="module")
def clip_dir(tmp_path_factory):
    return tiny_clip(tmp_path_factory.mktemp("clip") / "tiny")


@pytest.mark.parametrize("probe", ["ablate", "saliency", "noise"])  # features, attribution: timm networks only
def test_a_zero_shot_probe_model_has_one_label_set_from_api_and_cli(probe, clip_dir, synth_root, tmp_path):
    """Synthetic-9's folders are not IN-9's, so 'auto' labels mean the dataset's class names: both
    ways must read them from the data (the API used to build some probes' models without it)."""
    db = tmp_path / "r.db"
    proc = run_cli("probe", probe, "--model", f"openclip:{clip_dir}", "--data", synth_root, "--db", db, "--json",
                   "--quiet", "--templates", "simple")
    assert proc.returncode == 0, proc.stderr[-2000:]
    with Store(db) as store:
        cli_spec = json.loads(store.get_run(json.loads(proc.stdout)["run_id"])["spec"])
    api = bgbench.probe(probe, f"openclip:{clip_dir}", synth_root, templates="simple", progress=False)
    api_spec = api.provenance.spec
    zs = api_spec["extra"]["zero_shot"]
    assert zs["label_set"] == "dataset" and zs["class_names"] == cli_spec["extra"]["zero_shot"]["class_names"]
    assert json.loads(json.dumps(api_spec)) == cli_spec


def test_norm_and_trust_checkpoint_reach_the_model_from_the_api(synth_root, tmp_path):
    res = bgbench.probe("ablate", "timm:test_resnet", synth_root, norm="imagenet", progress=False)
    assert res.provenance.spec["mean"] == pytest.approx(list(IMAGENET_MEAN))
    net = torch.nn.Sequential(torch.nn.Conv2d(3, 4, 3), torch.nn.AdaptiveAvgPool2d(1), torch.nn.Flatten(),
                              torch.nn.Linear(4, 9))
    torch.save(net, tmp_path / "whole.pt")
    with pytest.raises(CheckpointError, match="--trust-checkpoint"):
        bgbench.evaluate(f"file:{tmp_path / 'whole.pt'}", synth_root, variants=["original"], progress=False)
    report = bgbench.evaluate(f"file:{tmp_path / 'whole.pt'}", synth_root, variants=["original"], progress=False,
                              trust_checkpoint=True)
    assert report.provenance.spec["arch"] == "pickled"


def test_the_model_flags_are_modeloptions_fields_in_every_model_command():
    from bgbench.cli import build_parser
    from test_readme import option_actions, resolve
    flags = {spec["name"] for _, spec in flagged_fields(ModelOptions)}
    assert {"--model", "--checkpoint", "--pretrained", "--class-map", "--trust-checkpoint", "--norm", "--resize",
            "--labels", "--templates", "--channels-last", "--compile", "--mean", "--std", "--input-size"} == flags
    build_parser()
    for cmd in ("eval", "challenge", "probe noise", "probe saliency", "probe ablate", "probe features",
                "probe attribution", "edit", "train", "profile", "predict"):
        sub, _, _ = resolve(cmd.split())
        assert flags <= set(option_actions(sub)), cmd
    names = [f.name for f in dataclasses.fields(ModelOptions)]
    assert len(names) == len(set(names))


def test_load_model_is_the_door_the_api_and_the_cli_call(synth_root, tmp_path, monkeypatch):
    """Both paths reach `models.options.load_model`, whose model carries what `build` sets: its
    identity (as a run records it), its class map file, and the speed-ups asked for."""
    import bgbench.models.options as door
    from bgbench.cli import main
    seen = []
    real = door.load_model

    def spy(model, **options):
        seen.append(model)
        return real(model, **options)
    monkeypatch.setattr(door, "load_model", spy)
    monkeypatch.setattr("bgbench.api.load_model", spy)
    bgbench.evaluate("timm:test_resnet", synth_root, variants=["original"], progress=False)
    assert main(["eval", "--model", "timm:test_resnet", "--data", str(synth_root), "--variants", "original",
                 "--db", str(tmp_path / "r.db"), "--quiet", "--rerun"]) == 0
    assert seen == ["timm:test_resnet", "timm:test_resnet"]
    (tmp_path / "map.json").write_text(json.dumps({"0": "00_circle"}))
    model = bgbench.load_model("timm:test_resnet", norm="imagenet", class_map=tmp_path / "map.json",
                               channels_last=True)
    assert model.identity["norm"] == "imagenet" and model.identity["class_map"]["file"] == "map.json"
    assert model.class_map_file == str(tmp_path / "map.json")
    convs = [w for w in model.net.parameters() if w.dim() == 4 and w.shape[2] > 1]
    assert convs and all(w.is_contiguous(memory_format=torch.channels_last) for w in convs)


def test_an_unknown_zoo_name_is_refused_by_its_peek_as_by_its_build():
    """A study's plan peeks each model before any step runs: a misspelt zoo name must be refused
    there, in the words building it uses, not only once its step has started."""
    from bgbench.models.options import create_model, peek_model
    with pytest.raises(CheckpointError, match="unknown zoo model 'no_such_net'") as peeked:
        peek_model("zoo:no_such_net")
    with pytest.raises(CheckpointError) as built:
        create_model("zoo:no_such_net")
    assert str(peeked.value) == str(built.value)
