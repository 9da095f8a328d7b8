"""Each measure's declared cost in forwards (`Measure.forwards`, which the study plan and the
manual's measure pages show) against the forwards a run actually makes: every image that enters
the network's stem convolution is counted by a hook, whatever path the measure takes."""
import numpy as np
import pytest
import torch

import bgbench
from bgbench.data.resolve import resolve_layout
from bgbench.measures.registry import LAYOUT_NEEDS, get_measure, list_measures

#: Every measure that runs a model on IN-9-layout data (those that read ImageNet's own images are
#: counted alike in test_shortcuts' trees; a benchmark's own measure, `LAYOUT_NEEDS`, in its test file): a
#: new one is checked here with no change.
RUNS = [m.name for m in list_measures()
        if m.command in ("probe", "own") and not {"imagenet", *LAYOUT_NEEDS} & set(m.needs)]
#: Options that keep a run small (the keys a study file takes); the others run at their defaults.
OPTIONS = {
    "eval": {"variants": ["original", "mixed_rand"]},
    "noise": {"levels": ["60/255", "120/255"], "trials": 2},
    "features": {"top_features": 2, "top_images": 2},
}


class Counter:
    """Images through the first convolution of a network (each forward passes it once)."""

    def __init__(self, model: torch.nn.Module):
        self.images = 0
        stem = next(m for m in model.modules() if isinstance(m, torch.nn.Conv2d))
        self.handle = stem.register_forward_hook(self._count)

    def _count(self, module, inputs, output):
        self.images += int(inputs[0].shape[0])


def _run(name: str, model, data, options: dict, store):
    if name == "eval":
        return bgbench.evaluate(model, data, progress=False, **options)
    if name == "challenge":
        return bgbench.challenge(model, data, store, progress=False, **options)
    return bgbench.probe(name, model, data, progress=False, **options)


def _attributes_present(root, split: str = "val") -> int:
    """Attribute masks with a pixel set, summed over the split's images (read with numpy)."""
    total = 0
    for path in sorted((root / "attr_mask" / split).rglob("*.npz")):
        with np.load(path) as z:
            total += sum(bool(z[k].any()) for k in z.files)
    return total


@pytest.mark.parametrize("name", RUNS)
def test_a_runs_forwards_are_what_its_measure_declares(synth_root, name, one_thread, tmp_path):
    measure = get_measure(name)
    layout = resolve_layout(synth_root)
    images = len(layout.items("original"))
    source = layout.attribute_source
    kinds = len(source.names) if source is not None else 0
    model = bgbench.load_model("timm:test_resnet")
    counter = Counter(model)
    options = OPTIONS.get(name, {})
    _run(name, model, str(synth_root), options, tmp_path / "r.db")
    declared, ceiling = measure.forwards(images, list(layout.variants), options, kinds)
    if name == "ablate" and kinds:  # each image grayed per attribute it has: the count is a ceiling
        assert ceiling and counter.images == 3 * images + _attributes_present(synth_root) <= declared
    elif name == "challenge":  # a foreground stops at the first background that fools it
        assert ceiling and images < counter.images <= declared
    else:
        assert not ceiling and declared == counter.images, (declared, counter.images)
