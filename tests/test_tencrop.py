"""Ten-crop test-time augmentation equals torchvision's Resize(256) + TenCrop(224) pipeline."""
import numpy as np
import torch
from torch import nn

from bgbench.measures.eval.runner import ten_crop_logits, ten_crops


class _Tiny(nn.Module):
    """A position-sensitive toy model: a strided conv then a linear layer over the flat map."""

    def __init__(self):
        super().__init__()
        torch.manual_seed(0)
        self.conv = nn.Conv2d(3, 2, 8, stride=32)
        self.fc = nn.Linear(2 * 7 * 7, 5)

    def forward(self, x):
        return self.fc(self.conv(x).flatten(1))


def _image(h=40, w=56, seed=0):
    rng = np.random.default_rng(seed)
    return torch.from_numpy(rng.integers(0, 256, (3, h, w), dtype=np.uint8)).float() / 255


def test_ten_crop_equals_torchvision_pipeline():
    from torchvision import transforms as T
    model = _Tiny().eval()
    images = [_image(seed=0), _image(seed=1)]
    pipeline = T.Compose([T.Resize(256, antialias=True), T.TenCrop(224)])
    with torch.no_grad():
        expected = torch.stack([model(torch.stack(pipeline(im))).mean(dim=0) for im in images])
        got = ten_crop_logits(model, torch.stack(images))
    assert got.shape == (2, 5)
    assert torch.allclose(got, expected, atol=1e-5)
    with torch.no_grad():  # and it is not the plain forward of the resized centre crop
        centre = model(T.Compose([T.Resize(256, antialias=True), T.CenterCrop(224)])(torch.stack(images)))
    assert not torch.allclose(got, centre, atol=1e-3)


def test_ten_crops_shape_and_mirrors():
    x = torch.stack([_image(seed=2)])
    crops = ten_crops(x)
    assert crops.shape == (10, 3, 224, 224)
    assert torch.equal(crops[5], crops[1].flip(-1))  # the mirrored image's top-left is the top-right, mirrored
    assert torch.equal(crops[9], crops[4].flip(-1))  # the centre crop, mirrored
